"""The SPP solved exactly on spanning trees, and a dual simplex over them (ours).

Under complete resource pooling (CRP) the optimum of the static planning problem (SPP,
:mod:`.spp`) is a spanning tree T of basic activities with every pool binding. On a spanning
tree everything is explicit, without a linear solver:

* **duals**: ``nu_i mu_ij = alpha_j`` on T fixes all duals up to one factor (products of rates
  along tree paths, all positive) and ``sum_j alpha_j beta_j = 1`` fixes the factor. They are
  carried as logarithms ("potentials"), so they neither overflow nor lose relative accuracy;
* **rho** ``= sum_i nu_i lambda_i`` (strong duality holds for the basic solution of every
  basis), a sum of positive terms, hence accurate to round-off;
* **flows**: peel the leaves (a class leaf sends its residual arrival rate along its edge, a
  pool leaf takes its residual ``rho beta_j`` servers), from both sides of every edge.

Every computed quantity carries a bound on its round-off error. T is the unique SPP optimum
and CRP holds iff every tree flow exceeds ``tol lambda_i`` and every other activity has
relative reduced cost ``alpha_j / (nu_i mu_ij) - 1 > tol`` (:func:`certify_tree`). Each such
comparison is decided in floating point when the round-off bound settles it, and otherwise
**exactly**, in rational arithmetic on the given doubles (:func:`exact_eval`): the verdict is
the exact one for the data as stored, however ill-conditioned the tree.

When the activities are not a tree, :func:`crp_tree` finds T by the dual simplex method of the
SPP with every pool binding (the only case in which CRP can hold), over spanning-tree bases:

1. a dual feasible spanning tree (``nu_i mu_ij <= alpha_j`` on every activity, with equality on
   the tree): every class takes its cheapest pool, then components are merged by scaling the
   duals of one component until an activity leaving it becomes tight (as in the Hungarian
   method);
2. while some tree flow is negative, remove that edge f = (i0, j0), which splits T into S
   (holding class i0) and S' (holding pool j0); scale the duals of S' up until an activity
   from a class of S' to a pool of S becomes tight (the smallest reduced cost) and make it a
   tree edge. The tree stays dual feasible, and its rho (a lower bound on the optimum) does
   not decrease. If no such activity exists, the LP's dual ray drives the duals of S to zero
   and on to bases that are not spanning trees; the next negative flow is tried instead,
   and if none can leave the method stops without an answer (the caller then tries other
   starts, :func:`~.crp.certified_solution`).

Everything is computed from logarithms of the data or exactly, so changing the units (all
rates by one factor, or arrival rates and pool sizes together) shifts the potentials by
constants and changes no decision: the answer is scale-invariant. Ties are broken by activity
index and a repeated tree switches the leaving rule to the smallest index (Bland), so the
method ends.

Arguments shared by the functions: ``lam`` (I,), ``beta`` (J,) arrival rates and pool sizes;
``acts`` (K, 2) the activities (0-based (i, j)); ``mu`` (K,) their rates; ``tree`` indices into
``acts`` of a spanning tree.

>>> import numpy as np
>>> acts = np.array([[0, 0], [1, 0], [1, 1]])  # the N-shape C1 - P1 - C2 - P2
>>> ev = tree_eval([1.0, 2.0], [2.0, 2.0], acts, [1.0, 2.0, 1.0], np.arange(3))
>>> round(ev.rho, 12), ev.flows.round(12).tolist(), np.exp(ev.log_alpha).round(12).tolist()
(0.666666666667, [1.0, 0.666666666667, 1.333333333333], [0.333333333333, 0.166666666667])
>>> exact = exact_eval([1.0, 2.0], [2.0, 2.0], acts, [1.0, 2.0, 1.0], ev)
>>> exact.rho == 2 / 3, bool(exact.flow_error.max() < 1e-15)
(True, True)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .tree import RootedTree, rooted_tree

__all__ = ["TreeEvaluation", "certify_tree", "crp_tree", "exact_eval", "tree_eval"]

_EPS = float(np.finfo(float).eps)


class TreeEvaluation(NamedTuple):
    """The basic solution of a spanning tree T (arrays over edges in the order of ``tree``).

    Attributes
    ----------
    tree:
        Indices of T's edges among the activities, shape ``(I + J - 1,)``.
    rooted:
        T rooted at class 0 (:class:`~.tree.RootedTree`).
    potentials:
        Unnormalised log duals of the I + J nodes (classes, then pools).
    potential_error:
        Round-off bound of each potential (absolute, in log units).
    log_nu, log_alpha:
        log of the duals nu_i, alpha_j with ``sum_j alpha_j beta_j = 1``.
    rho:
        ``sum_i nu_i lambda_i``: the basic solution's value (dimensionless).
    rho_error:
        Relative round-off bound of ``rho``.
    flows:
        lambda_ij on T's edges, customers per unit time per unit r.
    flow_error:
        Absolute round-off bound of each flow.
    exact:
        Whether the values were computed in rational arithmetic (:func:`exact_eval`).
    """

    tree: np.ndarray
    rooted: RootedTree
    potentials: np.ndarray
    potential_error: np.ndarray
    log_nu: np.ndarray
    log_alpha: np.ndarray
    rho: float
    rho_error: float
    flows: np.ndarray
    flow_error: np.ndarray
    exact: bool = False


def tree_eval(lam, beta, acts: np.ndarray, mu, tree) -> TreeEvaluation:
    """The basic solution of the spanning tree ``acts[tree]`` in floating point, with bounds.

    Raises :class:`~.errors.ServerPoolError` unless ``acts[tree]`` is a spanning tree.
    """
    lam = np.ascontiguousarray(lam, dtype=float)
    beta = np.ascontiguousarray(beta, dtype=float)
    tree = np.asarray(tree, dtype=np.int64)
    n_i, n_j = lam.size, beta.size
    edges = np.ascontiguousarray(acts[tree], dtype=np.int64)
    n = n_i + n_j
    rt = rooted_tree(edges, n_i, n_j)
    mu_t = np.asarray(mu, dtype=float)[tree]
    lm = np.log(mu_t).tolist()
    pot_l, perr_l = [0.0] * n, [0.0] * n
    parent, parent_edge = rt.parent.tolist(), rt.parent_edge.tolist()
    for v in rt.order[1:].tolist():
        p, e = parent[v], parent_edge[v]
        x = pot_l[p] + lm[e] if v >= n_i else pot_l[p] - lm[e]  # alpha = nu mu, nu = alpha / mu
        pot_l[v] = x
        perr_l[v] = perr_l[p] + _EPS * (abs(x) + abs(lm[e]))
    pot, perr = np.array(pot_l), np.array(perr_l)
    log_beta, log_lam = np.log(beta), np.log(lam)
    lz = _logsumexp(pot[n_i:] + log_beta)
    log_nu, log_alpha = pot[:n_i] - lz, pot[n_i:] - lz
    log_rho = _logsumexp(log_nu + log_lam)
    rho = math.exp(log_rho) if log_rho < 709.0 else math.inf
    rho_error = 2.0 * max(perr_l) + 4.0 * _EPS * (
        n + abs(lz) + abs(log_rho) + float(np.abs(log_beta).max())
    )
    with np.errstate(over="ignore", invalid="ignore"):
        flows, flow_mag = _tree_flows(rt, n_i, mu_t, np.concatenate([lam, rho * beta]))
        flow_error = (8.0 * _EPS * n + 2.0 * rho_error) * flow_mag
    return TreeEvaluation(tree, rt, pot, perr, log_nu, log_alpha, rho, rho_error, flows, flow_error)


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + float(np.log(np.sum(np.exp(x - m))))


def _tree_flows(rt: RootedTree, n_i: int, mu: np.ndarray, target: np.ndarray):
    """Flows on the tree's edges that meet every node's ``target``, and their magnitudes.

    ``target``: arrival rates of the classes (customers per unit time), then ``rho beta_j``
    of the pools (servers); an edge's flow f counts f at its class and f / mu at its pool.
    Each flow is computed from both sides of its edge -- peeling the subtree below it
    (bottom-up) and peeling the rest of the tree (top-down) -- and taken from the side whose
    magnitude (the sum of the absolute values of the terms, which bounds the round-off) is
    smaller.
    """
    parent, parent_edge, order = rt.parent.tolist(), rt.parent_edge.tolist(), rt.order.tolist()
    mu = mu.tolist()
    n, k = len(order), len(order) - 1
    target = target.tolist()
    down, down_mag = [0.0] * k, [0.0] * k
    res, mag = list(target), [abs(x) for x in target]
    below, below_mag = [0.0] * n, [0.0] * n  # children's share of each node's target
    for v in order[:0:-1]:  # bottom-up: children before parents
        p, e = parent[v], parent_edge[v]
        scale = 1.0 if v < n_i else mu[e]  # edge flow per unit of v's residual
        f, m = scale * res[v], scale * mag[v]
        down[e], down_mag[e] = f, m
        share = 1.0 if p < n_i else 1.0 / mu[e]  # p's units per unit of flow
        res[p] -= share * f
        mag[p] += share * m
        below[p] += share * f
        below_mag[p] += share * m
    up, up_mag = [0.0] * k, [0.0] * k
    above, above_mag = [0.0] * n, [0.0] * n  # the parent edge's share, from the top
    for v in order[1:]:  # top-down: parents before children
        p, e = parent[v], parent_edge[v]
        share = 1.0 if p < n_i else 1.0 / mu[e]
        rest = target[p] - (below[p] - share * down[e]) - above[p]
        rest_mag = abs(target[p]) + below_mag[p] + above_mag[p]
        up[e], up_mag[e] = rest / share, rest_mag / share
        back = 1.0 if v < n_i else 1.0 / mu[e]
        above[v], above_mag[v] = back * up[e], back * up_mag[e]
    down, down_mag, up, up_mag = (np.array(x) for x in (down, down_mag, up, up_mag))
    use_up = up_mag < down_mag
    return np.where(use_up, up, down), np.where(use_up, up_mag, down_mag)


# -- exact arithmetic -------------------------------------------------------------------------
def _log_fraction(x: Fraction) -> float:
    return math.log(x.numerator) - math.log(x.denominator)


def _float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _exact_potentials(rt: RootedTree, n_i: int, mu_t) -> list[Fraction]:
    """Unnormalised duals as rationals: nu = 1 at class 0, nu_i mu_ij = alpha_j on the tree."""
    pot = [Fraction(0)] * rt.order.size
    pot[0] = Fraction(1)
    for v in rt.order[1:].tolist():
        p, e = rt.parent[v], rt.parent_edge[v]
        m = Fraction(float(mu_t[e]))
        pot[v] = pot[p] * m if v >= n_i else pot[p] / m
    return pot


def exact_eval(lam, beta, acts: np.ndarray, mu, ev: TreeEvaluation) -> TreeEvaluation:
    """``ev`` recomputed in rational arithmetic on the given doubles, rounded once at the end.

    rho and the flows solve the tree's equations exactly (flows carried as p + q rho while
    peeling the leaves, rho from the last node); the duals are products of rates. The
    round-off bounds become half an ulp.
    """
    lam = [Fraction(float(x)) for x in np.asarray(lam, dtype=float)]
    beta_f = [Fraction(float(x)) for x in np.asarray(beta, dtype=float)]
    rt = ev.rooted
    n_i = len(lam)
    mu_t = np.asarray(mu, dtype=float)[ev.tree]
    parent, parent_edge, order = rt.parent, rt.parent_edge, rt.order.tolist()
    k = len(order) - 1
    p_res = lam + [Fraction(0)] * len(beta_f)  # residual p + q rho at every node
    q_res = [Fraction(0)] * n_i + beta_f
    fp, fq = [Fraction(0)] * k, [Fraction(0)] * k
    for v in order[:0:-1]:
        p, e = parent[v], parent_edge[v]
        m = Fraction(float(mu_t[e]))
        if v < n_i:  # class leaf: its residual arrival rate, from pool p (servers: / mu)
            fp[e], fq[e] = p_res[v], q_res[v]
            p_res[p] -= fp[e] / m
            q_res[p] -= fq[e] / m
        else:  # pool leaf: its residual servers times mu, from class p
            fp[e], fq[e] = m * p_res[v], m * q_res[v]
            p_res[p] -= fp[e]
            q_res[p] -= fq[e]
    root = order[0]
    rho = -p_res[root] / q_res[root]
    flows = [fp[e] + fq[e] * rho for e in range(k)]
    pot = _exact_potentials(rt, n_i, mu_t)
    z = sum((pot[n_i + j] * beta_f[j] for j in range(len(beta_f))), Fraction(0))
    log_pot = np.array([_log_fraction(x) for x in pot])
    log_z = _log_fraction(z)
    flow_values = np.array([_float(f) for f in flows])
    return TreeEvaluation(
        ev.tree,
        rt,
        log_pot,
        np.full(log_pot.size, 4.0 * _EPS) * (1.0 + np.abs(log_pot)),
        log_pot[:n_i] - log_z,
        log_pot[n_i:] - log_z,
        _float(rho),
        _EPS,
        flow_values,
        0.5 * _EPS * np.abs(flow_values),
        True,
    )


def _exact_reduced_cost_positive(ev: TreeEvaluation, acts, mu, n_i: int, index, tol: float):
    """For the activities ``index``: alpha_j / (nu_i mu_ij) > 1 + tol, exactly."""
    pot = _exact_potentials(ev.rooted, n_i, np.asarray(mu, dtype=float)[ev.tree])
    bound = 1 + Fraction(tol)
    out = []
    for k in index:
        i, j = int(acts[k, 0]), int(acts[k, 1])
        out.append(pot[n_i + j] > bound * pot[i] * Fraction(float(mu[k])))
    return np.array(out, dtype=bool)


# -- certificate ------------------------------------------------------------------------------
def _log_reduced_costs(ev: TreeEvaluation, acts: np.ndarray, log_mu: np.ndarray, n_i: int):
    """log(alpha_j / (nu_i mu_ij)) on every activity (0 on the tree) and its round-off bound."""
    pot, perr = ev.potentials, ev.potential_error
    lrc = pot[n_i + acts[:, 1]] - log_mu - pot[acts[:, 0]]
    err = (
        perr[n_i + acts[:, 1]]
        + perr[acts[:, 0]]
        + 4.0 * _EPS * (np.abs(pot[n_i + acts[:, 1]]) + np.abs(log_mu) + np.abs(pot[acts[:, 0]]))
    )
    return lrc, err


def certify_tree(lam, beta, acts: np.ndarray, mu, ev: TreeEvaluation, tol: float):
    """``ev`` (or its exact re-evaluation) if its tree is the unique SPP optimum with CRP.

    Every tree flow must exceed ``tol * lambda_i`` and every other activity's relative reduced
    cost ``alpha_j / (nu_i mu_ij) - 1`` must exceed ``tol``; each comparison the round-off
    bounds leave open is decided exactly. Pools bind and the duals are positive by
    construction on a spanning tree. Returns None if the certificate fails.
    """
    lam = np.asarray(lam, dtype=float)
    mu = np.asarray(mu, dtype=float)
    edges = acts[ev.tree]
    floor = tol * lam[edges[:, 0]]
    with np.errstate(invalid="ignore"):
        if not np.all(ev.flows > floor - ev.flow_error):  # certainly at or below the floor
            return None
        if not np.all(ev.flows > floor + ev.flow_error):  # undecided in floating point
            ev = exact_eval(lam, beta, acts, mu, ev)
            if not np.all(ev.flows > floor) or not np.isfinite(ev.rho):
                return None
    off = np.ones(len(acts), dtype=bool)
    off[ev.tree] = False
    if not off.any():
        return ev
    lrc, err = _log_reduced_costs(ev, acts, np.log(mu), lam.size)
    with np.errstate(over="ignore"):
        rc_low, rc_high = np.expm1(lrc - err), np.expm1(lrc + err)
    if np.any(off & (rc_high <= tol)):
        return None
    undecided = np.flatnonzero(off & (rc_low <= tol))
    if (
        undecided.size
        and not _exact_reduced_cost_positive(ev, acts, mu, lam.size, undecided, tol).all()
    ):
        return None
    return ev


# -- the dual simplex -------------------------------------------------------------------------
def _dual_feasible_tree(n_i: int, prices: np.ndarray, acts: np.ndarray, log_mu: np.ndarray):
    """Indices of a dual feasible spanning tree (phase 1), or None if the graph is disconnected.

    ``prices``: initial log alpha_j of the pools (any finite values).
    """
    n = n_i + prices.size
    pot = np.zeros(n)
    pot[n_i:] = prices
    cost = pot[n_i + acts[:, 1]] - log_mu  # log(alpha_j / mu_ij)
    order = np.lexsort((np.arange(len(acts)), acts[:, 0], cost))  # cheapest pool per class
    comp = np.arange(n)
    tree: list[int] = []
    taken = np.zeros(n_i, dtype=bool)
    for k in order.tolist():
        i = int(acts[k, 0])
        if not taken[i]:
            taken[i] = True
            pot[i] = cost[k]
            tree.append(k)
            comp[comp == comp[n_i + acts[k, 1]]] = comp[i]
    while len(tree) < n - 1:
        lrc = pot[n_i + acts[:, 1]] - log_mu - pot[acts[:, 0]]
        ci, cj = comp[acts[:, 0]], comp[n_i + acts[:, 1]]
        cross = np.flatnonzero(ci != cj)
        if cross.size == 0:
            return None
        c = ci[cross[0]]  # the component of the first crossing activity's class
        best = None
        for sign, mask in ((1.0, ci[cross] == c), (-1.0, cj[cross] == c)):
            if mask.any():  # raise (sign +1) or lower (-1) the duals of component c
                k = int(cross[mask][np.argmin(lrc[cross[mask]])])
                if best is None or lrc[k] < best[0]:
                    best = (float(lrc[k]), k, sign)
        theta, k, sign = best
        pot[comp == c] += sign * theta
        other = cj[k] if sign > 0 else ci[k]
        comp[comp == other] = c
        tree.append(k)
    return np.array(sorted(tree), dtype=np.int64)


def crp_tree(lam, beta, acts: np.ndarray, mu, *, prices=None, max_pivots: int | None = None):
    """The spanning tree reached by the dual simplex (module docstring), or None.

    ``prices``: initial log pool duals for phase 1 (default ``-log beta``), e.g. from an
    approximate LP solution, which saves pivots on large systems; any finite values give a
    dual feasible start, so they affect the path, not the answer when CRP holds (the optimum
    is then unique).

    Returns ``(tree, TreeEvaluation)`` for a dual feasible tree whose flows are all
    non-negative (exactly, where round-off leaves a sign open), or None when the graph is
    disconnected, no solution has every pool binding, or the pivot limit (default
    ``20 (I + J) + 100``) is reached. Whether the tree certifies CRP is for
    :func:`certify_tree` to say.
    """
    lam = np.asarray(lam, dtype=float)
    beta = np.asarray(beta, dtype=float)
    mu = np.asarray(mu, dtype=float)
    log_mu = np.log(mu)
    n_i = lam.size
    n = n_i + beta.size
    start = -np.log(beta) if prices is None else np.asarray(prices, dtype=float)
    if start.shape != beta.shape or not np.all(np.isfinite(start)):
        start = -np.log(beta)
    tree = _dual_feasible_tree(n_i, start, acts, log_mu)
    if tree is None:
        return None
    limit = 20 * n + 100 if max_pivots is None else int(max_pivots)
    seen: set[bytes] = set()
    bland = False
    for _ in range(limit):
        ev = tree_eval(lam, beta, acts, mu, tree)
        with np.errstate(invalid="ignore"):
            negative = ev.flows < -ev.flow_error
            if not negative.any() and np.any(ev.flows <= ev.flow_error):
                ev = exact_eval(lam, beta, acts, mu, ev)
                negative = ev.flows < 0
        if not (np.all(np.isfinite(ev.flows)) and np.isfinite(ev.rho)):
            return None
        if not negative.any():
            return tree, ev
        key = tree.tobytes()
        if key in seen:
            if bland:
                return None
            bland = True
        seen.add(key)
        edges = acts[tree]
        if bland:  # leaving candidates in index order
            order = np.flatnonzero(negative)
        else:  # the most negative flow (relative to its class) first
            with np.errstate(all="ignore"):
                relative = np.nan_to_num(ev.flows / lam[edges[:, 0]], nan=0.0)
            order = np.flatnonzero(negative)[np.argsort(relative[negative], kind="stable")]
        pivot = None
        for q in order.tolist():
            k = _entering(ev, acts, log_mu, n_i, n, q)
            if k is not None:
                pivot = (q, k)
                break
        if pivot is None:  # every dual ray leaves the spanning trees (or none is feasible)
            return None
        q, k = pivot
        tree = np.sort(np.append(np.delete(tree, q), k))
    return None


def _entering(ev: TreeEvaluation, acts, log_mu, n_i: int, n: int, q: int):
    """The activity entering when tree edge ``q`` leaves (module docstring), or None.

    Removing q = (i0, j0) splits the tree into S (with class i0) and S' (with pool j0); the
    duals of S' are scaled up until an activity from a class of S' to a pool of S becomes
    tight. None if there is no such activity: along this dual ray the duals of S reach zero
    before any does, which a spanning-tree basis cannot represent (or, with no activity left
    to enter at all, no solution has every pool binding).
    """
    rt = ev.rooted
    edges = acts[ev.tree]
    i0, v0 = int(edges[q, 0]), n_i + int(edges[q, 1])
    child = v0 if rt.parent[v0] == i0 else i0
    below = np.zeros(n, dtype=bool)
    below[rt.order[rt.pos[child] : rt.pos[child] + rt.size[child]]] = True
    side = below if below[v0] else ~below  # S': the side holding pool j0
    candidates = np.flatnonzero(side[acts[:, 0]] & ~side[n_i + acts[:, 1]])
    if candidates.size == 0:
        return None
    lrc = ev.potentials[n_i + acts[candidates, 1]] - log_mu[candidates]
    lrc -= ev.potentials[acts[candidates, 0]]
    return int(candidates[np.argmin(lrc)])
