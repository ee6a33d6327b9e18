"""Paired, variance-reduced comparison of routing policies on one instance (ours).

Method: ``docs/multiskill.md#paired-policy-comparisons``; the statistics are those of
:mod:`queue_routing.paired` (``docs/README.md#paired-comparisons``).

Every policy is simulated (:func:`~.simulation.simulate`) with the same ``seed`` and ``keys``,
so replication ``r`` of every policy runs on the same random numbers: the same initial state
and the same uniformised event sequence (``docs/multiskill.md#common-random-numbers``). Every
replication starts from the stationary law of optimal Bernoulli routing, so the simulated
Bernoulli cost of a replication has the exact optimal Bernoulli cost ``B`` as its mean; ``B``
is the baseline of the ratios. The ratios and differences are regression estimates on
controls of known mean (:data:`CONTROLS`, :func:`known_mean_controls`,
``docs/multiskill.md#control-variates-with-known-means``): by default each policy's own
martingale, and the initial state too when the start can outlast the warm-up
(:func:`default_controls`); the simulated Bernoulli cost on request. The result is the
:class:`~queue_routing.paired.PolicyComparison` of both parts, with ``baseline="bernoulli"``,
``baseline_cost=B`` and the ``controls`` used.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from ..checks import confidence_level
from ..errors import AccuracyError, ArgumentError
from ..paired import (
    PairedEstimate,
    PolicyComparison,
    PolicyEstimate,
    control_variate_estimate,
    mean_estimate,
    on_table_bound_choice,
    paired_samples,
    pairwise_differences,
    regression_estimate,
    simulated_run,
)
from ..user_policy import DEFAULT_TABLE_SIZE, resolve_policies
from .exact import solve_exact
from .general import GeneralSimulationResult, run_general
from .model import Instance
from .policies import POLICIES, arrival_rates, policy_weights
from .replications import (
    ReplicationBlock,
    RunSpec,
    SimulationResult,
    check_args,
    general_law,
    replication_indices,
)
from .result import Solution
from .simulation import CONTROL_BLOCKS, run_policies

__all__ = ["PolicyComparison", "PolicyEstimate", "compare_policies", "paired_comparison"]

#: The baseline of every ratio: optimal Bernoulli routing, whose exact cost ``B`` divides
#: the ratios and whose simulated cost is the control variate.
BASELINE = "bernoulli"


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
    confidence: float = 0.95,
    progress: Callable[[], Any] | None = None,
    job_sizes: Any = None,
    table_size: int = DEFAULT_TABLE_SIZE,
    on_table_bound: str = "raise",
    controls: Sequence[str] | None = None,
) -> PolicyComparison:
    """Paired comparison of ``policies`` on ``instance`` with common random numbers.

    Each policy (and Bernoulli routing, the control, even if not asked) is simulated on the
    same streams (``seed``, ``keys``; in lockstep, :func:`~.simulation.simulate_policies`,
    each exactly as :func:`~.simulation.simulate` would alone), from the stationary
    law of optimal Bernoulli routing (``start="bernoulli"``). With ``y_r`` the cost of
    replication ``r`` of a policy and ``B`` the exact optimal Bernoulli cost, ``ratio`` is
    ``theta / B`` and its interval ``ci / B`` (``B`` has no error), ``theta`` the regression
    estimate of ``E[y]`` (:func:`~queue_routing.paired.regression_estimate`, ``t`` interval with
    ``R - 1 - q`` degrees of freedom) on the ``q`` controls of known mean 0 of ``controls``
    (default :func:`default_controls`: the policy's own ``martingale``, with the
    ``initial_state`` when the instance relaxes more slowly than the warm-up; any of
    :data:`KNOWN_CONTROLS`, which adds ``bernoulli_cost``, the simulated Bernoulli cost minus
    ``B``; ``docs/multiskill.md#control-variates-with-known-means``).
    Differences between policies use the same estimator on ``y_a - y_b`` with the difference
    of the two policies' martingales in place of one (the same ``q``). With fewer than
    :data:`MIN_REPLICATIONS` replications, or job sizes that are not exponential (no
    uniformised kernel, no martingale), the Bernoulli cost is the only control
    (:func:`~queue_routing.paired.control_variate_estimate`, ``R - 2`` degrees of freedom).
    The best is declared only where Holm-separated from every other policy
    (:func:`~queue_routing.paired.select_best`). Details and the reasons:
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
        ``R >= 3`` paired replications (the Bernoulli cost alone as control: ``R - 2`` degrees
        of freedom); ``R >=`` :data:`MIN_REPLICATIONS` for the controls of known mean.
    seed, keys:
        Root seed and job keys of the shared streams.
    control_variate:
        ``False`` for the plain paired estimators (ratio ``cost / B``, ``t`` with ``R - 1``
        degrees of freedom), e.g. to measure what the control adds.
    confidence:
        Family-wise confidence of the Holm correction behind ``best`` (a best is declared
        wrongly with probability at most ``1 - confidence``).
    progress:
        Called after each replication of each policy (``None`` for silence).
    job_sizes:
        Job-size law of mean 1 (``None``/``"exponential"``: the uniformised simulator; any
        other law of :mod:`.sizes`: the event-driven simulator of :mod:`.general`, one
        policy at a time).
        The start is stationary for optimal Bernoulli routing under every law (geometric
        counts, equilibrium residual works), and by the insensitivity of processor sharing
        ``B`` is the same, so the control variate applies unchanged
        (``docs/multiskill.md#general-job-sizes``).
    table_size, on_table_bound:
        User policies are tabulated for ``jobs = 0..table_size``. With ``"raise"`` (the
        default) a simulation in which an arrival found a server beyond the table raises
        :class:`~queue_routing.errors.AccuracyError`; ``"report"`` keeps it and counts those
        arrivals in :attr:`~queue_routing.paired.PolicyComparison.table_bound`.
    controls:
        The controls of known mean used when ``R >=`` :data:`MIN_REPLICATIONS` and the
        sizes are exponential, in regression order: names of :data:`KNOWN_CONTROLS` (``None``:
        :func:`default_controls` of the instance and warm-up).

    Returns
    -------
    PolicyComparison
        With ``baseline="bernoulli"``, ``baseline_cost`` ``B`` (its JSON key
        ``exact_bernoulli_cost``), ``control_variate``, ``controls`` (their names, JSON key
        ``controls``) and ``table_size``.

    Examples
    --------
    On one class the exact costs are known (``stationary_cost``, the truncated chain):
    PI beats optimal Bernoulli routing by about 11%, and the paired run separates them.

    >>> from queue_routing.multiskill import Instance
    >>> from queue_routing.multiskill.markov import stationary_cost
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> res = compare_policies(inst, ["bernoulli", "pi"], horizon=2000.0, seed=1)
    >>> exact = stationary_cost(inst, "pi").cost / res.baseline_cost
    >>> pi = res.policies["pi"]
    >>> bool(abs(pi.ratio - exact) < pi.ratio_ci95), res.ranking, res.best
    (True, ('pi', 'bernoulli'), 'pi')
    """
    resolved = resolve_policies(policies, POLICIES)
    policies = tuple(resolved)
    confidence = confidence_level(confidence)
    on_table_bound = on_table_bound_choice(on_table_bound)
    if isinstance(replications, int) and not isinstance(replications, bool) and replications < 3:
        raise ArgumentError(
            "replications",
            f"replications must be >= 3 (a control-variate interval has R - 2 degrees of "
            f"freedom), got {replications}",
        )
    warmup = check_args(instance, horizon, warmup, replications, seed)
    if controls is None:
        controls = default_controls(instance, warmup)
    controls = control_names(controls)
    law = general_law(job_sizes)
    spec = RunSpec.checked(
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=keys,
        start="bernoulli",
        table_size=table_size,
    )
    indices = replication_indices(range(replications))
    exact = float(solve_exact(instance).cost)
    simulated = [resolved.get(p, p) for p in (BASELINE, *[p for p in policies if p != BASELINE])]
    sims: dict[str, SimulationResult] = {}
    known: dict[str, Any] = {}
    if law is None:  # the uniformised chain, every policy in one lockstep pass
        t0 = time.perf_counter()
        blocks = run_policies(instance, simulated, indices, spec, progress)
        wall = time.perf_counter() - t0  # of the lockstep run of every policy
        solution = solve_exact(instance)
        sums = {p: known_mean_controls(instance, b, solution) for p, b in blocks.items()}
        known = {
            "martingales": {p: c["martingale"] for p, c in sums.items()},
            "initial_state": sums[BASELINE]["initial_state"],
        }
        for name, block in blocks.items():
            sims[name] = SimulationResult.of_run(block, spec, wall_seconds=wall)
    else:  # event by event, one policy at a time
        for policy in simulated:
            t0 = time.perf_counter()
            block = run_general(instance, policy, indices, law, spec, progress)
            wall = time.perf_counter() - t0
            sims[block.policy] = GeneralSimulationResult.of_run(block, spec, wall_seconds=wall)
    for name, sim in sims.items():
        if sim.table_bound and on_table_bound == "raise":
            raise AccuracyError(
                f"table_size: {sim.table_bound} measured arrivals under {name} "
                f"found a server beyond the index table (x > {table_size}); raise table_size"
            )
    return paired_comparison(
        exact,
        {p: sims[p].replication_costs for p in sims},
        policies,
        control_variate=control_variate,
        confidence=confidence,
        table_size=table_size,
        controls=controls,
        **known,
        **simulated_run(sims, BASELINE),
    )


def paired_comparison(
    exact_bernoulli_cost: float,
    replication_costs: Mapping[str, Sequence[float]],
    policies: Sequence[str],
    *,
    control_variate: bool = True,
    confidence: float = 0.95,
    horizon: float,
    warmup: float,
    seed: int,
    keys: tuple = (),
    simulations: Mapping[str, SimulationResult] | None = None,
    table_bound: Mapping[str, int] | None = None,
    table_size: int | None = None,
    martingales: Mapping[str, Sequence[float]] | None = None,
    initial_state: Sequence[float] | None = None,
    controls: Sequence[str] | None = None,
) -> PolicyComparison:
    """The statistics of :func:`compare_policies` from the replications' costs alone.

    ``replication_costs[p][r]`` is the cost (per unit time) of replication ``r`` of policy
    ``p`` on the common streams of ``(seed, keys, r)``, for every policy of ``policies`` and
    for ``"bernoulli"`` (the control, even when not compared). This is what a study split
    into replication blocks reassembles (:mod:`queue_routing.workflow.chunks`): the paired
    estimators need every replication of an instance together, so the blocks' jobs write the
    costs and the aggregation computes the comparison here, with the same arithmetic as an
    unsplit :func:`compare_policies` (which calls this), hence the same bits. ``horizon``,
    ``warmup``, ``seed``, ``keys`` and ``table_size`` are recorded in the result;
    ``simulations`` is empty when the comparison is made from costs. Policies are named as
    in the costs (built-in or user policies' names,
    :func:`~queue_routing.user_policy.policy_name`, not loaded); ``table_bound`` records the
    counts of :attr:`~queue_routing.paired.PolicyComparison.table_bound` (empty when not
    known).

    ``martingales`` (``{policy: one value per replication}`` for every policy and
    ``"bernoulli"``) and ``initial_state`` (one value per replication) are the controls of
    :func:`known_mean_controls`; with those ``controls`` needs (names of
    :data:`KNOWN_CONTROLS`; ``None``: :data:`CONTROLS`, the martingale alone) and ``R >=``
    :data:`MIN_REPLICATIONS` the ratios and differences are the regression estimates on
    ``controls`` (``docs/multiskill.md#control-variates-with-known-means``), else on the
    Bernoulli cost alone (as when only the costs are known); the result's ``controls``
    names those used.
    """
    controls = control_names(controls)
    policies = tuple(resolve_policies(policies, POLICIES, load=False))
    samples, _ = paired_samples(replication_costs, (BASELINE, *policies))
    exact = float(exact_bernoulli_cost)
    replications = samples[BASELINE].size
    full = (
        control_variate
        and martingales is not None
        and (initial_state is not None or "initial_state" not in controls)
        and replications >= MIN_REPLICATIONS
    )
    if full:
        ratios, differences = _controlled(
            samples, policies, exact, controls, martingales, initial_state
        )
        used = controls
    else:
        control = samples[BASELINE] if control_variate else None
        ratios = {
            p: bernoulli_ratio(samples[p], control, exact, own=p == BASELINE) for p in policies
        }
        differences = pairwise_differences({p: samples[p] for p in policies}, control, exact)
        used = ("bernoulli_cost",) if control_variate else ()
    return PolicyComparison.from_samples(
        samples,
        ratios,
        differences,
        rank_by="ratio",
        confidence=confidence,
        baseline=BASELINE,
        baseline_cost=exact,
        control_variate=control_variate,
        controls=used,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=keys,
        simulations=simulations,
        table_bound=table_bound,
        table_size=table_size,
    )


def bernoulli_ratio(
    samples: np.ndarray, control: np.ndarray | None, exact: float, *, own: bool = False
) -> PairedEstimate:
    """The paired estimate of ``E[y] / B`` from a policy's costs ``y`` (``samples``, one per
    replication, cost per unit time) and ``B`` = ``exact``, the exact optimal Bernoulli cost
    (``docs/multiskill.md#paired-policy-comparisons``).

    With the control (``control``: the simulated Bernoulli costs of the same replications,
    of mean ``B``), ``theta`` is the control-variate estimate of ``E[y]``
    (:func:`~queue_routing.paired.control_variate_estimate`, ``R - 2`` degrees of freedom),
    and exactly ``B`` with no error for Bernoulli routing itself (``own``: its own control);
    without it (``control=None``), the plain mean. The ratio is ``theta / B``, its interval
    ``theta``'s divided by ``B`` (which has no error).

    >>> bernoulli_ratio(np.array([2.0, 3.0, 4.0]), None, 2.0).estimate
    1.5
    """
    replications = len(samples)
    if control is None:
        theta = mean_estimate(samples)
    elif own:
        theta = PairedEstimate(exact, 0.0, 0.0, replications - 2, replications)
    else:
        theta = control_variate_estimate(samples, control, exact)
    return theta.divided_by(exact)


#: The controls a comparison's ratios and differences can use, all of mean 0
#: (``docs/multiskill.md#control-variates-with-known-means``): the policy's own
#: ``martingale`` (a difference ``a - b``: ``martingale_a - martingale_b``), the
#: ``initial_state`` and the simulated ``bernoulli_cost`` (minus ``B``).
KNOWN_CONTROLS = ("martingale", "initial_state", "bernoulli_cost")
#: The default controls of an instance that forgets its start within the warm-up: the
#: martingale alone (:func:`default_controls`). The Bernoulli cost adds little beside it and
#: the heavy-tailed ``initial_state`` widens intervals at ``R = 10`` where the start no
#: longer matters (``docs/multiskill.md#control-variates-with-known-means``).
CONTROLS = ("martingale",)
#: The default controls of an instance whose slowest server relaxes more slowly than the
#: warm-up (:func:`default_controls`): the start still weighs on the measured window.
SLOW_CONTROLS = ("martingale", "initial_state")
#: Fewest replications for which a comparison uses its controls of known mean (up to three:
#: ``R - 4 >= 4`` degrees of freedom); fewer use the Bernoulli cost alone.
MIN_REPLICATIONS = 8


def relaxation_time(instance: Instance, exact: Solution | None = None) -> float:
    """The relaxation time (time units) of the slowest server under optimal Bernoulli routing:
    ``max_j 1 / (sqrt(mu_j) - sqrt(lambda_j))^2 = max_j 1 / (mu_j (1 - sqrt(rho_j))^2)``, the
    inverse spectral gap of the M/M/1 queue with arrival rate ``lambda_j`` and service rate
    ``mu_j`` (per unit time), ``rho_j`` the loads of ``exact`` (:func:`~.exact.solve_exact`,
    computed when not given); ``docs/multiskill.md#control-variates-with-known-means``.

    >>> inst = Instance(mu=[2.0, 1.0], cost=[1.0, 1.0], eta=[0.5])
    >>> round(relaxation_time(inst), 6)  # every job to server 0: 1 / (sqrt(2) - sqrt(0.5))^2
    2.0
    """
    exact = solve_exact(instance) if exact is None else exact
    loads = np.asarray(exact.loads, dtype=float)
    return float(np.max(1.0 / (instance.mu * (1.0 - np.sqrt(loads)) ** 2)))


def default_controls(
    instance: Instance, warmup: float, exact: Solution | None = None
) -> tuple[str, ...]:
    """The default controls of a comparison of ``instance`` after ``warmup`` time units:
    :data:`SLOW_CONTROLS` (the martingale and the initial state) when the slowest server's
    :func:`relaxation_time` exceeds the warm-up, so that the start still weighs on the
    measured window, else :data:`CONTROLS` (the martingale alone). The choice depends on the
    instance and the warm-up only, not on the simulated values, so the intervals keep their
    level (``docs/multiskill.md#control-variates-with-known-means``).

    >>> inst = Instance(mu=[2.0, 1.0], cost=[1.0, 1.0], eta=[0.5])
    >>> default_controls(inst, 1.0), default_controls(inst, 10.0)
    (('martingale', 'initial_state'), ('martingale',))
    """
    return SLOW_CONTROLS if relaxation_time(instance, exact) > warmup else CONTROLS


def control_names(controls: Sequence[str] | None) -> tuple[str, ...]:
    """``controls`` checked: distinct names of :data:`KNOWN_CONTROLS`, at least one
    (``None``: :data:`CONTROLS`).

    >>> control_names(["martingale", "bernoulli_cost"])
    ('martingale', 'bernoulli_cost')
    """
    if controls is None:
        return CONTROLS
    names = (controls,) if isinstance(controls, str) else tuple(controls)
    if not names or len(set(names)) != len(names) or not set(names) <= set(KNOWN_CONTROLS):
        raise ArgumentError(
            "controls",
            f"controls must be distinct names of {KNOWN_CONTROLS}, got {list(names)}",
        )
    return names


def known_mean_controls(
    instance: Instance, block: ReplicationBlock, exact: Solution | None = None
) -> dict[str, np.ndarray]:
    """The controls of known mean 0 of each replication of ``block`` (a block of the
    uniformised simulator started from Bernoulli's stationary law, ``start="bernoulli"``),
    ``docs/multiskill.md#control-variates-with-known-means``; one value per replication each:

    ``martingale``
        ``M = (A - D) / N`` on the policy's own path, the approximating martingale of the
        relative value ``h(x) = sum_j a_j x_j (x_j + 1) / 2`` of optimal Bernoulli routing
        (``a_j = c_j / (mu_j - lambda_j)``, :func:`~.policies.policy_weights` of ``"pi"``):
        over the ``N`` measured steps ``k`` with state ``x_k`` and event ``e_k``,
        ``A = sum_{k: class-i arrival} f_i(x_k) - sum_i (eta_i / Lambda) sum_k f_i(x_k)``
        with ``f_i(x) = p_i a_i (x_i + 1) + (1 - p_i) a_0 (x_0 + 1)`` (the mean increment of
        ``h`` at a class-``i`` arrival under Bernoulli's coins) and ``D = sum_j a_j (sum_{k:
        potential departure from j} x_{k,j} - (mu_j / Lambda) sum_k x_{k,j})``. The event of
        step ``k`` is drawn independently of ``x_k`` with probabilities ``rate / Lambda``, so
        every term has mean 0 under any policy and any start.
    ``initial_state``
        ``h(x) - E h(x)`` of the initial state, drawn from the stationary law of optimal
        Bernoulli routing (independent geometric counts, ``E x_j (x_j + 1) = 2 rho_j / (1 -
        rho_j)^2``).
    ``arrivals``, ``departures``, ``routed``, ``initial_cost``
        Measured and not used by default: ``sum_i a_i (n_i - N eta_i / Lambda) / N``, ``n_i``
        the class-``i`` arrivals (the work they bring: unit-mean sizes); ``sum_j a_j (d_j - N
        mu_j / Lambda) / N``, ``d_j`` the potential departures; ``sum_j a_j (m_j - N
        lambda_j / Lambda) / N``, ``m_j`` the arrivals the policy routed to ``j`` (under
        Bernoulli's coins for ``"bernoulli"``: known mean only for it); ``sum_j c_j x_j -
        B`` of the initial state.

    ``exact`` is :func:`~.exact.solve_exact` of ``instance`` (computed when not given).
    """
    if block.control_sums is None:
        raise ArgumentError("block", "block: controls need the uniformised simulator's block")
    exact = solve_exact(instance) if exact is None else exact
    n = instance.n_classes
    steps = float(block.measured_steps)
    lam_total = float(instance.eta.sum() + instance.mu.sum())
    p = np.asarray(exact.probabilities, dtype=float)
    lam = arrival_rates(instance, p)
    a = policy_weights(instance, "pi")
    loads = np.asarray(exact.loads, dtype=float)
    sums = np.asarray(block.control_sums, dtype=float)
    parts = {}
    start = 0
    for name, extra in CONTROL_BLOCKS:
        parts[name] = sums[:, start : start + n + extra]
        start += n + extra
    area = block.means * steps  # sum_k x_{k,j} over the measured steps
    arrivals = parts["arrivals"]
    own = _row_sums((parts["arrival_own_jobs"] + arrivals) * (p * a[1:]))
    shared = _row_sums((parts["arrival_shared_jobs"] + arrivals) * ((1.0 - p) * a[0]))
    arrival_part = own + shared - _row_sums((area + steps) * (lam * a)) / lam_total
    departure_part = _row_sums((parts["departure_jobs"] - instance.mu / lam_total * area) * a)
    init = parts["initial"]
    mean_h = math.fsum(a * loads / (1.0 - loads) ** 2)  # E h(x), x_j ~ Geometric(rho_j)
    return {
        "martingale": (arrival_part - departure_part) / steps,
        "initial_state": _row_sums(init * (init + 1.0) * a) / 2.0 - mean_h,
        "arrivals": _row_sums((arrivals - steps * instance.eta / lam_total) * a[1:]) / steps,
        "departures": _row_sums((parts["departures"] - steps * instance.mu / lam_total) * a)
        / steps,
        "routed": _row_sums((parts["routed"] - steps * lam / lam_total) * a) / steps,
        "initial_cost": _row_sums(init * instance.cost) - float(exact.cost),
    }


def _row_sums(terms: np.ndarray) -> np.ndarray:
    """The exactly rounded sum of each row (:func:`math.fsum`): a replication's control does
    not depend on the replications it is computed with, so split studies reassemble bit for
    bit (as :func:`~.replications.replication_cost`)."""
    return np.array([math.fsum(row) for row in terms], dtype=float)


def _controlled(samples, policies, exact, controls, martingales, initial_state):
    """The ratios and differences of :func:`paired_comparison` on ``controls`` (in order)."""
    mart = {p: np.asarray(martingales[p], dtype=float) for p in (BASELINE, *policies)}
    shared = {"bernoulli_cost": samples[BASELINE] - exact}
    if "initial_state" in controls:
        shared["initial_state"] = np.asarray(initial_state, dtype=float)
    replications = samples[BASELINE].size

    def design(own):  # the columns of ``controls``, ``own`` the martingale column
        return np.column_stack([own if c == "martingale" else shared[c] for c in controls])

    ratios = {}
    for p in policies:
        if p == BASELINE:  # its own control: exactly B
            df = replications - 1 - len(controls)
            theta = PairedEstimate(exact, 0.0, 0.0, df, replications)
        else:
            theta = regression_estimate(samples[p], design(mart[p]))
        ratios[p] = theta.divided_by(exact)
    differences = {
        (x, y): regression_estimate(samples[x] - samples[y], design(mart[x] - mart[y]))
        for x, y in combinations(policies, 2)
    }
    return ratios, differences
