"""A generic convex solver for LOAD-OPT, used only to cross-check the exact solver.

LOAD-OPT is solved in the routing probabilities ``p in [0, 1]^C`` (Sec. 2 of the paper):
``rho_j = eta_j p_j / mu_j`` for ``j >= 1``, ``rho_0 = sum_i eta_i (1 - p_i) / mu_0``, and the
objective is ``f(p) = sum_j c_j rho_j / (1 - rho_j)`` (cost per unit time). Flow conservation
(constraint (7)) holds by construction, so only the box constraints remain.

What makes a general-purpose optimiser reliable here (``docs/multiskill.md#generic-solvers``):

* a feasible start: the loads are balanced, ``rho_j = min(eta_j/mu_j, theta)`` and
  ``rho_0 = theta``, which has ``theta < 1`` for every instance that is stable by
  Proposition 1 (the obvious ``p_i = min(1, mu_i/(2 eta_i))`` overloads server 0);
* the objective divided by its value at the start, so that it is of order one;
* each term ``c rho/(1 - rho)`` continued past ``rho = 1 - extension`` by its second-order
  Taylor expansion. The continuation is convex and C^2, agrees with the objective wherever the
  objective is below the continuation point, and so leaves the optimum unchanged whenever the
  optimal loads are below ``1 - extension``; a line search that overshoots a pole sees a finite,
  steep value instead of ``inf`` or a negative number;
* the analytic gradient;
* for the scipy methods, continuation in the extension point (0.1, 0.01, ... down to
  ``extension``), a diagonal preconditioner, a longer line search and restarts after a failed
  line search (see :func:`_solve_scipy` for why each is needed).

Failures are reported, never hidden: ``Solution.converged`` requires the optimiser's own
success flag, every final load below 1, and the KKT and flow residuals below their stated
tolerances (:func:`solve_generic`'s ``kkt_tol``; a success flag alone was seen at 2.6 times
the optimum near capacity).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .model import BOTH, DEDICATED, SHARED, Instance, Partition
from .result import Solution, kkt_residual

__all__ = ["GENERIC_METHODS", "feasible_start", "solve_generic"]

#: Methods accepted by :func:`solve_generic`.
GENERIC_METHODS = ("L-BFGS-B", "SLSQP", "cvxpy")

_BISECTION_STEPS = 200
_STAGES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
_DEFAULT_FTOL = {"L-BFGS-B": 1e-12, "SLSQP": 1e-16}
_MAXLS = 100
_FLOW_TOL = 1e-9
_LINE_SEARCH_FAILURE = {"L-BFGS-B": (2,), "SLSQP": (8,)}
_CVXPY_DEFAULTS = {
    "solver": "CLARABEL",
    "tol_gap_abs": 3e-9,
    "tol_gap_rel": 3e-9,
    "tol_feas": 3e-9,
    "tol_ktratio": 3e-7,
}


def _minimize(*args, **kwargs):
    """:func:`scipy.optimize.minimize`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import minimize

    return minimize(*args, **kwargs)


def feasible_start(mu: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Balanced starting probabilities ``p_i = min(1, theta mu_i / eta_i)``.

    ``theta`` is (an upper bracket of) the root in (0, 1) of
    ``rho_0(theta) = sum_i (eta_i - theta mu_i)^+ / mu_0 = theta``: the dedicated loads are
    ``min(eta_i/mu_i, theta)`` and server 0 takes the rest, so every load is at most ``theta``.
    ``rho_0(theta) - theta`` is strictly decreasing, positive at 0 and, by Proposition 1
    (``mu_0 > sum_i (eta_i - mu_i)^+``), negative at 1; bisection keeps the upper end, where
    ``rho_0 <= theta < 1``. Returns ``p`` of shape ``(C,)``.
    """
    mu = np.asarray(mu, dtype=float)
    eta = np.asarray(eta, dtype=float)

    def excess(theta: float) -> float:
        return float(np.clip(eta - theta * mu[1:], 0.0, None).sum() / mu[0] - theta)

    lo, hi = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if excess(mid) <= 0.0:
            hi = mid
        else:
            lo = mid
    return np.minimum(1.0, hi * mu[1:] / eta)


def loads_from_probabilities(p: np.ndarray, mu: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Loads ``rho_0..rho_C`` of routing probabilities ``p`` (Sec. 2), shape ``(C + 1,)``."""
    rho = np.empty(eta.size + 1)
    rho[1:] = eta * p / mu[1:]
    rho[0] = float(np.sum(eta * (1.0 - p))) / mu[0]
    return rho


def _extended_cost(rho: np.ndarray, cost: np.ndarray, ext: float) -> tuple[np.ndarray, np.ndarray]:
    """Terms ``c rho/(1 - rho)`` and their derivatives ``c/(1 - rho)^2``, continued past
    ``rho = 1 - ext`` by the quadratic Taylor expansion at that point (convex, C^2)."""
    a = 1.0 - ext
    inside = rho <= a
    r = np.where(inside, rho, a)
    u = 1.0 - r
    value = cost * r / u
    slope = cost / (u * u)
    if not np.all(inside):
        d = np.where(inside, 0.0, rho - a)
        curv = 2.0 * cost / (ext * ext * ext)  # second derivative at 1 - ext
        value = value + slope * d + 0.5 * curv * d * d
        slope = slope + curv * d
    return value, slope


def _objective(p, mu, cost, eta, ext, scale):
    """Scaled objective ``f(p)/scale`` and its gradient in ``p``.

    ``df/dp_i = (eta_i/mu_i) phi_i'(rho_i) - (eta_i/mu_0) phi_0'(rho_0)``, with ``phi`` the
    continued cost term of :func:`_extended_cost`.
    """
    rho = loads_from_probabilities(p, mu, eta)
    value, slope = _extended_cost(rho, cost, ext)
    grad = eta * (slope[1:] / mu[1:] - slope[0] / mu[0])
    return float(value.sum()) / scale, grad / scale


def classify(p: np.ndarray, tol: float) -> Partition:
    """Partition read off routing probabilities: ``p >= 1 - tol`` is C_d, ``p <= tol`` is C_0,
    anything else C_b (Proposition 2's sets, up to the solver's accuracy)."""
    labels = np.full(p.size, BOTH, dtype=np.int8)
    labels[p >= 1.0 - tol] = DEDICATED
    labels[p <= tol] = SHARED
    return Partition(labels)


def _diagonal_scale(p, mu, cost, eta, ext, scale):
    """Square root of the diagonal of the Hessian of ``f/scale`` (continued at ``1 - ext``)
    at ``p``: ``d2f/dp_i^2 = (eta_i/mu_i)^2 phi_i'' + (eta_i/mu_0)^2 phi_0''``, with
    ``phi'' = 2c/(1 - rho)^3`` (frozen at ``1 - ext`` beyond it)."""
    rho = loads_from_probabilities(p, mu, eta)
    u = np.maximum(1.0 - rho, ext)
    curv = 2.0 * cost / u**3
    diag = (eta / mu[1:]) ** 2 * curv[1:] + (eta / mu[0]) ** 2 * curv[0]
    return np.sqrt(diag / scale)


def _extensions(extension: float) -> list[float]:
    """Continuation points ``0.1, 0.01, ...`` above ``extension``, then ``extension`` itself."""
    return [*(e for e in _STAGES if e > extension), extension]


def _solve_scipy(p0, mu, cost, eta, method, ftol, gtol, maxiter, extension, scale, restarts):
    """Minimise the continued objective: continuation in the extension point, diagonal
    preconditioning, restarts after a failed line search.

    * Continuation. With the continuation at ``1 - 1e-6`` straight away, the curvature beyond
      it (``2c/extension^3``) is so large that L-BFGS-B's first trial step (of length ~1 in
      ``p``) lands far past a pole, the line search backs off to a step that barely moves, and
      the relative-reduction test then reports success far from the optimum (seen on the
      paper's random instances: errors up to 20%). So the extension point moves towards 1 in
      decades, each stage warm-started from the last, and stops at the first stage whose
      minimiser has every load ``<= 1 - e``: the continued objective is a convex minorant of
      the true one (``phi''' > 0``) that agrees with it there, so that minimiser is the true
      optimum.
    * Preconditioning. Each run optimises ``x = p * s`` with ``s`` the square root of the
      Hessian diagonal at its start, so a unit gradient step is a diagonal Newton step.
      Without it, holding costs spread over several decades and loads near 1 make L-BFGS-B
      stop on slow progress with relative errors up to 5e-5.
    * Restarts. A run that ends in a failed line search (L-BFGS-B ``ABNORMAL``, SLSQP
      "positive directional derivative") is restarted from where it stopped, with a fresh
      preconditioner and memory, at most ``restarts`` times; the success flag reported is that
      of the last run. Such failures mostly happen at the optimum itself, where the objective
      no longer changes in floating point. L-BFGS-B's line search may take up to 100
      evaluations (scipy's default 20 is too few to come back from far past a pole).
    """
    if method == "L-BFGS-B":
        options = {
            "ftol": ftol,
            "gtol": gtol,
            "maxiter": maxiter,
            "maxfun": 20 * maxiter,
            "maxls": _MAXLS,
        }
    else:  # SLSQP has a single tolerance, on the objective value
        options = {"ftol": ftol, "maxiter": maxiter}
    p = p0
    nit = nfev = runs = 0
    stages = []
    for ext in _extensions(extension):
        for _ in range(1 + restarts):
            s = _diagonal_scale(p, mu, cost, eta, ext, scale)

            def fun(x, ext=ext, s=s):
                f, g = _objective(x / s, mu, cost, eta, ext, scale)
                return f, g / s

            res = _minimize(
                fun,
                p * s,
                jac=True,
                method=method,
                bounds=list(zip(np.zeros(p.size), s, strict=True)),
                options=options,
            )
            p = np.clip(np.asarray(res.x, dtype=float) / s, 0.0, 1.0)
            nit += int(getattr(res, "nit", 0))
            nfev += int(getattr(res, "nfev", 0))
            runs += 1
            if res.success or int(res.status) not in _LINE_SEARCH_FAILURE[method]:
                break
        stages.append(ext)
        if loads_from_probabilities(p, mu, eta).max() <= 1.0 - ext:
            break
    info = {
        "message": str(res.message),
        "nit": nit,
        "nfev": nfev,
        "success": bool(res.success),
        "extensions": stages,
        "runs": runs,
    }
    return p, info


def _solve_cvxpy(p0, mu, cost, eta, scale, solver_options):
    """The conic formulation; ``c rho/(1 - rho) = c (1/(1 - rho) - 1)`` and ``1/x`` is
    ``inv_pos`` (convex, second-order-cone representable). Imports cvxpy lazily."""
    try:
        import cvxpy as cp  # optional dependency (the ``dev`` extra)
    except ImportError:
        raise ImportError(
            "method='cvxpy' needs the optional cvxpy package (pip install cvxpy)"
        ) from None

    p = cp.Variable(eta.size)
    p.value = p0
    rho_d = cp.multiply(eta / mu[1:], p)
    rho_0 = (float(eta.sum()) - eta @ p) / mu[0]
    w = cost / scale
    objective = w[0] * cp.inv_pos(1.0 - rho_0) + w[1:] @ cp.inv_pos(1.0 - rho_d) - w.sum()
    problem = cp.Problem(cp.Minimize(objective), [p >= 0.0, p <= 1.0])
    if solver_options is None:
        solver_options = dict(_CVXPY_DEFAULTS) if "CLARABEL" in cp.installed_solvers() else {}
    try:
        problem.solve(**solver_options)
    except cp.error.SolverError as exc:
        return np.array(p0, dtype=float), {
            "message": f"SolverError: {exc}",
            "nit": -1,
            "nfev": -1,
            "success": False,
        }
    stats = problem.solver_stats
    ok = problem.status == cp.OPTIMAL and p.value is not None
    x = np.clip(np.asarray(p.value if p.value is not None else p0, dtype=float), 0.0, 1.0)
    info = {
        "message": str(problem.status),
        "nit": int(stats.num_iters) if stats.num_iters is not None else -1,
        "nfev": -1,
        "success": bool(ok),
        "solver": str(stats.solver_name),
    }
    return x, info


def solve_generic(
    instance: Instance,
    method: str = "L-BFGS-B",
    *,
    ftol: float | None = None,
    gtol: float = 1e-8,
    maxiter: int = 20_000,
    restarts: int = 2,
    extension: float = 1e-6,
    partition_tol: float = 1e-9,
    kkt_tol: float = 1e-3,
    solver_options: dict[str, Any] | None = None,
) -> Solution:
    """Solve LOAD-OPT with a general-purpose optimiser over ``p in [0, 1]^C``.

    Parameters
    ----------
    instance:
        A stable instance.
    method:
        ``"L-BFGS-B"`` or ``"SLSQP"`` (scipy, analytic gradient), or ``"cvxpy"`` (conic
        formulation ``c rho/(1 - rho) = c (inv_pos(1 - rho) - 1)``; needs the optional
        ``cvxpy`` package).
    ftol, gtol, maxiter:
        scipy stopping rules on the scaled objective (1 at the start). ``ftol`` is L-BFGS-B's
        relative reduction per iteration (default ``1e-12``) and SLSQP's accuracy goal
        (default ``1e-16``); ``gtol`` is L-BFGS-B's tolerance on the projected gradient in
        the preconditioned variables, where ``gtol^2/2`` roughly estimates the remaining
        relative decrease (SLSQP ignores it). The defaults are as tight as they usefully go
        (measured on the paper's random instances and on instances with costs spread over six
        decades and loads up to ``1 - 1e-5``): tighter ones only turn solves that already sit
        at the optimum to rounding into line-search failures, because a function-value line
        search cannot resolve ``p`` much better than ``sqrt(eps)``. Ignored by ``"cvxpy"``.
    restarts:
        Restarts after a failed line search, per continuation stage (scipy methods).
    extension:
        Each cost term is continued past ``rho = 1 - extension`` by its quadratic Taylor
        expansion (scipy methods; continuation from ``0.1`` down, see :func:`_solve_scipy`).
    partition_tol:
        Tolerance on ``p`` when reading the partition off the solution (:func:`classify`).
    kkt_tol:
        ``converged`` needs the KKT residual (:func:`~.result.kkt_residual`, the largest
        relative mismatch of the marginal holding costs g_j of a class's two servers) below
        this, and the flow residual of constraint (7) below 1e-9. On the paper's instances
        (C = 10..200) converged runs have KKT residuals up to 1e-4 and cost errors up to 1e-10;
        within 1e-6 of capacity the optimisers stop with residuals of 0.1-0.9 and costs up to
        0.4% above the optimum, which this test catches.
    solver_options:
        Keyword arguments for ``cvxpy.Problem.solve`` (``"cvxpy"`` only). Default: Clarabel
        (cvxpy's default for this problem) with its gap and feasibility tolerances tightened
        from ``1e-8`` to ``3e-9``; at ``1e-9`` it starts to report ``optimal_inaccurate``.
        Relative cost error about 1e-8 on the paper's instances; on badly scaled ones (holding
        costs over six decades) the interior-point answer stays ~1e-10 inside the box and the
        cost can be off by up to a few percent with status ``optimal``: a check, not a reference.

    Returns
    -------
    Solution
        ``method="generic"``; ``converged`` is the optimiser's success flag and all final
        loads < 1; ``iterations`` the optimiser's iteration count; ``info`` holds ``message``,
        ``nit``, ``nfev``, ``method``, ``wall_time_s`` (seconds), ``start_max_load`` (largest
        load at the start), ``objective_scale`` (cost at the start) and, for scipy,
        ``extensions`` (the continuation points used), ``runs`` (optimiser runs, restarts
        included) and ``in_extension`` (some final load is beyond ``1 - extension``, where the
        continued objective is below the true one and the answer need not be optimal).
    """
    if method not in GENERIC_METHODS:
        raise ValueError(f"method must be one of {GENERIC_METHODS}, got {method!r}")
    if not 0.0 < extension < 1.0:
        raise ValueError(f"extension must be in (0, 1), got {extension}")
    if ftol is None:
        ftol = _DEFAULT_FTOL.get(method, 0.0)
    mu, cost, eta = instance.mu, instance.cost, instance.eta
    t0 = time.perf_counter()
    p0 = feasible_start(mu, eta)
    rho_start = loads_from_probabilities(p0, mu, eta)
    value0, _ = _extended_cost(rho_start, cost, extension)
    scale = float(value0.sum())
    if method == "cvxpy":
        p, info = _solve_cvxpy(p0, mu, cost, eta, scale, solver_options)
    else:
        p, info = _solve_scipy(
            p0, mu, cost, eta, method, ftol, gtol, maxiter, extension, scale, restarts
        )
        info["in_extension"] = bool(loads_from_probabilities(p, mu, eta).max() > 1.0 - extension)
    loads = loads_from_probabilities(p, mu, eta)
    wall = time.perf_counter() - t0
    loads_ok = bool(np.all(loads < 1.0))
    kkt = kkt_residual(instance, loads)
    flow = abs(float(mu @ loads) - float(eta.sum())) / float(eta.sum())
    converged = info.pop("success") and loads_ok and kkt <= kkt_tol and flow <= _FLOW_TOL
    message = info["message"]
    if not loads_ok:
        message += "; final load >= 1"
    elif kkt > kkt_tol:
        message += f"; KKT residual {kkt:.2g} > kkt_tol {kkt_tol:g}: not optimal"
    if flow > _FLOW_TOL:
        message += f"; flow residual {flow:.2g}"
    info.update(kkt_residual=kkt, flow_residual=flow)
    info.update(
        method=method,
        wall_time_s=wall,
        start_max_load=float(rho_start.max()),
        objective_scale=scale,
    )
    return Solution(
        instance=instance,
        loads=loads,
        partition=classify(p, partition_tol),
        method="generic",
        iterations=info["nit"] if info["nit"] >= 0 else None,
        converged=bool(converged),
        message=message,
        info=info,
    )
