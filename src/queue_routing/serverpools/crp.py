"""Complete resource pooling (CRP, Sec. 2): certified exactly on a tree, or diagnosed.

CRP holds when the SPP optimum (:mod:`.model`) is unique, its basic activities form a spanning
tree of the bipartite graph on I u J and every pool binds with alpha_j > 0.

* :func:`certified_solution` -- the unique optimum when CRP holds: a spanning tree of
  activities found by the dual simplex over spanning trees (:func:`~.tree_simplex.crp_tree`)
  or from an approximate solution, and certified exactly (:func:`~.tree_simplex.certify_tree`);
  its :class:`~.model.SPPSolution` is the tree's basic solution, accurate to 1e-10 relative;
* :func:`check_crp` -- raise the :class:`~.errors.CRPError` subclass naming why CRP fails;
* :func:`diagnose` -- that diagnosis, from a solution and the optimal face of the scaled LP
  (:mod:`.highs`): a cycle among the activities some optimum uses, a slack or zero-priced
  pool, flows that vary over the face, or a disconnected basis.

``docs/serverpools.md#static-planning-problem``.
"""

from __future__ import annotations

import numpy as np

from .errors import (
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    ServerPoolError,
    listing,
)
from .highs import ScaledLP, run_lp, scaled_lp
from .model import (
    ServerPoolSystem,
    SPPSolution,
    activity_rates,
    check_tol,
    show_json,
    spp_solution,
)
from .tree import (
    components,
    components_text,
    cycle_text,
    find_cycle,
    greedy_spanning_tree,
    is_spanning_tree,
)
from .tree_simplex import TreeEvaluation, certify_tree, crp_tree, exact_eval, tree_eval

__all__ = ["check_crp"]


# -- the certified optimum on a spanning tree ---------------------------------------------------
def _solve_on_tree(system: ServerPoolSystem, edges: np.ndarray):
    """Flows, rho and duals when the activities ``edges`` (a spanning tree) are basic.

    Primal: sum_j lambda_ij = lambda_i, sum_i lambda_ij/mu_ij - rho beta_j = 0 on the tree
    ((I + J) equations in I + J - 1 flows and rho). Dual: nu_i mu_ij - alpha_j = 0 on the
    tree and sum_j alpha_j beta_j = 1. Both square systems are nonsingular on a spanning tree.
    A dense LU solve, which loses relative accuracy on strongly heterogeneous trees: its
    result is used only where it agrees with :func:`~.tree_simplex.tree_eval`
    (:func:`_tree_solution`). None if the solver fails.
    """
    n_i, n_j = system.n_classes, system.n_pools
    k = len(edges)
    ii, jj = edges[:, 0], edges[:, 1]
    mu = system.rates[ii, jj]
    a = np.zeros((n_i + n_j, k + 1))
    a[ii, np.arange(k)] = 1.0
    a[n_i + jj, np.arange(k)] = 1.0 / mu
    a[n_i:, k] = -system.pool_sizes
    rhs = np.concatenate([system.arrival_rates, np.zeros(n_j)])
    d = np.zeros((n_i + n_j, n_i + n_j))
    d[np.arange(k), ii] = mu
    d[np.arange(k), n_i + jj] = -1.0
    d[k, n_i:] = system.pool_sizes
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(a, rhs)
            y = np.linalg.solve(d, np.eye(n_i + n_j)[k])
        except np.linalg.LinAlgError:
            return None
    flows = np.zeros((n_i, n_j))
    flows[ii, jj] = x[:k]
    return float(x[k]), flows, y[:n_i], y[n_i:]


def _tree_solution(system: ServerPoolSystem, tree: np.ndarray, ev: TreeEvaluation, tol):
    """The SPPSolution of the certified tree ``acts[tree]`` (its basic solution).

    The reference is the evaluation ``ev`` when its round-off bounds are below 1e-11
    (relative, for rho, every dual and every flow), else the exact one
    (:func:`~.tree_simplex.exact_eval`, rational arithmetic rounded once). The dense solve
    :func:`_solve_on_tree` is reported where it agrees with the reference to 1e-10, so that
    results are bit-for-bit those of earlier versions on well-conditioned systems; otherwise
    the exact values are. Either way every value (each flow, each dual, rho) is within 1e-10
    relative of the exact basic solution of the stored data, so pool loads sum to rho beta_j
    within 1e-10 too.
    """
    acts, mu = activity_rates(system)
    edges = acts[tree]
    lam = system.arrival_rates
    if not ev.exact and (ev.rho_error > 1e-11 or np.any(ev.flow_error > 1e-11 * ev.flows)):
        ev = exact_eval(lam, system.pool_sizes, acts, mu, ev)  # bounds too loose to compare
    lu = _solve_on_tree(system, edges)
    if lu is not None:
        rho_l, flows_l, nu_l, alpha_l = lu
        rel = 1e-10
        f_l = flows_l[edges[:, 0], edges[:, 1]]
        with np.errstate(all="ignore"):
            nu_x, alpha_x = np.exp(ev.log_nu), np.exp(ev.log_alpha)
            agree = bool(
                np.isfinite(rho_l)
                and abs(rho_l - ev.rho) <= rel * ev.rho
                and np.all(np.abs(nu_l - nu_x) <= rel * nu_x)
                and np.all(np.abs(alpha_l - alpha_x) <= rel * alpha_x)
                and np.all(np.abs(f_l - ev.flows) <= rel * ev.flows)
            )
        if agree:
            return spp_solution(system, rho_l, flows_l, nu_l, alpha_l, tol, basic=edges)
    if not ev.exact:
        ev = exact_eval(lam, system.pool_sizes, acts, mu, ev)
    flows = np.zeros((system.n_classes, system.n_pools))
    flows[edges[:, 0], edges[:, 1]] = ev.flows
    with np.errstate(all="ignore"):
        nu, alpha = np.exp(ev.log_nu), np.exp(ev.log_alpha)
    return spp_solution(system, ev.rho, flows, nu, alpha, tol, basic=edges)


def certified_solution(system: ServerPoolSystem, tol: float, lp=None) -> SPPSolution | None:
    """The unique SPP optimum if CRP holds (certified exactly on its tree), else None.

    A spanning tree of activities is certified directly. Otherwise the candidate trees are
    those of the dual simplex (:func:`~.tree_simplex.crp_tree`) started from the cheapest
    pools, or, given an approximate SPP solution ``lp``, from its pool duals, and then the
    spanning tree of ``lp``'s largest flows (completed by its smallest reduced costs). Any
    candidate that passes :func:`~.tree_simplex.certify_tree` is the optimum.
    """
    acts, mu = activity_rates(system)
    lam, beta = system.arrival_rates, system.pool_sizes
    n_i, n_j = system.n_classes, system.n_pools
    if len(acts) == n_i + n_j - 1:
        tree = np.arange(len(acts), dtype=np.int64)
        try:
            ev = tree_eval(lam, beta, acts, mu, tree)
        except ServerPoolError:  # I + J - 1 activities with a cycle: not a spanning tree
            ev = None
        if ev is not None:
            ev = certify_tree(lam, beta, acts, mu, ev, tol)
            return None if ev is None else _tree_solution(system, tree, ev, tol)
    candidates = []
    if lp is None:
        candidates.append(lambda: crp_tree(lam, beta, acts, mu))
    else:
        with np.errstate(all="ignore"):
            prices = np.where(lp.pool_duals > 0, np.log(lp.pool_duals), -np.log(beta) - 50.0)
        candidates.append(lambda: crp_tree(lam, beta, acts, mu, prices=prices))
        candidates.append(lambda: _lp_tree(system, lp))
    for make in candidates:
        found = make()
        if found is None:
            continue
        tree, ev = found
        ev = certify_tree(lam, beta, acts, mu, ev, tol)
        if ev is not None:
            return _tree_solution(system, tree, ev, tol)
    return None


def _lp_tree(system: ServerPoolSystem, lp: SPPSolution):
    """The spanning tree of ``lp``'s largest flows (relative to their class), completed by the
    activities of smallest relative reduced cost, with its evaluation; None if disconnected."""
    acts, mu = activity_rates(system)
    lam = system.arrival_rates
    share = lp.flows[acts[:, 0], acts[:, 1]] / lam[acts[:, 0]]
    with np.errstate(all="ignore"):
        rc = 1.0 - lp.class_duals[acts[:, 0]] * mu / lp.pool_duals[acts[:, 1]]
    rc = np.nan_to_num(rc, nan=np.inf)
    order = np.lexsort((np.arange(len(acts)), rc, -share))
    tree = greedy_spanning_tree(acts, system.n_classes, system.n_pools, order)
    if len(tree) != system.n_classes + system.n_pools - 1:
        return None
    return tree, tree_eval(lam, system.pool_sizes, acts, mu, tree)


# -- the check and the diagnosis ---------------------------------------------------------------
def _activity_index(system: ServerPoolSystem, edges: np.ndarray) -> np.ndarray:
    """Indices into ``system.activities`` of the activities ``edges`` (pairs, 0-based)."""
    position = np.full((system.n_classes, system.n_pools), -1, dtype=np.int64)
    acts = system.activities
    position[acts[:, 0], acts[:, 1]] = np.arange(len(acts))
    return np.sort(position[edges[:, 0], edges[:, 1]])


def check_crp(solution: SPPSolution, *, tol: float = 1e-9) -> None:
    """Raise a :class:`CRPError` subclass unless complete resource pooling holds (Sec. 2).

    CRP holds when an exact certificate exists (:mod:`.tree_simplex`): a spanning tree of
    activities whose flows all exceed ``tol * lambda_i``, on which every pool binds (the
    duals of a spanning tree are positive), and such that every other activity has relative
    reduced cost ``alpha_j / (nu_i mu_ij) - 1 > tol`` (then the optimum is unique); the tree
    of ``solution.basic`` is tried first, then those of :func:`certified_solution`. Otherwise the
    failure is diagnosed from ``solution`` and from the optimal face of the scaled LP (HiGHS,
    :func:`~.highs.scaled_lp`; flows as fractions of their class, rho relative):

    * :class:`NotATreeError` -- the activities used by some optimal solution (a fraction
      above 1e-6 of their class's arrivals) contain a cycle (named; the optimum is then not
      unique);
    * :class:`NonBindingPoolError` -- some pool has slack (load below rho (1 - 1e-7)) or binds
      with dual alpha_j beta_j <= max(tol, 1e-9);
    * :class:`NonUniqueOptimumError` -- some flows vary over the optimal face (by more than
      1e-6 of their class), or non-basic activities have relative reduced cost
      <= max(tol, 1e-7);
    * :class:`DisconnectedError` -- the basic activities split I u J into components (named).

    The face is {rho <= rho* (1 + max(tol, 1e-9))}. Messages list at most a few items.

    Two classes and two pools, all four activities at rate 1: any split is optimal.

    >>> from queue_routing.serverpools import solve_spp
    >>> equal = ServerPoolSystem([1.0, 1.0], [1.0, 1.0], np.ones((2, 2)))
    >>> try:
    ...     check_crp(solve_spp(equal, require_crp=False))
    ... except NotATreeError as err:
    ...     print(err.kind, err.classes, err.pools)
    cycle (1, 2) (1, 2)
    """
    if not isinstance(solution, SPPSolution):
        raise ServerPoolError(f"expected an SPPSolution, got {type(solution).__name__}")
    tol = check_tol(tol)
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    basic = solution.basic
    if len(basic) and is_spanning_tree(basic, n_i, n_j):
        acts, mu = activity_rates(system)
        lam, beta = system.arrival_rates, system.pool_sizes
        tree = _activity_index(system, basic)
        ev = tree_eval(lam, beta, acts, mu, tree)
        if certify_tree(lam, beta, acts, mu, ev, tol) is not None:
            return
    if (
        certified_solution(system, tol) is not None
        or certified_solution(system, tol, solution) is not None
    ):
        return
    lp = scaled_lp(system)
    with np.errstate(all="ignore"):
        t = float(solution.rho / np.exp(lp.log_scale))
    if not (np.isfinite(t) and t > 0):
        raise ServerPoolError(
            f"solution.rho = {show_json(solution.rho)} is not a positive SPP value"
        )
    diagnose(solution, lp, t, tol)


def _face_support(lp: ScaledLP, t_max: float) -> np.ndarray:
    """Fractions x_e (columns of ``lp``) positive in some solution with t <= t_max.

    Repeatedly maximise the sum of the fractions not yet seen positive over the face; every
    round finds a new one or shows there is none (the face is convex).
    """
    k = lp.cols.size
    used = np.zeros(k, dtype=bool)
    for _ in range(k + 1):
        c = np.zeros(k + 1)
        c[:k] = np.where(used, 0.0, -lp.col_scale)
        res = run_lp(lp, c, t_max)
        if res is None:
            raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
        new = ~used & (res.x[:k] * lp.col_scale > 1e-6)
        if not new.any():
            return used
        used |= new
    return used  # pragma: no cover


def _face_varies(lp: ScaledLP, t_max: float, columns: np.ndarray) -> bool:
    """Whether some fraction x_e, e in ``columns``, varies over the face t <= t_max.

    Two LPs instead of two per column: the minimum and maximum of a generic positive
    combination sum_e w_e x_e (weights in [1, 2], from a fixed seed) differ iff the face,
    restricted to these fractions, is not a single point (with probability one over w);
    "differ" means by more than 1e-7 (fractions of a class). Only then are the columns'
    ranges computed, to name them.
    """
    k = lp.cols.size
    if columns.size == 0:
        return False
    w = np.random.default_rng(20130901).uniform(1.0, 2.0, columns.size)
    values = []
    for sign in (1.0, -1.0):
        c = np.zeros(k + 1)
        c[columns] = sign * w * lp.col_scale[columns]
        res = run_lp(lp, c, t_max)
        if res is None:
            raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
        values.append(float(w @ (res.x[columns] * lp.col_scale[columns])))
    return values[1] - values[0] > 1e-7


def _face_ranges(lp: ScaledLP, t_max: float, columns: np.ndarray):
    """Min and max of the fractions x_e, e in ``columns``, over the face t <= t_max."""
    k = lp.cols.size
    lo, hi = np.zeros(columns.size), np.zeros(columns.size)
    for n, idx in enumerate(columns.tolist()):
        for sign, out in ((1.0, lo), (-1.0, hi)):
            c = np.zeros(k + 1)
            c[idx] = sign * lp.col_scale[idx]
            res = run_lp(lp, c, t_max)
            if res is None:
                raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
            out[n] = res.x[idx] * lp.col_scale[idx]
    return lo, hi


def _pairs(edges) -> list[str]:
    return [f"(class {int(i) + 1}, pool {int(j) + 1})" for i, j in edges]


def _non_unique(message: str, activities: np.ndarray) -> NonUniqueOptimumError:
    """The :class:`NonUniqueOptimumError` of ``message`` naming the classes and pools
    (numbered from 1, sorted) of ``activities``, 0-based pairs (i, j), shape ``(K, 2)``."""
    return NonUniqueOptimumError(
        message,
        classes=sorted({int(i) + 1 for i in activities[:, 0]}),
        pools=sorted({int(j) + 1 for j in activities[:, 1]}),
    )


def diagnose(solution: SPPSolution, lp: ScaledLP, t: float, tol: float) -> None:
    """Raise the CRPError naming why CRP fails (see :func:`check_crp`)."""
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    acts = system.activities
    basic = solution.basic
    t_max = t * (1.0 + max(tol, 1e-9))
    used_cols = _face_support(lp, t_max)
    used = acts[lp.cols[used_cols]]
    cycle = find_cycle(used, n_i, n_j)
    if cycle is not None:
        nodes = cycle[:-1]
        raise NotATreeError(
            f"the activities used by optimal SPP solutions contain the cycle "
            f"{cycle_text(cycle, n_i)}, so the optimum is not unique and the basic activities "
            "are not a tree",
            classes=sorted(v + 1 for v in nodes if v < n_i),
            pools=sorted(v - n_i + 1 for v in nodes if v >= n_i),
        )
    beta = system.pool_sizes
    load = solution.occupancy.sum(axis=0)  # busy servers per unit r
    with np.errstate(all="ignore"):
        slack_pools = np.flatnonzero(load / beta < solution.rho * (1.0 - 1e-7))
    if slack_pools.size:
        with np.errstate(over="ignore"):
            capacity = solution.rho * beta
        shown = listing(
            (
                f"pool {j + 1} (load {load[j]:.6g} < rho beta_j = {capacity[j]:.6g})"
                for j in slack_pools
            ),
            limit=2,
        )
        raise NonBindingPoolError(
            f"capacity constraint (4) is slack at the optimum for {shown}",
            pools=[j + 1 for j in slack_pools],
        )
    varying = used[:0]
    if _face_varies(lp, t_max, np.flatnonzero(used_cols)):
        lo, hi = _face_ranges(lp, t_max, np.flatnonzero(used_cols))
        varying = used[hi - lo > 1e-6]
    if len(varying):
        raise _non_unique(
            f"the SPP optimum is not unique: the flows on {listing(_pairs(varying))} vary over "
            "the optimal face",
            varying,
        )
    comps = components(basic, n_i, n_j)
    if len(comps) > 1:
        raise DisconnectedError(
            f"the basic activities split the classes and pools into {len(comps)} "
            f"components: {components_text(comps, n_i)}",
            classes=range(1, n_i + 1),
            pools=range(1, n_j + 1),
        )
    alpha = solution.pool_duals
    with np.errstate(all="ignore"):
        zero_alpha = np.flatnonzero(~(alpha * beta > max(tol, 1e-9)))
    if zero_alpha.size:
        raise NonBindingPoolError(
            "pool capacity constraint binds with zero dual price alpha_j for "
            + listing(f"pool {j + 1}" for j in zero_alpha),
            pools=[j + 1 for j in zero_alpha],
        )
    in_basic = np.zeros((n_i, n_j), dtype=bool)
    in_basic[basic[:, 0], basic[:, 1]] = True
    nonbasic = ~in_basic[acts[:, 0], acts[:, 1]]
    mu = system.rates[acts[:, 0], acts[:, 1]]
    with np.errstate(all="ignore"):
        rc = 1.0 - solution.class_duals[acts[:, 0]] * mu / alpha[acts[:, 1]]
    flat = acts[nonbasic & ~(rc > max(tol, 1e-7))]
    if len(flat):
        raise _non_unique(
            f"non-basic activities {listing(_pairs(flat))} have zero reduced cost "
            "(degenerate dual)",
            flat,
        )
    raise NonUniqueOptimumError(
        f"no spanning tree of activities certifies a unique optimum with every pool binding "
        f"at tol = {tol:g} (flows or reduced costs within tol of zero: a degenerate optimum)"
    )
