"""Paired, variance-reduced comparison of routing policies on one instance (ours).

Method: ``docs/multiskill.md#paired-policy-comparisons``; the statistics are those of
:mod:`queue_routing.paired` (``docs/README.md#paired-comparisons``).

Every policy is simulated (:func:`~.simulation.simulate`) with the same ``seed`` and ``keys``,
so replication ``r`` of every policy runs on the same random numbers: the same initial state
and the same uniformised event sequence (``docs/multiskill.md#common-random-numbers``). Every
replication starts from the stationary law of optimal Bernoulli routing, so the simulated
Bernoulli cost of a replication has the exact optimal Bernoulli cost ``B`` as its mean: it is
the control variate of every policy, and ``B`` the baseline of the ratios.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import AccuracyError
from ..paired import (
    PairedEstimate,
    PolicyEstimate,
    Selection,
    control_variate_estimate,
    mean_estimate,
    paired_samples,
    pairwise_differences,
    select_best,
)
from ..user_policy import DEFAULT_TABLE_SIZE, UserPolicy, policy_name
from .exact import solve_exact
from .model import Instance
from .simulation import (
    POLICIES,
    SimulationResult,
    TableBoundWarning,
    _check_args,
    _general_sizes,
    _resolve,
    simulate,
    simulate_policies,
)

__all__ = ["PolicyComparison", "PolicyEstimate", "compare_policies", "paired_comparison"]

BASELINE = "bernoulli"


@dataclass(frozen=True)
class PolicyComparison:
    """Paired comparison of policies on one instance (:func:`compare_policies`).

    Attributes
    ----------
    exact_bernoulli_cost:
        ``B``, the exact optimal Bernoulli cost ``sum_j c_j rho_j/(1 - rho_j)`` (cost per unit
        time; :func:`~.exact.solve_exact`), the baseline of every ratio.
    policies:
        ``{name: PolicyEstimate}`` in the order asked.
    differences:
        ``{(a, b): PairedEstimate of E[cost_a - cost_b]}`` (cost per unit time) for every pair
        with ``a`` before ``b``: the same estimator as the ratios (control variate or plain),
        on the per-replication differences.
    ranking:
        Policies by increasing :attr:`PolicyEstimate.ratio`.
    best:
        ``ranking[0]`` when it is separated from every other policy after Holm's correction
        (:func:`~queue_routing.paired.select_best`), else ``None`` ("not separated").
    selection:
        The Holm-adjusted p-values behind :attr:`best`.
    control_variate:
        Whether the simulated Bernoulli cost was used as a control variate.
    horizon, warmup:
        Measured time per replication and the discarded warm-up before it (time units).
    replications:
        ``R``, independent replications per policy (paired across policies).
    seed, keys:
        The stream identity shared by every policy (:func:`~.simulation.replication_states`).
    simulations:
        The :class:`~.simulation.SimulationResult` of every policy simulated (Bernoulli
        included, as the control, even when not asked).
    table_bound:
        ``{name: count}`` of every policy simulated: measured arrivals that found a server
        beyond a user policy's index table (:attr:`~.simulation.SimulationResult.table_bound`;
        0 for the built-ins). Nonzero only with ``on_table_bound="report"``.
    """

    exact_bernoulli_cost: float
    policies: dict[str, PolicyEstimate]
    differences: dict[tuple[str, str], PairedEstimate]
    ranking: tuple[str, ...]
    best: str | None
    selection: Selection = field(repr=False)
    control_variate: bool
    horizon: float
    warmup: float
    replications: int
    seed: int
    keys: tuple
    simulations: dict[str, SimulationResult] = field(repr=False, compare=False)
    table_bound: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON object: ``exact_bernoulli_cost``, ``policies`` (``cost``, ``ci95``,
        ``ratio``, ``ratio_ci95`` each), ``ranking`` and ``best`` (``None`` if not separated)."""
        return {
            "exact_bernoulli_cost": float(self.exact_bernoulli_cost),
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


def _resolve_policies(policies: Any) -> dict[str, str | UserPolicy]:
    """``{name: policy}`` in the order given: built-in names of :data:`POLICIES` and user
    policies (``"path.py:name"``, callables, :class:`~queue_routing.user_policy.UserPolicy`),
    each named as in the outputs (:func:`~queue_routing.user_policy.policy_name`)."""
    if isinstance(policies, str):
        policies = [p.strip() for p in policies.split(",") if p.strip()]
    policies = tuple(policies)
    if not policies:
        raise ValueError("policies must name at least one policy")
    for p in policies:
        if isinstance(p, str) and p not in POLICIES and ":" not in p:
            raise ValueError(
                f"policies must be among {', '.join(POLICIES)} or path/to/file.py:name; got {p!r}"
            )
    resolved = [_resolve(p) for p in policies]
    names = [policy_name(p) for p in resolved]
    if len(set(names)) != len(names):
        raise ValueError("policies must not repeat a policy")
    return dict(zip(names, resolved, strict=True))


def _check_policies(policies: Any) -> tuple[str, ...]:
    """The names of ``policies`` (:func:`_resolve_policies`; a user policy's file is loaded,
    so a missing one is reported here)."""
    return tuple(_resolve_policies(policies))


def _policy_names(policies: Any) -> tuple[str, ...]:
    """Distinct non-empty names (of built-ins or of user policies), without loading any."""
    if isinstance(policies, str):
        policies = [p.strip() for p in policies.split(",") if p.strip()]
    policies = tuple(policies)
    if not policies:
        raise ValueError("policies must name at least one policy")
    if not all(isinstance(p, str) and p for p in policies):
        raise ValueError(f"policies must be names (non-empty strings), got {policies!r}")
    if len(set(policies)) != len(policies):
        raise ValueError("policies must not repeat a policy")
    return policies


def compare_policies(
    instance: Instance,
    policies: Sequence[str] = POLICIES,
    *,
    horizon: float,
    warmup: float | None = None,
    replications: int = 10,
    seed: int = 0,
    keys: tuple = (),
    control_variate: bool = True,
    alpha: float = 0.05,
    progress: Callable[[], Any] | None = None,
    job_sizes: Any = None,
    table_size: int = DEFAULT_TABLE_SIZE,
    on_table_bound: str = "raise",
) -> PolicyComparison:
    """Paired comparison of ``policies`` on ``instance`` with common random numbers.

    Each policy (and Bernoulli routing, the control, even if not asked) is simulated on the
    same streams (``seed``, ``keys``; in lockstep, :func:`~.simulation.simulate_policies`,
    each exactly as :func:`~.simulation.simulate` would alone), from the stationary
    law of optimal Bernoulli routing (``start="bernoulli"``). With ``y_r`` the cost of
    replication ``r`` of a policy, ``x_r`` that of Bernoulli routing in the same replication
    and ``B`` the exact optimal Bernoulli cost (``E[x_r] = B`` exactly, the start being
    stationary for it), ``ratio`` is ``theta / B`` with ``theta`` the control-variate estimate
    of ``E[y]`` (:func:`~queue_routing.paired.control_variate_estimate`: ``ybar - beta (xbar -
    B)``, ``beta`` fitted on the replications, ``t`` interval with ``R - 2`` degrees of
    freedom) and its interval ``ci / B`` (``B`` has no error). Differences between policies use
    the same estimator on ``y_a - y_b``; the best is declared only where Holm-separated from
    every other policy (:func:`~queue_routing.paired.select_best`). Details and the reasons:
    ``docs/multiskill.md#paired-policy-comparisons``.

    Parameters
    ----------
    instance:
        The multi-skilled system.
    policies:
        Names from :data:`~.simulation.POLICIES` and user policies (``"path.py:name"``,
        callables ``index(server, jobs, instance)``,
        :class:`~queue_routing.user_policy.UserPolicy`; ``docs/README.md#your-own-policy``),
        a sequence or a comma-separated string.
    horizon, warmup:
        Measured time per replication and the warm-up before it (time units; warm-up
        default ``0.1 * horizon``), as in :func:`~.simulation.simulate`.
    replications:
        ``R >= 3`` paired replications (the control variate's interval has ``R - 2`` degrees
        of freedom).
    seed, keys:
        Root seed and job keys of the shared streams.
    control_variate:
        ``False`` for the plain paired estimators (ratio ``cost / B``, ``t`` with ``R - 1``
        degrees of freedom), e.g. to measure what the control adds.
    alpha:
        Family-wise level of the Holm correction behind ``best``.
    progress:
        Called after each replication of each policy (``None`` for silence).
    job_sizes:
        Job-size law of mean 1 (``None``/``"exponential"``: the uniformised simulator; any
        other law of :mod:`.sizes`: the event-driven :func:`~.general.simulate_general`).
        The start is stationary for optimal Bernoulli routing under every law (geometric
        counts, equilibrium residual works), and by the insensitivity of processor sharing
        ``B`` is the same, so the control variate applies unchanged
        (``docs/multiskill.md#general-job-sizes``).
    table_size, on_table_bound:
        User policies are tabulated for ``jobs = 0..table_size``. With ``"raise"`` (the
        default) a simulation in which an arrival found a server beyond the table raises
        :class:`~queue_routing.errors.AccuracyError`; ``"report"`` keeps it and counts those
        arrivals in :attr:`PolicyComparison.table_bound`.

    Examples
    --------
    On one class the exact costs are known (``stationary_cost``, the truncated chain):
    PI beats optimal Bernoulli routing by about 11%, and the paired run separates them.

    >>> from queue_routing.multiskill import Instance
    >>> from queue_routing.multiskill.markov import stationary_cost
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> res = compare_policies(inst, ["bernoulli", "pi"], horizon=2000.0, seed=1)
    >>> exact = stationary_cost(inst, "pi").cost / res.exact_bernoulli_cost
    >>> pi = res.policies["pi"]
    >>> bool(abs(pi.ratio - exact) < pi.ratio_ci95), res.ranking, res.best
    (True, ('pi', 'bernoulli'), 'pi')
    """
    resolved = _resolve_policies(policies)
    policies = tuple(resolved)
    if on_table_bound not in ("raise", "report"):
        raise ValueError(f"on_table_bound must be 'raise' or 'report', got {on_table_bound!r}")
    if isinstance(replications, int) and not isinstance(replications, bool) and replications < 3:
        raise ValueError(
            f"replications must be >= 3 (a control-variate interval has R - 2 degrees of "
            f"freedom), got {replications}"
        )
    exact = float(solve_exact(instance).cost)
    simulated = (BASELINE, *[p for p in policies if p != BASELINE])
    sims: dict[str, SimulationResult] = {}
    if _general_sizes(job_sizes):  # event by event, one policy at a time
        for policy in simulated:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TableBoundWarning)  # refused below instead
                sims[policy] = simulate(
                    instance,
                    resolved.get(policy, policy),
                    horizon=horizon,
                    warmup=warmup,
                    replications=replications,
                    seed=seed,
                    keys=keys,
                    start="bernoulli",
                    table_size=table_size,
                    progress=progress,
                    job_sizes=job_sizes,
                )
    else:  # the uniformised chain, every policy in one lockstep pass
        if warmup is None:
            warmup = 0.1 * horizon
        _check_args(instance, BASELINE, horizon, warmup, replications, seed)
        t0 = time.perf_counter()
        blocks = simulate_policies(
            instance, [resolved.get(p, p) for p in simulated], range(replications),
            horizon=horizon, warmup=warmup, seed=seed, keys=keys, start="bernoulli",
            table_size=table_size, progress=progress,
        )  # fmt: skip
        wall = time.perf_counter() - t0  # of the lockstep run of every policy
        for policy, block in blocks.items():
            sims[policy] = SimulationResult.from_block(
                block, horizon=horizon, warmup=warmup, seed=seed, keys=keys, wall_seconds=wall
            )
    for policy, sim in sims.items():
        if sim.table_bound and on_table_bound == "raise":
            raise AccuracyError(
                f"table_size: {sim.table_bound} measured arrivals under {policy} "
                f"found a server beyond the index table (x > {table_size}); raise table_size"
            )
    first = sims[BASELINE]
    return paired_comparison(
        exact,
        {p: sims[p].replication_costs for p in sims},
        policies,
        control_variate=control_variate,
        alpha=alpha,
        horizon=first.horizon,
        warmup=first.warmup,
        seed=first.seed,
        keys=first.keys,
        simulations=sims,
        table_bound={p: int(sims[p].table_bound) for p in sims},
    )


def paired_comparison(
    exact_bernoulli_cost: float,
    replication_costs: Mapping[str, Sequence[float]],
    policies: Sequence[str],
    *,
    control_variate: bool = True,
    alpha: float = 0.05,
    horizon: float,
    warmup: float,
    seed: int,
    keys: tuple = (),
    simulations: Mapping[str, SimulationResult] | None = None,
    table_bound: Mapping[str, int] | None = None,
) -> PolicyComparison:
    """The statistics of :func:`compare_policies` from the replications' costs alone.

    ``replication_costs[p][r]`` is the cost (per unit time) of replication ``r`` of policy
    ``p`` on the common streams of ``(seed, keys, r)``, for every policy of ``policies`` and
    for ``"bernoulli"`` (the control, even when not compared). This is what a study split
    into replication blocks reassembles (:mod:`queue_routing.workflow.chunks`): the paired
    estimators need every replication of an instance together, so the blocks' jobs write the
    costs and the aggregation computes the comparison here, with the same arithmetic as an unsplit
    :func:`compare_policies` (which calls this), hence the same bits. ``horizon``, ``warmup``,
    ``seed`` and ``keys`` are recorded in the result; ``simulations`` is empty when the
    comparison is made from costs. Policies are named as in the costs (built-in or user
    policies' names, :func:`~queue_routing.user_policy.policy_name`); ``table_bound`` records
    the counts of :attr:`PolicyComparison.table_bound` (empty when not known).
    """
    policies = _policy_names(policies)
    samples_of, replications = paired_samples(replication_costs, (BASELINE, *policies))
    exact = float(exact_bernoulli_cost)
    control = samples_of[BASELINE]
    estimates = {}
    for policy in policies:
        y = samples_of[policy]
        plain = mean_estimate(y)
        if not control_variate:
            theta = plain
        elif policy == BASELINE:  # its own control: theta = B exactly
            theta = PairedEstimate(exact, 0.0, 0.0, replications - 2, replications)
        else:
            theta = control_variate_estimate(y, control, exact)
        estimates[policy] = PolicyEstimate(
            policy=policy,
            cost=plain.estimate,
            ci95=plain.ci95,
            standard_error=plain.standard_error,
            ratio=theta.estimate / exact,
            ratio_ci95=theta.ci95 / exact,
            ratio_standard_error=theta.standard_error / exact,
        )
    samples = {p: samples_of[p] for p in policies}
    if control_variate:
        differences = pairwise_differences(samples, control, exact)
    else:
        differences = pairwise_differences(samples)
    selection = select_best(
        {p: estimates[p].ratio for p in policies}, differences, confidence=1.0 - alpha
    )
    return PolicyComparison(
        exact_bernoulli_cost=exact,
        policies=estimates,
        differences=differences,
        ranking=selection.ranking,
        best=selection.best,
        selection=selection,
        control_variate=bool(control_variate),
        horizon=float(horizon),
        warmup=float(warmup),
        replications=replications,
        seed=int(seed),
        keys=tuple(keys),
        simulations=dict(simulations or {}),
        table_bound={p: int(v) for p, v in (table_bound or {}).items()},
    )
