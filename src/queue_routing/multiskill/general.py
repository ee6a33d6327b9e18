"""Event-driven simulation of the multi-skilled PS system with general job sizes (ours).

Model: ``docs/multiskill.md#general-job-sizes``. The system is that of
:mod:`.simulation` (class ``i = 1..C`` arrives as a Poisson process of rate ``eta_i``, jobs
per unit time; server ``j`` has capacity ``mu_j``, work per unit time, shared equally by its
``x_j`` jobs: processor sharing), except that a job's size (work units) is drawn from any law
of :mod:`.sizes` with mean 1, not only the exponential. The state is no longer the count
vector: every job's remaining work matters, and it is tracked exactly.

Processor sharing in "virtual time". Server ``j`` keeps ``V_j``, the service every one of its
jobs has received since its busy period began (work units); ``dV_j/dt = mu_j / x_j`` while
``x_j > 0``. A job of size ``s`` joining at virtual time ``V_j`` leaves when ``V_j`` reaches
``V_j + s``, its *finishing tag*; tags do not change while other jobs come and go, so the
next departure from server ``j`` is the job with the least tag (a binary min-heap per server,
O(log x_j) per arrival or departure) at real time ``t + (tag_min - V_j) x_j / mu_j``. The
next event of the whole system is the earlier of the next arrival (one merged Poisson stream
of rate ``sum_i eta_i``, its class drawn by Walker's alias method) and the earliest of the
``C + 1`` servers' next departures, kept in a tournament tree (O(log C) per update; only the
server that changed is updated, the others' departure times being unchanged). One event
therefore costs O(log C + log x_j).

Policies are those of :mod:`.simulation`, with the same parameters
(:func:`~.policies.policy_arrays`: ``(mode, prob, weight)``) and the same rule, on the
count vector ``x`` at the arrival; the runs' arguments, blocks and results are those of
:mod:`.replications`.

Random numbers (``docs/multiskill.md#common-random-numbers``): replication ``r`` uses the
named streams :data:`GENERAL_STREAMS` of :func:`general_replication_states`, keyed by the root
seed, the job's keys and ``r`` (never the policy): ``arrivals`` (two uniforms per arrival:
the gap and the class), ``sizes`` (the job sizes, in arrival order, a fixed number of uniforms
each), ``routing`` (one coin per arrival under Bernoulli routing), ``start`` (initial state).
So every policy sees the same arrival times, classes and sizes (common random numbers);
they differ only in where the jobs go.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..progress import observe
from ..rng import next_uniform
from ..seeding import stream_states
from ..stats import t_half_width
from ..user_policy import UserPolicy, policy_name
from .model import Instance
from .policies import alias_table, policy_arrays, resolve, table_index, warn_table_bound
from .replications import (
    STREAM_KEY,
    ReplicationBlock,
    RunSpec,
    SimulationResult,
    checked_run,
    replication_indices,
)
from .sizes import EXPONENTIAL, JobSizes, draw_residual, draw_size
from .sizes import job_sizes as law_of

__all__ = [
    "GENERAL_STREAMS",
    "GeneralBlock",
    "GeneralSimulationResult",
    "general_replication_states",
    "simulate_general",
    "simulate_general_replications",
]

#: The named random streams of one replication of the general-size simulator.
GENERAL_STREAMS = ("arrivals", "sizes", "routing", "start")


# -- compiled kernel -----------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _heap_set(tags, born, j, i, tag, t):  # pragma: no cover - compiled
    """Entry ``i`` of server ``j``'s heap := ``(tag, t)``: a job's finishing tag and its
    arrival time, kept side by side in ``tags`` and ``born``."""
    tags[j, i] = tag
    born[j, i] = t


@njit(cache=True, nogil=True, inline="always")
def _heap_push(tags, born, j, size, tag, t):  # pragma: no cover - compiled
    """Push ``(tag, t)`` on server ``j``'s heap holding ``size`` jobs (row ``j``)."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if tags[j, parent] <= tag:
            break
        _heap_set(tags, born, j, i, tags[j, parent], born[j, parent])
        i = parent
    _heap_set(tags, born, j, i, tag, t)


@njit(cache=True, nogil=True, inline="always")
def _heap_pop(tags, born, j, size):  # pragma: no cover - compiled
    """Remove the least tag of server ``j``'s heap of ``size`` jobs; return its arrival time."""
    top_born = born[j, 0]
    n = size - 1
    if n > 0:
        last_tag = tags[j, n]
        last_born = born[j, n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and tags[j, c + 1] < tags[j, c]:
                c += 1
            if tags[j, c] >= last_tag:
                break
            _heap_set(tags, born, j, i, tags[j, c], born[j, c])
            i = c
        _heap_set(tags, born, j, i, last_tag, last_born)
    return top_born


@njit(cache=True, nogil=True, inline="always")
def _tree_update(tree, dep, leaves, j):  # pragma: no cover - compiled
    """Replay the matches above leaf ``j`` of the tournament tree over departure times."""
    pos = (leaves + j) >> 1
    while pos >= 1:
        a = tree[2 * pos]
        b = tree[2 * pos + 1]
        tree[pos] = a if dep[a] <= dep[b] else b
        pos >>= 1


@njit(cache=True, nogil=True)
def _general_kernel(
    n_classes, mu, threshold, alias, total_eta, kind, params, mode, prob, weight,
    t_warm, t_end, states, start_loads, clock=None,
):  # fmt: skip  # pragma: no cover - compiled
    """One replication; returns ``(mean jobs (C + 1,), events, response sums (C + 1,),
    departures (C + 1,), bound)``.

    Time ``0 .. t_warm`` is discarded; the time-average of the counts is taken over ``t_warm
    .. t_end`` (exactly, integrating the piecewise-constant counts). ``response sums`` and
    ``departures`` are, per server, the total time in system (arrival to departure) and the
    number of the jobs that left during the measurement and arrived after time 0 (the jobs of
    the initial state have no arrival time). ``events`` counts arrivals and departures,
    warm-up included. Policy arguments ``(mode, prob, weight)`` as in
    :func:`~.policies.policy_arrays` (mode 2: a user policy's index table flattened into
    ``weight``); ``bound`` counts the measured arrivals of mode 2 that found server ``i``
    or 0 beyond its table (decided with that server's index ``+inf``). The initial state:
    independent geometric counts with parameters ``start_loads`` (zeros: empty), each job
    with a residual work drawn from the equilibrium law (:func:`~.sizes.draw_residual`),
    which is the stationary law of Bernoulli routing when ``start_loads`` are its loads.
    """
    arr_s = states[0].copy()
    size_s = states[1].copy()
    coin = states[2].copy()
    init = states[3].copy()
    n = n_classes
    m = n + 1
    x = np.zeros(m, dtype=np.int64)
    for j in range(m):  # x_j ~ Geometric: P(x_j = k) = (1 - rho_j) rho_j^k (0: empty)
        u0 = next_uniform(init)  # one draw per server, used or not
        if start_loads[j] > 0.0:
            x[j] = int(np.floor(np.log(1.0 - u0) / np.log(start_loads[j])))
    cap = 16
    while cap <= x.max():
        cap *= 2
    tags = np.empty((m, cap))
    born = np.empty((m, cap))
    for j in range(m):
        for q in range(x[j]):
            _heap_push(tags, born, j, q, draw_residual(kind, params, init), -1.0)
    vt = np.zeros(m)  # virtual time V_j (work units)
    tv = np.zeros(m)  # real time at which V_j was last brought up to date
    dep = np.full(m + 1, np.inf)  # next departure time per server; dep[m]: padding leaf
    for j in range(m):
        if x[j] > 0:
            dep[j] = tags[j, 0] * x[j] / mu[j]
    leaves = 1
    while leaves < m:
        leaves *= 2
    tree = np.empty(2 * leaves, dtype=np.int64)
    for q in range(leaves):
        tree[leaves + q] = q if q < m else m
    for pos in range(leaves - 1, 0, -1):
        a = tree[2 * pos]
        b = tree[2 * pos + 1]
        tree[pos] = a if dep[a] <= dep[b] else b
    area = np.zeros(m)
    last = np.full(m, t_warm)  # area before t_warm is never added (see the warm-up switch)
    measuring = t_warm <= 0.0
    resp = np.zeros(m)
    done = np.zeros(m, dtype=np.int64)
    events = 0
    bound = 0
    width = weight.size // m  # mode 2: entries per server of the index table
    t_arr = -math.log1p(-next_uniform(arr_s)) / total_eta
    while True:
        jd = tree[1]
        is_arrival = t_arr <= dep[jd]
        t = t_arr if is_arrival else dep[jd]
        if t >= t_end:
            break
        if not measuring and t >= t_warm:
            measuring = True  # counts are constant on [previous event, t): area from t_warm
        if is_arrival:
            u = next_uniform(arr_s) * n
            k = min(int(u), n - 1)
            if u - k >= threshold[k]:
                k = alias[k]
            i = k + 1
            if mode == 0:
                j = i if next_uniform(coin) < prob[k] else 0
            elif mode == 1:
                j = i if weight[i] * (x[i] + 1) <= weight[0] * (x[0] + 1) else 0
            else:
                if (x[i] >= width or x[0] >= width) and measuring:
                    bound += 1
                own = table_index(weight, width, i, x[i])
                j = i if own <= table_index(weight, width, 0, x[0]) else 0
            s = draw_size(kind, params, size_s)
            xj = x[j]
            if xj > 0:
                vt[j] += (t - tv[j]) * mu[j] / xj
            else:
                vt[j] = 0.0  # a new busy period: tags restart from 0 (no loss of precision)
            tv[j] = t
            if xj == cap:  # grow every heap (rare: doubling)
                new_tags = np.empty((m, 2 * cap))
                new_born = np.empty((m, 2 * cap))
                new_tags[:, :cap] = tags
                new_born[:, :cap] = born
                tags = new_tags
                born = new_born
                cap *= 2
            _heap_push(tags, born, j, xj, vt[j] + s, t)
            if measuring:
                area[j] += xj * (t - last[j])
                last[j] = t
            x[j] = xj + 1
            dep[j] = t + max(tags[j, 0] - vt[j], 0.0) * (xj + 1) / mu[j]
            t_arr = t - math.log1p(-next_uniform(arr_s)) / total_eta
        else:
            j = jd
            xj = x[j]
            vt[j] += (t - tv[j]) * mu[j] / xj
            tv[j] = t
            b = _heap_pop(tags, born, j, xj)
            if measuring:
                if b >= 0.0:
                    resp[j] += t - b
                    done[j] += 1
                area[j] += xj * (t - last[j])
                last[j] = t
            x[j] = xj - 1
            if xj == 1:
                vt[j] = 0.0
                dep[j] = np.inf
            else:
                dep[j] = t + max(tags[j, 0] - vt[j], 0.0) * (xj - 1) / mu[j]
        _tree_update(tree, dep, leaves, j)
        events += 1
        if clock is not None:  # the time reached, for progress.observe (read by nothing else)
            if (events & 0xFFFF) == 0:
                clock[0] = t
    means = np.empty(m)
    span = t_end - t_warm
    for j in range(m):
        means[j] = (area[j] + x[j] * (t_end - last[j])) / span
    return means, events, resp, done, bound


# -- Python side -----------------------------------------------------------------------------
def general_replication_states(seed: int, keys: tuple, replication: int) -> np.ndarray:
    """The kernel's stream states (uint64, shape ``(4, 4)``) for one replication.

    Row ``s`` is seeded by ``seed_sequence(seed,`` :data:`~.replications.STREAM_KEY` ``,
    *keys, replication, GENERAL_STREAMS[s])``: the ``routing`` and ``start`` rows are those of
    :func:`~.simulation.replication_states` (streams are named, not numbered); the policy
    is not a key (common random numbers).
    """
    return stream_states(seed, STREAM_KEY, *keys, replication, streams=GENERAL_STREAMS)


@dataclass(frozen=True, kw_only=True)
class GeneralBlock(ReplicationBlock):
    """A :class:`~.replications.ReplicationBlock` of the general-size simulator.

    ``steps`` equals :attr:`events` (an event-driven simulation has no self-loops). Extra
    attributes: ``job_sizes`` (the law), ``response_sums`` and ``departures`` (shape
    ``(len(indices), C + 1)``): per replication and server, the total time in system (time
    units) and the number of the jobs that left during the measured window.
    """

    job_sizes: JobSizes
    response_sums: np.ndarray = field(repr=False)
    departures: np.ndarray = field(repr=False)


def run_general(
    instance: Instance,
    policy: str | UserPolicy,
    indices: tuple[int, ...],
    law: JobSizes,
    spec: RunSpec,
    progress: Callable[[], Any] | None = None,
) -> GeneralBlock:
    """The run behind :func:`simulate_general_replications`, on checked arguments: a
    resolved ``policy`` (:func:`~.policies.resolve`), replication ``indices``
    (:func:`~.replications.replication_indices`), the law and a
    :class:`~.replications.RunSpec`."""
    start_loads = spec.start_loads(instance)
    mode, prob, weight = policy_arrays(instance, policy, spec.table_size)
    threshold, alias = alias_table(instance.eta)
    kind, params = law.kernel_args()
    mu = np.ascontiguousarray(instance.mu, dtype=float)
    total_eta = float(instance.eta.sum())
    width = instance.n_classes + 1
    means = np.empty((len(indices), width))
    resp = np.empty((len(indices), width))
    done = np.empty((len(indices), width), dtype=np.int64)
    events, bound = [], []
    for row, r in enumerate(indices):
        with observe(progress, spec.warmup + spec.horizon) as clock:
            means[row], ev, resp[row], done[row], beyond = _general_kernel(
                instance.n_classes, mu, threshold, alias, total_eta, kind, params, mode, prob,
                weight, spec.warmup, spec.warmup + spec.horizon,
                general_replication_states(spec.seed, spec.keys, r), start_loads, clock,
            )  # fmt: skip
        events.append(int(ev))
        bound.append(int(beyond))
        if progress is not None:
            progress()
    return GeneralBlock.of_means(
        instance,
        policy_name(policy),
        indices,
        means,
        events,
        bound,
        steps=sum(events),
        job_sizes=law,
        response_sums=resp,
        departures=done,
    )


def simulate_general_replications(
    instance: Instance,
    policy: Any,
    replications: Iterable[int],
    *,
    job_sizes: JobSizes | str | None = None,
    progress: Callable[[], Any] | None = None,
    **run: Any,
) -> GeneralBlock:
    """Replications ``replications`` (indices) of :func:`simulate_general`, any non-empty set.

    Replication ``r`` runs on :func:`general_replication_states` ``(seed, keys, r)``, so
    blocks of replications reassemble bit for bit into one run (as
    :func:`~.simulation.simulate_replications`, whose arguments these are).

    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> whole = simulate_general(inst, "jsq", job_sizes="deterministic", horizon=50.0,
    ...                          replications=4, seed=3)
    >>> part = simulate_general_replications(inst, "jsq", [2, 3], job_sizes="deterministic",
    ...                                      horizon=50.0, seed=3)
    >>> part.costs.tolist() == whole.replication_costs[2:].tolist()
    True
    """
    law = law_of(job_sizes)
    policy = resolve(policy)
    spec = RunSpec.checked(**run)
    return run_general(instance, policy, replication_indices(replications), law, spec, progress)


@dataclass(frozen=True)
class GeneralSimulationResult(SimulationResult):
    """A :class:`~.replications.SimulationResult` of the general-size simulator.

    ``steps`` equals ``events``. Extra attributes:

    job_sizes:
        The job-size law (:class:`~.sizes.JobSizes`).
    per_server_mean_response:
        Mean time in system (arrival to departure, time units) of the jobs served at each
        server, shape ``(C + 1,)``: the mean over replications of each replication's mean over
        the jobs that left in its measured window (NaN where a server served none).
    per_server_response_ci95:
        95% half-widths of :attr:`per_server_mean_response` over the replications.
    mean_response:
        Mean time in system over all jobs (time units), mean over replications.
    """

    job_sizes: JobSizes = EXPONENTIAL
    per_server_mean_response: np.ndarray | None = None
    per_server_response_ci95: np.ndarray | None = None
    mean_response: float = math.nan

    @classmethod
    def extra_fields(cls, block: GeneralBlock) -> dict[str, Any]:
        """The law and the response times of ``block`` (per replication: the mean over the
        jobs that left in the measured window; NaN where none left)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            per_rep = block.response_sums / block.departures
            overall = block.response_sums.sum(axis=1) / block.departures.sum(axis=1)
        return {
            "job_sizes": block.job_sizes,
            "per_server_mean_response": per_rep.mean(axis=0),
            "per_server_response_ci95": t_half_width(per_rep),
            "mean_response": float(overall.mean()),
        }

    def to_dict(self) -> dict[str, Any]:
        """:meth:`SimulationResult.to_dict` plus ``job_sizes`` (the law's spec string)."""
        return {**super().to_dict(), "job_sizes": self.job_sizes.spec}


def simulate_general(
    instance: Instance,
    policy: Any,
    *,
    job_sizes: JobSizes | str | None = None,
    replications: int = 10,
    progress: Callable[[], Any] | None = None,
    **run: Any,
) -> GeneralSimulationResult:
    """Simulate ``policy`` on ``instance`` with job sizes of law ``job_sizes`` (mean 1).

    An exact event-driven simulation (module docstring): each replication starts in the
    state given by ``start``, discards the first ``warmup`` time units and averages the
    number of jobs at each server over the next ``horizon`` time units exactly (the counts
    are piecewise constant); the cost of a replication is ``sum_j c_j`` times that average
    (cost per unit time), and the result has the t interval over the replications.

    Parameters
    ----------
    instance, policy, replications, progress:
        As in :func:`~.simulation.simulate`.
    run:
        The run's keywords of :func:`~.simulation.simulate`: ``horizon`` (required),
        ``warmup`` (default ``0.1 * horizon``; time units), ``seed``, ``keys``, ``start`` (see
        below) and ``table_size`` (a user policy's table bound is reported the same way);
        :meth:`~.replications.RunSpec.checked` checks them and holds their defaults.
    job_sizes:
        A :class:`~.sizes.JobSizes` or its spec string (``"exponential"``, ``"deterministic"``,
        ``"erlang:K"``, ``"hyperexponential:SCV"``, ``"lognormal:SCV"``); ``None``:
        exponential (simulated here event by event; :func:`~.simulation.simulate` uses the
        uniformised chain for that law).
    start (in ``run``):
        ``"empty"``, or ``"bernoulli"``: independent geometric counts with the optimal
        Bernoulli loads, each job's remaining work drawn from the equilibrium law of the
        sizes. Under Bernoulli routing each server is an M/G/1-PS queue, whose stationary
        law is exactly this (geometric count, i.i.d. equilibrium residual works: PS is a
        symmetric queue), so that start is stationary for optimal Bernoulli routing whatever
        the law, and its simulated cost has the exact mean ``sum_j c_j rho_j/(1 - rho_j)``.

    Examples
    --------
    Processor sharing is insensitive: with deterministic sizes the optimal Bernoulli cost is
    still the product form (2.578947... here), and the simulation agrees within its CI:

    >>> from queue_routing.multiskill import Instance, solve_exact
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> res = simulate_general(inst, "bernoulli", job_sizes="deterministic", horizon=4000.0,
    ...                        replications=5, seed=1, start="bernoulli")
    >>> bool(abs(res.cost - solve_exact(inst).cost) < res.ci95), res.job_sizes.spec
    (True, 'deterministic')
    """
    spec = checked_run(instance, replications, **run)
    law = law_of(job_sizes)
    policy = resolve(policy)
    t0 = time.perf_counter()
    block = run_general(
        instance, policy, replication_indices(range(replications)), law, spec, progress
    )
    wall = time.perf_counter() - t0
    if block.table_bound:
        warn_table_bound(block, spec.table_size)
    return GeneralSimulationResult.of_run(block, spec, wall_seconds=wall)
