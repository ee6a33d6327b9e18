"""Runs of replications and the results of Part A's simulators (ours).

What the uniformised simulator (:mod:`.simulation`) and the event-driven one
(:mod:`.general`) share, and what a paired comparison (:mod:`.policy_comparison`) reads:

* :class:`RunSpec` -- the checked arguments every replication of a run shares: the measured
  window ``horizon`` after a ``warmup`` (time units), the stream identity ``seed`` and
  ``keys``, the initial state ``start``, a user policy's ``table_size``;
* :class:`ReplicationBlock` -- replications ``indices`` of one policy, simulated on their
  own streams, so blocks run by separate jobs reassemble bit for bit
  (:mod:`queue_routing.workflow.chunks`);
* :class:`SimulationResult` -- the statistics of replications ``0..R-1``
  (:class:`queue_routing.stats.Replicated`: ``cost``, ``ci95``, ``standard_error``,
  ``replications``);
* :func:`replication_cost` -- a replication's cost, exactly rounded;
* :func:`check_args`, :func:`checked_run`, :func:`replication_indices`, :func:`general_law`
  -- the argument checks shared by the simulators (:mod:`queue_routing.checks`).

Random numbers: replication ``r`` of a run draws from the streams keyed by ``(seed,``
:data:`STREAM_KEY` ``, *keys, r, stream)`` (``docs/multiskill.md#common-random-numbers``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import stats
from ..checks import events_per_replication, nonnegative_int, replication_count, time_length
from ..errors import ArgumentError
from ..stats import Replicated, t_half_width
from ..user_policy import DEFAULT_TABLE_SIZE
from .exact import solve_exact
from .model import Instance
from .sizes import JobSizes, job_sizes

__all__ = [
    "STARTS",
    "STREAM_KEY",
    "ReplicationBlock",
    "RunSpec",
    "SimulationResult",
    "replication_cost",
]

#: The first key of every random stream of Part A's simulators, after the root seed.
STREAM_KEY = "multiskill-sim"
#: The initial states of a replication: empty, or the stationary law of optimal Bernoulli
#: routing (independent geometric counts with its loads).
STARTS = ("empty", "bernoulli")


@dataclass(frozen=True)
class RunSpec:
    """The arguments every replication of a run shares, checked once (:meth:`checked`).

    Attributes
    ----------
    horizon, warmup:
        Measured time per replication and the discarded warm-up before it (time units).
    seed, keys:
        The stream identity: replication ``r`` draws from the streams keyed by ``(seed,``
        :data:`STREAM_KEY` ``, *keys, r, stream)``, never by the policy (common random
        numbers).
    start:
        One of :data:`STARTS`.
    table_size:
        User policies: the index is tabulated for ``jobs = 0..table_size`` per server
        (checked where a user policy is tabulated, :func:`~.policies.policy_arrays`).
    """

    horizon: float
    warmup: float
    seed: int = 0
    keys: tuple = ()
    start: str = "empty"
    table_size: int = DEFAULT_TABLE_SIZE

    @classmethod
    def checked(
        cls,
        *,
        horizon: Any,
        warmup: Any = None,
        seed: Any = 0,
        keys: Iterable = (),
        start: str = "empty",
        table_size: int = DEFAULT_TABLE_SIZE,
    ) -> RunSpec:
        """The spec of these arguments, or an :class:`~queue_routing.errors.ArgumentError`
        naming the first bad one (``warmup`` defaults to ``0.1 * horizon``).

        >>> RunSpec.checked(horizon=50, keys=["a", 1])
        RunSpec(horizon=50.0, warmup=5.0, seed=0, keys=('a', 1), start='empty', table_size=400)
        """
        horizon = time_length("horizon", horizon)
        warmup = time_length("warmup", 0.1 * horizon if warmup is None else warmup, allow_zero=True)
        seed = nonnegative_int("seed", seed)
        if start not in STARTS:
            raise ArgumentError("start", f"start must be 'empty' or 'bernoulli', got {start!r}")
        return cls(horizon, warmup, seed, tuple(keys), start, table_size)

    def start_loads(self, instance: Instance) -> np.ndarray:
        """The parameters of the initial geometric counts (shape ``(C + 1,)``): zeros for
        ``"empty"``, the optimal Bernoulli loads ``rho_j`` for ``"bernoulli"``."""
        if self.start == "bernoulli":
            return np.ascontiguousarray(solve_exact(instance).loads, dtype=float)
        return np.zeros(instance.n_classes + 1)


def check_args(instance: Any, horizon: Any, warmup: Any, replications: Any, seed: Any) -> float:
    """The checks of a run of replications ``0..R-1``, in the order of the arguments
    (``instance`` an :class:`~.model.Instance`, a ``TypeError`` otherwise; then
    :mod:`queue_routing.checks`); returns the warm-up (time units, default ``0.1 *
    horizon``)."""
    if not isinstance(instance, Instance):
        raise TypeError(f"instance must be an Instance, got {type(instance).__name__}")
    time_length("horizon", horizon)
    if warmup is None:
        warmup = 0.1 * horizon
    warmup = time_length("warmup", warmup, allow_zero=True)
    events_per_replication(  # the uniformised steps (at least the general simulator's events)
        "warmup" if warmup > horizon else "horizon",
        float(np.sum(instance.eta) + np.sum(instance.mu)),
        warmup + horizon,
        "steps",
    )
    replication_count(replications)
    nonnegative_int("seed", seed)
    return float(warmup)


def checked_run(
    instance: Any, replications: Any, *, horizon: Any, warmup: Any = None, seed: Any = 0, **run: Any
) -> RunSpec:
    """The :class:`RunSpec` of a run of replications ``0..R-1`` of ``instance`` given the
    run's keywords (those of :meth:`RunSpec.checked`): :func:`check_args` first, then the
    other keywords (``keys``, ``start``, ``table_size``).

    >>> checked_run(Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6]), 3, horizon=50)
    RunSpec(horizon=50.0, warmup=5.0, seed=0, keys=(), start='empty', table_size=400)
    """
    warmup = check_args(instance, horizon, warmup, replications, seed)
    return RunSpec.checked(horizon=horizon, warmup=warmup, seed=seed, **run)


def replication_indices(replications: Iterable[Any]) -> tuple[int, ...]:
    """The replication indices of a block: non-negative ints, at least one.

    >>> replication_indices(range(2, 4))
    (2, 3)
    """
    indices = tuple(nonnegative_int("replication", r) for r in replications)
    if not indices:
        raise ArgumentError("replications", "replications must name at least one replication index")
    return indices


def general_law(value: JobSizes | str | None) -> JobSizes | None:
    """The job-size law of ``value`` if it needs the event-driven simulator
    (:mod:`.general`), ``None`` for the uniformised chain (``None`` or the exponential law);
    a bad spec raises :class:`~.sizes.JobSizeError` (``docs/multiskill.md#general-job-sizes``).

    >>> general_law(None), general_law("exponential"), general_law("erlang:2").spec
    (None, None, 'erlang:2')
    """
    if value is None:
        return None
    law = job_sizes(value)
    return None if law.is_exponential else law


@dataclass(frozen=True)
class ReplicationBlock(stats.ReplicationBlock):
    """Replications ``indices`` of one policy on one instance
    (:func:`~.simulation.simulate_replications`); ``events`` and ``table_bound`` (all
    replications) come from :class:`queue_routing.stats.ReplicationBlock`.

    Attributes
    ----------
    policy:
        One of :data:`~.policies.POLICIES`, or a user policy's name
        (:attr:`SimulationResult.policy`).
    indices:
        The replication indices simulated, in order (each its own streams,
        :func:`~.simulation.replication_states`).
    means:
        Time-average number of jobs at each server in each replication (jobs), shape
        ``(len(indices), C + 1)``.
    costs:
        Holding cost rate of each replication, ``sum_j c_j means[r, j]`` (cost per unit time),
        shape ``(len(indices),)``; each summed exactly rounded (:func:`replication_cost`), so a
        replication's cost does not depend on the other replications it is simulated with.
    events_per_replication:
        Real transitions (arrivals and departures, warm-up included) of each replication.
    steps:
        Uniformised steps simulated, warm-up included, all replications.
    table_bound_per_replication:
        User policies: measured arrivals of each replication that found a compared server
        beyond the index table (:attr:`SimulationResult.table_bound`); empty or zeros for the
        built-in policies.
    control_sums:
        The uniformised simulator: each replication's raw sums of the control variates,
        shape ``(len(indices), 7 C + 4)``, laid out as :data:`~.simulation.CONTROL_BLOCKS`
        (:func:`~.controls.control_variates` makes the controls of them); ``None`` from the
        event-driven simulator.
    measured_steps:
        Measured uniformised steps per replication, ``round(Lambda horizon)`` (0 when not
        uniformised).
    """

    policy: str
    indices: tuple[int, ...]
    means: np.ndarray = field(repr=False)
    costs: np.ndarray
    events_per_replication: tuple[int, ...]
    steps: int
    table_bound_per_replication: tuple[int, ...] = ()
    control_sums: np.ndarray | None = field(default=None, repr=False, compare=False)
    measured_steps: int = 0

    @classmethod
    def of_means(
        cls,
        instance: Instance,
        policy: str,
        indices: tuple[int, ...],
        means: np.ndarray,
        events: Iterable[Any],
        bound: Iterable[Any],
        *,
        steps: int,
        **extra: Any,
    ) -> ReplicationBlock:
        """The block of a simulator's replications ``indices`` of ``policy`` from each
        replication's time-average jobs per server (``means``, shape ``(len(indices), C +
        1)``), real transitions (``events``) and table-bound arrivals (``bound``): the costs
        are :func:`replication_cost` of each row; ``steps`` and the ``extra`` attributes of a
        subclass are given."""
        return cls(
            policy=policy,
            indices=indices,
            means=means,
            costs=np.array([replication_cost(m, instance.cost) for m in means], dtype=float),
            events_per_replication=tuple(int(e) for e in events),
            steps=steps,
            table_bound_per_replication=tuple(int(b) for b in bound),
            **extra,
        )


def replication_cost(means: np.ndarray, cost: np.ndarray) -> float:
    """``sum_j cost_j means_j`` (cost per unit time) of one replication, exactly rounded.

    :func:`math.fsum` of the products: independent of the order of the terms and of how
    many replications are computed together (a matrix product's rounding may depend on
    both), so any split of a study into replication blocks gives the same bits.

    >>> replication_cost(np.array([1.0, 2.0]), np.array([3.0, 0.5]))
    4.0
    """
    return math.fsum(float(m) * float(c) for m, c in zip(means, cost, strict=True))


@dataclass(frozen=True)
class SimulationResult(Replicated):
    """Simulated mean holding cost of one policy on one instance.

    Attributes
    ----------
    policy:
        One of :data:`~.policies.POLICIES`, or the name of a user policy (``"path.py:name"``
        as given, or the function's name; :mod:`queue_routing.user_policy`).
    cost:
        Mean holding cost rate ``sum_j c_j E[x_j]`` (cost per unit time), the mean of
        :attr:`replication_costs`.
    ci95:
        Half-width of the 95% confidence interval of :attr:`cost` from the t distribution
        over the independent replications (``t_{0.975, R-1} s / sqrt(R)``).
    per_server_mean_jobs:
        Time-average number of jobs at each server (jobs), mean over replications,
        shape ``(C + 1,)``.
    per_server_ci95:
        95% half-widths of :attr:`per_server_mean_jobs`, shape ``(C + 1,)``.
    replication_costs:
        Cost of each replication, shape ``(R,)``.
    replication_means:
        Mean jobs per server of each replication, shape ``(R, C + 1)``.
    events:
        Real transitions simulated (arrivals and departures, warm-up included), all
        replications.
    steps:
        Uniformised steps simulated (events plus self-loops of idle servers).
    wall_seconds:
        Wall time of the simulation (s), compilation included on a first call.
    horizon, warmup:
        Measured time per replication and discarded warm-up before it (time units).
    seed, keys:
        The stream identity: replication ``r`` draws from the streams of
        :func:`~.simulation.replication_states` ``(seed, keys, r)``, which do not depend on
        the policy.
    table_bound:
        User policies: measured arrivals (all replications) that found their dedicated
        server or server 0 beyond the index table (``x_j > table_size``), decided with that
        server counted as ``+inf``. Nonzero means the result is that of the truncated table,
        not of the policy (always 0 for the built-in policies).
    """

    policy: str
    cost: float
    ci95: float
    per_server_mean_jobs: np.ndarray
    per_server_ci95: np.ndarray
    replication_costs: np.ndarray
    replication_means: np.ndarray = field(repr=False)
    events: int
    steps: int
    wall_seconds: float = field(compare=False)
    horizon: float
    warmup: float
    seed: int
    keys: tuple = ()
    table_bound: int = 0

    @classmethod
    def from_block(
        cls,
        block: ReplicationBlock,
        *,
        horizon: float,
        warmup: float,
        seed: int,
        keys: tuple,
        wall_seconds: float,
    ) -> SimulationResult:
        """The statistics of a block of replications ``0..R-1`` (R >= 2) of one policy
        (and the attributes a subclass adds, :meth:`extra_fields`)."""
        return cls(
            policy=block.policy,
            cost=float(block.costs.mean()),
            ci95=float(t_half_width(block.costs)),
            per_server_mean_jobs=block.means.mean(axis=0),
            per_server_ci95=t_half_width(block.means),
            replication_costs=block.costs,
            replication_means=block.means,
            events=block.events,
            steps=block.steps,
            wall_seconds=float(wall_seconds),
            horizon=float(horizon),
            warmup=float(warmup),
            seed=int(seed),
            keys=tuple(keys),
            table_bound=block.table_bound,
            **cls.extra_fields(block),
        )

    @classmethod
    def of_run(
        cls, block: ReplicationBlock, spec: RunSpec, *, wall_seconds: float
    ) -> SimulationResult:
        """:meth:`from_block` of a block of the run ``spec`` (its window and streams)."""
        return cls.from_block(
            block,
            horizon=spec.horizon,
            warmup=spec.warmup,
            seed=spec.seed,
            keys=spec.keys,
            wall_seconds=wall_seconds,
        )

    @classmethod
    def extra_fields(cls, block: ReplicationBlock) -> dict[str, Any]:
        """The attributes of a subclass computed from ``block`` (none here)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the CLI contract: ``cost``, ``ci95``, ``per_server_mean_jobs``."""
        return {
            "cost": float(self.cost),
            "ci95": float(self.ci95),
            "per_server_mean_jobs": [float(v) for v in self.per_server_mean_jobs],
        }
