"""Three clusters of Part B on the truncated chain, compiled: the exact evaluation of any
policy by an iterative stationary solver, and a simulation of a decision table
(``docs/deadlines.md#three-clusters``); Niño-Mora (2012).

The chain is that of :mod:`.markov` (state ``x = (x_1..x_n)``, ``x_k = 0..L`` jobs in
cluster ``k``, ``L`` the ``truncation``; ``docs/deadlines.md#truncated-chain``), and so is
the optimal policy for every number of clusters (:func:`~.markov.optimal_policy`,
:func:`~.markov.optimal_policy_converged`: a compiled relative value iteration). What does not
scale from two to three clusters is the sparse direct solve of the stationary law: its LU
factors fill (``(L+1)^3`` states: 28 s at ``L = 40``, 390 s at ``L = 50`` on the machine of
the docs/benchmarks.md). This module replaces it by numba kernels over the flat state
grid and keeps everything else (decision rules, truncation semantics, the
:class:`~queue_routing.deadlines.markov.ChainResult`):

* :func:`stationary_3` solves ``pi Q = 0`` by power iteration of the uniformised chain
  while it runs value iteration on the policy's cost, whose span bounds bracket the exact
  average cost; it stops when the bracket is within ``tol`` and the stationary law's cost
  lies in it (:func:`evaluate_3` passes it to the evaluators of :mod:`.markov`);
  :func:`product_form_3` is the exact law of a Bernoulli split (independent clusters).
* :func:`simulate_actions` simulates the queueing system itself (FCFS clusters, each job's
  own work and deadline) under a decision table: an independent check of the chain.

The kernels take ``n <= 3`` clusters (a system of fewer clusters is padded with clusters of
one level, which can never admit), so the same code is checked against :mod:`.markov` on two
clusters. Memory: ``(L+1)^n`` doubles per array; the evaluation holds five plus the
``(L+1)^n x 3`` routing table.

Both stationary solvers agree with the sparse direct solve of :mod:`.markov` on a chain all
three can solve, a Bernoulli split of three clusters (a job sent to a cluster at the level
``L = 8`` is lost): :func:`stationary_3` to within a few times its ``tol`` in L1,
:func:`product_form_3` to rounding:

>>> from queue_routing.deadlines import Instance
>>> from queue_routing.deadlines.markov import stationary
>>> inst = Instance.from_dict({"arrival_rate": 2.0, "servers": [2, 1, 1],
...     "service_rates": [1.0, 0.8, 0.6], "rejection_cost": None,
...     "deadline": {"kind": "constant", "t": 1.5}})
>>> x = np.indices((9, 9, 9)).reshape(3, -1).T
>>> route, reject = np.where(x < 8, [0.5, 0.3, 0.2], 0.0), np.zeros(len(x))
>>> direct = stationary(inst, 8, route)
>>> bool(np.abs(stationary_3(inst, 8, route, reject, tol=1e-11) - direct).sum() < 1e-10)
True
>>> bool(np.abs(product_form_3(inst, 8, route, reject) - direct).sum() < 1e-12)
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..errors import AccuracyError
from ..rng import next_uniform
from ..stats import Replicated, t_half_width
from . import markov
from .markov import (
    KERNEL_AXES,
    LOST,
    REJECT,
    ChainResult,
    check_level,
    padded_grid,
    span_close,
    span_open,
    span_widen,
    state_grid,
    uniformisation_rate,
)
from .model import Instance
from .simulation import (
    deadline_arguments,
    exponential,
    largest,
    missed,
    replication_states,
)

__all__ = [
    "ActionSimulation",
    "evaluate_3",
    "product_form_3",
    "simulate_actions",
    "stationary_3",
]


# -- exact evaluation: the stationary law by power iteration, bracketed by value iteration --
@njit(cache=True, nogil=True)
def _stationary_kernel(
    route, cost, dims, dep, lam, big_lam, tol, max_iter
):  # pragma: no cover - compiled
    """Stationary law of the uniformised chain in which an arrival in state ``i`` joins axis
    ``k`` with probability ``route[i, k]``; value iteration on the cost rate ``cost[i]`` runs
    alongside. Returns ``(pi, iterations, lower, upper, converged)``: stops when the span
    bounds are within ``tol``, the stationary law's cost lies within ``tol`` of their midpoint
    and one step changes ``pi`` by at most ``tol`` in L1. Both updates pull from the
    neighbours of a state: ``pi'(j) = [pi(j) stay(j) + sum_k pi(j - e_k) lam route_k(j - e_k)
    + sum_k pi(j + e_k) mu_k min(x_k + 1, m_k)] / Lambda``."""
    d0, d1, d2 = dims[0], dims[1], dims[2]
    s0, s1 = d1 * d2, d2
    size = d0 * d1 * d2
    pi = np.zeros(size)
    pi[0] = 1.0
    new = np.empty(size)
    h = np.zeros(size)
    th = np.empty(size)
    lower = np.nan
    upper = np.nan
    for it in range(1, max_iter + 1):
        lo, hi = span_open()
        step = 0.0
        g = 0.0
        for a in range(d0):
            for b in range(d1):
                for c in range(d2):
                    i = (a * d1 + b) * d2 + c
                    hi_ = h[i]
                    u0 = lam * route[i, 0]
                    u1 = lam * route[i, 1]
                    u2 = lam * route[i, 2]
                    r0, r1, r2 = dep[0, a], dep[1, b], dep[2, c]
                    stay = big_lam - (u0 + u1 + u2) - (r0 + r1 + r2)
                    t = cost[i] + stay * hi_
                    v = stay * pi[i]
                    if u0 > 0.0:
                        t += u0 * h[i + s0]
                    if u1 > 0.0:
                        t += u1 * h[i + s1]
                    if u2 > 0.0:
                        t += u2 * h[i + 1]
                    if a > 0:
                        t += r0 * h[i - s0]
                        v += pi[i - s0] * lam * route[i - s0, 0]
                    if b > 0:
                        t += r1 * h[i - s1]
                        v += pi[i - s1] * lam * route[i - s1, 1]
                    if c > 0:
                        t += r2 * h[i - 1]
                        v += pi[i - 1] * lam * route[i - 1, 2]
                    if a < d0 - 1:
                        v += pi[i + s0] * dep[0, a + 1]
                    if b < d1 - 1:
                        v += pi[i + s1] * dep[1, b + 1]
                    if c < d2 - 1:
                        v += pi[i + 1] * dep[2, c + 1]
                    v /= big_lam
                    new[i] = v
                    step += abs(v - pi[i])
                    g += v * cost[i]
                    t /= big_lam
                    th[i] = t
                    lo, hi = span_widen(lo, hi, t - hi_)
        lower, upper = span_close(h, th, lo, hi, big_lam)
        pi, new = new, pi
        if upper - lower <= tol and step <= tol and abs(g - 0.5 * (lower + upper)) <= tol:
            return pi, it, lower, upper, True
    return pi, max_iter, lower, upper, False


def stationary_3(
    instance: Instance,
    truncation: int,
    route: np.ndarray,
    reject: np.ndarray,
    *,
    tol: float = 1e-9,
    max_iter: int = 500_000,
) -> np.ndarray:
    """Stationary distribution (shape ``(N,)``, C order of the grid ``(L+1,)*n``) of the chain
    truncated at level ``L = truncation`` in which an arrival in state ``i`` joins cluster
    ``k`` with probability ``route[i, k]`` (0 where ``x_k = L``) and is rejected with
    probability ``reject[i]`` (cost ``R``): the ``solver`` of the evaluators of
    :mod:`.markov`. ``tol`` (cost per unit time, and L1 change of ``pi`` per step) as in
    :func:`_stationary_kernel`; :class:`~queue_routing.errors.AccuracyError` if not reached
    in ``max_iter`` iterations. The policy's cost is bracketed by the span bounds; ``pi``
    itself is within about ``tol / (1 - rho)`` in L1 of the exact law, ``rho`` the chain's
    contraction per step (a few times ``tol`` on the example of the module docstring).
    """
    n, L = check_level(instance, truncation)
    dims, miss, dep, pad = padded_grid(instance, L)
    size = (L + 1) ** n
    r = np.zeros((size, KERNEL_AXES))
    r[:, pad:] = np.asarray(route, dtype=float).reshape(size, n)
    x = state_grid(n, L)
    lam = instance.arrival_rate
    r_cost = instance.rejection_cost
    cost = lam * sum(r[:, pad + k] * miss[pad + k, x[:, k]] for k in range(n))
    if r_cost is not None:
        cost = cost + lam * r_cost * np.asarray(reject, dtype=float).reshape(size)
    pi, it, lower, upper, ok = _stationary_kernel(
        r, np.ascontiguousarray(cost), dims, dep, lam, uniformisation_rate(instance), float(tol),
        int(max_iter),
    )  # fmt: skip
    if not ok:
        raise AccuracyError(
            f"truncation: the stationary law at level {L} did not converge in {it} iterations "
            f"(cost bounds {lower:.6g}..{upper:.6g}, tolerance {tol:g})"
        )
    return pi


def product_form_3(
    instance: Instance, truncation: int, route: np.ndarray, reject: np.ndarray
) -> np.ndarray:
    """Stationary law of a chain whose routing is a Bernoulli split, ``route[i, k] = p_k``
    where ``x_k < L`` and 0 at ``x_k = L``: the clusters are independent M/M/m_k/L queues
    fed at ``lam p_k``, so ``pi`` is the product of their birth-death laws
    ``w_{x+1} = w_x lam p_k / (mu_k min(x + 1, m_k))`` (exact; the ``solver`` of
    :func:`~queue_routing.deadlines.markov.evaluate_split`, ``reject`` unused). Raises
    ``ValueError`` for any other routing (an example: the module docstring).
    """
    n, L = check_level(instance, truncation)
    x = state_grid(n, L)
    route = np.asarray(route, dtype=float).reshape(-1, n)
    pi = np.ones(1)
    for k, c in enumerate(instance.clusters):
        p = route[x[:, k] < L, k]
        p_k = float(p[0]) if p.size else 0.0
        if np.any(p != p_k) or np.any(route[x[:, k] == L, k] != 0.0):
            raise ValueError(f"route: cluster {k + 1} is not fed by a Bernoulli split")
        ratio = instance.arrival_rate * p_k / (c.rate * np.minimum(np.arange(1, L + 1), c.servers))
        w = np.concatenate([[1.0], np.cumprod(ratio)])
        pi = np.multiply.outer(pi, w / w.sum()).reshape(-1)
    return pi


def evaluate_3(
    instance: Instance,
    policy: str,
    truncation: int,
    *,
    table: Any = None,
    actions: np.ndarray | None = None,
    tol: float = 1e-9,
    truncation_losses: bool = False,
) -> ChainResult:
    """Exact rates on the chain truncated at level ``L = truncation`` of ``policy``:
    ``"bs"`` (the optimal Bernoulli split, :func:`~queue_routing.deadlines.markov.evaluate_split`,
    its stationary law the product form of :func:`product_form_3`),
    ``"index"`` (the index table ``table``,
    :func:`~queue_routing.deadlines.markov.evaluate_index_policy`, with
    ``truncation_losses``) or ``"actions"`` (a decision table,
    :func:`~queue_routing.deadlines.markov.evaluate_actions`), the stationary law solved by
    :func:`stationary_3` to ``tol`` (cost per unit time)."""
    solver = functools.partial(stationary_3, tol=tol)
    if policy == "bs":
        return markov.evaluate_split(instance, truncation, solver=product_form_3)
    if policy == "index":
        return markov.evaluate_index_policy(
            instance, table, truncation, truncation_losses=truncation_losses, solver=solver
        )
    if policy == "actions":
        return markov.evaluate_actions(instance, actions, truncation, solver=solver)
    raise ValueError(f"policy must be bs, index or actions, got {policy!r}")


# -- simulation of a decision table --------------------------------------------------------
@njit(cache=True, nogil=True)
def _action_kernel(
    lam, m, mu, kind, p1, p2, on_wait, actions, dims, t_warm, t_end, states
):  # pragma: no cover - compiled
    """One replication of the FCFS clusters under the decision table ``actions`` (flat, C
    order of ``dims``, one axis per cluster): returns ``[arrivals, rejections, lost,
    admissions, misses]`` of the window ``[t_warm, t_end)``. Streams and draws as the Part B
    simulator's kernel (``docs/deadlines.md#common-random-numbers``)."""
    st = states.copy()
    s_arrivals, s_work, s_deadlines = st[0], st[1], st[2]
    n = m.size
    free = np.zeros((n, largest(m)))  # server-free times
    leave = np.zeros((n, largest(dims)))  # departure times of the jobs present
    count = np.zeros(n, dtype=np.int64)
    x = np.zeros(n, dtype=np.int64)
    out = np.zeros(5, dtype=np.int64)
    t = 0.0
    while True:
        t += exponential(next_uniform(s_arrivals)) / lam
        if t >= t_end:
            break
        u_work = next_uniform(s_work)
        u_deadline = 0.0
        if kind != 0:
            u_deadline = next_uniform(s_deadlines)
        counted = t >= t_warm
        if counted:
            out[0] += 1
        i = 0
        for k in range(n):
            w = 0
            for j in range(count[k]):
                if leave[k, j] > t:
                    leave[k, w] = leave[k, j]
                    w += 1
            count[k] = w
            x[k] = w
            i = i * dims[k] + w
        a = actions[i]
        if a < 0:
            if counted:
                out[1 if a == -1 else 2] += 1
            continue
        j = 0
        for s in range(1, m[a]):
            if free[a, s] < free[a, j]:
                j = s
        start = free[a, j] if free[a, j] > t else t
        finish = start + exponential(u_work) / mu[a]
        free[a, j] = finish
        leave[a, count[a]] = finish
        count[a] += 1
        if counted:
            out[3] += 1
            if missed(kind, p1, p2, u_deadline, on_wait, start - t, finish - t):
                out[4] += 1
    return out


@dataclass(frozen=True)
class ActionSimulation(Replicated):
    """Simulated rates of a decision table (per unit time over the measured ``horizon``; 95%
    Student-t half-widths over the replications).

    Attributes
    ----------
    cost, ci95:
        ``R * rejection_rate + miss_rate`` (lost jobs are not charged) and its half-width.
    rejection_rate, miss_rate, lost_rate:
        Rejected, missed and lost jobs per unit time.
    replication_costs:
        Per-replication costs, shape ``(r,)``.
    horizon, warmup:
        Measured time and warm-up per replication (time units).
    """

    cost: float
    ci95: float
    rejection_rate: float
    miss_rate: float
    lost_rate: float
    replication_costs: np.ndarray = field(repr=False)
    horizon: float
    warmup: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON object: ``cost``, ``ci95``, ``standard_error``, ``replications``,
        ``rejection_rate``, ``miss_rate``, ``lost_rate`` (per unit time), ``horizon`` and
        ``warmup`` (time units)."""
        return {
            "cost": float(self.cost),
            "ci95": float(self.ci95),
            "standard_error": float(self.standard_error),
            "replications": int(self.replications),
            "rejection_rate": float(self.rejection_rate),
            "miss_rate": float(self.miss_rate),
            "lost_rate": float(self.lost_rate),
            "horizon": float(self.horizon),
            "warmup": float(self.warmup),
        }


def simulate_actions(
    instance: Instance,
    actions: np.ndarray,
    *,
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    keys: tuple = (),
) -> ActionSimulation:
    """Simulate the queueing system (not the chain: each admitted job's FCFS waiting and
    response times and its own deadline decide its miss) under the decision table
    ``actions`` of shape ``(L+1,)*n`` (cluster ``k``, :data:`~.markov.REJECT` or
    :data:`~.markov.LOST`, never a cluster at ``L``, so no cluster exceeds ``L`` jobs).
    Replication ``r`` draws from the Part B simulator's streams
    (:func:`~queue_routing.deadlines.simulation.replication_states` of ``seed``, ``keys``,
    ``r``); ``horizon`` and ``warmup`` in time units.

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 1.0, "servers": [1], "service_rates":
    ...     [1.0], "rejection_cost": 5.0, "deadline": {"kind": "constant", "t": 1.0}})
    >>> admit_if_empty = np.array([0, REJECT])  # an M/M/1/1 loss system
    >>> sim = simulate_actions(inst, admit_if_empty, horizon=4000.0, warmup=10.0,
    ...     replications=10, seed=3)
    >>> bool(abs(sim.rejection_rate - 0.5) < 3 * sim.ci95 / 5)  # Erlang B: 1/2
    True
    """
    n = instance.n_clusters
    a = np.asarray(actions)
    if a.ndim != n or len(set(a.shape)) != 1 or a.shape[0] < 2:
        raise ValueError(f"actions must have shape (L+1,)*{n} with L >= 1, got {a.shape}")
    L = a.shape[0] - 1
    x = state_grid(n, L)
    flat = a.reshape(-1).astype(np.int64)
    if np.any((flat < LOST) | (flat >= n)):
        raise ValueError(f"actions must be cluster numbers 0..{n - 1}, REJECT or LOST")
    ok = flat >= 0
    if np.any(x[np.flatnonzero(ok), flat[ok]] == L):
        raise ValueError("actions route to a cluster at level L")
    r_cost = instance.rejection_cost
    if r_cost is None and np.any(flat == REJECT):
        raise ValueError("actions reject, but the instance has no rejection cost (pure routing)")
    m = np.ascontiguousarray(instance.servers, dtype=np.int64)
    mu = np.ascontiguousarray(instance.service_rates, dtype=float)
    kind, p1, p2 = deadline_arguments(instance.deadline)
    on_wait = instance.deadline.on == "waiting"
    dims = np.full(n, L + 1, dtype=np.int64)
    h, w = float(horizon), float(warmup)
    rej, mis, lost = (np.empty(int(replications)) for _ in range(3))
    for r in range(int(replications)):
        c = _action_kernel(
            instance.arrival_rate, m, mu, kind, p1, p2, on_wait, flat, dims, w, w + h,
            replication_states(seed, tuple(keys), r),
        )  # fmt: skip
        rej[r], lost[r], mis[r] = c[1] / h, c[2] / h, c[4] / h
    costs = mis + (0.0 if r_cost is None else r_cost * rej)
    return ActionSimulation(
        cost=float(costs.mean()),
        ci95=float(t_half_width(costs)),
        rejection_rate=float(rej.mean()),
        miss_rate=float(mis.mean()),
        lost_rate=float(lost.mean()),
        replication_costs=costs,
        horizon=h,
        warmup=w,
    )
