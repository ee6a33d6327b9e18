"""Exact event-driven simulation of the r-th stochastic system under LQFS-LB (Sec. 2), and
under Leaf Activity Priority and static routing for comparison.

The r-th system: class i arrives as Poisson(r lambda_i); pool j has ``N_j = round(r beta_j)``
servers; a class-i customer in pool j is served in Exp(mu_ij) time, only on the basic
activities E (the paper restricts routing to E). The state is integer: ``Z_ij`` busy servers
of pool j serving class i and queue lengths ``Q_i``; it is a continuous-time Markov chain
and we simulate it exactly (Gillespie): total event rate
``R = r sum_i lambda_i + sum_(ij) mu_ij Z_ij``, holding time Exp(R), event picked with
probability proportional to its rate. Events per unit time are about
``2 r sum_i lambda_i`` (arrivals plus as many departures in steady state).

LQFS-LB:
* Routing: an arriving class-i customer takes an idle server in the least-loaded pool of
  S(i) among those with an idle server, load ``Z_j / N_j`` (exact integer comparison);
  otherwise it joins queue i.
* Scheduling: a server of pool j that completes a service takes the head of the longest
  queue among C(j); otherwise it idles.
* Ties: uniformly at random (reservoir sampling), from the run's ``ties`` stream.

Two other disciplines run in the same kernel (``policy`` of :func:`simulate`;
``docs/serverpools.md``, "What to do instead: LAP"):

* Leaf Activity Priority (:mod:`.lap`): an arrival takes an idle server in the first pool of
  S(i) in priority order that has one, else queues; a freed server takes the first class of
  C(j) in priority order with a queue. No ties, no draws beyond ``clock`` and ``events``.
* Static routing: an arrival of class i goes to pool j with probability flow_ij / lambda_i
  (the SPP's flows) and takes an idle server there or waits in pool j's own line; a freed
  server takes a uniformly drawn customer of its line (random order of service). Its routes
  and draws come from ``ties``.

Output: the diffusion-scaled deviation of the class totals ``X_i = sum_j Z_ij + Q_i``,
``(X_i(t) - r x*_i) / sqrt(r)`` with ``x*_i = psi*_i + q`` (q the equilibrium queue per unit
r, 0 when underloaded), sampled on a regular grid, and exact time averages over the measured
window ``[warmup, warmup + horizon]`` of the deviation, its outer product and its norm. A run
is one trajectory on ``[0, t_end]``, ``t_end = warmup + horizon`` (the discarded warm-up
``[0, warmup)`` included).

Random numbers (``docs/README.md#random-numbers``): a run draws from the three named streams
:data:`STREAMS` of :func:`replication_states`, ``stream_states(seed, "serverpools-simulate",
*keys, streams=STREAMS)``, with the compiled xoshiro256** generator of :mod:`queue_routing.rng`
(explicit state passed to the kernel; numba's global generator is never used), so a run is a
function of (seed, keys) alone. ``keys`` must hold everything that distinguishes runs, the
replication index last (the experiments pass ``(kind, example, int(r), replication)``), to
make runs independent. Each step draws one uniform from ``clock`` (its holding time,
``-log(1 - u) / R``) and, unless it is the last (the one that reaches ``t_end``), one from
``events`` (which event); ``ties`` is drawn only where a tie is broken.

Invariants: every run checks the conservation ``X(t_end) = X(0) + arrivals - departures``
per class; ``check=True`` also checks after every event that ``0 <= Z``, ``0 <= Q``,
``sum_i Z_ij <= N_j`` and that no pool has an idle server while a class of C(j) waits
(work conservation of LQFS-LB, and of LAP), and counts violations
(:func:`invariant_violations`); under LAP it also counts every arrival that passed over an
idle server of a higher-priority activity, and under static routing it checks that no pool
has an idle server while a customer routed to it waits.

Units: time in units of 1/mu; deviations in customers / sqrt(r).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..checks import integer, nonnegative_int, positive, time_length
from ..errors import ArgumentError
from ..progress import observe
from ..rng import next_uniform
from ..seeding import stream_states
from .model import SPPSolution
from .tree import grouped_edges

__all__ = [
    "POLICIES",
    "SIMULATE_KEY",
    "STREAMS",
    "SimulationRun",
    "initial_state",
    "invariant_violations",
    "replication_states",
    "simulate",
]

#: Domain of the simulator's streams (``docs/README.md#random-numbers``).
SIMULATE_KEY = "serverpools-simulate"
#: The named random streams of one run (rows of the kernel's ``states``): ``clock`` the
#: exponential holding times (one uniform per step), ``events`` which event happens (one
#: uniform per step but the last), ``ties`` the random tie-breaks among equally loaded pools
#: or equally long queues (one uniform per tied candidate, only where a tie occurs).
STREAMS = ("clock", "events", "ties")

# counters[...] slots filled by the kernel
_EVENTS, _VIOLATIONS, _FIRST_BAD, _TIES, _QUEUED = 0, 1, 2, 3, 4

#: The disciplines the kernel runs (``policy`` of :func:`simulate`): LQFS-LB (the paper's),
#: Leaf Activity Priority (:mod:`.lap`) and static routing in proportion to the SPP's flows.
POLICIES = ("lqfs-lb", "lap", "static")
_LQFS_LB, _LAP, _STATIC = 0, 1, 2


@njit(cache=True)
def invariant_violations(z, q, busy, n_servers, ei, pool_ptr, pool_edges):  # pragma: no cover
    """Number of broken LQFS-LB invariants in a state (compiled; the debug mode's check).

    ``z``: busy servers per basic edge ``(K_b,)``; ``q``: queue lengths ``(I,)``; ``busy``:
    busy servers per pool ``(J,)``; ``n_servers``: N_j ``(J,)``; ``ei``: class of every edge
    ``(K_b,)``; ``pool_ptr, pool_edges``: the edges of each pool,
    :func:`~.tree.grouped_edges` of the edges' pools. One count per negative ``z_e`` or
    ``q_i``, per pool whose ``busy`` is inconsistent with ``z`` or outside ``[0, N_j]``, and
    per pool with an idle server while a class it serves waits. All arrays ``int64``.
    """
    bad = 0
    for e in range(z.size):
        if z[e] < 0:
            bad += 1
    for i in range(q.size):
        if q[i] < 0:
            bad += 1
    for j in range(n_servers.size):
        total = 0
        waiting = False
        for k in range(pool_ptr[j], pool_ptr[j + 1]):
            e = pool_edges[k]
            total += z[e]
            if q[ei[e]] > 0:
                waiting = True
        if total != busy[j] or busy[j] > n_servers[j] or busy[j] < 0:
            bad += 1
        if waiting and busy[j] < n_servers[j]:
            bad += 1
    return bad


@njit(cache=True)
def _static_violations(z, qe, busy, n_servers, pool_ptr, pool_edges):  # pragma: no cover
    """Broken invariants of static routing in a state (compiled; the debug mode's check):
    one per negative ``z_e`` or per-activity queue ``qe_e`` and per pool with an idle server
    while a customer routed to it waits. Arrays ``int64``, per basic edge or per pool."""
    bad = 0
    for e in range(z.size):
        if z[e] < 0 or qe[e] < 0:
            bad += 1
    for j in range(n_servers.size):
        waiting = False
        for k in range(pool_ptr[j], pool_ptr[j + 1]):
            if qe[pool_edges[k]] > 0:
                waiting = True
        if (waiting and busy[j] < n_servers[j]) or busy[j] > n_servers[j]:
            bad += 1
    return bad


@njit(cache=True, nogil=True)  # nogil: SIGINT/SIGTERM can end a long run (signals.py)
def _kernel(states, network, z, q, qe, run, out):  # pragma: no cover - compiled
    """One run of the Gillespie simulation (module docstring); fills the output arrays.

    ``network``: the r-th system on its basic tree (:class:`_Network`); ``z``, ``q``: the
    start (:func:`initial_state`), updated in place to the state at ``t_end``; ``qe``: the
    queue of each activity (static routing only; else unused); ``run``:
    ``(target, inv_sqrt_r, t_end, record_every, warmup, check, policy)``, the centring r x*,
    1 / sqrt(r), the end, the recording step, the warm-up, whether to check the invariants
    after every event and the discipline (:data:`POLICIES` index: 0 LQFS-LB, 1 LAP, 2 static
    routing); ``out``: the output arrays (:class:`_Outputs`), zeroed but
    ``counters[_FIRST_BAD] = -1``.

    LAP reads its priorities from the network: the edges of each class and of each pool are
    listed highest priority first. Static routing draws its routing and its choice of the
    waiting customer from ``ties`` (``network.route``: the routing probability of each edge).

    ``acc_batch`` (shape ``(B,)``, ``B >= 0``) receives the integral of |deviation| over each
    of B equal consecutive batches of ``[warmup, t_end]`` (batch means for the stationarity
    test of :mod:`.stationarity`); a holding interval that straddles a batch boundary is
    split at it.

    ``states`` (uint64, shape ``(3, 4)``) holds the xoshiro256** states of :data:`STREAMS`;
    they are copied, so the caller's array is not changed. A step draws its holding time
    ``-log(1 - u) / R`` from ``clock`` (``1 - u`` is on the ``2^-53`` grid and never 0) and,
    unless it reaches ``t_end``, its event from ``events``; the reservoir sampling of ties
    draws from ``ties``, so ties never shift the other two streams.
    """
    lam_r, n_servers, ei, ej, mu, class_ptr, class_edges, pool_ptr, pool_edges, route = network
    target, inv_sqrt_r, t_end, record_every, warmup, check, policy = run
    out_dev, acc_mean, acc_outer, acc_norm, acc_batch, counters, arrivals, departures = out[:8]
    reached = out[8]  # the time reached, every 2^16 events (progress.observe reads it)
    clock = states[0].copy()
    pick = states[1].copy()
    tie = states[2].copy()
    n_i = lam_r.size
    n_j = n_servers.size
    n_e = mu.size
    n_rec = out_dev.shape[0]
    n_batch = acc_batch.size
    batch_len = (t_end - warmup) / n_batch if n_batch > 0 else 0.0
    busy = np.zeros(n_j, dtype=np.int64)
    x = q.copy()
    dep_rate = 0.0
    for e in range(n_e):
        busy[ej[e]] += z[e]
        x[ei[e]] += z[e]
        dep_rate += mu[e] * z[e]
    arr_rate = 0.0
    for i in range(n_i):
        arr_rate += lam_r[i]
    dev = np.empty(n_i)
    t = 0.0
    rec = 0
    events = 0
    ties = 0
    if check:
        if policy == _STATIC:
            bad = _static_violations(z, qe, busy, n_servers, pool_ptr, pool_edges)
        else:
            bad = invariant_violations(z, q, busy, n_servers, ei, pool_ptr, pool_edges)
        if bad > 0:
            counters[_VIOLATIONS] += bad
            counters[_FIRST_BAD] = 0
    while True:
        total_rate = arr_rate + dep_rate
        t_new = t - math.log(1.0 - next_uniform(clock)) / total_rate
        last = t_new >= t_end
        if last:
            t_new = t_end
        for i in range(n_i):
            dev[i] = (x[i] - target[i]) * inv_sqrt_r
        while rec < n_rec and (
            rec * record_every < t_new or (last and rec * record_every <= t_end)
        ):
            for i in range(n_i):
                out_dev[rec, i] = dev[i]
            rec += 1
        lo = t if t > warmup else warmup
        if t_new > lo:
            w = t_new - lo
            sq = 0.0
            for i in range(n_i):
                acc_mean[i] += w * dev[i]
                sq += dev[i] * dev[i]
                for k in range(i + 1):
                    acc_outer[i, k] += w * dev[i] * dev[k]
            norm = np.sqrt(sq)
            acc_norm[0] += w * norm
            acc_norm[1] += w * sq
            if n_batch > 0:
                s = lo
                b = int((s - warmup) / batch_len)
                if b >= n_batch:
                    b = n_batch - 1
                while s < t_new:
                    end = warmup + (b + 1) * batch_len
                    if b >= n_batch - 1 or end > t_new:
                        end = t_new
                    if end > s:
                        acc_batch[b] += (end - s) * norm
                        s = end
                    b += 1
        if last:
            break
        t = t_new
        events += 1
        if (events & 0xFFFF) == 0:
            reached[0] = t
        u = next_uniform(pick) * total_rate
        if policy != _LQFS_LB and u < arr_rate:
            # -- arrival under LAP (first pool of S(i) in priority order with an idle server)
            # or static routing (a pool drawn with probability flow_ij / lambda_i)
            cls = n_i - 1
            for i in range(n_i):
                if u < lam_r[i]:
                    cls = i
                    break
                u -= lam_r[i]
            arrivals[cls] += 1
            x[cls] += 1
            best = -1
            if policy == _LAP:
                for k in range(class_ptr[cls], class_ptr[cls + 1]):
                    e = class_edges[k]
                    if busy[ej[e]] < n_servers[ej[e]]:
                        best = e
                        break
                if best >= 0:
                    z[best] += 1
                    busy[ej[best]] += 1
                    dep_rate += mu[best]
                if check:  # no idle server of a higher-priority activity passed over
                    for k in range(class_ptr[cls], class_ptr[cls + 1]):
                        e = class_edges[k]
                        if e == best:
                            break
                        if busy[ej[e]] < n_servers[ej[e]]:
                            counters[_VIOLATIONS] += 1
                if best < 0:
                    q[cls] += 1
                    counters[_QUEUED] += 1
            else:
                v = next_uniform(tie)
                last_e = class_edges[class_ptr[cls + 1] - 1]
                best = last_e
                for k in range(class_ptr[cls], class_ptr[cls + 1]):
                    e = class_edges[k]
                    if v < route[e]:
                        best = e
                        break
                    v -= route[e]
                if busy[ej[best]] < n_servers[ej[best]]:
                    z[best] += 1
                    busy[ej[best]] += 1
                    dep_rate += mu[best]
                else:
                    qe[best] += 1
                    q[cls] += 1
                    counters[_QUEUED] += 1
        elif policy != _LQFS_LB:
            # -- service completion; LAP: the first class of C(j) in priority order with a
            # queue; static: a uniformly drawn customer among those routed to pool j
            u -= arr_rate
            done = -1
            for e in range(n_e):
                r_e = mu[e] * z[e]
                if u < r_e:
                    done = e
                    break
                u -= r_e
            if done < 0:  # rounding at the top of the range: the last busy edge
                for e in range(n_e - 1, -1, -1):
                    if z[e] > 0:
                        done = e
                        break
            cls = ei[done]
            j = ej[done]
            departures[cls] += 1
            x[cls] -= 1
            z[done] -= 1
            busy[j] -= 1
            dep_rate -= mu[done]
            best = -1
            if policy == _LAP:
                for k in range(pool_ptr[j], pool_ptr[j + 1]):
                    e = pool_edges[k]
                    if q[ei[e]] > 0:
                        best = e
                        break
                if best >= 0:
                    q[ei[best]] -= 1
            else:
                waiting = 0
                for k in range(pool_ptr[j], pool_ptr[j + 1]):
                    waiting += qe[pool_edges[k]]
                if waiting > 0:
                    ticket = int(next_uniform(tie) * waiting)
                    for k in range(pool_ptr[j], pool_ptr[j + 1]):
                        e = pool_edges[k]
                        best = e
                        if ticket < qe[e]:
                            break
                        ticket -= qe[e]
                    qe[best] -= 1
                    q[ei[best]] -= 1
            if best >= 0:
                z[best] += 1
                busy[j] += 1
                dep_rate += mu[best]
        elif u < arr_rate:
            # -- arrival of class i: least-loaded pool of S(i) with an idle server --------
            cls = n_i - 1
            for i in range(n_i):
                if u < lam_r[i]:
                    cls = i
                    break
                u -= lam_r[i]
            arrivals[cls] += 1
            x[cls] += 1
            best = -1
            n_tie = 0
            for k in range(class_ptr[cls], class_ptr[cls + 1]):
                e = class_edges[k]
                j = ej[e]
                if busy[j] >= n_servers[j]:
                    continue
                if best < 0:
                    best = e
                    n_tie = 1
                    continue
                jb = ej[best]
                lhs = busy[j] * n_servers[jb]
                rhs = busy[jb] * n_servers[j]
                if lhs < rhs:
                    best = e
                    n_tie = 1
                elif lhs == rhs:
                    n_tie += 1
                    ties += 1
                    if next_uniform(tie) * n_tie < 1.0:
                        best = e
            if best >= 0:
                z[best] += 1
                busy[ej[best]] += 1
                dep_rate += mu[best]
            else:
                q[cls] += 1
                counters[_QUEUED] += 1
        else:
            # -- service completion on an edge, then LQFS scheduling in its pool ----------
            u -= arr_rate
            done = -1
            for e in range(n_e):
                r_e = mu[e] * z[e]
                if u < r_e:
                    done = e
                    break
                u -= r_e
            if done < 0:  # rounding at the top of the range: the last busy edge
                for e in range(n_e - 1, -1, -1):
                    if z[e] > 0:
                        done = e
                        break
            cls = ei[done]
            j = ej[done]
            departures[cls] += 1
            x[cls] -= 1
            z[done] -= 1
            busy[j] -= 1
            dep_rate -= mu[done]
            best = -1
            n_tie = 0
            for k in range(pool_ptr[j], pool_ptr[j + 1]):
                e = pool_edges[k]
                i = ei[e]
                if q[i] <= 0:
                    continue
                if best < 0 or q[i] > q[ei[best]]:
                    best = e
                    n_tie = 1
                elif q[i] == q[ei[best]]:
                    n_tie += 1
                    ties += 1
                    if next_uniform(tie) * n_tie < 1.0:
                        best = e
            if best >= 0:
                q[ei[best]] -= 1
                z[best] += 1
                busy[j] += 1
                dep_rate += mu[best]
        if (events & 0xFFFFF) == 0:  # refresh the running sum against round-off drift
            dep_rate = 0.0
            for e in range(n_e):
                dep_rate += mu[e] * z[e]
        if check:
            if policy == _STATIC:
                bad = _static_violations(z, qe, busy, n_servers, pool_ptr, pool_edges)
            else:
                bad = invariant_violations(z, q, busy, n_servers, ei, pool_ptr, pool_edges)
            if bad > 0:
                if counters[_VIOLATIONS] == 0:
                    counters[_FIRST_BAD] = events
                counters[_VIOLATIONS] += bad
    for i in range(n_i):
        for k in range(i):
            acc_outer[k, i] = acc_outer[i, k]
    counters[_EVENTS] = events
    counters[_TIES] = ties


class _Network(NamedTuple):
    """The r-th system on its basic tree as the kernel takes it (``int64`` and ``float64``
    arrays): ``lam_r`` the arrival rates r lambda_i (customers per unit time), ``n_servers``
    N_j, ``ei, ej, mu`` the class, pool and service rate of each basic activity, and the
    activities of each class and of each pool (:func:`~.tree.grouped_edges`; under LAP each
    group highest priority first), and ``route`` the static routing probability
    flow_ij / lambda_i of each activity."""

    lam_r: np.ndarray
    n_servers: np.ndarray
    ei: np.ndarray
    ej: np.ndarray
    mu: np.ndarray
    class_ptr: np.ndarray
    class_edges: np.ndarray
    pool_ptr: np.ndarray
    pool_edges: np.ndarray
    route: np.ndarray


def _by_priority(ends: np.ndarray, n_nodes: int, rank: np.ndarray):
    """:func:`~.tree.grouped_edges` with each group sorted by ``rank`` (0 = highest)."""
    ptr, _ = grouped_edges(ends, n_nodes)
    return ptr, np.lexsort((rank, ends)).astype(np.int64)


def _network(solution: SPPSolution, r: float, n_servers: np.ndarray, priorities=None) -> _Network:
    """The :class:`_Network` of ``solution``'s system at scale ``r`` with ``n_servers``;
    ``priorities`` (LAP: edge indices, highest first) orders each class's and pool's edges."""
    system = solution.system
    edges = np.ascontiguousarray(solution.basic, dtype=np.int64)
    if priorities is None:
        classes = grouped_edges(edges[:, 0], system.n_classes)
        pools = grouped_edges(edges[:, 1], system.n_pools)
    else:
        rank = np.empty(len(edges), dtype=np.int64)
        rank[np.asarray(priorities)] = np.arange(len(edges))
        classes = _by_priority(edges[:, 0], system.n_classes, rank)
        pools = _by_priority(edges[:, 1], system.n_pools, rank)
    flows = solution.flows[edges[:, 0], edges[:, 1]]
    return _Network(
        np.ascontiguousarray(r * system.arrival_rates, dtype=float),
        n_servers,
        np.ascontiguousarray(edges[:, 0]),
        np.ascontiguousarray(edges[:, 1]),
        np.ascontiguousarray(system.rates[edges[:, 0], edges[:, 1]], dtype=float),
        *classes,
        *pools,
        np.ascontiguousarray(flows / system.arrival_rates[edges[:, 0]], dtype=float),
    )


class _Outputs(NamedTuple):
    """What the kernel fills: the recorded deviation ``(n_rec, I)``; the integrals over the
    window of the deviation ``(I,)``, of its outer product ``(I, I)``, of its norm and
    squared norm ``(2,)`` and of its norm per batch ``(B,)``; the ``counters`` ``(5,)`` (slots
    ``_EVENTS, _VIOLATIONS, _FIRST_BAD, _TIES, _QUEUED``); the arrivals and departures per
    class ``(I,)``; ``reached`` ``(1,)``, the simulated time reached, stored every 2^16
    events for :func:`queue_routing.progress.observe` (read by nothing else)."""

    deviation: np.ndarray
    mean: np.ndarray
    outer: np.ndarray
    norm: np.ndarray
    batch: np.ndarray
    counters: np.ndarray
    arrivals: np.ndarray
    departures: np.ndarray
    reached: np.ndarray


def _outputs(n_rec: int, n_i: int, batches: int) -> _Outputs:
    """The kernel's :class:`_Outputs` for ``n_rec`` records of ``n_i`` classes and
    ``batches`` batches, zeroed (``counters[_FIRST_BAD] = -1``: no violation yet)."""
    counters = np.zeros(5, dtype=np.int64)
    counters[_FIRST_BAD] = -1
    return _Outputs(
        deviation=np.zeros((n_rec, n_i)),
        mean=np.zeros(n_i),
        outer=np.zeros((n_i, n_i)),
        norm=np.zeros(2),
        batch=np.zeros(int(batches)),
        counters=counters,
        arrivals=np.zeros(n_i, dtype=np.int64),
        departures=np.zeros(n_i, dtype=np.int64),
        reached=np.zeros(1),
    )


@dataclass(frozen=True)
class SimulationRun:
    """One simulated path of the r-th system (module docstring).

    A single trajectory, not a replicated estimate: it has no ``ci95`` or ``standard_error``
    (its time averages are autocorrelated in time). Intervals come from independent runs:
    :func:`~.timeaverage.time_average` (a :class:`~queue_routing.stats.Replicated`
    :class:`~.timeaverage.TimeAverageEstimate`) and the pipeline's experiments.

    Attributes
    ----------
    r:
        The scale.
    horizon, warmup:
        Time averages are over the measured window ``[warmup, warmup + horizon]``; the
        warm-up ``[0, warmup)`` is discarded (units of 1/mu). The run covers ``[0, t_end]``,
        :attr:`t_end` ``= warmup + horizon``.
    seed, keys:
        The random streams :func:`replication_states` ``(seed, keys)``.
    times:
        Recording grid ``0, record_every, ...`` up to t_end (warm-up included), shape
        ``(T,)``.
    deviation:
        ``(X_i(t) - r x*_i) / sqrt(r)`` on the grid, shape ``(T, I)``.
    norm:
        Euclidean norm of ``deviation``, shape ``(T,)``.
    events:
        Number of events (arrivals plus service completions) simulated.
    wall_seconds:
        Wall-clock time of the compiled kernel.
    mean, second_moment, covariance:
        Exact time averages over the window of the deviation ``(I,)``, of its outer
        product ``(I, I)``, and ``second_moment - mean mean^T``.
    mean_norm, rms_norm:
        Time averages of |deviation| and sqrt of the time average of |deviation|^2.
    batch_mean_norm:
        Time averages of |deviation| over the B equal consecutive batches of the window
        (``batches`` of :func:`simulate`), shape ``(B,)``; their mean
        is ``mean_norm``.
    arrivals, departures:
        Counts per class, shape ``(I,)``.
    busy, queues:
        Final state: Z_ij ``(I, J)`` and Q_i ``(I,)``.
    initial_totals:
        X_i(0), shape ``(I,)``.
    n_servers:
        N_j = round(r beta_j), shape ``(J,)``.
    violations:
        Broken invariants counted in debug mode (``check=True``; always 0 otherwise).
    first_violation:
        Event index of the first violation, -1 if none.
    ties:
        Random tie-breaks drawn.
    queued:
        Arrivals that found no idle server in S(i) and joined the queue (static routing: no
        idle server in the pool drawn).
    policy, root_pool:
        The discipline (:data:`POLICIES`) and, under LAP, its root pool (0-based; else -1).
    """

    r: float
    horizon: float
    warmup: float
    seed: int
    keys: tuple
    times: np.ndarray
    deviation: np.ndarray
    norm: np.ndarray
    events: int
    wall_seconds: float
    mean: np.ndarray
    second_moment: np.ndarray
    covariance: np.ndarray
    mean_norm: float
    rms_norm: float
    batch_mean_norm: np.ndarray
    arrivals: np.ndarray
    departures: np.ndarray
    busy: np.ndarray
    queues: np.ndarray
    initial_totals: np.ndarray
    n_servers: np.ndarray
    checked: bool
    violations: int
    first_violation: int
    ties: int
    queued: int
    solution: SPPSolution = field(repr=False, compare=False)
    policy: str = "lqfs-lb"
    root_pool: int = -1

    @property
    def t_end(self) -> float:
        """End of the run, ``warmup + horizon`` (time units, counted from 0)."""
        return self.warmup + self.horizon

    @property
    def events_per_second(self) -> float:
        return self.events / self.wall_seconds if self.wall_seconds > 0 else float("inf")

    @property
    def totals(self) -> np.ndarray:
        """Final X_i = sum_j Z_ij + Q_i."""
        return self.busy.sum(axis=1) + self.queues

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON object: its settings, the time averages over the window, the
        counts and the final state (classes and pools in array order; the recorded trace
        ``times``, ``deviation`` under those keys; no wall-clock time, so the object is a
        function of the arguments alone)."""
        return {
            "r": float(self.r),
            "horizon": float(self.horizon),
            "warmup": float(self.warmup),
            "seed": int(self.seed),
            "keys": [k if isinstance(k, str) else int(k) for k in self.keys],
            "events": int(self.events),
            "mean": self.mean.tolist(),
            "covariance": self.covariance.tolist(),
            "mean_norm": float(self.mean_norm),
            "rms_norm": float(self.rms_norm),
            "batch_mean_norm": self.batch_mean_norm.tolist(),
            "arrivals": self.arrivals.tolist(),
            "departures": self.departures.tolist(),
            "busy": self.busy.tolist(),
            "queues": self.queues.tolist(),
            "n_servers": self.n_servers.tolist(),
            "violations": int(self.violations),
            "ties": int(self.ties),
            "queued": int(self.queued),
            "times": self.times.tolist(),
            "deviation": self.deviation.tolist(),
        }


def replication_states(seed: int, keys: tuple) -> np.ndarray:
    """The kernel's stream states (uint64, shape ``(3, 4)``) for one run.

    Row ``s`` is seeded by ``seed_sequence(seed, "serverpools-simulate", *keys, STREAMS[s])``
    (:func:`~queue_routing.seeding.stream_states`). ``keys`` identify the run and end with
    its replication index (the experiments pass ``(kind, example, int(r), replication)``), so
    replication ``k`` is the same whatever the number of replications and independent of the
    others. The disciplines (:data:`POLICIES`) take no key of their own: run with the same
    ``(seed, keys)`` they read the same streams (common random numbers).

    >>> a = replication_states(1, ("k", 0))
    >>> a.shape, bool((a == replication_states(1, ("k", 0))).all())
    ((3, 4), True)
    >>> bool((a == replication_states(1, ("k", 1))).any())  # another replication's streams
    False
    """
    return stream_states(seed, SIMULATE_KEY, *keys, streams=STREAMS)


def initial_state(
    solution: SPPSolution,
    r: float,
    *,
    initial_psi=None,
    initial_queues=None,
    queue_level: float = 0.0,
):
    """Integer start ``(Z (K_b,), Q (I,), N (J,))`` near ``r psi*`` (or ``r initial_psi``).

    ``Z_e = round(r psi_e)``; a pool over capacity sends its excess (largest edges first) to
    the queues; then idle servers take waiting customers (longest queue first) so that the
    LQFS-LB invariants hold from time 0. ``initial_psi`` is (I, J) per unit r (zero off the
    basic tree); ``initial_queues`` per unit r, default ``queue_level``.

    >>> from queue_routing.serverpools import ServerPoolSystem, solve_spp
    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))  # psi* = 1.5, beta = 3
    >>> [a.tolist() for a in initial_state(sol, 50)]  # Z = r psi*, Q = 0, N = r beta
    [[75], [0], [150]]
    """
    system = solution.system
    edges = solution.basic
    n_i = system.n_classes
    n_servers = np.rint(r * system.pool_sizes).astype(np.int64)
    if np.any(n_servers < 1):
        j = int(np.argmin(n_servers))
        raise ValueError(f"r beta_{j + 1} = {r * system.pool_sizes[j]:g} rounds to no server")
    psi = solution.occupancy if initial_psi is None else np.asarray(initial_psi, dtype=float)
    if psi.shape != (n_i, system.n_pools) or np.any(psi < 0):
        raise ValueError(f"initial_psi must be >= 0 with shape ({n_i}, {system.n_pools})")
    z = np.rint(r * psi[edges[:, 0], edges[:, 1]]).astype(np.int64)
    queues = np.full(n_i, float(queue_level)) if initial_queues is None else initial_queues
    q = np.rint(r * np.asarray(queues, dtype=float)).astype(np.int64).reshape(n_i)
    if np.any(q < 0):
        raise ValueError("initial queues must be >= 0")
    for j in range(system.n_pools):
        idx = np.flatnonzero(edges[:, 1] == j)
        while z[idx].sum() > n_servers[j]:
            e = idx[np.argmax(z[idx])]
            z[e] -= 1
            q[edges[e, 0]] += 1
    changed = True
    while changed:
        changed = False
        for j in range(system.n_pools):
            idx = np.flatnonzero(edges[:, 1] == j)
            while z[idx].sum() < n_servers[j] and np.any(q[edges[idx, 0]] > 0):
                e = idx[np.argmax(q[edges[idx, 0]])]
                q[edges[e, 0]] -= 1
                z[e] += 1
                changed = True
    return z, q, n_servers


def simulate(
    solution: SPPSolution,
    r: float,
    *,
    horizon: float,
    warmup: float = 0.0,
    record_every: float,
    seed: int,
    keys: tuple = (),
    queue_level: float = 0.0,
    initial_psi=None,
    initial_queues=None,
    check: bool = False,
    batches: int = 0,
    policy: str = "lqfs-lb",
    root_pool: int | None = None,
    progress: Any = None,
) -> SimulationRun:
    """Simulate the r-th system under ``policy`` on [0, warmup + horizon] (module docstring).

    Parameters
    ----------
    solution:
        SPP solution: its basic tree is the activity set and psi* the centring.
    r:
        Scale: arrival rates r lambda_i, pool sizes round(r beta_j).
    horizon, warmup:
        The measured window ``[warmup, warmup + horizon]`` of the time averages; the warm-up
        ``[0, warmup)`` is simulated and discarded (units of 1/mu). The run ends at
        ``t_end = warmup + horizon``.
    record_every:
        The recording step of the trace (from time 0, warm-up included), in units of 1/mu.
    seed, keys:
        The run draws from the streams :func:`replication_states` ``(seed, keys)``, i.e.
        ``stream_states(seed, SIMULATE_KEY, *keys, streams=STREAMS)``; put the replication
        index last in ``keys``.
    queue_level:
        Equilibrium queue per unit r in the centring x*_i = psi*_i + queue_level.
    initial_psi, initial_queues:
        Start at ``round(r initial_psi)`` busy servers and ``round(r initial_queues)``
        waiting (per unit r; default the nominal point psi* and ``queue_level``).
    check:
        Check the invariants after every event (slower; for tests).
    batches:
        Number B >= 0 of equal consecutive batches of the window whose time averages
        of |deviation| are recorded (``batch_mean_norm``; the stationarity test of
        :mod:`.stationarity`); 0: none.
    policy:
        ``"lqfs-lb"`` (default), ``"lap"`` (Leaf Activity Priority, :mod:`.lap`, rooted at
        ``root_pool``, 0-based, default :func:`~.lap.analyze_lap`'s choice; started at and
        centred on its own equilibrium, :func:`~.lap.lap_equilibrium`, unless
        ``initial_psi`` is given) or ``"static"`` (each arrival of class i routed to pool j
        with probability flow_ij / lambda_i of the SPP; it takes an idle server there or
        waits in that pool's line, from which a freed server takes a uniformly drawn
        customer: random order of service; centred on psi*, its fluid equilibrium). All three
        draw their holding times and events from the same ``clock`` and ``events`` streams
        (common random numbers); LAP draws nothing else, static routing its routing and
        service-order choices from ``ties``.
    progress:
        A :class:`~queue_routing.progress.Progress` whose unit under way is this run: it
        reports the fraction of ``[0, t_end]`` simulated while the kernel runs
        (:func:`~queue_routing.progress.observe`); it is not advanced here. ``None``: silent.

    Examples
    --------
    An M/M/150 queue at r = 50 (lambda = 1.2, mu = 0.8, beta = 3), started at r psi* = 75:

    >>> from queue_routing.serverpools import ServerPoolSystem, solve_spp
    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    >>> run = simulate(sol, r=50, horizon=2.0, record_every=0.5, seed=1, keys=("doc",))
    >>> run.times.tolist(), run.n_servers.tolist(), run.deviation[0].tolist()
    ([0.0, 0.5, 1.0, 1.5, 2.0], [150], [0.0])
    >>> bool(run.events == run.arrivals.sum() + run.departures.sum())
    True
    >>> bool((run.totals == run.initial_totals + run.arrivals - run.departures).all())
    True
    >>> again = simulate(sol, r=50, horizon=2.0, record_every=0.5, seed=1, keys=("doc",))
    >>> bool((again.deviation == run.deviation).all())  # (seed, keys) fix the streams
    True
    """
    if not isinstance(solution, SPPSolution):
        raise TypeError(f"expected an SPPSolution, got {type(solution).__name__}")
    r = positive("r", r)
    horizon = time_length("horizon", horizon)
    warmup = time_length("warmup", warmup, allow_zero=True)
    record_every = time_length("record_every", record_every)
    seed = nonnegative_int("seed", seed)
    batches = integer("batches", batches, 0)
    t_end = warmup + horizon
    if not (math.isfinite(t_end) and t_end > warmup):
        raise ArgumentError(
            "horizon", f"horizon {horizon:g} after warmup {warmup:g} ends at no later finite time"
        )
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    if policy not in POLICIES:
        raise ArgumentError(
            "policy", f"policy must be one of {', '.join(POLICIES)}, got {policy!r}"
        )
    centre, priorities = solution.class_occupancy, None
    if policy == "lap":
        from .lap import analyze_lap

        equilibrium = analyze_lap(solution, root_pool).equilibrium
        root_pool, priorities = equilibrium.root_pool, equilibrium.priorities
        centre = equilibrium.class_totals
        if initial_psi is None:
            initial_psi = equilibrium.occupancy
    z, q, n_servers = initial_state(
        solution,
        r,
        initial_psi=initial_psi,
        initial_queues=initial_queues,
        queue_level=queue_level,
    )
    network = _network(solution, r, n_servers, priorities)
    qe = np.zeros(len(z), dtype=np.int64)
    if policy == "static":  # a class's waiting customers in the line of its main pool
        for i in np.flatnonzero(q):
            own = np.flatnonzero(network.ei == i)
            qe[own[np.argmax(network.route[own])]] = q[i]
    target = r * (centre + float(queue_level))
    n_rec = int(np.floor(t_end / record_every * (1 + 1e-12))) + 1
    out = _outputs(n_rec, n_i, batches)
    x0 = np.bincount(network.ei, weights=z, minlength=n_i).astype(np.int64) + q
    states = replication_states(seed, keys)
    run = (target, 1.0 / np.sqrt(r), t_end, record_every, warmup, bool(check))
    run = (*run, POLICIES.index(policy))
    start = time.perf_counter()
    with observe(progress, t_end) as reached:
        _kernel(states, network, z, q, qe, run, out._replace(reached=reached))
    wall = time.perf_counter() - start
    span = t_end - warmup
    mean = out.mean / span
    second = out.outer / span
    busy = np.zeros((n_i, n_j), dtype=np.int64)
    busy[network.ei, network.ej] = z
    x_end = busy.sum(axis=1) + q
    arrivals, departures, counters = out.arrivals, out.departures, out.counters
    if not np.array_equal(x_end, x0 + arrivals - departures):
        raise RuntimeError(
            f"conservation broken: X(t_end) = {x_end} but X(0) + arrivals - departures = "
            f"{x0 + arrivals - departures}"
        )
    return SimulationRun(
        r=r,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=tuple(keys),
        times=np.arange(n_rec) * record_every,
        deviation=out.deviation,
        norm=np.linalg.norm(out.deviation, axis=1),
        events=int(counters[_EVENTS]),
        wall_seconds=wall,
        mean=mean,
        second_moment=second,
        covariance=second - np.outer(mean, mean),
        mean_norm=float(out.norm[0] / span),
        rms_norm=float(np.sqrt(out.norm[1] / span)),
        batch_mean_norm=out.batch / (span / batches) if batches else np.zeros(0),
        arrivals=arrivals,
        departures=departures,
        busy=busy,
        queues=q,
        initial_totals=x0,
        n_servers=n_servers,
        checked=bool(check),
        violations=int(counters[_VIOLATIONS]),
        first_violation=int(counters[_FIRST_BAD]),
        ties=int(counters[_TIES]),
        queued=int(counters[_QUEUED]),
        solution=solution,
        policy=policy,
        root_pool=-1 if root_pool is None else int(root_pool),
    )
