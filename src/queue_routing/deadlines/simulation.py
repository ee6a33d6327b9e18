"""Compiled discrete-event simulator of admission and routing of soft real-time jobs.

:func:`simulate` takes an :class:`~queue_routing.deadlines.model.Instance` and either an index
table or Bernoulli-splitting probabilities; the policy layer
(:mod:`queue_routing.deadlines.policies`) builds both for the named policies.

Model: ``docs/deadlines.md#model-and-units`` and ``#simulation``; the model is that of
Niño-Mora (2012), *Computers & Operations Research* 39, 3431–3444.

Model. ``n`` clusters; cluster ``k`` has ``m_k`` identical exponential servers of rate
``mu_k`` (jobs per unit time) and its own FCFS queue with an unlimited buffer. Jobs arrive as
a Poisson process of rate ``lambda``. Each job carries an i.i.d. relative deadline ``tau``
(time units) drawn from the deadline law, on its response time (arrival to end of service,
``on="response"``) or on its waiting time (arrival to start of service, ``on="waiting"``).
On arrival the job is rejected (cost ``R``) or admitted and routed to one cluster; an
admitted job that misses its deadline still stays until served and costs 1.

Policies.

* **Index table** ``index[k, x]``, ``x = 0..X_k``: with ``x_k`` the number of jobs in
  cluster ``k`` (waiting plus in service) seen by the arrival, reject iff
  ``min_k index[k, x_k] >= R`` (``R = +inf`` without rejection cost, i.e. pure routing),
  else route to the cluster of smallest index, **ties to the lowest k**. **Beyond the last
  column of row k** (``x_k > X_k``) **the index is +inf**: the cluster is treated as full
  and never chosen (so a truncated table is a truncated policy; with ``R = +inf`` a job that
  finds every cluster "full" is rejected and the cost rate is ``+inf``, which signals that
  the truncation binds). Rows of different lengths may be given as a list of 1-D arrays.
* **Static Bernoulli splitting** ``split = (p_0, p_1, ..., p_n)``: each job is rejected
  with probability ``p_0`` and otherwise sent to cluster ``k`` with probability ``p_k``,
  independently of everything else.

Exactness. With one FCFS queue per cluster a job's start of service is
``max(arrival, earliest server-free time)`` and it takes that server, so each cluster keeps
its ``m_k`` server-free times in a min-heap and every admitted job's waiting and response
times are known exactly on arrival (no approximation, no time discretisation). The number in
system ``x_k`` seen by an arrival is the number of admitted jobs whose departure time is
later than now. Departures are not in FCFS order when ``m_k > 1``, but starts are: a
server is busy at ``t`` iff its free time is later than ``t``, and a job waits at ``t`` iff
its start time is later than ``t``, so ``x_k`` = (servers whose free time is later than now)
+ (jobs whose start is later than now), the latter kept in a FIFO ring buffer of start
times, popped lazily at arrivals (index policies only; Bernoulli splitting needs no state
beyond the server-free times). The test suite checks this count against the M/M/m/z
blocking probability.

Random numbers (``docs/deadlines.md#common-random-numbers``,
``docs/README.md#random-numbers``). Replication ``r`` draws from the four named streams
:data:`STREAMS` of :func:`replication_states`, keyed by the root seed, the job's keys and
``r``, never by the policy, with the shared generator of :mod:`queue_routing.rng`. Every
arrival draws its inter-arrival time, its work and its deadline at arrival, whether it is
then routed or rejected, so every policy sees the same jobs (same arrival times, same work,
same deadlines); Bernoulli splitting's coin has a stream of its own.

Time semantics. Each replication starts empty, simulates ``warmup + horizon`` time units and
counts the arrivals in ``[warmup, warmup + horizon)``; each arriving job's cost (rejection,
or deadline miss, which is decided at arrival because its response time is then known) is
attributed to its arrival time. Rates are per unit time over the ``horizon``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from .. import stats
from ..checks import nonnegative_int, replication_count, show, time_length
from ..progress import observe
from ..rng import next_uniform
from ..seeding import stream_states
from ..stats import Replicated, t_half_width
from .model import Deadline, Instance

__all__ = [
    "MAX_JOBS_IN_CLUSTER",
    "SIMULATE_KEY",
    "STREAMS",
    "ReplicationBlock",
    "SimulationResult",
    "replication_states",
    "simulate",
    "simulate_replications",
]

#: Abort a replication when one cluster holds more jobs than this (an unstable policy).
MAX_JOBS_IN_CLUSTER = 20_000_000

#: The first key of every stream of this simulator (and of the decision-table simulator of
#: :mod:`.three_cluster`): ``seed_sequence(seed, SIMULATE_KEY, *keys, r, stream)``.
SIMULATE_KEY = "deadlines-sim"
#: The kernel's named random streams (``docs/deadlines.md#common-random-numbers``):
#: inter-arrival times, the jobs' work (``Exp(1)``), their deadlines, Bernoulli's coin.
STREAMS = ("arrivals", "work", "deadlines", "routing")

#: Kernel codes of the deadline laws: ``constant`` (p1 = t), ``uniform`` (p1 = low,
#: p2 = high), ``exponential`` (p1 = mean = 1/theta).
_KIND_CODES = {"constant": 0, "uniform": 1, "exponential": 2}


def deadline_arguments(deadline: Deadline) -> tuple[int, float, float]:
    """``(kind code, p1, p2)`` of the kernel for a (validated) deadline law."""
    code = _KIND_CODES[deadline.kind]
    if code == 0:
        return code, float(deadline.t), 0.0
    if code == 1:
        return code, float(deadline.low), float(deadline.high)
    return code, float(deadline.mean), 0.0


# -- compiled kernel -----------------------------------------------------------------------
@njit(cache=True)
def _sift_down(heap, k, size, i):  # pragma: no cover - compiled
    """Restore the min-heap property of ``heap[k, :size]`` below position ``i``."""
    v = heap[k, i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[k, c + 1] < heap[k, c]:
            c += 1
        if heap[k, c] >= v:
            break
        heap[k, i] = heap[k, c]
        i = c
    heap[k, i] = v


# -- random numbers: the shared xoshiro256** of queue_routing.rng ----------------------------
@njit(cache=True, nogil=True, inline="always")
def exponential(u):  # pragma: no cover - compiled
    """Unit-mean exponential by inversion of a uniform ``u`` on ``[0, 1)``: ``-log(1 - u)``
    (``1 - u`` is exact on the ``2^-53`` grid and never 0, so the value is finite)."""
    return -math.log(1.0 - u)


@njit(cache=True, nogil=True, inline="always")
def largest(values):  # pragma: no cover - compiled
    """The largest of the integers ``values``, and at least 1 (the width of an array with a
    row per cluster and a column per server or level)."""
    top = 1
    for k in range(values.size):
        if values[k] > top:
            top = values[k]
    return top


@njit(cache=True, nogil=True, inline="always")
def missed(kind, p1, p2, u_deadline, on_wait, wait, response):  # pragma: no cover - compiled
    """Whether an admitted job misses its deadline: the deadline of the law ``(kind, p1,
    p2)`` (:func:`deadline_arguments`) drawn by the uniform ``u_deadline``, against the job's
    waiting time if ``on_wait``, else its response time (time units)."""
    if kind == 0:
        tau = p1
    elif kind == 1:
        tau = p1 + (p2 - p1) * u_deadline
    else:
        tau = p1 * exponential(u_deadline)
    delay = wait if on_wait else response
    return delay > tau


@njit(cache=True, nogil=True)  # nogil: SIGINT/SIGTERM can end a long run (signals.py)
def _kernel(
    lam,
    m,
    mu,
    kind,
    p1,
    p2,
    on_wait,
    rcost,
    mode,
    index,
    xlen,
    split_cum,
    t_warm,
    t_end,
    states,
    max_jobs,
    clock=None,
):  # pragma: no cover - compiled
    """One replication; returns ``(counts, per-cluster admitted, per-cluster misses, sums)``.
    ``clock[0]`` (if given) receives the simulated time reached every 2^16 events (read by
    :func:`queue_routing.progress.observe` while the kernel runs; nothing else reads it).

    ``counts = [arrivals, rejections, admissions, misses, events, status, table_bound]``
    (arrivals in the measurement window ``[t_warm, t_end)`` except ``events``, which counts
    arrivals plus departures of admitted jobs over the whole run, each admitted job's
    departure counted at its admission; ``status`` 1 if a cluster exceeded ``max_jobs``;
    ``table_bound`` the measured arrivals that found a cluster beyond its row whose last
    index is not above the chosen index or ``rcost``, i.e. whose decision the end of the
    table may have changed). ``sums = [sum of response times, sum of waiting times]`` of the
    measured admitted jobs. An index ``+inf`` within a row (beyond the doubles) is chosen
    only in pure routing (``rcost = inf``) when every open cluster has it (lowest k).
    ``mode`` 0: index table (``index``, row lengths ``xlen``, reject iff min >= ``rcost``);
    mode 1: Bernoulli splitting with cumulative probabilities ``split_cum`` (``[p0, p0+p1,
    ...]``). ``kind``: 0 constant ``p1``, 1 uniform ``[p1, p2]``, 2 exponential mean ``p1``.

    ``states`` (uint64, shape ``(4, 4)``) holds the xoshiro256** states of :data:`STREAMS`
    (copied, so the caller's are reusable). Every arrival ``j`` draws, whatever the policy
    and whether it is admitted or rejected, measured or in the warm-up: its inter-arrival
    time from ``arrivals``, its work ``W_j ~ Exp(1)`` from ``work`` (service time ``W_j /
    mu_k`` in the cluster ``k`` it joins) and, unless the deadline is constant, its deadline
    uniform from ``deadlines``; Bernoulli splitting draws its coin from ``routing``. So job
    ``j`` has the same arrival time, work and deadline under every policy
    (``docs/deadlines.md#common-random-numbers``); the logarithms are taken only where used.
    """
    st = states.copy()
    s_arrivals, s_work, s_deadlines, s_routing = st[0], st[1], st[2], st[3]
    n = m.size
    free = np.zeros((n, largest(m)))  # per-cluster min-heap of the m_k server-free times
    # Per-cluster FIFO ring buffer of the start times of admitted jobs still waiting
    # (index mode): FCFS start times are nondecreasing, so the jobs that have started by
    # time t are a prefix of the buffer.
    cap = 64
    queue = np.empty((n, cap))
    head = np.zeros(n, dtype=np.int64)
    waiting = np.zeros(n, dtype=np.int64)
    adm_k = np.zeros(n, dtype=np.int64)
    miss_k = np.zeros(n, dtype=np.int64)
    arrivals = 0
    rejections = 0
    admissions = 0
    misses = 0
    events = 0
    status = 0
    table_bound = 0
    resp_sum = 0.0
    wait_sum = 0.0
    inf = np.inf
    t = 0.0
    while True:
        # The draws of a job, written out here and in three_cluster._action_kernel: a helper
        # returning them costs a tenth of the kernel's events per second.
        t += exponential(next_uniform(s_arrivals)) / lam
        if t >= t_end:
            break
        u_work = next_uniform(s_work)  # drawn by every arrival: the streams stay in step
        u_deadline = 0.0
        if kind != 0:
            u_deadline = next_uniform(s_deadlines)
        counted = t >= t_warm
        events += 1
        if clock is not None:
            if (events & 0xFFFF) < 2:  # events grows by 1 or 2 per arrival: once per 2^16
                clock[0] = t
        if counted:
            arrivals += 1
        # -- decision
        dest = -1
        if mode == 0:
            best = inf
            first_open = -1
            beyond = False
            beyond_min = inf
            width = queue.shape[1]
            for k in range(n):
                w = waiting[k]
                h = head[k]
                while w > 0 and queue[k, h] <= t:  # lazily drop jobs that have started
                    w -= 1
                    h += 1
                    if h == width:
                        h = 0
                waiting[k] = w
                head[k] = h
                if w > 0:  # all servers busy (FCFS never idles a server with a queue)
                    x = m[k] + w
                else:  # a server is busy at t iff its free time is later than t
                    x = 0
                    for i in range(m[k]):
                        if free[k, i] > t:
                            x += 1
                if x < xlen[k]:
                    v = index[k, x]
                    if first_open < 0:
                        first_open = k
                    if v < best:
                        best = v
                        dest = k
                else:  # beyond the row: treated as full
                    beyond = True
                    if index[k, xlen[k] - 1] < beyond_min:
                        beyond_min = index[k, xlen[k] - 1]
            if counted and beyond and beyond_min <= min(best, rcost):
                table_bound += 1
            if dest >= 0 and best >= rcost:
                dest = -1
            if dest < 0 and rcost == inf and first_open >= 0:
                dest = first_open  # every open index is +inf (beyond the doubles)
        else:
            u = next_uniform(s_routing)
            if u >= split_cum[0]:
                dest = n - 1  # guards rounding of the last cumulative probability
                for k in range(n):
                    if u < split_cum[k + 1]:
                        dest = k
                        break
        if dest < 0:
            if counted:
                rejections += 1
            continue
        # -- admission: FCFS start on the earliest free server
        k = dest
        start = free[k, 0]
        if start < t:
            start = t
        finish = start + exponential(u_work) / mu[k]
        free[k, 0] = finish
        _sift_down(free, k, m[k], 0)
        events += 1
        if mode == 0 and start > t:  # the job waits: append its start time
            w = waiting[k]
            if w >= max_jobs:
                status = 1
                break
            width = queue.shape[1]
            if w == width:  # grow every ring, unrolled so that each starts at 0
                grown = np.empty((n, 2 * width))
                for j in range(n):
                    for i in range(waiting[j]):
                        grown[j, i] = queue[j, (head[j] + i) % width]
                    head[j] = 0
                queue = grown
                width = 2 * width
            queue[k, (head[k] + w) % width] = start
            waiting[k] = w + 1
        if counted:
            admissions += 1
            adm_k[k] += 1
            resp_sum += finish - t
            wait_sum += start - t
            if missed(kind, p1, p2, u_deadline, on_wait, start - t, finish - t):
                misses += 1
                miss_k[k] += 1
    counts = np.array(
        [arrivals, rejections, admissions, misses, events, status, table_bound], dtype=np.int64
    )
    sums = np.array([resp_sum, wait_sum])
    return counts, adm_k, miss_k, sums


# -- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimulationResult(Replicated):
    """Simulated cost of one policy on one multicluster instance (95% t intervals).

    Every rate is per unit time over the measured ``horizon``; every ``*_ci95`` is the
    half-width ``t_{0.975, r-1} s / sqrt(r)`` over the ``r`` independent replications.

    Attributes
    ----------
    cost, ci95:
        Long-run average cost per unit time, ``(R * rejections + misses) / horizon`` (the
        mean of :attr:`replication_costs`; rejections cost nothing when none occur, so
        ``R = +inf`` gives a finite cost unless a job was rejected), and the 95% t
        half-width of the cost over the replications.
    rejection_rate, rejection_ci95:
        Rejected jobs per unit time.
    miss_rate, miss_ci95:
        Admitted jobs that missed their deadline, per unit time.
    miss_probability, miss_probability_ci95:
        Fraction of admitted jobs that missed, mean of the per-replication ratios.
    mean_response_time, mean_response_time_ci95:
        Mean response time (arrival to departure) of admitted jobs (time units).
    mean_waiting_time:
        Mean waiting time (arrival to start of service) of admitted jobs (time units).
    cluster_admission_rate, cluster_miss_rate:
        Per-cluster admitted jobs and misses per unit time, shape ``(n,)``.
    cluster_miss_probability:
        Per-cluster miss fraction among jobs admitted there (pooled over replications;
        ``nan`` for a cluster that got no job), shape ``(n,)``.
    replication_costs, replication_rejection_rates, replication_miss_rates:
        Per-replication values, shape ``(r,)``; likewise
        ``replication_miss_probabilities`` and ``replication_response_times``.
    replication_cluster_miss_probabilities:
        Per-replication, per-cluster miss fractions, shape ``(r, n)`` (``nan`` where a
        cluster got no job).
    events, events_per_second:
        Arrivals plus departures of admitted jobs over all replications (warm-up included)
        and their number per wall second of the compiled kernel.
    wall_seconds:
        Wall time (s), compilation included on a first call.
    table_bound:
        Measured arrivals (all replications) whose decision the end of the index table may
        have changed: a cluster was beyond its row and the row's last index was not above
        the chosen index (or ``R``). Nonzero means the result is that of the truncated
        table, not of the policy (0 for Bernoulli splitting).
    """

    cost: float
    ci95: float
    rejection_rate: float
    rejection_ci95: float
    miss_rate: float
    miss_ci95: float
    miss_probability: float
    miss_probability_ci95: float
    mean_response_time: float
    mean_response_time_ci95: float
    mean_waiting_time: float
    cluster_admission_rate: np.ndarray
    cluster_miss_rate: np.ndarray
    cluster_miss_probability: np.ndarray
    replication_costs: np.ndarray = field(repr=False)
    replication_rejection_rates: np.ndarray = field(repr=False)
    replication_miss_rates: np.ndarray = field(repr=False)
    replication_miss_probabilities: np.ndarray = field(repr=False)
    replication_response_times: np.ndarray = field(repr=False)
    replication_cluster_miss_probabilities: np.ndarray = field(repr=False)
    events: int
    events_per_second: float = field(compare=False)
    wall_seconds: float = field(compare=False)
    horizon: float
    warmup: float
    seed: int
    keys: tuple = ()
    table_bound: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the CLI contract: ``{"cost", "rejection_rate", "miss_rate",
        "ci95"}`` (``ci95`` is the half-width of :attr:`cost`)."""
        return {
            "cost": float(self.cost),
            "rejection_rate": float(self.rejection_rate),
            "miss_rate": float(self.miss_rate),
            "ci95": float(self.ci95),
        }

    @classmethod
    def from_block(
        cls, block: ReplicationBlock, *, seed: int, keys: tuple, wall_seconds: float
    ) -> SimulationResult:
        """The statistics of ``block``, the replications ``0..R-1`` (``R >= 2``) of one
        policy (:func:`simulate_replications`) on the streams of ``seed`` and ``keys``,
        simulated in ``wall_seconds``."""
        costs, rej, mis = block.costs, block.rejection_rates, block.miss_rates
        mprob, resp = block.miss_probabilities, block.response_times
        admitted = block.cluster_admissions.sum(axis=0)
        missed = block.cluster_misses.sum(axis=0)
        measured = block.horizon * len(block.indices)
        kernel = block.kernel_seconds
        return cls(
            cost=float(costs.mean()),
            ci95=_half_width(costs),
            rejection_rate=float(rej.mean()),
            rejection_ci95=_half_width(rej),
            miss_rate=float(mis.mean()),
            miss_ci95=_half_width(mis),
            miss_probability=float(mprob.mean()),
            miss_probability_ci95=_half_width(mprob),
            mean_response_time=float(resp.mean()),
            mean_response_time_ci95=_half_width(resp),
            mean_waiting_time=float(block.waiting_times.mean()),
            cluster_admission_rate=admitted / measured,
            cluster_miss_rate=missed / measured,
            cluster_miss_probability=_missed_fraction(admitted, missed),
            replication_costs=costs,
            replication_rejection_rates=rej,
            replication_miss_rates=mis,
            replication_miss_probabilities=mprob,
            replication_response_times=resp,
            replication_cluster_miss_probabilities=block.cluster_miss_probabilities,
            events=block.events,
            events_per_second=block.events / kernel if kernel > 0 else math.inf,
            wall_seconds=wall_seconds,
            horizon=block.horizon,
            warmup=block.warmup,
            seed=int(seed),
            keys=tuple(keys),
            table_bound=block.table_bound,
        )


_half_width = t_half_width  # 95% t half-width over replications (axis 0)


def _missed_fraction(admitted: np.ndarray, missed: np.ndarray) -> np.ndarray:
    """``missed / admitted`` per cluster, ``nan`` where no job was admitted."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(admitted > 0, missed / np.maximum(admitted, 1), math.nan)


# -- argument checks -------------------------------------------------------------------------
def _index_table(index: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(table (n, W) padded with +inf, row lengths (n,))`` from a 2-D array or n rows."""
    if isinstance(index, np.ndarray) and index.ndim == 2:
        rows = list(index)
    elif isinstance(index, Sequence | np.ndarray):
        rows = [np.asarray(r, dtype=float).ravel() for r in index]
    else:
        raise TypeError(f"index must be a 2-D array or a sequence of rows, got {type(index)}")
    if len(rows) != n:
        raise ValueError(f"index must have one row per cluster ({n}), got {len(rows)}")
    width = max(1, max(np.asarray(r).size for r in rows))
    table = np.full((n, width), np.inf)
    xlen = np.zeros(n, dtype=np.int64)
    for k, r in enumerate(rows):
        try:
            r = np.asarray(r, dtype=float).ravel()
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"index: the row of cluster {k + 1} must hold numbers") from None
        if r.size == 0:
            raise ValueError(f"index: the row of cluster {k + 1} is empty")
        if np.isnan(r).any():
            raise ValueError(f"index: the row of cluster {k + 1} contains NaN")
        table[k, : r.size] = r
        xlen[k] = r.size
    return table, xlen


def replication_states(seed: int, keys: tuple, replication: int) -> np.ndarray:
    """The kernel's stream states (uint64, shape ``(4, 4)``) for one replication.

    Row ``s`` is seeded by ``seed_sequence(seed, SIMULATE_KEY, *keys, replication,
    STREAMS[s])`` (:data:`SIMULATE_KEY` ``= "deadlines-sim"``,
    :func:`~queue_routing.seeding.stream_states`); the policy is not a key, so
    every policy simulated with the same ``seed``, ``keys`` and replication index sees the same
    jobs (``docs/deadlines.md#common-random-numbers``).

    >>> a = replication_states(1, ("k",), 0)
    >>> a.shape, bool((a == replication_states(1, ("k",), 0)).all())
    ((4, 4), True)
    """
    return stream_states(seed, SIMULATE_KEY, *keys, replication, streams=STREAMS)


def _routing_arrays(instance: Instance, index: Any, split: Any):
    """``(mode, table, xlen, split_cum)`` of the kernel: mode 0 routes by the index table,
    mode 1 by Bernoulli splitting (``split``); exactly one of ``index``, ``split``."""
    if not isinstance(instance, Instance):
        raise TypeError(f"instance must be an Instance, got {type(instance).__name__}")
    n = len(instance.servers)
    rejection_cost = instance.rejection_cost
    if (index is None) == (split is None):
        raise ValueError("give exactly one of index and split")
    if index is not None:
        table, xlen = _index_table(index, n)
        return 0, table, xlen, np.zeros(n + 1)
    p = np.asarray(split, dtype=float).ravel()
    if p.size != n + 1 or np.any(~np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"split must be n + 1 = {n + 1} probabilities >= 0, got {show(split)}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"split must sum to 1, got {p.sum()!r}")
    if p[0] > 0 and rejection_cost is None:
        raise ValueError("split: p_0 > 0 (rejection) needs a finite rejection_cost")
    return 1, np.zeros((n, 1)), np.ones(n, dtype=np.int64), np.cumsum(p)


@dataclass(frozen=True)
class ReplicationBlock(stats.ReplicationBlock):
    """Replications ``indices`` of one policy on one instance (:func:`simulate_replications`):
    the per-replication values behind :class:`SimulationResult`, shape ``(len(indices),)``
    unless stated (rates per unit time over the ``horizon``); ``events`` and
    ``table_bound`` sum them over the block (:class:`queue_routing.stats.ReplicationBlock`).

    Attributes
    ----------
    indices:
        The replication indices simulated, in order (each on its own streams,
        :func:`replication_states`).
    costs, rejection_rates, miss_rates:
        Cost per unit time ``R * rejections + misses`` (rejections cost nothing when there
        are none, so ``R = +inf`` is finite without rejections), rejections and misses per
        unit time.
    miss_probabilities, response_times, waiting_times:
        Missed fraction of the admitted jobs, their mean response and waiting times (time
        units); ``nan`` without admissions.
    cluster_admissions, cluster_misses:
        Admitted jobs and misses per cluster, shape ``(len(indices), n)``.
    cluster_miss_probabilities:
        Missed fraction per cluster, shape ``(len(indices), n)`` (``nan`` without jobs).
    events_per_replication, table_bound_per_replication:
        Arrivals plus departures of admitted jobs (warm-up included), and measured arrivals
        whose decision the end of the index table may have changed.
    horizon, warmup, kernel_seconds:
        Measured time and warm-up per replication (time units); wall time in the kernel (s).
    """

    indices: tuple[int, ...]
    costs: np.ndarray
    rejection_rates: np.ndarray
    miss_rates: np.ndarray
    miss_probabilities: np.ndarray = field(repr=False)
    response_times: np.ndarray = field(repr=False)
    waiting_times: np.ndarray = field(repr=False)
    cluster_admissions: np.ndarray = field(repr=False)
    cluster_misses: np.ndarray = field(repr=False)
    cluster_miss_probabilities: np.ndarray = field(repr=False)
    events_per_replication: tuple[int, ...]
    # required here (the protocol's class attribute would make it default to ())
    table_bound_per_replication: tuple[int, ...] = field()
    horizon: float
    warmup: float
    kernel_seconds: float = field(compare=False)


def _replications(
    instance, mode, table, xlen, split_cum, horizon, warmup, replications, seed, keys, progress
) -> ReplicationBlock:
    lam = instance.arrival_rate
    m = np.ascontiguousarray(instance.servers, dtype=np.int64)
    mu = np.ascontiguousarray(instance.service_rates, dtype=float)
    n = m.size
    kind, p1, p2 = deadline_arguments(instance.deadline)
    rejection_cost = instance.rejection_cost
    rcost = math.inf if rejection_cost is None else float(rejection_cost)
    h = time_length("horizon", horizon)
    w = time_length("warmup", warmup, allow_zero=True)
    nonnegative_int("seed", seed)
    indices = tuple(nonnegative_int("replication", r) for r in replications)
    if not indices:
        raise ValueError("replications must name at least one replication index")
    keys = tuple(keys)
    on_wait = instance.deadline.on == "waiting"

    r_count = len(indices)
    rej = np.empty(r_count)
    mis = np.empty(r_count)
    mprob = np.empty(r_count)
    resp = np.empty(r_count)
    wait = np.empty(r_count)
    adm = np.zeros((r_count, n))
    miss = np.zeros((r_count, n))
    cprob = np.empty((r_count, n))
    events, bound = [], []
    kernel_wall = 0.0
    for row, r in enumerate(indices):
        t1 = time.perf_counter()
        with observe(progress, w + h) as clock:
            counts, a_k, m_k, sums = _kernel(
                lam, m, mu, kind, p1, p2, on_wait, rcost, mode, table, xlen, split_cum,
                w, w + h, replication_states(seed, keys, r), MAX_JOBS_IN_CLUSTER, clock,
            )  # fmt: skip
        kernel_wall += time.perf_counter() - t1
        if counts[5]:
            raise ValueError(
                f"a cluster exceeded {MAX_JOBS_IN_CLUSTER} jobs in replication {r}: the policy "
                "is unstable at this arrival rate"
            )
        _, n_rej, n_adm, n_miss, n_ev, _, n_bound = (int(c) for c in counts)
        bound.append(n_bound)
        rej[row] = n_rej / h
        mis[row] = n_miss / h
        mprob[row] = n_miss / n_adm if n_adm else math.nan
        resp[row] = sums[0] / n_adm if n_adm else math.nan
        wait[row] = sums[1] / n_adm if n_adm else math.nan
        adm[row] = a_k
        miss[row] = m_k
        cprob[row] = _missed_fraction(a_k, m_k)
        events.append(n_ev)
        if progress is not None:
            progress()
    with np.errstate(invalid="ignore"):
        costs = np.where(rej > 0, rcost * rej, 0.0) + mis
    return ReplicationBlock(
        indices=indices,
        costs=costs,
        rejection_rates=rej,
        miss_rates=mis,
        miss_probabilities=mprob,
        response_times=resp,
        waiting_times=wait,
        cluster_admissions=adm,
        cluster_misses=miss,
        cluster_miss_probabilities=cprob,
        events_per_replication=tuple(events),
        table_bound_per_replication=tuple(bound),
        horizon=h,
        warmup=w,
        kernel_seconds=kernel_wall,
    )


def simulate_replications(
    instance: Instance,
    replications: Iterable[int],
    *,
    index: Any = None,
    split: Sequence[float] | np.ndarray | None = None,
    horizon: float,
    warmup: float,
    seed: int,
    keys: tuple = (),
    progress: Callable[[], Any] | None = None,
) -> ReplicationBlock:
    """The replications with the given indices of :func:`simulate` (any non-empty set),
    without statistics: replication ``r`` runs on the streams ``(seed, keys, r)`` exactly as
    replication ``r`` of an unsplit :func:`simulate`, so a study can be split into blocks of
    replications (:mod:`queue_routing.workflow.chunks`) and reassembled bit for bit. Arguments as in
    :func:`simulate`.

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 0.8, "servers": [1], "service_rates": [1.0],
    ...     "rejection_cost": None, "deadline": {"kind": "exponential", "mean": 2.0}})
    >>> run = dict(index=[[0.0] * 100], horizon=200.0, warmup=10.0, seed=1)
    >>> whole = simulate(inst, replications=3, **run)
    >>> part = simulate_replications(inst, [2], **run)
    >>> part.costs.tolist() == whole.replication_costs[2:].tolist()
    True
    """
    mode, table, xlen, split_cum = _routing_arrays(instance, index, split)
    return _replications(
        instance, mode, table, xlen, split_cum, horizon, warmup, replications, seed, keys,
        progress,
    )  # fmt: skip


# -- public entry point ----------------------------------------------------------------------
def simulate(
    instance: Instance,
    *,
    index: Any = None,
    split: Sequence[float] | np.ndarray | None = None,
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    keys: tuple = (),
    progress: Callable[[], Any] | None = None,
) -> SimulationResult:
    """Simulate one admission/routing policy on ``instance``; cost, rejection and miss rates
    with 95% CIs.

    Parameters
    ----------
    instance:
        The (validated) instance: arrival rate, clusters, rejection cost ``R`` (``None``
        means ``+inf``, pure routing; then Bernoulli splitting must have ``p_0 = 0``) and
        deadline law.
    index:
        Index table ``index[k][x]`` for ``x = 0..X_k`` (2-D array, or one 1-D row per
        cluster); beyond a row's last entry the index is ``+inf`` (cluster treated as full).
        Reject iff ``min_k index_k(x_k) >= R``, else route to the smallest index, ties to the
        lowest ``k``.
    split:
        Bernoulli splitting probabilities ``(p_0, p_1, ..., p_n)`` (``p_0``: reject), summing
        to 1. Exactly one of ``index`` and ``split`` must be given.
    horizon, warmup:
        Measured time and discarded warm-up per replication (time units).
    replications:
        Independent replications (>= 2).
    seed, keys:
        Replication ``r`` draws from the streams :data:`STREAMS` of
        :func:`replication_states` (``seed_sequence(seed, SIMULATE_KEY, *keys, r,
        stream)``); the same arguments reproduce the result bit for bit, and every policy
        simulated with the same ``seed`` and ``keys`` sees the same jobs in replication ``r``
        (common random numbers, ``docs/deadlines.md#common-random-numbers``).

    Raises
    ------
    ValueError
        For inconsistent or out-of-range arguments (the message names the argument), or when
        a cluster exceeds :data:`MAX_JOBS_IN_CLUSTER` jobs (an unstable policy).

    Examples
    --------
    At one server of rate 1 fed at rate 0.8 and never rejecting, the response time is
    ``Exp(mu - lam)``, so an exponential deadline of mean 2 (``theta = 0.5``) is missed with
    probability ``theta/(theta + mu - lam) = 5/7``; the same seed reproduces the run:

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 0.8, "servers": [1], "service_rates": [1.0],
    ...     "rejection_cost": None, "deadline": {"kind": "exponential", "mean": 2.0}})
    >>> run = dict(index=[[0.0] * 1000], horizon=5000.0, warmup=100.0, replications=10, seed=1)
    >>> res = simulate(inst, **run)
    >>> bool(abs(res.miss_probability - 5 / 7) < 3 * res.miss_probability_ci95)
    True
    >>> bool(abs(res.cost - 0.8 * 5 / 7) < 3 * res.ci95), res.rejection_rate
    (True, 0.0)
    >>> simulate(inst, **run).replication_costs.tolist() == res.replication_costs.tolist()
    True
    """
    mode, table, xlen, split_cum = _routing_arrays(instance, index, split)
    time_length("horizon", horizon)
    time_length("warmup", warmup, allow_zero=True)
    replication_count(replications)
    t0 = time.perf_counter()
    block = _replications(
        instance, mode, table, xlen, split_cum, horizon, warmup, range(int(replications)),
        seed, keys, progress,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    return SimulationResult.from_block(block, seed=seed, keys=keys, wall_seconds=wall)
