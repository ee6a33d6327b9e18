"""Paired, variance-reduced comparison of admission and routing policies on one instance (ours).

Method: ``docs/deadlines.md#paired-policy-comparisons``; the statistics of differences, Holm
and the best are those of :mod:`queue_routing.paired` (``docs/README.md#paired-comparisons``).

Every policy is simulated (:func:`~.policies.simulate_policy`) with the same ``seed`` and
``keys``, so replication ``r`` of every policy runs on the same jobs: the same arrival times,
the same work and the same deadlines (``docs/deadlines.md#common-random-numbers``). PI, the
paper's proposed policy, is the baseline of the ratios; no policy has an exact cost that
could serve as a control variate for every ``n`` (the simulated cost of a replication that
starts empty is not unbiased for the stationary cost of any policy), so the ratio is the
paired ratio of means with a delta-method interval
(:func:`~queue_routing.paired.ratio_of_means`). The result is the
:class:`~queue_routing.paired.PolicyComparison` of both parts, with ``baseline="pi"``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..checks import confidence_level, integer, time_length
from ..errors import AccuracyError, ArgumentError
from ..paired import (
    PolicyComparison,
    PolicyEstimate,
    on_table_bound_choice,
    paired_samples,
    pairwise_differences,
    ratio_of_means,
    simulated_run,
)
from ..user_policy import DEFAULT_TABLE_SIZE, UserPolicy, resolve_policies
from .indices import MAX_UPTO
from .model import Instance
from .policies import (
    INDEX_POLICIES,
    TableBoundWarning,
    check_instance,
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


def compare_policies(
    instance: Instance,
    policies: Sequence[str] = COMPARED_POLICIES,
    *,
    horizon: float = 20000.0,
    warmup: float | None = None,
    replications: int = 10,
    seed: int = 0,
    keys: tuple = (),
    table_size: int = DEFAULT_TABLE_SIZE,
    confidence: float = 0.95,
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
    confidence:
        Family-wise confidence of the Holm correction behind ``best`` (a best is declared
        wrongly with probability at most ``1 - confidence``).
    progress:
        Called after each replication of each policy (``None`` for silence).
    on_table_bound:
        ``"raise"`` (default): refuse when the end of an index table may have decided a
        measured arrival; ``"report"``: keep the simulation of the truncated policy and count
        those arrivals in :attr:`~queue_routing.paired.PolicyComparison.table_bound`, for a
        study that shows the
        count next to the numbers (a policy whose index stays below the rejection cost on a
        slow cluster admits to it at any queue length, so no table size suffices there).

    Returns
    -------
    PolicyComparison
        With ``baseline="pi"`` and ``table_size``.

    Raises
    ------
    ~queue_routing.errors.ArgumentError
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
    check_instance(instance)
    resolved = resolve_policies(policies, COMPARED_POLICIES)
    policies = tuple(resolved)
    horizon = time_length("horizon", horizon)
    warmup = 0.1 * horizon if warmup is None else time_length("warmup", warmup, allow_zero=True)
    replications = integer("replications", replications, 2)
    seed = integer("seed", seed, 0)
    table_size = integer("table_size", table_size, 1, MAX_UPTO)
    confidence = confidence_level(confidence)
    if not isinstance(keys, tuple | list):
        raise ArgumentError("keys", f"keys must be a tuple, got {type(keys).__name__}")
    on_table_bound = on_table_bound_choice(on_table_bound)
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
    return paired_comparison(
        {p: sims[p].replication_costs for p in sims},
        policies,
        confidence=confidence,
        table_size=table_size,
        **simulated_run(sims, BASELINE),
    )


def paired_comparison(
    replication_costs: Mapping[str, Sequence[float]],
    policies: Sequence[str],
    *,
    confidence: float = 0.95,
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
    policies = tuple(resolve_policies(policies, COMPARED_POLICIES, load=False))
    samples, _ = paired_samples(replication_costs, (BASELINE, *policies))
    for p, v in samples.items():
        if not np.all(np.isfinite(v)):
            raise AccuracyError(f"the simulated cost rate of {p} is not finite ({v.mean()})")
    base = samples[BASELINE]
    return PolicyComparison.from_samples(
        samples,
        {p: ratio_of_means(samples[p], base) for p in policies},
        pairwise_differences({p: samples[p] for p in policies}),
        rank_by="cost",
        confidence=confidence,
        baseline=BASELINE,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=keys,
        table_size=table_size,
        table_bound=table_bound,
        simulations=simulations,
    )
