"""Index-policy simulations on the multi-skilled instances (ours, beyond the paper).

Model and policies: ``docs/multiskill.md#index-policy-simulations``; the queueing model is that
of Miguelez, Doncel and Prabhu (2022), Sec. 2.

Class ``i = 1..C`` jobs arrive as a Poisson process of rate ``eta_i`` (jobs per unit time)
with unit-mean exponential sizes (work), so ``eta_i`` is also the class's intensity; server
``j`` works at rate ``mu_j`` (work per unit time) under processor sharing. With exponential
sizes the number-in-system process under PS equals that under FCFS, so the state is the count
vector ``x = (x_0, ..., x_C)`` and the system is a continuous-time Markov chain (CTMC). Each
arriving class-``i`` job is routed to its dedicated server ``i`` or to server 0:

``bernoulli``  to server ``i`` with probability ``p_i``, the exact solver's optimum
               (:func:`~queue_routing.multiskill.exact.solve_exact`), else to server 0;
``jsq``        join the shorter of the two queues;
``led``        least expected delay, index ``(x_j + 1)/mu_j``;
``io``         the job's own holding cost, index ``c_j (x_j + 1)/mu_j``;
``pi``         one policy-improvement step from optimal Bernoulli routing, index
               ``c_j (x_j + 1)/(mu_j - lambda_j*)``, ``lambda_j*`` the arrival rate at server
               ``j`` under optimal Bernoulli routing.

Every index policy sends the job to ``argmin_{j in {i, 0}} w_j (x_j + 1)`` with a per-server
weight ``w`` (:func:`policy_weights`), ties to the dedicated server. A **user policy**
(:mod:`queue_routing.user_policy`, ``docs/README.md#your-own-policy``) gives the index as a
function ``index(j, x_j, instance)`` of the server and the jobs the arrival finds there,
tabulated once for ``x_j = 0..table_size``: the job goes to server ``i`` iff ``index(i, x_i)
<= index(0, x_0)``; an arrival that finds a compared server beyond the table is counted
(``table_bound``, :class:`TableBoundWarning`), the server then counting as ``+inf``. The
holding cost rate is ``sum_j c_j x_j`` (cost per unit time).

Random numbers (``docs/README.md#random-numbers``, ``docs/multiskill.md#common-random-numbers``):
replication ``r`` draws from the named streams of :func:`replication_states`, keyed by the root
seed, the job's keys and ``r`` but not the policy, through the compiled xoshiro256** generator
of :mod:`queue_routing.rng`; every policy simulated with the same seed and keys therefore
sees the same initial state and the same uniformised event sequence (common random numbers).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..checks import nonnegative_int, replication_count, time_length
from ..rng import next_uniform
from ..seeding import stream_states
from ..stats import Replicated, t_half_width
from ..user_policy import DEFAULT_TABLE_SIZE, UserPolicy, policy_name, resolve_policy
from .exact import solve_exact
from .model import Instance

__all__ = [
    "POLICIES",
    "POLICY_DESCRIPTIONS",
    "ReplicationBlock",
    "SimulationResult",
    "TableBoundWarning",
    "alias_table",
    "arrival_rates",
    "bernoulli_probabilities",
    "event_rates",
    "policy_weights",
    "replication_cost",
    "replication_states",
    "simulate",
    "simulate_policies",
    "simulate_replications",
]

#: The routing policies (``docs/multiskill.md#index-policy-simulations``).
POLICIES = ("bernoulli", "jsq", "led", "io", "pi")
#: One line on each policy (the CLI's help shows them).
POLICY_DESCRIPTIONS = {
    "bernoulli": "optimal Bernoulli routing (the exact solver's probabilities)",
    "jsq": "join the shorter of the two queues",
    "led": "least expected delay, index (x_j + 1)/mu_j",
    "io": "the job's own holding cost, index c_j (x_j + 1)/mu_j",
    "pi": "one policy-improvement step from optimal Bernoulli, index "
    "c_j (x_j + 1)/(mu_j - lambda_j*)",
}

_MAX_STEPS = 2**62
#: Most entries of a user policy's index table (80 MB of doubles).
_MAX_TABLE_ENTRIES = 10**7


def _warn_table_bound(block: Any, table_size: int) -> None:
    """A :class:`TableBoundWarning` naming how many measured arrivals of ``block`` (a
    :class:`ReplicationBlock` of a user policy) found a server beyond its index table."""
    warnings.warn(
        f"table_size: {block.table_bound} measured arrivals under {block.policy} found a "
        f"server beyond the index table (x > {table_size}; decided as if it were +inf); "
        "raise table_size",
        TableBoundWarning,
        stacklevel=3,
    )


class TableBoundWarning(UserWarning):
    """A simulation of a user policy in which some arrivals found a server beyond the index
    table (``x_j > table_size``): those decisions are the truncated table's (the server
    counted as ``+inf``), not the policy's; raise ``table_size``."""


# -- policy parameters ---------------------------------------------------------------------
def _check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    return policy


def _resolve(policy: Any) -> str | UserPolicy:
    """A built-in name of :data:`POLICIES` or a :class:`~queue_routing.user_policy.UserPolicy`
    (from ``"path.py:name"``, a callable or a ``UserPolicy``;
    :func:`~queue_routing.user_policy.resolve_policy`)."""
    return resolve_policy(policy, POLICIES)


def bernoulli_probabilities(instance: Instance) -> np.ndarray:
    """``p_i`` (shape ``(C,)``): fraction of class ``i`` routed to server ``i`` at the optimum.

    The optimal static routing of LOAD-OPT (exact solver, ``Solution.probabilities``).
    """
    return np.asarray(solve_exact(instance).probabilities, dtype=float)


def arrival_rates(instance: Instance, probabilities: np.ndarray | None = None) -> np.ndarray:
    """Arrival rates ``lambda_j`` (jobs per unit time, shape ``(C + 1,)``) under Bernoulli routing.

    ``lambda_i = eta_i p_i`` for ``i >= 1`` and ``lambda_0 = sum_i eta_i (1 - p_i)``; with
    ``probabilities=None`` the optimal ``p`` (:func:`bernoulli_probabilities`), i.e. the
    ``lambda*`` of the PI index.
    """
    p = bernoulli_probabilities(instance) if probabilities is None else np.asarray(probabilities)
    lam = np.empty(instance.n_classes + 1)
    lam[1:] = instance.eta * p
    lam[0] = float(np.sum(instance.eta * (1.0 - p)))
    return lam


def policy_weights(instance: Instance, policy: str) -> np.ndarray:
    """Per-server index weights ``w_j`` (shape ``(C + 1,)``) of an index policy.

    An arriving class-``i`` job goes to server ``i`` iff ``w_i (x_i + 1) <= w_0 (x_0 + 1)``
    (ties to the dedicated server), else to server 0. ``w_j (x_j + 1)`` is

    * ``jsq``: ``x_j + 1`` (``w = 1``, jobs);
    * ``led``: ``(x_j + 1)/mu_j``, the expected time the job would spend at server ``j``
      under FCFS (``w = 1/mu``, time per job);
    * ``io``: ``c_j (x_j + 1)/mu_j``, the job's own expected holding cost (``w = c/mu``);
    * ``pi``: ``c_j (x_j + 1)/(mu_j - lambda_j*)`` (``w = c/(mu - lambda*)``): the increment
      ``h_j(x_j + 1) - h_j(x_j)`` of the relative value ``h_j(x) = c_j x (x + 1) /
      (2 (mu_j - lambda_j*))`` of server ``j`` as an M/M/1 queue under optimal Bernoulli
      routing, so routing by it is one policy-improvement step from that routing and its
      cost is never higher.

    ``bernoulli`` is not an index policy: use :func:`bernoulli_probabilities`.
    """
    _check_policy(policy)
    mu, cost = instance.mu, instance.cost
    if policy == "jsq":
        w = np.ones_like(mu)
    elif policy == "led":
        w = 1.0 / mu
    elif policy == "io":
        w = cost / mu
    elif policy == "pi":
        w = cost / (mu - arrival_rates(instance))
        if not np.all(np.isfinite(w) & (w > 0)):  # pragma: no cover - optimum is stable
            raise ValueError("pi: optimal Bernoulli routing leaves a server with load >= 1")
    else:
        raise ValueError("bernoulli is not an index policy; use bernoulli_probabilities()")
    return np.ascontiguousarray(w, dtype=float)


def _policy_arrays(
    instance: Instance, policy: Any, table_size: int = DEFAULT_TABLE_SIZE
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(mode, probabilities, weights)`` for the kernels, the one translation of a policy.

    * mode 0, Bernoulli: ``probabilities`` the ``p_i`` (shape ``(C,)``), ``weights`` unused;
    * mode 1, a built-in index policy: ``weights`` the ``w_j`` of :func:`policy_weights`
      (shape ``(C + 1,)``), the rule ``w_i (x_i + 1) <= w_0 (x_0 + 1)``;
    * mode 2, a user policy (:mod:`queue_routing.user_policy`): ``weights`` the index table
      ``table[j, x]``, ``x = 0..table_size``, flattened row by row (shape ``((C + 1)
      (table_size + 1),)``; :func:`table_index` reads it), the rule ``table[i, x_i] <=
      table[0, x_0]`` with ``+inf`` beyond the table.

    The three modes have the same argument types, so a kernel takes any policy through the
    same signature. ``table_size`` matters for mode 2 only.
    """
    policy = _resolve(policy)
    if isinstance(policy, UserPolicy):
        table_size = nonnegative_int("table_size", table_size)
        if table_size < 1:
            raise ValueError(f"table_size must be >= 1, got {table_size}")
        entries = (instance.n_classes + 1) * (table_size + 1)
        if entries > _MAX_TABLE_ENTRIES:
            raise ValueError(
                f"table_size: {instance.n_classes + 1} servers x {table_size + 1} job counts "
                f"= {entries} index entries exceeds {_MAX_TABLE_ENTRIES}"
            )
        table = policy.index_table(instance.n_classes + 1, table_size, instance)
        return 2, np.zeros(instance.n_classes), np.ascontiguousarray(table.ravel())
    if policy == "bernoulli":
        return 0, np.ascontiguousarray(bernoulli_probabilities(instance)), np.ones_like(instance.mu)
    return 1, np.zeros(instance.n_classes), policy_weights(instance, policy)


@njit(cache=True, nogil=True, inline="always")
def table_index(weight, width, j, xj):  # pragma: no cover - compiled
    """Mode 2's index of server ``j`` holding ``xj`` jobs: ``table[j, xj]`` of the table
    flattened into ``weight`` (rows of ``width`` entries), ``+inf`` beyond it."""
    if xj >= width:
        return np.inf
    return weight[j * width + xj]


# -- compiled kernel -----------------------------------------------------------------------
def alias_table(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table (Vose's construction) for drawing ``k`` w.p. ``rates_k / sum(rates)``.

    Returns ``(threshold, alias)``, both of shape ``(m,)``: draw ``u ~ U(0, m)``, ``k =
    floor(u)``; the answer is ``k`` if ``u - k < threshold[k]`` else ``alias[k]``. O(1) per
    draw after an O(m) construction. Deterministic (no randomness), exact up to rounding.
    """
    rates = np.asarray(rates, dtype=float)
    m = rates.size
    scaled = rates * (m / rates.sum())
    threshold = np.ones(m)
    alias = np.arange(m, dtype=np.int64)
    small = [k for k in range(m) if scaled[k] < 1.0]
    large = [k for k in range(m) if scaled[k] >= 1.0]
    while small and large:
        s, big = small.pop(), large.pop()
        threshold[s] = scaled[s]
        alias[s] = big
        scaled[big] -= 1.0 - scaled[s]
        (small if scaled[big] < 1.0 else large).append(big)
    # Leftovers (rounding) keep threshold 1: they are drawn with their own index.
    return threshold, alias


#: The named random streams of one replication (rows of the kernel's ``states``):
#: ``events`` drives the uniformised chain (one uniform per step), ``routing`` Bernoulli's
#: routing coins (one per arrival), ``start`` the initial state (one per server).
STREAMS = ("events", "routing", "start")


@njit(cache=True, nogil=True)  # nogil: SIGINT/SIGTERM can end a long run (signals.py)
def _simulate_kernel(
    n_classes, threshold, alias, modes, probs, weights, widths, n_warm, n_steps, states,
    start_loads,
):  # pragma: no cover - compiled  # fmt: skip
    """One replication of the uniformised chain under P policies in lockstep; returns
    ``(mean jobs (P, C + 1), events (P,), bound (P,))``.

    The ``2C + 1`` potential events are ``k < C``: an arrival of class ``k + 1``, and
    ``k = C + j``: a departure from server ``j`` (a self-loop when server ``j`` is idle); event
    ``k`` is drawn with probability ``rate_k / Lambda`` from the alias table
    (``threshold``, ``alias``) in O(1). Step ``s`` visits the state ``x_s``; the mean of ``x_s``
    over steps ``n_warm .. n_warm + n_steps - 1`` is accumulated lazily (the area of a server
    is updated only when its count changes), so a step costs O(P) whatever C. ``events``
    counts real transitions (arrivals and departures, warm-up included), not self-loops.
    Policy ``p``: ``modes[p]`` 0 routes class ``i`` to server ``i`` w.p. ``probs[p, i - 1]``;
    mode 1 routes it to server ``i`` iff ``weights[p, i] (x_i + 1) <= weights[p, 0] (x_0 +
    1)``; mode 2 iff ``table[i, x_i] <= table[0, x_0]`` with the index table of
    ``widths[p]`` entries per server flattened into ``weights[p]`` (:func:`_policy_arrays`,
    :func:`table_index`: ``+inf`` beyond it). ``bound[p]`` counts the measured arrivals
    (steps ``>= n_warm``) of a mode-2 policy that found server ``i`` or 0 beyond its table.
    The initial counts are independent geometric with parameters ``start_loads`` (all zero:
    start empty).

    Randomness (``docs/multiskill.md#common-random-numbers``): ``states`` (uint64, shape
    ``(3, 4)``) holds the xoshiro256** states of the :data:`STREAMS`; they are copied, so the
    caller's array is not changed. Step ``s`` consumes exactly the ``s``-th uniform of the
    ``events`` stream whatever the policy and the state, so every policy sees the same event
    sequence; each policy draws Bernoulli coins from its own copy of the ``routing`` stream,
    and the initial state comes from the ``start`` stream. Hence policy ``p``'s row is, bit
    for bit, what a run of that policy alone (P = 1) gives: running the policies of a
    comparison together only shares the event draws (three times faster for P = 5).
    """
    n_policies = modes.size
    ev = states[0].copy()
    init = states[2].copy()
    coins = np.empty((n_policies, states.shape[1]), dtype=np.uint64)
    for p in range(n_policies):
        coins[p] = states[1]
    n = n_classes
    m = threshold.size
    x = np.zeros((n_policies, n + 1), dtype=np.int64)
    for j in range(n + 1):  # x_j ~ Geometric: P(x_j = k) = (1 - rho_j) rho_j^k (0: empty)
        u0 = next_uniform(init)  # one draw per server, used or not
        if start_loads[j] > 0.0:
            x0 = int(np.floor(np.log(1.0 - u0) / np.log(start_loads[j])))
            for p in range(n_policies):
                x[p, j] = x0
    area = np.zeros((n_policies, n + 1))
    last = np.zeros((n_policies, n + 1), dtype=np.int64)  # step since which x[p, j] is fixed
    events = np.zeros(n_policies, dtype=np.int64)
    bound = np.zeros(n_policies, dtype=np.int64)
    total = n_warm + n_steps
    for step in range(total):
        if step == n_warm:
            area[:] = 0.0
            last[:] = step
        u = next_uniform(ev) * m
        k = min(int(u), m - 1)
        if u - k >= threshold[k]:
            k = alias[k]
        if k < n:  # arrival of class i = k + 1, routed by each policy
            i = k + 1
            for p in range(n_policies):
                if modes[p] == 0:
                    j = i if next_uniform(coins[p]) < probs[p, k] else 0
                elif modes[p] == 1:
                    if weights[p, i] * (x[p, i] + 1) <= weights[p, 0] * (x[p, 0] + 1):
                        j = i
                    else:
                        j = 0
                else:
                    width = widths[p]
                    if (x[p, i] >= width or x[p, 0] >= width) and step >= n_warm:
                        bound[p] += 1
                    own = table_index(weights[p], width, i, x[p, i])
                    j = i if own <= table_index(weights[p], width, 0, x[p, 0]) else 0
                xj = x[p, j]  # close the constant stretch of x[p, j]
                area[p, j] += xj * (step + 1 - last[p, j])
                last[p, j] = step + 1
                x[p, j] = xj + 1
                events[p] += 1
        else:  # potential departure from server j; a self-loop where it is idle
            j = k - n
            for p in range(n_policies):
                xj = x[p, j]
                if xj > 0:
                    area[p, j] += xj * (step + 1 - last[p, j])
                    last[p, j] = step + 1
                    x[p, j] = xj - 1
                    events[p] += 1
    means = np.empty((n_policies, n + 1))
    for p in range(n_policies):
        for j in range(n + 1):
            area[p, j] += x[p, j] * (total - last[p, j])
            means[p, j] = area[p, j] / n_steps
    return means, events, bound


def replication_states(seed: int, keys: tuple, replication: int) -> np.ndarray:
    """The kernel's stream states (uint64, shape ``(3, 4)``) for one replication.

    Row ``s`` is seeded by ``seed_sequence(seed, "multiskill-sim", *keys, replication,
    STREAMS[s])`` (:func:`~queue_routing.seeding.stream_states`); the policy is not a key, so
    every policy simulated with the same ``seed``, ``keys`` and replication index sees the same
    random numbers (``docs/multiskill.md#common-random-numbers``).
    """
    return stream_states(seed, "multiskill-sim", *keys, replication, streams=STREAMS)


def event_rates(instance: Instance) -> np.ndarray:
    """Rates (per unit time) of the ``2C + 1`` potential events: ``eta_1..eta_C, mu_0..mu_C``.

    Their sum is the uniformisation rate ``Lambda`` (steps per unit time).
    """
    return np.concatenate([instance.eta, instance.mu])


def _step_counts(lam: float, horizon: float, warmup: float) -> tuple[int, int]:
    n_steps = max(1, round(lam * horizon))
    n_warm = round(lam * warmup)
    if n_steps + n_warm > _MAX_STEPS:
        raise ValueError(
            f"horizon: {horizon:g} + warmup {warmup:g} time units at {lam:g} steps per unit "
            "time is too many uniformised steps"
        )
    return n_steps, n_warm


# -- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimulationResult(Replicated):
    """Simulated mean holding cost of one policy on one instance.

    Attributes
    ----------
    policy:
        One of :data:`POLICIES`, or the name of a user policy (``"path.py:name"`` as given,
        or the function's name; :mod:`queue_routing.user_policy`).
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
        :func:`replication_states` ``(seed, keys, r)``, which do not depend on the policy.
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
        """The statistics of a block of replications ``0..R-1`` (R >= 2) of one policy."""
        return cls(
            policy=block.policy,
            cost=float(block.costs.mean()),
            ci95=float(_half_width(block.costs)),
            per_server_mean_jobs=block.means.mean(axis=0),
            per_server_ci95=_half_width(block.means),
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
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the CLI contract: ``cost``, ``ci95``, ``per_server_mean_jobs``."""
        return {
            "cost": float(self.cost),
            "ci95": float(self.ci95),
            "per_server_mean_jobs": [float(v) for v in self.per_server_mean_jobs],
        }


_half_width = t_half_width  # 95% t half-width over replications (axis 0)


def _general_sizes(job_sizes: Any) -> bool:
    """Whether ``job_sizes`` (``None``, a spec string or a ``JobSizes``) needs the general
    simulator: any law but the exponential (validated here: a bad spec raises)."""
    if job_sizes is None:
        return False
    from .sizes import job_sizes as parse

    return not parse(job_sizes).is_exponential


def _check_args(instance, policy, horizon, warmup, replications, seed) -> float:
    if not isinstance(instance, Instance):
        raise TypeError(f"instance must be an Instance, got {type(instance).__name__}")
    time_length("horizon", horizon)
    if warmup is None:
        warmup = 0.1 * horizon
    warmup = time_length("warmup", warmup, allow_zero=True)
    replication_count(replications)
    nonnegative_int("seed", seed)
    return float(warmup)


@dataclass(frozen=True)
class ReplicationBlock:
    """Replications ``indices`` of one policy on one instance (:func:`simulate_replications`).

    Attributes
    ----------
    policy:
        One of :data:`POLICIES`, or a user policy's name (:attr:`SimulationResult.policy`).
    indices:
        The replication indices simulated, in order (each its own streams,
        :func:`replication_states`).
    means:
        Time-average number of jobs at each server in each replication (jobs), shape
        ``(len(indices), C + 1)``.
    costs:
        Holding cost rate of each replication, ``sum_j c_j means[r, j]`` (cost per unit time),
        shape ``(len(indices),)``; each summed exactly rounded (:func:`math.fsum` of the
        products), so a replication's cost does not depend on the other replications it is
        simulated with.
    events_per_replication:
        Real transitions (arrivals and departures, warm-up included) of each replication.
    steps:
        Uniformised steps simulated, warm-up included, all replications.
    table_bound_per_replication:
        User policies: measured arrivals of each replication that found a compared server
        beyond the index table (:attr:`SimulationResult.table_bound`); empty or zeros for the
        built-in policies.
    """

    policy: str
    indices: tuple[int, ...]
    means: np.ndarray = field(repr=False)
    costs: np.ndarray
    events_per_replication: tuple[int, ...]
    steps: int
    table_bound_per_replication: tuple[int, ...] = ()

    @property
    def events(self) -> int:
        """Real transitions simulated, all replications."""
        return sum(self.events_per_replication)

    @property
    def table_bound(self) -> int:
        """Measured arrivals beyond the index table, all replications (user policies)."""
        return sum(self.table_bound_per_replication)


def replication_cost(means: np.ndarray, cost: np.ndarray) -> float:
    """``sum_j cost_j means_j`` (cost per unit time) of one replication, exactly rounded.

    :func:`math.fsum` of the products: independent of the order of the terms and of how
    many replications are computed together (a matrix product's rounding may depend on
    both), so any split of a study into replication blocks gives the same bits.

    >>> replication_cost(np.array([1.0, 2.0]), np.array([3.0, 0.5]))
    4.0
    """
    return math.fsum(float(m) * float(c) for m, c in zip(means, cost, strict=True))


def simulate_replications(
    instance: Instance,
    policy: Any,
    replications: Iterable[int],
    *,
    horizon: float,
    warmup: float | None = None,
    seed: int = 0,
    keys: tuple = (),
    start: str = "empty",
    table_size: int = DEFAULT_TABLE_SIZE,
    progress: Callable[[], Any] | None = None,
    job_sizes: Any = None,
) -> ReplicationBlock:
    """The replications with the given indices of :func:`simulate` (any non-empty set).

    Replication ``r`` runs on the streams :func:`replication_states` ``(seed, keys, r)``,
    exactly as replication ``r`` of ``simulate(..., replications=R)`` for any ``R > r``: a
    study can be split into blocks of replications run by separate jobs
    (:mod:`queue_routing.workflow.chunks`) and reassembled bit for bit. Arguments as in
    :func:`simulate`; no statistics are computed (a block may hold one replication), and no
    :class:`TableBoundWarning`: the block's ``table_bound_per_replication`` holds the counts.
    :func:`simulate_policies` runs several policies on the same streams at once. With a
    non-exponential ``job_sizes`` the block comes from
    :func:`~.general.simulate_general_replications` (a :class:`~.general.GeneralBlock`).

    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> whole = simulate(inst, "jsq", horizon=50.0, replications=4, seed=3)
    >>> part = simulate_replications(inst, "jsq", range(2, 4), horizon=50.0, seed=3)
    >>> part.costs.tolist() == whole.replication_costs[2:].tolist()
    True
    """
    if _general_sizes(job_sizes):  # docs/multiskill.md#general-job-sizes
        from .general import simulate_general_replications

        return simulate_general_replications(
            instance, policy, replications, job_sizes=job_sizes, horizon=horizon,
            warmup=warmup, seed=seed, keys=keys, start=start, table_size=table_size,
            progress=progress,
        )  # fmt: skip
    policy = _resolve(policy)
    blocks = simulate_policies(
        instance, [policy], replications, horizon=horizon, warmup=warmup, seed=seed,
        keys=keys, start=start, table_size=table_size, progress=progress,
    )  # fmt: skip
    return blocks[policy_name(policy)]


def _kernel_arrays(instance: Instance, policies: Sequence[Any], table_size: int):
    """``(modes (P,), probs (P, C), weights (P, W), widths (P,))``: the policies'
    :func:`_policy_arrays` stacked for the lockstep kernel, each weight row padded to the
    longest (a user policy's flattened table; ``widths[p]`` its entries per server)."""
    arrays = [_policy_arrays(instance, p, table_size) for p in policies]
    n_servers = instance.n_classes + 1
    width = max(a[2].size for a in arrays)
    weights = np.zeros((len(arrays), width))
    for p, a in enumerate(arrays):
        weights[p, : a[2].size] = a[2]
    modes = np.array([a[0] for a in arrays], dtype=np.int64)
    probs = np.ascontiguousarray([a[1] for a in arrays], dtype=float)
    widths = np.array([a[2].size // n_servers for a in arrays], dtype=np.int64)
    return modes, probs, weights, widths


def simulate_policies(
    instance: Instance,
    policies: Sequence[Any],
    replications: Iterable[int],
    *,
    horizon: float,
    warmup: float | None = None,
    seed: int = 0,
    keys: tuple = (),
    start: str = "empty",
    table_size: int = DEFAULT_TABLE_SIZE,
    progress: Callable[[], Any] | None = None,
) -> dict[str, ReplicationBlock]:
    """:func:`simulate_replications` of several policies on common random numbers, at once.

    Every policy's replication ``r`` sees the streams :func:`replication_states` ``(seed,
    keys, r)`` — the same uniformised event sequence and initial state — so the policies
    are simulated in lockstep by one kernel pass that draws each event once and applies it
    to every policy's state. Each block is bit for bit the one :func:`simulate_replications`
    gives for that policy alone; only the work is shared (3x less time for the five
    policies at C = 20..200, ``benchmarks/multiskill_lockstep.py``). ``policies``: names of
    :data:`POLICIES` or user policies (as :func:`simulate` takes them), distinct by name.
    ``progress`` is called once per policy and replication. Returns ``{name:
    ReplicationBlock}`` in the order given.

    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> both = simulate_policies(inst, ["jsq", "pi"], range(3), horizon=50.0, seed=3)
    >>> alone = simulate_replications(inst, "pi", range(3), horizon=50.0, seed=3)
    >>> both["pi"].costs.tolist() == alone.costs.tolist(), list(both)
    (True, ['jsq', 'pi'])
    """
    policies = tuple(_resolve(p) for p in policies)
    names = [policy_name(p) for p in policies]
    if not policies or len(set(names)) != len(names):
        raise ValueError(f"policies must be distinct and at least one, got {names}")
    time_length("horizon", horizon)
    warmup = time_length("warmup", 0.1 * horizon if warmup is None else warmup, allow_zero=True)
    nonnegative_int("seed", seed)
    indices = tuple(nonnegative_int("replication", r) for r in replications)
    if not indices:
        raise ValueError("replications must name at least one replication index")
    if start == "empty":
        start_loads = np.zeros(instance.n_classes + 1)
    elif start == "bernoulli":
        start_loads = np.ascontiguousarray(solve_exact(instance).loads, dtype=float)
    else:
        raise ValueError(f"start must be 'empty' or 'bernoulli', got {start!r}")
    keys = tuple(keys)
    modes, probs, weights, widths = _kernel_arrays(instance, policies, table_size)
    lam = float(instance.eta.sum() + instance.mu.sum())
    n_steps, n_warm = _step_counts(lam, float(horizon), warmup)
    threshold, alias = alias_table(event_rates(instance))
    means = np.empty((len(policies), len(indices), instance.n_classes + 1))
    events = np.empty((len(policies), len(indices)), dtype=np.int64)
    bound = np.empty((len(policies), len(indices)), dtype=np.int64)
    for row, r in enumerate(indices):
        means[:, row], events[:, row], bound[:, row] = _simulate_kernel(
            instance.n_classes, threshold, alias, modes, probs, weights, widths, n_warm,
            n_steps, replication_states(seed, keys, r), start_loads,
        )  # fmt: skip
        if progress is not None:
            for _ in policies:
                progress()
    blocks = {}
    for p, name in enumerate(names):
        blocks[name] = ReplicationBlock(
            policy=name,
            indices=indices,
            means=means[p],
            costs=np.array([replication_cost(m, instance.cost) for m in means[p]], dtype=float),
            events_per_replication=tuple(int(e) for e in events[p]),
            steps=len(indices) * (n_warm + n_steps),
            table_bound_per_replication=tuple(int(b) for b in bound[p]),
        )
    return blocks


def simulate(
    instance: Instance,
    policy: Any,
    *,
    horizon: float,
    warmup: float | None = None,
    replications: int = 10,
    seed: int = 0,
    keys: tuple = (),
    start: str = "empty",
    table_size: int = DEFAULT_TABLE_SIZE,
    progress: Callable[[], Any] | None = None,
    job_sizes: Any = None,
) -> SimulationResult:
    """Simulate ``policy`` on ``instance``: mean holding cost rate with a 95% CI.

    The CTMC of the counts is simulated exactly by uniformisation at the constant rate
    ``Lambda = sum_i eta_i + sum_j mu_j`` (steps per unit time): every step draws one of the
    ``2C + 1`` potential events with probability ``rate / Lambda`` by Walker's alias method
    (:func:`alias_table`, O(1); a binary search on the cumulative rates, O(log C), measured
    30-50 ns per draw against 17-19 ns for the alias draw at C = 5..50 on the development
    machine), and a departure from an idle server is a self-loop. The uniformised jump chain
    has the CTMC's stationary distribution, so the time average is estimated by the average
    of the state over the steps, i.e. each step is charged its expected sojourn ``1/Lambda``
    rather than a sampled exponential one. Compared with an event-driven simulation with
    exponential holding times this (a) removes the variance of the sojourn times (a
    conditional-expectation estimator), (b) needs one uniform per step (two for a Bernoulli
    arrival) and no update of a total rate that changes with the set of busy servers, at the
    price of the self-loops (a fraction ``sum_j mu_j (1 - rho_j)/Lambda`` of the steps: 20%
    on Table 1, 40% on a C = 50 random instance under JSQ).

    Time semantics: each replication starts in the state given by ``start``, runs
    ``round(Lambda * warmup)`` discarded steps (the first ``warmup`` time units, in
    expectation) and then ``round(Lambda * horizon)`` measured steps (``horizon`` time
    units, in expectation); ``horizon`` is the measured length, not including the warm-up.

    Parameters
    ----------
    instance:
        The multi-skilled system.
    policy:
        One of :data:`POLICIES`, or a user index policy: ``"path/to/file.py:name"``, a
        callable ``index(server, jobs, instance) -> float`` or a
        :class:`~queue_routing.user_policy.UserPolicy` (:mod:`queue_routing.user_policy`,
        ``docs/README.md#your-own-policy``).
    horizon:
        Measured time per replication (time units, > 0).
    warmup:
        Discarded time before the measurement (time units, >= 0); default ``0.1 * horizon``.
    replications:
        Independent replications (>= 2), for the t confidence interval.
    seed, keys:
        Replication ``r`` draws from the streams :func:`replication_states` ``(seed, keys, r)``
        (``seed_sequence(seed, "multiskill-sim", *keys, r, stream)``); the same arguments
        reproduce the result bit for bit. The policy is not part of the key: two policies
        simulated with the same ``seed`` and ``keys`` see common random numbers (the same
        uniformised event sequence and initial state; ``docs/multiskill.md#common-random-numbers``),
        which is what a paired comparison (:func:`~.policy_comparison.compare_policies`) needs. For
        independent streams, give each policy its own ``keys``.
    progress:
        Called with no argument after each replication (e.g. a
        :class:`~queue_routing.progress.Progress`); ``None`` for silence.
    start:
        ``"empty"``, or ``"bernoulli"``: independent geometric counts with the optimal
        Bernoulli loads, i.e. the exact stationary law under optimal Bernoulli routing (no
        initialisation bias for that policy; a congested start for the dynamic policies, whose
        cost it can only bias upwards, i.e. against them, when the warm-up is short).
    table_size:
        User policies: the index is tabulated for ``jobs = 0..table_size`` at every server
        (>= 1). Arrivals that find a compared server beyond it are counted in the result's
        ``table_bound`` and reported by a :class:`TableBoundWarning`; unused by the built-in
        policies.

    job_sizes:
        The job-size law (mean 1): ``None`` or ``"exponential"`` for the uniformised chain
        above; any other law of :mod:`.sizes` (``"deterministic"``, ``"erlang:K"``,
        ``"hyperexponential:SCV"``, ``"lognormal:SCV"`` or a :class:`~.sizes.JobSizes`) is
        simulated event by event by :func:`~.general.simulate_general`, which returns a
        :class:`~.general.GeneralSimulationResult` (``docs/multiskill.md#general-job-sizes``).

    Raises
    ------
    ValueError
        For an unknown policy, a non-positive or non-finite horizon, a negative warm-up,
        fewer than two replications or a negative seed (the message names the argument);
        :class:`~queue_routing.user_policy.UserPolicyError` for a user policy that cannot be
        loaded or gives a value that is not a finite number >= 0.

    Examples
    --------
    Under optimal Bernoulli routing the cost is the product form sum_j c_j rho_j/(1 - rho_j)
    (2.578947... here, :func:`~.exact.solve_exact`); the simulation agrees within its 95% CI:

    >>> from queue_routing.multiskill import Instance, simulate, solve_exact
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> res = simulate(inst, "bernoulli", horizon=2000.0, replications=5, seed=1)
    >>> bool(abs(res.cost - solve_exact(inst).cost) < res.ci95), res.replications
    (True, 5)
    >>> bool(res.standard_error < res.ci95)  # ci95 = t_{0.975, 4} * standard_error
    True
    """
    if _general_sizes(job_sizes):  # docs/multiskill.md#general-job-sizes
        from .general import simulate_general

        return simulate_general(
            instance, policy, job_sizes=job_sizes, horizon=horizon, warmup=warmup,
            replications=replications, seed=seed, keys=keys, start=start,
            table_size=table_size, progress=progress,
        )  # fmt: skip
    warmup = _check_args(instance, policy, horizon, warmup, replications, seed)
    policy = _resolve(policy)
    t0 = time.perf_counter()
    block = simulate_replications(
        instance, policy, range(replications), horizon=horizon, warmup=warmup, seed=seed,
        keys=keys, start=start, table_size=table_size, progress=progress,
    )  # fmt: skip
    if block.table_bound:
        _warn_table_bound(block, table_size)
    return SimulationResult.from_block(
        block, horizon=horizon, warmup=warmup, seed=seed, keys=keys,
        wall_seconds=time.perf_counter() - t0,
    )  # fmt: skip
