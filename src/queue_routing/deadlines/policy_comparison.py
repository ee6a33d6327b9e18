"""Paired, variance-reduced comparison of admission and routing policies on one instance (ours).

Method: ``docs/deadlines.md#paired-policy-comparisons``; the statistics of differences, Holm
and the best are those of :mod:`queue_routing.paired` (``docs/README.md#paired-comparisons``).

Every policy is simulated (:func:`~.policies.simulate_policy`) with the same ``seed`` and
``keys``, so replication ``r`` of every policy runs on the same jobs: the same arrival times,
the same work and the same deadlines (``docs/deadlines.md#common-random-numbers``). PI, the
paper's proposed policy, is the baseline of the ratios; no policy has an exact cost that
could serve as a control variate for every ``n`` (the simulated cost of a replication that
starts empty is not unbiased for the stationary cost of any policy), so the ratio is the
paired ratio of means with a delta-method interval (:func:`ratio_of_means`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import AccuracyError
from ..paired import (
    PairedEstimate,
    PolicyEstimate,
    Selection,
    mean_estimate,
    paired_samples,
    pairwise_differences,
    ratio_of_means,
    select_best,
)
from ..user_policy import UserPolicy, policy_name
from .indices import MAX_UPTO
from .model import Instance, _show
from .policies import (
    INDEX_POLICIES,
    PolicyError,
    TableBoundWarning,
    _check_instance,
    _check_int,
    _check_time,
    _policy_or_user,
    index_table,
    simulate_policy,
)
from .simulation import SimulationResult
from .splitting import optimal_split

__all__ = [
    "BASELINE",
    "COMPARED_POLICIES",
    "PolicyComparison",
    "PolicyEstimate",
    "compare_policies",
    "paired_comparison",
]

#: The baseline of every ratio: PI, the paper's proposed policy.
BASELINE = "pi"
#: The policies :func:`compare_policies` can simulate (``"optimal"`` is exact-only).
COMPARED_POLICIES = ("bs", *INDEX_POLICIES)


@dataclass(frozen=True)
class PolicyComparison:
    """Paired comparison of policies on one instance (:func:`compare_policies`).

    Attributes
    ----------
    baseline:
        ``"pi"``, the denominator of every ratio.
    policies:
        ``{name: PolicyEstimate}`` in the order asked.
    differences:
        ``{(a, b): PairedEstimate of E[cost_a - cost_b]}`` (cost per unit time) for every pair
        with ``a`` before ``b``, from the per-replication differences
        (:func:`~queue_routing.paired.pairwise_differences`, ``R - 1`` degrees of freedom).
    ranking:
        Policies by increasing :attr:`PolicyEstimate.cost` (the same order as by ratio).
    best:
        ``ranking[0]`` when it is separated from every other policy after Holm's correction
        (:func:`~queue_routing.paired.select_best`), else ``None`` ("not separated").
    selection:
        The Holm-adjusted p-values behind :attr:`best`.
    horizon, warmup:
        Measured time per replication and the discarded warm-up before it (time units).
    replications:
        ``R``, independent replications per policy (paired across policies).
    seed, keys:
        The stream identity shared by every policy
        (:func:`~.simulation.replication_states`).
    table_size:
        Index tables cover ``x = 0..table_size`` jobs per cluster.
    table_bound:
        ``{name: count}``: measured arrivals whose decision the end of the policy's index
        table may have changed (a cluster beyond it counts as full). Always 0 with
        ``on_table_bound="raise"``; with ``"report"``, a nonzero count means the estimates of
        that policy are those of its truncated version (and, for PI, every ratio's baseline).
    simulations:
        The :class:`~.simulation.SimulationResult` of every policy simulated (PI included, as
        the baseline, even when not asked).
    """

    baseline: str
    policies: dict[str, PolicyEstimate]
    differences: dict[tuple[str, str], PairedEstimate]
    ranking: tuple[str, ...]
    best: str | None
    selection: Selection = field(repr=False)
    horizon: float
    warmup: float
    replications: int
    seed: int
    keys: tuple
    table_size: int
    table_bound: dict[str, int]
    simulations: dict[str, SimulationResult] = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON object: ``baseline``, ``policies`` (``cost``, ``ci95``, ``ratio``,
        ``ratio_ci95`` each), ``ranking`` and ``best`` (``None`` if not separated)."""
        return {
            "baseline": self.baseline,
            "policies": {
                name: {
                    "cost": float(e.cost),
                    "ci95": float(e.ci95),
                    "ratio": float(e.ratio),
                    "ratio_ci95": float(e.ratio_ci95),
                }
                for name, e in self.policies.items()
            },
            "ranking": list(self.ranking),
            "best": self.best,
        }


def _resolve_policies(policies: Any, *, load: bool = True) -> dict[str, str | UserPolicy]:
    """``{name: policy}`` in the order given: names of :data:`COMPARED_POLICIES` and user
    policies (``"path.py:name"``, callables, :class:`~queue_routing.user_policy.UserPolicy`;
    ``docs/README.md#your-own-policy``), named as in the outputs. With ``load=False`` (the
    statistics from costs) any other name is kept as a user policy's name, unloaded."""
    if isinstance(policies, str):
        policies = [p.strip() for p in policies.split(",") if p.strip()]
    if not isinstance(policies, Sequence):
        raise PolicyError(
            "policies", f"policies must be a sequence of names, got {_show(policies)}"
        )
    policies = tuple(policies)
    if not policies:
        raise PolicyError("policies", "policies must name at least one policy")
    resolved = {}
    for p in policies:
        if isinstance(p, str) and p in COMPARED_POLICIES:
            q = p
        elif not load and isinstance(p, str) and p:
            q = p  # a user policy's name in the costs
        elif load and (not isinstance(p, str) or ":" in p):
            q = _policy_or_user(p, COMPARED_POLICIES)
        else:
            raise PolicyError(
                "policies",
                f"policies must be among {', '.join(COMPARED_POLICIES)} or "
                f"path/to/file.py:name; got {_show(p)}",
            )
        name = policy_name(q)
        if name in resolved:
            raise PolicyError("policies", "policies must not repeat a policy")
        resolved[name] = q
    return resolved


def _check_policies(policies: Any) -> tuple[str, ...]:
    """The names of ``policies`` (:func:`_resolve_policies`; user policies are loaded)."""
    return tuple(_resolve_policies(policies))


def compare_policies(
    instance: Instance,
    policies: Sequence[str] = COMPARED_POLICIES,
    *,
    horizon: float = 20000.0,
    warmup: float | None = None,
    replications: int = 10,
    seed: int = 0,
    keys: tuple = (),
    table_size: int = 400,
    alpha: float = 0.05,
    progress: Callable[..., Any] | None = None,
    on_table_bound: str = "raise",
) -> PolicyComparison:
    """Paired comparison of ``policies`` on ``instance`` with common random numbers.

    Each policy (and PI, the baseline, even if not asked) is simulated by
    :func:`~.policies.simulate_policy` on the same streams (``seed``, ``keys``), so
    replication ``r`` of every policy sees the same jobs. With ``y_r`` a policy's cost in
    replication ``r`` and ``x_r`` PI's: ``cost`` is ``ybar`` with its ``t`` interval;
    ``ratio`` is ``ybar / xbar`` with the delta-method interval of :func:`ratio_of_means`
    (``R - 1`` degrees of freedom); differences ``E[y^a - y^b]`` are the means of the
    per-replication differences; the best is declared only where Holm-separated from every
    other policy (:func:`~queue_routing.paired.select_best`). Details and the reasons:
    ``docs/deadlines.md#paired-policy-comparisons``.

    Parameters
    ----------
    instance:
        The multicluster instance (any ``n``).
    policies:
        Names from :data:`COMPARED_POLICIES` and user index policies (``"path.py:name"``,
        callables ``index(server, jobs, instance)``,
        :class:`~queue_routing.user_policy.UserPolicy`; ``docs/README.md#your-own-policy``),
        a sequence or a comma-separated string.
    horizon, warmup:
        Measured time per replication and the warm-up before it (time units; warm-up
        default ``0.1 * horizon``); every replication starts empty.
    replications:
        ``R >= 2`` paired replications.
    seed, keys:
        Root seed and job keys of the shared streams.
    table_size:
        Index tables over ``x = 0..table_size`` (beyond, a cluster counts as full).
    alpha:
        Family-wise level of the Holm correction behind ``best``.
    progress:
        Called after each replication of each policy (``None`` for silence).
    on_table_bound:
        ``"raise"`` (default): refuse when the end of an index table may have decided a
        measured arrival; ``"report"``: keep the simulation of the truncated policy and count
        those arrivals in :attr:`PolicyComparison.table_bound`, for a study that shows the
        count next to the numbers (a policy whose index stays below the rejection cost on a
        slow cluster admits to it at any queue length, so no table size suffices there).

    Raises
    ------
    PolicyError
        For a bad argument (the message starts with its name).
    ~queue_routing.errors.AccuracyError
        If the end of an index table may have decided a measured arrival (raise
        ``table_size``) and ``on_table_bound="raise"``, or a simulated cost is not finite.

    Examples
    --------
    On two clusters the exact costs of the truncated chain are the reference; PI's paired
    ratio interval for BS covers the exact ratio, and PI is separated from BS:

    >>> from queue_routing.deadlines import Instance, evaluate
    >>> inst = Instance.from_dict({"arrival_rate": 3.0, "servers": [3, 2],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> res = compare_policies(inst, ["bs", "pi"], horizon=4000.0, table_size=60, seed=1)
    >>> exact = evaluate(inst, "bs").cost / evaluate(inst, "pi").cost
    >>> bs = res.policies["bs"]
    >>> bool(abs(bs.ratio - exact) < bs.ratio_ci95), res.ranking, res.best
    (True, ('pi', 'bs'), 'pi')
    """
    _check_instance(instance)
    resolved = _resolve_policies(policies)
    policies = tuple(resolved)
    horizon = _check_time("horizon", horizon)
    warmup = 0.1 * horizon if warmup is None else _check_time("warmup", warmup, allow_zero=True)
    replications = _check_int("replications", replications, 2)
    seed = _check_int("seed", seed, 0)
    table_size = _check_int("table_size", table_size, 1, MAX_UPTO)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise PolicyError("alpha", f"alpha must be in (0, 1), got {_show(alpha)}")
    if not isinstance(keys, tuple | list):
        raise PolicyError("keys", f"keys must be a tuple, got {type(keys).__name__}")
    if on_table_bound not in ("raise", "report"):
        raise PolicyError(
            "on_table_bound",
            f"on_table_bound must be 'raise' or 'report', got {_show(on_table_bound)}",
        )
    keys = tuple(keys)
    run = {
        "horizon": horizon,
        "warmup": warmup,
        "replications": replications,
        "seed": seed,
        "keys": keys,
        "table_size": table_size,
        "progress": progress,
    }
    split = optimal_split(instance)  # solved once: BS routes by it, PI's index is built on it
    sims: dict[str, SimulationResult] = {}
    for policy in (BASELINE, *[p for p in policies if p != BASELINE]):
        given = {"split": split}
        if isinstance(resolved.get(policy), UserPolicy):
            given = {}  # tabulated by simulate_policy
        elif policy != "bs":  # warns if not indexable, as evaluate does
            given = {"table": index_table(instance, policy, table_size, split=split)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TableBoundWarning)  # refused below instead
            res = simulate_policy(instance, resolved.get(policy, policy), **given, **run)
        if res.table_bound and on_table_bound == "raise":
            raise AccuracyError(
                f"table_size: the end of the index table of {policy} (x <= {table_size}) may "
                f"have decided {res.table_bound} measured arrivals (a cluster beyond it counts "
                "as full); raise table_size"
            )
        if not math.isfinite(res.cost):
            raise AccuracyError(f"the simulated cost rate of {policy} is not finite ({res.cost})")
        sims[policy] = res
    first = sims[BASELINE]
    return paired_comparison(
        {p: sims[p].replication_costs for p in sims},
        policies,
        alpha=alpha,
        horizon=first.horizon,
        warmup=first.warmup,
        seed=first.seed,
        keys=first.keys,
        table_size=table_size,
        table_bound={p: int(sims[p].table_bound) for p in sims},
        simulations=sims,
    )


def paired_comparison(
    replication_costs: Mapping[str, Sequence[float]],
    policies: Sequence[str],
    *,
    alpha: float = 0.05,
    horizon: float,
    warmup: float,
    seed: int,
    keys: tuple = (),
    table_size: int,
    table_bound: Mapping[str, int],
    simulations: Mapping[str, SimulationResult] | None = None,
) -> PolicyComparison:
    """The statistics of :func:`compare_policies` from the replications' costs alone.

    ``replication_costs[p][r]`` is the cost rate of replication ``r`` of policy ``p`` on the
    common streams ``(seed, keys, r)``, for every policy of ``policies`` and for PI (the
    baseline, even when not compared); ``table_bound[p]`` the policy's count of arrivals
    decided by the end of its index table (all replications). A study split into replication
    blocks (:mod:`queue_routing.workflow.chunks`) reassembles the costs and calls this; an unsplit
    :func:`compare_policies` calls it too, so both give the same bits. ``simulations`` is
    empty when the comparison is made from costs. Policies are named as in the costs (user
    policies by their names, :func:`~queue_routing.user_policy.policy_name`, not loaded).
    """
    policies = tuple(_resolve_policies(policies, load=False))
    samples_of, replications = paired_samples(replication_costs, (BASELINE, *policies))
    for p, v in samples_of.items():
        if not np.all(np.isfinite(v)):
            raise AccuracyError(f"the simulated cost rate of {p} is not finite ({v.mean()})")
    base = samples_of[BASELINE]
    estimates = {}
    for policy in policies:
        y = samples_of[policy]
        plain = mean_estimate(y)
        ratio = ratio_of_means(y, base)
        estimates[policy] = PolicyEstimate(
            policy=policy,
            cost=plain.estimate,
            ci95=plain.ci95,
            standard_error=plain.standard_error,
            ratio=ratio.estimate,
            ratio_ci95=ratio.ci95,
            ratio_standard_error=ratio.standard_error,
        )
    differences = pairwise_differences({p: samples_of[p] for p in policies})
    selection = select_best(
        {p: estimates[p].cost for p in policies}, differences, confidence=1.0 - alpha
    )
    return PolicyComparison(
        baseline=BASELINE,
        policies=estimates,
        differences=differences,
        ranking=selection.ranking,
        best=selection.best,
        selection=selection,
        horizon=float(horizon),
        warmup=float(warmup),
        replications=replications,
        seed=int(seed),
        keys=tuple(keys),
        table_size=int(table_size),
        table_bound={p: int(table_bound[p]) for p in table_bound},
        simulations=dict(simulations or {}),
    )
