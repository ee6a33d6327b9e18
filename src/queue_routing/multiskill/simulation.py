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
weight ``w`` (:func:`~.policies.policy_weights`), ties to the dedicated server. A **user policy**
(:mod:`queue_routing.user_policy`, ``docs/README.md#your-own-policy``) gives the index as a
function ``index(j, x_j, instance)`` of the server and the jobs the arrival finds there,
tabulated once for ``x_j = 0..table_size``: the job goes to server ``i`` iff ``index(i, x_i)
<= index(0, x_0)``; an arrival that finds a compared server beyond the table is counted
(``table_bound``, :class:`~queue_routing.errors.TableBoundWarning`), the server then
counting as ``+inf``. The holding cost rate is ``sum_j c_j x_j`` (cost per unit time).

Random numbers (``docs/README.md#random-numbers``, ``docs/multiskill.md#common-random-numbers``):
replication ``r`` draws from the named streams of :func:`replication_states`, keyed by the root
seed, the job's keys and ``r`` but not the policy, through the compiled xoshiro256** generator
of :mod:`queue_routing.rng`; every policy simulated with the same seed and keys therefore
sees the same initial state and the same uniformised event sequence (common random numbers).

The layers: the policies' parameters are :mod:`.policies`, the runs' arguments, blocks and
results :mod:`.replications`; this module is the uniformised kernel and the front door
:func:`simulate`, which hands any other job-size law to the event-driven simulator of
:mod:`.general` (``docs/multiskill.md#general-job-sizes``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numba import njit

from ..errors import AccuracyError, ArgumentError
from ..paired import on_table_bound_choice
from ..progress import observe
from ..rng import next_uniform
from ..seeding import stream_states
from ..user_policy import DEFAULT_TABLE_SIZE, policy_name
from .general import GeneralSimulationResult, run_general
from .model import Instance
from .policies import (
    POLICIES,
    POLICY_DESCRIPTIONS,
    TableBoundWarning,
    alias_table,
    arrival_rates,
    bernoulli_probabilities,
    policy_arrays,
    policy_weights,
    resolve,
    table_index,
    warn_table_bound,
)
from .replications import (
    STREAM_KEY,
    ReplicationBlock,
    RunSpec,
    SimulationResult,
    check_args,
    general_law,
    replication_cost,
    replication_indices,
)

# The policies' names and parameters (.policies) and the runs' blocks and results
# (.replications) are re-exported: this module was their home.
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

_MAX_STEPS = 2**62


# -- compiled kernel -----------------------------------------------------------------------

#: The named random streams of one replication (rows of the kernel's ``states``):
#: ``events`` drives the uniformised chain (one uniform per step), ``routing`` Bernoulli's
#: routing coins (one per arrival), ``start`` the initial state (one per server).
STREAMS = ("events", "routing", "start")

#: The blocks of the kernel's control sums (one row per policy), in order, with their
#: lengths for ``C`` classes (``docs/multiskill.md#control-variates-with-known-means``), each
#: a sum over the measured steps ``k`` (``x_k`` the state the step finds, before its event):
#: ``departure_jobs`` ``sum_{k: potential departure from j} x_{k,j}`` (``C + 1``);
#: ``arrival_own_jobs`` / ``arrival_shared_jobs`` ``sum_{k: class-i arrival} x_{k,i}`` /
#: ``x_{k,0}`` (``C`` each); ``routed`` the measured arrivals the policy sent to server ``j``
#: (``C + 1``); ``arrivals`` the class-``i`` arrivals and ``departures`` the potential
#: departures from ``j`` (self-loops included), the same for every policy (``C``, ``C + 1``);
#: ``initial`` the initial state (``C + 1``).
CONTROL_BLOCKS = (
    ("departure_jobs", 1),
    ("arrival_own_jobs", 0),
    ("arrival_shared_jobs", 0),
    ("routed", 1),
    ("arrivals", 0),
    ("departures", 1),
    ("initial", 1),
)


@njit(cache=True, nogil=True)  # nogil: SIGINT/SIGTERM can end a long run (signals.py)
def _simulate_kernel(
    n_classes, threshold, alias, modes, probs, weights, widths, n_warm, n_steps, states,
    start_loads, clock=None,
):  # pragma: no cover - compiled  # fmt: skip
    """One replication of the uniformised chain under P policies in lockstep; returns
    ``(mean jobs (P, C + 1), events (P,), bound (P,), sums (P, 7 C + 4))``, ``sums`` the raw
    sums of the control variates laid out as :data:`CONTROL_BLOCKS` (over the measured steps;
    the initial state is the one before the warm-up). Accumulating them draws no random
    number: the costs are those of a run without them, bit for bit.

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
    ``widths[p]`` entries per server flattened into ``weights[p]``
    (:func:`~.policies.policy_arrays`, :func:`~.policies.table_index`: ``+inf`` beyond it).
    ``bound[p]`` counts the measured arrivals (steps ``>= n_warm``) of a mode-2 policy that
    found server ``i`` or 0 beyond its table.
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
    # the raw sums of the control variates (CONTROL_BLOCKS; policy-free blocks in row 0)
    ctl = np.zeros((n_policies, 7 * n + 4), dtype=np.int64)
    for j in range(n + 1):
        ctl[0, 6 * n + 3 + j] = x[0, j]
    area = np.zeros((n_policies, n + 1))
    last = np.zeros((n_policies, n + 1), dtype=np.int64)  # step since which x[p, j] is fixed
    events = np.zeros(n_policies, dtype=np.int64)
    bound = np.zeros(n_policies, dtype=np.int64)
    total = n_warm + n_steps
    for step in range(total):
        if clock is not None:  # the step reached, for progress.observe (read by nothing else)
            if (step & 0xFFFF) == 0:
                clock[0] = step
        if step == n_warm:
            area[:] = 0.0
            last[:] = step
        u = next_uniform(ev) * m
        k = min(int(u), m - 1)
        if u - k >= threshold[k]:
            k = alias[k]
        measured = step >= n_warm
        if k < n:  # arrival of class i = k + 1, routed by each policy
            i = k + 1
            if measured:
                ctl[0, 4 * n + 2 + k] += 1
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
                if measured:
                    ctl[p, n + 1 + k] += x[p, i]
                    ctl[p, 2 * n + 1 + k] += x[p, 0]
                    ctl[p, 3 * n + 1 + j] += 1
                xj = x[p, j]  # close the constant stretch of x[p, j]
                area[p, j] += xj * (step + 1 - last[p, j])
                last[p, j] = step + 1
                x[p, j] = xj + 1
                events[p] += 1
        else:  # potential departure from server j; a self-loop where it is idle
            j = k - n
            if measured:
                ctl[0, 5 * n + 2 + j] += 1
            for p in range(n_policies):
                xj = x[p, j]
                if measured:
                    ctl[p, j] += xj
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
        ctl[p, 4 * n + 2 :] = ctl[0, 4 * n + 2 :]
    return means, events, bound, ctl.astype(np.float64)


def replication_states(seed: int, keys: tuple, replication: int) -> np.ndarray:
    """The kernel's stream states (uint64, shape ``(3, 4)``) for one replication.

    Row ``s`` is seeded by ``seed_sequence(seed,`` :data:`~.replications.STREAM_KEY` ``, *keys,
    replication, STREAMS[s])`` (:func:`~queue_routing.seeding.stream_states`); the policy is
    not a key, so
    every policy simulated with the same ``seed``, ``keys`` and replication index sees the same
    random numbers (``docs/multiskill.md#common-random-numbers``).
    """
    return stream_states(seed, STREAM_KEY, *keys, replication, streams=STREAMS)


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


def _kernel_arrays(instance: Instance, policies: Sequence[Any], table_size: int):
    """``(modes (P,), probs (P, C), weights (P, W), widths (P,))``: the policies'
    :func:`~.policies.policy_arrays` stacked for the lockstep kernel, each weight row padded
    to the longest (a user policy's flattened table; ``widths[p]`` its entries per server)."""
    arrays = [policy_arrays(instance, p, table_size) for p in policies]
    n_servers = instance.n_classes + 1
    width = max(a[2].size for a in arrays)
    weights = np.zeros((len(arrays), width))
    for p, a in enumerate(arrays):
        weights[p, : a[2].size] = a[2]
    modes = np.array([a[0] for a in arrays], dtype=np.int64)
    probs = np.ascontiguousarray([a[1] for a in arrays], dtype=float)
    widths = np.array([a[2].size // n_servers for a in arrays], dtype=np.int64)
    return modes, probs, weights, widths


def run_policies(
    instance: Instance,
    policies: Sequence[Any],
    indices: tuple[int, ...],
    spec: RunSpec,
    progress: Callable[[], Any] | None = None,
) -> dict[str, ReplicationBlock]:
    """The lockstep run behind :func:`simulate_policies`, on checked arguments: resolved
    ``policies`` (distinct names), replication ``indices``
    (:func:`~.replications.replication_indices`) and a :class:`~.replications.RunSpec`."""
    modes, probs, weights, widths = _kernel_arrays(instance, policies, spec.table_size)
    start_loads = spec.start_loads(instance)
    lam = float(instance.eta.sum() + instance.mu.sum())
    n_steps, n_warm = _step_counts(lam, spec.horizon, spec.warmup)
    threshold, alias = alias_table(event_rates(instance))
    means = np.empty((len(policies), len(indices), instance.n_classes + 1))
    events = np.empty((len(policies), len(indices)), dtype=np.int64)
    bound = np.empty((len(policies), len(indices)), dtype=np.int64)
    sums = np.empty((len(policies), len(indices), 7 * instance.n_classes + 4))
    for row, r in enumerate(indices):
        with observe(progress, n_warm + n_steps, units=len(policies)) as clock:
            means[:, row], events[:, row], bound[:, row], sums[:, row] = _simulate_kernel(
                instance.n_classes, threshold, alias, modes, probs, weights, widths, n_warm,
                n_steps, replication_states(spec.seed, spec.keys, r), start_loads, clock,
            )  # fmt: skip
        if progress is not None:
            for _ in policies:
                progress()
    steps = len(indices) * (n_warm + n_steps)
    blocks = {}
    for p, policy in enumerate(policies):
        name = policy_name(policy)
        blocks[name] = ReplicationBlock.of_means(
            instance, name, indices, means[p], events[p], bound[p], steps=steps,
            control_sums=sums[p], measured_steps=n_steps,
        )  # fmt: skip
    return blocks


def simulate_replications(
    instance: Instance,
    policy: Any,
    replications: Iterable[int],
    *,
    progress: Callable[[], Any] | None = None,
    job_sizes: Any = None,
    **run: Any,
) -> ReplicationBlock:
    """The replications with the given indices of :func:`simulate` (any non-empty set).

    Replication ``r`` runs on the streams :func:`replication_states` ``(seed, keys, r)``,
    exactly as replication ``r`` of ``simulate(..., replications=R)`` for any ``R > r``: a
    study can be split into blocks of replications run by separate jobs
    (:mod:`queue_routing.workflow.chunks`) and reassembled bit for bit. Arguments as in
    :func:`simulate`, ``run`` its run's keywords ``horizon`` (required), ``warmup``,
    ``seed``, ``keys``, ``start`` and ``table_size`` (:meth:`~.replications.RunSpec.checked`
    checks them and holds their defaults). No statistics are computed (a block may hold one
    replication), and no :class:`~queue_routing.errors.TableBoundWarning`: the block's
    ``table_bound_per_replication`` holds the counts. :func:`simulate_policies` runs several
    policies on the same streams at once. With a non-exponential ``job_sizes`` the block comes
    from the event-driven simulator, as :func:`~.general.simulate_general_replications` gives
    it (a :class:`~.general.GeneralBlock`).

    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> whole = simulate(inst, "jsq", horizon=50.0, replications=4, seed=3)
    >>> part = simulate_replications(inst, "jsq", range(2, 4), horizon=50.0, seed=3)
    >>> part.costs.tolist() == whole.replication_costs[2:].tolist()
    True
    """
    law = general_law(job_sizes)  # docs/multiskill.md#general-job-sizes
    policy = resolve(policy)
    spec = RunSpec.checked(**run)
    indices = replication_indices(replications)
    if law is not None:
        return run_general(instance, policy, indices, law, spec, progress)
    return run_policies(instance, [policy], indices, spec, progress)[policy_name(policy)]


def simulate_policies(
    instance: Instance,
    policies: Sequence[Any],
    replications: Iterable[int],
    *,
    progress: Callable[[], Any] | None = None,
    **run: Any,
) -> dict[str, ReplicationBlock]:
    """:func:`simulate_replications` of several policies on common random numbers, at once.

    Every policy's replication ``r`` sees the streams :func:`replication_states` ``(seed,
    keys, r)`` — the same uniformised event sequence and initial state — so the policies
    are simulated in lockstep by one kernel pass that draws each event once and applies it
    to every policy's state. Each block is bit for bit the one :func:`simulate_replications`
    gives for that policy alone; only the work is shared (3x less time for the five
    policies at C = 20..200, ``benchmarks/multiskill_lockstep.py``). ``policies``: names of
    :data:`POLICIES` or user policies (as :func:`simulate` takes them), distinct by name.
    ``progress`` is called once per policy and replication; ``run`` as in
    :func:`simulate_replications`. Returns ``{name: ReplicationBlock}`` in the order given.

    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> both = simulate_policies(inst, ["jsq", "pi"], range(3), horizon=50.0, seed=3)
    >>> alone = simulate_replications(inst, "pi", range(3), horizon=50.0, seed=3)
    >>> both["pi"].costs.tolist() == alone.costs.tolist(), list(both)
    (True, ['jsq', 'pi'])
    """
    policies = tuple(resolve(p) for p in policies)
    names = [policy_name(p) for p in policies]
    if not policies or len(set(names)) != len(names):
        raise ArgumentError("policies", f"policies must be distinct and at least one, got {names}")
    spec = RunSpec.checked(**run)
    return run_policies(instance, policies, replication_indices(replications), spec, progress)


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
    on_table_bound: str = "report",
) -> SimulationResult:
    """Simulate ``policy`` on ``instance``: mean holding cost rate with a 95% CI.

    The CTMC of the counts is simulated exactly by uniformisation at the constant rate
    ``Lambda = sum_i eta_i + sum_j mu_j`` (steps per unit time): every step draws one of the
    ``2C + 1`` potential events with probability ``rate / Lambda`` by Walker's alias method
    (:func:`alias_table`, O(1); a binary search on the cumulative rates, O(log C), measured
    30-50 ns per draw against 17-19 ns for the alias draw at C = 5..50), and a departure from
    an idle server is a self-loop. The uniformised jump chain has the CTMC's stationary
    distribution, so the time average is estimated by the average of the state over the
    steps, i.e. each step is charged its expected sojourn ``1/Lambda`` rather than a sampled
    exponential one. Compared with an event-driven simulation with
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
        (``seed_sequence(seed,`` :data:`~.replications.STREAM_KEY` ``, *keys, r, stream)``);
        the same arguments reproduce the result bit for bit. The policy is not part of the
        key: two policies simulated with the same ``seed`` and ``keys`` see common random
        numbers (the same uniformised event sequence and initial state;
        ``docs/multiskill.md#common-random-numbers``), which is what a paired comparison
        (:func:`~.policy_comparison.compare_policies`) needs. For independent streams, give
        each policy its own ``keys``.
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
        ``table_bound`` and reported by a :class:`~queue_routing.errors.TableBoundWarning`;
        unused by the built-in policies.
    on_table_bound:
        ``"report"`` (the count and the warning above) or ``"raise"``: such a run is refused
        with an :class:`~queue_routing.errors.AccuracyError`, as a paired comparison refuses
        it (the command's ``simulate`` does).

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
    law = general_law(job_sizes)  # docs/multiskill.md#general-job-sizes
    on_table_bound = on_table_bound_choice(on_table_bound)
    warmup = check_args(instance, horizon, warmup, replications, seed)
    policy = resolve(policy)
    spec = RunSpec.checked(
        horizon=horizon, warmup=warmup, seed=seed, keys=keys, start=start, table_size=table_size
    )
    indices = replication_indices(range(replications))
    t0 = time.perf_counter()
    if law is None:
        block = run_policies(instance, [policy], indices, spec, progress)[policy_name(policy)]
        result = SimulationResult
    else:
        block = run_general(instance, policy, indices, law, spec, progress)
        result = GeneralSimulationResult
    wall = time.perf_counter() - t0
    if block.table_bound and on_table_bound == "raise":
        raise AccuracyError(
            f"table_size: {block.table_bound} measured arrivals under {block.policy} found a "
            f"server beyond the index table (x > {table_size}); raise table_size"
        )
    if block.table_bound:
        warn_table_bound(block, table_size)
    return result.of_run(block, spec, wall_seconds=wall)
