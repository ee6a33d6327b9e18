"""The static planning problem (SPP, Sec. 2): :func:`solve_spp`, the part's entry point.

The SPP (``docs/serverpools.md#static-planning-problem``; the system and the solution type are
in :mod:`.model`) is solved exactly on its certified tree of basic activities when complete
resource pooling holds (:func:`~.crp.certified_solution`, :mod:`.tree_simplex`), else by HiGHS
on the dimensionless LP (:func:`~.highs.lp_solution`), whose failure of CRP is then diagnosed
(:func:`~.crp.diagnose`) unless ``require_crp=False``.
"""

from __future__ import annotations

from typing import Any

from .crp import certified_solution, diagnose
from .errors import ServerPoolError
from .highs import lp_solution
from .model import ServerPoolSystem, SPPSolution, check_tol

__all__ = ["solve_spp", "tree_spp"]

#: From this many classes and pools on, the dual simplex starts from HiGHS's pool duals.
_WARM_START_NODES = 40


def _check_system(system: Any) -> ServerPoolSystem:
    if not isinstance(system, ServerPoolSystem):
        raise ServerPoolError(f"expected a ServerPoolSystem, got {type(system).__name__}")
    return system


def solve_spp(
    system: ServerPoolSystem, *, require_crp: bool = True, tol: float = 1e-9
) -> SPPSolution:
    """Solve the SPP (Sec. 2); check CRP (:func:`~.crp.check_crp`) unless told not to.

    When CRP holds, the optimum is found and certified exactly on its tree of basic
    activities (:mod:`.tree_simplex`: a dual simplex over spanning trees, with duals as
    logarithms and round-off bounds), so flows, rho and duals are exact up to round-off and
    change consistently with the units. Otherwise the SPP is solved by HiGHS in dimensionless
    form (:func:`~.highs.scaled_lp`): with ``require_crp`` the CRP failure is diagnosed
    (:func:`~.crp.diagnose` raises), without it that optimum is returned (its duals are HiGHS's
    marginals: nu_i = d rho / d lambda_i, alpha_j = -(marginal of the pool row), so that
    sum_j alpha_j beta_j = 1). ``tol`` (relative, in [0, 0.01]): flows below
    ``tol * lambda_i`` count as zero and reduced costs below ``tol`` (relative to
    alpha_j / mu_ij) as zero.

    One activity: the pool is loaded to rho = lambda / (beta mu) = 1.2 / (3 x 0.8), its
    dual is alpha = 1 / beta (normalisation) and the class dual nu = alpha / mu:

    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    >>> [round(float(x), 6) for x in (sol.rho, sol.pool_duals[0], sol.class_duals[0])]
    [0.5, 0.333333, 0.416667]

    The N-shape (rho = 2/3 by hand, see ``tests/test_serverpools_model.py``); strong duality
    sum_i nu_i lambda_i = rho:

    >>> sol = solve_spp(ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]]))
    >>> round(sol.rho, 6), sol.basic.tolist(), sol.underloaded
    (0.666667, [[0, 0], [1, 0], [1, 1]], True)
    >>> import numpy as np
    >>> bool(np.isclose(sol.class_duals @ sol.system.arrival_rates, sol.rho))
    True
    """
    system = _check_system(system)
    tol = check_tol(tol)
    acts = system.activities
    tree_like = len(acts) == system.n_classes + system.n_pools - 1
    small = system.n_classes + system.n_pools < _WARM_START_NODES
    if tree_like or small:
        certified = certified_solution(system, tol)
        if certified is not None:
            return certified
    solution, lp, t = lp_solution(system, tol)
    if not tree_like:  # HiGHS's duals start the dual simplex; its flows give a tree
        certified = certified_solution(system, tol, solution)
        if certified is not None:
            return certified
    if require_crp:
        diagnose(solution, lp, t, tol)
    return solution


def tree_spp(system: ServerPoolSystem, *, tol: float = 1e-9) -> SPPSolution:
    """The SPP of a system whose activities form a spanning tree (the same as :func:`solve_spp`).

    On a spanning tree the SPP is solved exactly on the tree (:mod:`.tree_simplex`); if every
    tree flow is positive the tree solution is the unique SPP optimum and CRP holds. Otherwise,
    or if the activities are not a spanning tree, :func:`solve_spp` raises the appropriate
    :class:`~.errors.CRPError`.

    >>> import numpy as np
    >>> system = ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])
    >>> fast, lp = tree_spp(system), solve_spp(system, require_crp=False)
    >>> bool(np.allclose(fast.flows, lp.flows) and np.isclose(fast.rho, lp.rho))
    True
    """
    return solve_spp(system, tol=tol)
