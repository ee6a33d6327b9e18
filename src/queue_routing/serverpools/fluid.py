"""The full LQFS-LB fluid model (Sec. 3, conditions (3.1)-(3.2)) and a time-stepping integrator.

State (per unit of the scale r): ``psi_ij >= 0`` busy servers of pool j serving class i, on
the basic activities E (the paper restricts routing to E, Sec. 2), and queues ``q_i >= 0``.
Pool loads are ``rho_j = sum_i psi_ij / beta_j <= 1``; class totals ``x_i = sum_j psi_ij + q_i``.
Service empties ``psi_ij`` at rate ``mu_ij psi_ij``; class-i fluid arrives at rate lambda_i.

LQFS-LB in the fluid limit
--------------------------
* Routing: arriving class-i fluid enters the least-loaded pools of S(i) that are not full;
  when several pools tie for the minimum it splits so that their loads stay equal (sliding
  mode on the manifold rho_j = rho_j'). Only when every pool of S(i) is full does it queue.
* Scheduling: capacity freed in a full pool j goes to the longest queues of C(j); tied
  queues share it so that they stay equal.

The vector field is discontinuous (the least-loaded pool changes with the state) and the
solutions slide along the tie manifolds, so a smooth ODE solver (``solve_ivp``) would chatter
across them. We integrate with a fixed-step *time-stepping* scheme in which the priority rules
are imposed on the end-of-step state (an implicit, "catching-up" treatment of the sliding
mode, in the spirit of Moreau's time-stepping for differential inclusions):

1. Departures by the trapezoidal rule: an edge keeps ``P_e = c_e psi_e`` with
   ``c_e = (1 - h mu_e / 2) / (1 + h mu_e / 2)``; pool j keeps ``P_j = sum_e P_e``.
2. Admissions ``b_e >= 0`` (the admitted fluid as it stands at the end of the step) solve the
   separable convex network-flow problem on the tree

       minimise  sum_j (P_j + B_j)^2 / (2 beta_j) + sum_i [ (m_i - R_i)^2 / 2 + C (m_i - R_i) ]
       s.t.      B_j = sum_{i in C(j)} b_ij <= beta_j - P_j,   R_i = sum_{j in S(i)} b_ij <= m_i,

   where ``m_i = q_i + lambda_i h - (h/2) sum_j mu_ij b_ij`` is the class-i fluid available
   (queue plus the step's arrivals; the last term makes the departures of the admitted fluid
   trapezoidal too and is evaluated at a predictor of b, refined by ``correctors`` passes)
   and C = 2 > 1 is any constant exceeding the largest load. Its KKT conditions are exactly
   the LQFS-LB rules at the end of the step, with one price per node: pool j's price is its
   end load rho_j^+ (>= 1 when full), class i's is ``q_i^+ + C`` (<= C when its queue is
   empty), and fluid moves along (i, j) only if the two prices are equal, else class price
   <= pool price. Hence (a) a positive end queue forces all of S(i) full, (b) class i enters
   only pools of minimal end load in S(i), all with the *same* end load (ties stay exactly
   tied, no chattering), (c) a full pool serves only the longest end queues of C(j), which
   stay equal.
3. The problem is solved exactly on the tree: with a common price p on a connected group,
   pool j supplies ``clip(beta_j p - P_j, 0, beta_j - P_j)`` and class i demands
   ``clip(m_i + C - p, 0, m_i)``; rooting the tree, a subtree's net supply is monotone in
   p and an edge that would carry fluid the wrong way decouples its subtree, which then
   clears at its own price. One bottom-up evaluation per trial price; safeguarded regula
   falsi (exact once the bracket is inside one linear piece) on each (sub)tree that clears
   separately. Cost O((I + J) x a few dozen) per step.

Accuracy. While the state sits on the sliding manifold with no queues (all pools in one
price group), every pool ends each step at the same load, ``psi_E = M psi_I`` holds exactly
at the grid points and summing step 1-2 over j gives
``(I - h A_u / 2) y_{k+1} = (I + h A_u / 2) y_k`` for ``y = psi_I - psi*_I``: the trapezoidal
(Crank-Nicolson) rule for the linear ODE of Theorem 3.1, second order, A-stable, with the
equilibrium psi* an exact fixed point. (Exactly so at the fixed point of the corrector passes;
with ``correctors = k`` the class mass is off by ``(h/2) sum_j mu_ij (b - b_pred)`` per step,
which is O(h^3) on smooth stretches since the predictor is the previous step's b.) Near the
underloaded equilibrium the fluid model therefore reduces to
``psi_I' = A_u (psi_I - psi*_I)`` in class totals
(A_u = :func:`~queue_routing.serverpools.linear.a_underloaded`); off the manifold (the
transient that equalises the loads, queues appearing) the scheme is first order.

Units and scale. Time is in the units of 1/mu; psi, q, x per unit r. The integrator is
scale-covariant (docs/serverpools.md, "Model and units" and "Fluid model"): the kernels work
in the data's own units, a size unit ``s`` and a rate unit ``u`` (:func:`fluid_units`), both
powers of two so that converting to and from them is exact in binary floating point. Sizes
(beta, lambda, psi, q) enter the kernels divided by s -- the admission problem mixes loads
(dimensionless) with queues and its tolerances are relative to the total mass, so it must
see sizes of order 1 -- and the default step is ``min(0.01 / u, 0.2 / max mu)``. Hence

* lambda and beta by c (the unit of r), rates fixed: x_c(t) = c x(t) and the step is
  unchanged;
* every rate (lambda and mu) by c (the unit of time): x_c(t) = x(c t) with the step h / c.

Both hold bit for bit (up to the SPP solution's own rounding) when c is a power of two; for
other c the size law holds to rounding (eps per step, amplified only by the dynamics' own
sensitivity to its state), and so does the time law whenever the step is set by
``0.2 / max mu``. When the step is set by the cap
``0.01 / u``, u (rounded to a power of two) may move by a factor of two relative to the
rates under a non-power-of-two c, and the two trajectories then differ by the scheme's
discretisation error at a step at most twice as large. For the examples of
:mod:`.instances` u = 1 and s = 1 (geometric-mean rates 1.08 and 1.41, largest pools 1.71
and 1), so their steps and trajectories are exactly those of the former unit-free
formulation, whose cap was 0.01 time units.

Limits: an integration takes at most :data:`FLUID_MAX_STEPS` steps and
:data:`FLUID_MAX_POINTS` output points (``ValueError`` with one line otherwise), so a
``t_end`` far beyond the data's time scale is refused instead of running for hours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..checks import integer, time_length
from ..errors import ArgumentError
from .model import SPPSolution
from .tree import RootedTree, rooted_tree

__all__ = [
    "FLUID_MAX_POINTS",
    "FLUID_MAX_STEPS",
    "FluidTrajectory",
    "fluid_step",
    "fluid_trajectory",
    "fluid_units",
    "fluid_velocity",
    "linearised_deviation",
]

#: Price offset of a queued class: any constant above the largest possible load (1).
_QUEUE_PRICE = 2.0
_MAX_BISECT = 200

#: Most integration steps one call may take (a few minutes: about 30 us a step on a small tree).
FLUID_MAX_STEPS = 10_000_000
#: Most output points of one trajectory.
FLUID_MAX_POINTS = 1_000_000
#: Default step cap, in units of 1 / u (:func:`fluid_units`).
_STEP_CAP = 0.01
#: Default step of :func:`fluid_velocity`, in units of 1 / u.
_VELOCITY_STEP = 1e-6


def _floor_pow2(x: float) -> float:
    """The largest power of two <= x (x > 0 finite), exactly."""
    return math.ldexp(1.0, math.frexp(x)[1] - 1)


def _geometric_pow2(values: np.ndarray) -> float:
    """The geometric mean of ``values`` rounded to the nearest power of two (in log2).

    2^floor(mean(log2 values) + 1/2), computed so that scaling every value by 2^k multiplies
    it by exactly 2^k: each value is split exactly as m 2^e (m in [1/2, 1)) and the integer
    exponents are summed in integer arithmetic.
    """
    mant, expo = np.frexp(np.asarray(values, dtype=float))
    n = int(mant.size)
    whole, rem = divmod(int(expo.astype(np.int64).sum()), n)
    frac = math.floor((rem + float(np.log2(mant).sum())) / n + 0.5)
    return math.ldexp(1.0, whole + frac)


def fluid_units(solution: SPPSolution) -> tuple[float, float]:
    """``(s, u)``: the size unit and rate unit of the fluid integrator (module docstring).

    s = the largest power of two <= max beta_j (servers per unit r); u = the geometric mean of
    the service rates on the basic tree (per unit time) rounded to the nearest power of two
    (in log2). Both are exactly covariant under power-of-two changes of units.

    >>> from queue_routing.serverpools import ServerPoolSystem, solve_spp
    >>> fluid_units(solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]])))
    (2.0, 1.0)
    """
    system = solution.system
    edges = solution.basic
    size = _floor_pow2(float(system.pool_sizes.max()))
    rate = _geometric_pow2(system.rates[edges[:, 0], edges[:, 1]])
    return size, rate


# -- the tree -----------------------------------------------------------------------------
def _rooted(solution: SPPSolution) -> RootedTree:
    """The basic tree of ``solution`` rooted at class 0 (:func:`~.tree.rooted_tree`)."""
    system = solution.system
    return rooted_tree(solution.basic, system.n_classes, system.n_pools)


class _Network(NamedTuple):
    """The basic tree's data, the first arguments of the kernels (contiguous arrays).

    ``ei, ej``: class and pool of each edge (0-based, the edge order of :func:`_rooted`);
    ``mu``: its service rate (per unit time); ``lam``, ``beta``: the arrival rates and pool
    sizes in the size unit s of :func:`fluid_units`.
    """

    ei: np.ndarray
    ej: np.ndarray
    mu: np.ndarray
    lam: np.ndarray
    beta: np.ndarray


def _kernel_tree(solution: SPPSolution, scale: float) -> tuple[_Network, tuple[np.ndarray, ...]]:
    """The basic tree as the kernels :func:`_step` and :func:`_integrate` take it: its
    :class:`_Network` with sizes divided by ``scale`` (s of :func:`fluid_units`), and the tree
    rooted at class 0, ``(order, pos, size, parent, parent_edge)`` (:class:`~.tree.RootedTree`).
    """
    system = solution.system
    edges, *rooted = _rooted(solution)
    network = _Network(
        np.ascontiguousarray(edges[:, 0]),
        np.ascontiguousarray(edges[:, 1]),
        np.ascontiguousarray(system.rates[edges[:, 0], edges[:, 1]]),
        np.ascontiguousarray(system.arrival_rates / scale, dtype=float),
        np.ascontiguousarray(system.pool_sizes / scale, dtype=float),
    )
    return network, tuple(rooted)


# -- compiled kernels ---------------------------------------------------------------------
@njit(cache=True)
def _own(v, p, n_i, beta, pool_kept, avail):  # pragma: no cover - compiled
    """Net capacity surplus of node v at price p (nondecreasing in p)."""
    if v < n_i:
        demand = avail[v] + _QUEUE_PRICE - p
        if demand < 0.0:
            demand = 0.0
        elif demand > avail[v]:
            demand = avail[v]
        return -demand
    j = v - n_i
    supply = beta[j] * p - pool_kept[j]
    room = beta[j] - pool_kept[j]
    if supply < 0.0:
        supply = 0.0
    elif supply > room:
        supply = room
    return supply


@njit(cache=True)
def _clip_up(v, value, n_i):  # pragma: no cover - compiled
    """What the subtree of v can pass to its parent: pools only supply, classes only take."""
    if v < n_i:
        return value if value < 0.0 else 0.0
    return value if value > 0.0 else 0.0


@njit(cache=True)
def _evaluate(top, p, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc):
    """Bottom-up pass over the subtree of ``top`` at price p; returns its net surplus."""
    start = pos[top]
    stop = start + size[top]
    for k in range(start, stop):
        acc[order[k]] = 0.0
    for k in range(stop - 1, start - 1, -1):
        v = order[k]
        val[v] = acc[v] + _own(v, p, n_i, beta, pool_kept, avail)
        if v != top:
            acc[parent[v]] += _clip_up(v, val[v], n_i)
    return val[top]


@njit(cache=True)
def _clear(top, lo, hi, tol, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc):
    """Price p in [lo, hi] at which the subtree of ``top`` clears (net surplus 0).

    The surplus is continuous, piecewise linear and nondecreasing in p, <= 0 at lo and
    >= 0 at hi. Safeguarded regula falsi: secant and bisection steps alternate, so the
    bracket at least halves every two evaluations, and a secant step is exact (up to
    rounding) as soon as both ends lie on one linear piece. Stops when |surplus| <= tol.
    """
    e_lo = _evaluate(top, lo, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc)
    if e_lo >= 0.0:
        return lo
    e_hi = _evaluate(top, hi, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc)
    if e_hi <= 0.0:
        return hi
    for it in range(_MAX_BISECT):
        mid = 0.5 * (lo + hi)
        if it % 2 == 0:
            sec = lo - e_lo * (hi - lo) / (e_hi - e_lo)
            if lo < sec < hi:
                mid = sec
        if mid <= lo or mid >= hi:
            break
        e = _evaluate(top, mid, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc)
        if abs(e) <= tol:
            return mid
        if e > 0.0:
            hi = mid
            e_hi = e
        else:
            lo = mid
            e_lo = e
    return lo - e_lo * (hi - lo) / (e_hi - e_lo)


@njit(cache=True)
def _allocate(order, pos, size, parent, parent_edge, n_i, beta, pool_kept, avail, b, price):
    """Exact solution of the admission problem of step 2 (module docstring) on the tree.

    Fills ``b`` (admissions per edge, >= 0) and ``price`` (per node).
    """
    n = order.size
    val = np.empty(n)
    acc = np.empty(n)
    hi = _QUEUE_PRICE + 1.0
    for i in range(n_i):
        if avail[i] + _QUEUE_PRICE + 1.0 > hi:
            hi = avail[i] + _QUEUE_PRICE + 1.0
    lo = -1.0
    tol = 1.0
    for j in range(beta.size):
        tol += beta[j]
    for i in range(n_i):
        tol += avail[i]
    tol *= 1e-14
    root = order[0]
    price[root] = _clear(
        root, lo, hi, tol, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc
    )
    _evaluate(root, price[root], order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc)
    coupled = np.ones(n, dtype=np.bool_)
    for k in range(1, n):  # preorder: a parent's price is known before its children's
        v = order[k]
        u = parent[v]
        pu = price[u]
        # val[v] holds v's subtree surplus at the price its parent's group was evaluated at.
        if (v >= n_i and val[v] < 0.0) or (v < n_i and val[v] > 0.0):
            coupled[v] = False
            if v >= n_i:  # a pool group too loaded to take anything: clears above pu
                pv = _clear(
                    v, pu, hi, tol, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc
                )
            else:  # a class group with more fluid than room: clears below pu
                pv = _clear(
                    v, lo, pu, tol, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc
                )
            price[v] = pv
            _evaluate(v, pv, order, pos, size, parent, n_i, beta, pool_kept, avail, val, acc)
        else:
            price[v] = pu
    # Edge flows from the subtree sums at the final prices.
    for k in range(n - 1, -1, -1):
        v = order[k]
        acc[v] = 0.0
    for k in range(n - 1, 0, -1):
        v = order[k]
        total = acc[v] + _own(v, price[v], n_i, beta, pool_kept, avail)
        e = parent_edge[v]
        if coupled[v]:
            flow = total if v >= n_i else -total
            if flow < 0.0:
                flow = 0.0
            b[e] = flow
            acc[parent[v]] += total if v >= n_i else -flow
        else:
            b[e] = 0.0


@njit(cache=True)
def _step(
    ei, ej, mu, lam, beta, h, order, pos, size, parent, parent_edge, psi, q, bhat, correctors
):  # pragma: no cover - compiled
    """One time step of size h (module docstring); updates psi, q, bhat in place."""
    n_i = lam.size
    n_j = beta.size
    k_e = ei.size
    kept = np.empty(k_e)
    pool_kept = np.zeros(n_j)
    for e in range(k_e):
        c = (1.0 - 0.5 * h * mu[e]) / (1.0 + 0.5 * h * mu[e])
        kept[e] = c * psi[e]
        pool_kept[ej[e]] += kept[e]
    for j in range(n_j):
        if pool_kept[j] > beta[j]:
            pool_kept[j] = beta[j]
    avail = np.empty(n_i)
    b = np.empty(k_e)
    price = np.empty(n_i + n_j)
    for _ in range(1 + correctors):
        for i in range(n_i):
            avail[i] = q[i] + lam[i] * h
        for e in range(k_e):
            avail[ei[e]] -= 0.5 * h * mu[e] * bhat[e]
        for i in range(n_i):
            if avail[i] < 0.0:
                avail[i] = 0.0
        _allocate(order, pos, size, parent, parent_edge, n_i, beta, pool_kept, avail, b, price)
        for e in range(k_e):
            bhat[e] = b[e]
    for i in range(n_i):
        q[i] = avail[i]
    for e in range(k_e):
        psi[e] = kept[e] + b[e]
        q[ei[e]] -= b[e]
    for i in range(n_i):
        if q[i] < 0.0 or price[i] <= _QUEUE_PRICE:  # no queue at this price: exactly 0
            q[i] = 0.0


@njit(cache=True, nogil=True)  # nogil: a signal can end a long integration (signals.py)
def _integrate(
    ei,
    ej,
    mu,
    lam,
    beta,
    h,
    n_sub,
    n_out,
    order,
    pos,
    size,
    parent,
    parent_edge,
    psi0,
    q0,
    correctors,
    out_psi,
    out_q,
):  # pragma: no cover - compiled
    psi = psi0.copy()
    q = q0.copy()
    bhat = np.empty(psi.size)
    for e in range(psi.size):  # predictor: the admissions that keep psi_e constant
        bhat[e] = psi[e] * h * mu[e] / (1.0 + 0.5 * h * mu[e])
    out_psi[0] = psi
    out_q[0] = q
    for k in range(1, n_out):
        for _ in range(n_sub):
            _step(
                ei,
                ej,
                mu,
                lam,
                beta,
                h,
                order,
                pos,
                size,
                parent,
                parent_edge,
                psi,
                q,
                bhat,
                correctors,
            )
        out_psi[k] = psi
        out_q[k] = q


@njit(cache=True)
def _lap_step(ei, ej, mu, lam, beta, h, priority, psi, q, bhat, correctors):  # pragma: no cover
    """One LAP time step (docs/serverpools.md, "LAP's fluid model"): trapezoidal departures
    as in :func:`_step`, then the admissions b_e >= 0 allocated greedily along the global
    priority order ``priority`` (edge indices, highest first): edge e = (i, j) admits
    ``min(room_j, avail_i)`` of what is left, so every class fills its pools in its priority
    order and every pool takes its classes in its priority order. Updates psi, q, bhat."""
    n_i = lam.size
    n_j = beta.size
    k_e = ei.size
    kept = np.empty(k_e)
    room0 = beta.copy()
    for e in range(k_e):
        c = (1.0 - 0.5 * h * mu[e]) / (1.0 + 0.5 * h * mu[e])
        kept[e] = c * psi[e]
        room0[ej[e]] -= kept[e]
    avail = np.empty(n_i)
    room = np.empty(n_j)
    b = np.zeros(k_e)
    for _ in range(1 + correctors):
        for i in range(n_i):
            avail[i] = q[i] + lam[i] * h
        for e in range(k_e):
            avail[ei[e]] -= 0.5 * h * mu[e] * bhat[e]
        for i in range(n_i):
            if avail[i] < 0.0:
                avail[i] = 0.0
        for j in range(n_j):
            room[j] = room0[j] if room0[j] > 0.0 else 0.0
        for k in range(k_e):
            e = priority[k]
            take = avail[ei[e]] if avail[ei[e]] < room[ej[e]] else room[ej[e]]
            b[e] = take
            avail[ei[e]] -= take
            room[ej[e]] -= take
        for e in range(k_e):
            bhat[e] = b[e]
    for e in range(k_e):
        psi[e] = kept[e] + b[e]
    for i in range(n_i):
        q[i] = avail[i]


@njit(cache=True, nogil=True)  # nogil: a signal can end a long integration (signals.py)
def _lap_integrate(
    ei, ej, mu, lam, beta, h, n_sub, n_out, priority, psi0, q0, correctors, out_psi, out_q
):  # pragma: no cover - compiled
    psi = psi0.copy()
    q = q0.copy()
    bhat = np.empty(psi.size)
    for e in range(psi.size):  # predictor: the admissions that keep psi_e constant
        bhat[e] = psi[e] * h * mu[e] / (1.0 + 0.5 * h * mu[e])
    out_psi[0] = psi
    out_q[0] = q
    for k in range(1, n_out):
        for _ in range(n_sub):
            _lap_step(ei, ej, mu, lam, beta, h, priority, psi, q, bhat, correctors)
        out_psi[k] = psi
        out_q[k] = q


def _lap_network(solution: SPPSolution, scale: float, root_pool) -> tuple[_Network, Any]:
    """The basic tree in the order of ``solution.basic`` (sizes divided by ``scale``) and the
    LAP equilibrium (:func:`~.lap.lap_equilibrium`) at ``root_pool`` (None: the default root
    of :func:`~.lap.analyze_lap`)."""
    from .lap import analyze_lap

    system = solution.system
    edges = solution.basic
    network = _Network(
        np.ascontiguousarray(edges[:, 0], dtype=np.int64),
        np.ascontiguousarray(edges[:, 1], dtype=np.int64),
        np.ascontiguousarray(system.rates[edges[:, 0], edges[:, 1]]),
        np.ascontiguousarray(system.arrival_rates / scale, dtype=float),
        np.ascontiguousarray(system.pool_sizes / scale, dtype=float),
    )
    return network, analyze_lap(solution, root_pool).equilibrium


def _policy(policy: Any) -> str:
    if policy not in ("lqfs-lb", "lap"):
        raise ArgumentError("policy", f"policy must be lqfs-lb or lap, got {policy!r:.20}")
    return policy


# -- public API ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FluidTrajectory:
    """A fluid-model trajectory under LQFS-LB on a regular time grid.

    Attributes
    ----------
    times:
        Output times, shape ``(T,)``, in units of 1/mu.
    psi:
        psi_ij(t), busy servers per unit r, shape ``(T, I, J)`` (0 off the basic tree).
    queues:
        q_i(t), waiting customers per unit r, shape ``(T, I)``.
    totals:
        x_i(t) = sum_j psi_ij(t) + q_i(t), customers per unit r, shape ``(T, I)``.
    loads:
        rho_j(t) = sum_i psi_ij(t) / beta_j, dimensionless, shape ``(T, J)``.
    deviation:
        x(t) - x*, with x*_i = psi*_i + queue_level, shape ``(T, I)``.
    norm:
        Euclidean norm of ``deviation``, shape ``(T,)``.
    step:
        The integration step h.
    """

    times: np.ndarray
    psi: np.ndarray
    queues: np.ndarray
    totals: np.ndarray
    loads: np.ndarray
    deviation: np.ndarray
    norm: np.ndarray
    step: float
    solution: SPPSolution = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The trajectory as a JSON object (the arrays as nested lists, classes and pools in
        array order; per unit r; times in units of 1/mu)."""
        return {
            "times": self.times.tolist(),
            "psi": self.psi.tolist(),
            "queues": self.queues.tolist(),
            "totals": self.totals.tolist(),
            "loads": self.loads.tolist(),
            "deviation": self.deviation.tolist(),
            "norm": self.norm.tolist(),
            "step": float(self.step),
        }


def _edge_vector(solution: SPPSolution, value, name: str) -> np.ndarray:
    """An (I, J) array (zero off the basic tree) or a (K_b,) vector -> (K_b,) on the tree."""
    edges = solution.basic
    n_i, n_j = solution.system.n_classes, solution.system.n_pools
    arr = np.asarray(value, dtype=float)
    if arr.shape == (n_i, n_j):
        off = np.ones((n_i, n_j), dtype=bool)
        off[edges[:, 0], edges[:, 1]] = False
        if np.any(arr[off] != 0.0):
            i, j = (int(k) for k in np.argwhere(off & (arr != 0.0))[0])
            raise ValueError(
                f"{name}[{i}, {j}] = {arr[i, j]:g} (class {i + 1}, pool {j + 1}) is on a "
                "non-basic activity (must be 0)"
            )
        return np.ascontiguousarray(arr[edges[:, 0], edges[:, 1]])
    if arr.shape == (len(edges),):
        return np.ascontiguousarray(arr)
    raise ValueError(
        f"{name} must have shape (I, J) = ({n_i}, {n_j}) or (K_b,) = ({len(edges)},), "
        f"got {arr.shape}"
    )


def _initial_state(solution: SPPSolution, perturbation, queues, queue_level: float, occupancy=None):
    system = solution.system
    n_i = system.n_classes
    edges = solution.basic
    occupancy = solution.occupancy if occupancy is None else occupancy
    psi_star = occupancy[edges[:, 0], edges[:, 1]]
    psi0 = psi_star + _edge_vector(solution, perturbation, "perturbation")
    if queues is None:
        q0 = np.full(n_i, float(queue_level))
    else:
        q0 = np.array(queues, dtype=float).reshape(-1)
        if q0.shape != (n_i,):
            raise ValueError(f"queues must have shape ({n_i},), got {q0.shape}")
    if not (np.all(np.isfinite(psi0)) and np.all(np.isfinite(q0))):
        raise ValueError("the initial state must be finite")
    tol = 1e-12 * float(system.pool_sizes.max())  # relative: no absolute floor
    if np.any(psi0 < -tol):
        e = int(np.argmin(psi0))
        i, j = (int(k) for k in edges[e])
        raise ValueError(
            f"psi*[{i}, {j}] + perturbation = {psi0[e]:g} < 0 (class {i + 1}, pool {j + 1}): "
            "the perturbed state is infeasible"
        )
    if np.any(q0 < -tol):
        i = int(np.argmin(q0))
        raise ValueError(f"queues must be >= 0, got {q0[i]:g} for class {i + 1}")
    pool_load = np.bincount(edges[:, 1], weights=psi0, minlength=system.n_pools)
    over = pool_load - system.pool_sizes
    if np.any(over > tol):
        j = int(np.argmax(over))
        raise ValueError(
            f"pool {j + 1} would hold {pool_load[j]:g} > beta_j = {system.pool_sizes[j]:g} "
            "busy servers: the perturbed state is infeasible"
        )
    return np.clip(psi0, 0.0, None), np.clip(q0, 0.0, None)


def _default_step(solution: SPPSolution) -> float:
    """``min(0.01 / u, 0.2 / max mu)`` (u: :func:`fluid_units`; module docstring)."""
    mu_max = float(solution.system.rates.max())
    return min(_STEP_CAP / fluid_units(solution)[1], 0.2 / mu_max)


def fluid_trajectory(
    solution: SPPSolution,
    perturbation,
    t_end: float,
    n_points: int = 501,
    *,
    queues=None,
    queue_level: float = 0.0,
    max_step: float | None = None,
    correctors: int = 1,
    policy: str = "lqfs-lb",
    root_pool: int | None = None,
) -> FluidTrajectory:
    """Integrate the LQFS-LB (or LAP) fluid model from ``psi* + perturbation`` (module
    docstring).

    Parameters
    ----------
    solution:
        The SPP solution (its basic tree is the activity set; psi* its occupancy).
    perturbation:
        psi(0) - psi*, busy servers per unit r: shape ``(I, J)`` (zero off the basic tree)
        or ``(K_b,)`` in the order of ``solution.basic``. psi(0) must be >= 0 with pool
        loads <= 1 (``ValueError`` otherwise).
    t_end, n_points:
        End time (units of 1/mu) and number of output points: the output is on
        ``linspace(0, t_end, n_points)``.
    queues:
        q(0), per unit r, shape ``(I,)``; default ``queue_level`` in every class.
    queue_level:
        The equilibrium queue q of the reference point x*_i = psi*_i + q (0 for an
        underloaded system; any q >= 0 on the line of critical equilibria, Theorem 3.2).
    max_step:
        Largest integration step; default ``min(0.01 / u, 0.2 / max mu)`` with u the
        geometric-mean rate rounded to a power of two (:func:`fluid_units`; u = 1 for rates of
        order 1), so the default is relative to the data's time scale. The step used divides
        the output spacing; at most :data:`FLUID_MAX_STEPS` steps in all.
    correctors:
        Extra passes of the admission problem per step refining the trapezoidal mass term
        (0 keeps a one-step-old predictor; 1 is plenty).
    policy, root_pool:
        ``"lqfs-lb"`` (default) or ``"lap"``: Leaf Activity Priority rooted at ``root_pool``
        (0-based; default :func:`~.lap.analyze_lap`'s choice), whose admissions are
        allocated greedily in the priority order (:func:`_lap_step`); psi* and x* are then
        LAP's equilibrium (:func:`~.lap.lap_equilibrium`), and the deviation is from it.

    Examples
    --------
    One class and one pool below capacity: psi' = lambda - mu psi, so the deviation from
    psi* = lambda / mu = 1.5 decays like exp(-mu t) (the scheme is second order in h):

    >>> from queue_routing.serverpools import ServerPoolSystem, solve_spp
    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    >>> traj = fluid_trajectory(sol, [[0.3]], t_end=2.0, n_points=5)
    >>> traj.times.tolist(), traj.step
    ([0.0, 0.5, 1.0, 1.5, 2.0], 0.01)
    >>> decay = traj.deviation[-1, 0] / traj.deviation[0, 0]
    >>> bool(abs(decay - np.exp(-0.8 * 2.0)) < 1e-5)
    True
    """
    if not isinstance(solution, SPPSolution):
        raise TypeError(f"expected an SPPSolution, got {type(solution).__name__}")
    t_end = time_length("t_end", t_end)
    n_points = integer("n_points", n_points, 2, FLUID_MAX_POINTS)
    correctors = integer("correctors", correctors, 0, 100)
    queue_level = _queue_level(queue_level)
    policy = _policy(policy)
    h_max = _default_step(solution) if max_step is None else time_length("max_step", max_step)
    system = solution.system
    scale = fluid_units(solution)[0]  # sizes enter the kernels in units of s (exact: 2^k)
    if policy == "lap":
        network, equilibrium = _lap_network(solution, scale, root_pool)
        occupancy, x_star = equilibrium.occupancy, equilibrium.class_totals
    else:
        network, tree = _kernel_tree(solution, scale)
        occupancy, x_star = None, None
    mu = network.mu
    if h_max * mu.max() >= 2.0:
        raise ValueError("max_step * max(mu) must be < 2 (trapezoidal departures stay >= 0)")
    psi0, q0 = _initial_state(solution, perturbation, queues, queue_level, occupancy)
    spacing = t_end / (n_points - 1)
    ratio = spacing / h_max  # may be inf: compared before any conversion to int
    n_sub = max(1, math.ceil(ratio - 1e-9)) if ratio < FLUID_MAX_STEPS else FLUID_MAX_STEPS + 1
    if n_sub * (n_points - 1) > FLUID_MAX_STEPS:
        unit = fluid_units(solution)[1]
        raise ValueError(
            f"t_end = {t_end:g} with {n_points} points needs "
            f"{max(ratio, n_sub) * (n_points - 1):.3g} steps of at most h = "
            f"{h_max:.3g} (limit {FLUID_MAX_STEPS:.0e}); the rates' time scale is 1/u = "
            f"{1.0 / unit:.3g}: shorten t_end or raise max_step"
        )
    h = spacing / n_sub
    out_psi = np.empty((n_points, mu.size))
    out_q = np.empty((n_points, system.n_classes))
    if policy == "lap":
        order = equilibrium.priorities
        args = (h, n_sub, n_points, order, psi0 / scale, q0 / scale, correctors)
        _lap_integrate(*network, *args, out_psi, out_q)
    else:
        args = (h, n_sub, n_points, *tree, psi0 / scale, q0 / scale, correctors)
        _integrate(*network, *args, out_psi, out_q)
    out_psi *= scale
    out_q *= scale
    times = np.linspace(0.0, t_end, n_points)
    return _trajectory(solution, times, out_psi, out_q, h, queue_level, x_star)


def _queue_level(value: Any) -> float:
    """The equilibrium queue per unit r: a finite number >= 0 (else one
    :class:`~queue_routing.errors.ArgumentError` line naming ``queue_level``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ArgumentError(
            "queue_level", f"queue_level must be a number, got {type(value).__name__}"
        )
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ArgumentError("queue_level", f"queue_level must be finite and >= 0, got {value}")
    return value


def _trajectory(solution, times, out_psi, out_q, h, queue_level, x_star=None) -> FluidTrajectory:
    system = solution.system
    edges = solution.basic
    psi = np.zeros((len(times), system.n_classes, system.n_pools))
    psi[:, edges[:, 0], edges[:, 1]] = out_psi
    totals = psi.sum(axis=2) + out_q
    x_star = solution.class_occupancy if x_star is None else x_star
    x_star = x_star + float(queue_level)
    deviation = totals - x_star
    return FluidTrajectory(
        times=times,
        psi=psi,
        queues=out_q,
        totals=totals,
        loads=psi.sum(axis=1) / system.pool_sizes,
        deviation=deviation,
        norm=np.linalg.norm(deviation, axis=1),
        step=float(h),
        solution=solution,
    )


def fluid_step(
    solution: SPPSolution,
    psi,
    queues,
    h: float,
    *,
    correctors: int = 3,
    policy: str = "lqfs-lb",
    root_pool: int | None = None,
):
    """One step of the integrator from (psi, queues); returns ``(psi', queues')``.

    ``psi``: shape ``(I, J)`` (zero off the basic tree), ``queues``: ``(I,)``, per unit r;
    ``0 < h < 2 / max mu``. Sizes enter the kernel in the size unit of :func:`fluid_units`.
    ``policy``, ``root_pool``: as in :func:`fluid_trajectory`.
    """
    system = solution.system
    scale = fluid_units(solution)[0]
    if _policy(policy) == "lap":
        network, equilibrium = _lap_network(solution, scale, root_pool)
    else:
        network, tree = _kernel_tree(solution, scale)
    mu = network.mu
    h = time_length("h", h)
    if not h * mu.max() < 2.0:
        raise ArgumentError("h", f"h must be > 0 with h * max(mu) < 2, got h = {h:g}")
    correctors = integer("correctors", correctors, 0, 100)
    psi_e = _edge_vector(solution, psi, "psi") / scale
    q = np.array(queues, dtype=float).reshape(system.n_classes) / scale
    bhat = psi_e * h * mu / (1.0 + 0.5 * h * mu)
    if policy == "lap":
        _lap_step(*network, h, equilibrium.priorities, psi_e, q, bhat, correctors)
    else:
        _step(*network, h, *tree, psi_e, q, bhat, correctors)
    out = np.zeros((system.n_classes, system.n_pools))
    out[network.ei, network.ej] = psi_e * scale
    return out, q * scale


def fluid_velocity(
    solution: SPPSolution,
    psi,
    queues=None,
    *,
    h: float | None = None,
    policy: str = "lqfs-lb",
    root_pool: int | None = None,
):
    """The fluid-model velocity ``(psi', q')`` at a state, as ``(step(h) - state) / h``.

    For small h this is the LQFS-LB vector field, with the sliding-mode (Filippov) selection
    on tie manifolds: at a state with equal pool loads and no queues it is the velocity along
    the manifold, so finite differences of its class totals around psi* reproduce A_u. The
    error is O(h) (about 1e-6 |A_u|^2 |state - psi*| at the default) plus rounding
    eps_mach / h. The default h is 1e-6 / u (u: the rate unit of :func:`fluid_units`), so it
    follows the data's time scale. ``policy="lap"``: LAP's vector field (``root_pool`` as in
    :func:`fluid_trajectory`).
    """
    system = solution.system
    if h is None:
        h = _VELOCITY_STEP / fluid_units(solution)[1]
    q = np.zeros(system.n_classes) if queues is None else np.asarray(queues, dtype=float)
    new_psi, new_q = fluid_step(solution, psi, q, h, policy=policy, root_pool=root_pool)
    return (new_psi - np.asarray(psi, dtype=float)) / h, (new_q - q) / h


def linearised_deviation(
    solution: SPPSolution, initial_deviation, times, *, critical: bool = False
) -> np.ndarray:
    """exp(A t) delta_0 on ``times``: the linearised class-total dynamics (Theorems 3.1-3.2).

    ``initial_deviation``: x(0) - x* in class totals, shape ``(I,)``. ``A = A_u`` (or A_c
    with ``critical=True``). Returns shape ``(T, I)``.
    """
    from scipy.linalg import expm

    from .linear import a_critical, a_underloaded

    a = a_critical(solution) if critical else a_underloaded(solution)
    d0 = np.asarray(initial_deviation, dtype=float)
    times = np.asarray(times, dtype=float)
    # A regular grid from 0: powers of one exp(A dt). The test is relative (atol = 0), so
    # it holds in any time unit.
    regular = times.size > 1 and times[0] == 0.0
    if regular:
        regular = np.allclose(np.diff(times), times[1] - times[0], rtol=1e-5, atol=0.0)
    if regular:
        step = expm(a * (times[1] - times[0]))
        out = np.empty((times.size, d0.size))
        out[0] = d0
        for k in range(1, times.size):
            out[k] = step @ out[k - 1]
        return out
    return np.stack([expm(a * t) @ d0 for t in times])
