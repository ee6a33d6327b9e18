"""The SPP in dimensionless form, solved by HiGHS (:func:`scipy.optimize.linprog`).

The static planning problem (:mod:`.model`) with the units divided out (:func:`scaled_lp`), so
that HiGHS sees the same linear program in any units. It serves the SPP when complete resource
pooling fails (:func:`lp_solution`, the optimum of ``solve_spp(..., require_crp=False)``) and
the diagnosis of that failure over the optimal face (:mod:`.crp`); when CRP holds the optimum
is found and certified exactly instead (:mod:`.tree_simplex`, :func:`~.crp.certified_solution`).
Its accuracy is HiGHS's, about 1e-9 relative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ServerPoolError
from .model import ServerPoolSystem, SPPSolution, activity_rates, spp_solution

__all__: list[str] = []  # internal: solve_spp and check_crp are the public entry points


def _linprog(*args, **kwargs):
    """:func:`scipy.optimize.linprog`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import linprog

    return linprog(*args, **kwargs)


def _csr_array(*args, **kwargs):
    """:func:`scipy.sparse.csr_array`, imported on first use (scipy.sparse costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.sparse import csr_array

    return csr_array(*args, **kwargs)


#: HiGHS's feasibility tolerances on the scaled LP (its defaults are 1e-7).
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class ScaledLP:
    """The SPP in dimensionless form (:func:`scaled_lp`); ``cols``: activities kept."""

    a_eq: np.ndarray
    a_ub: np.ndarray
    cols: np.ndarray
    col_scale: np.ndarray
    log_scale: float
    n_pools: int


def scaled_lp(system: ServerPoolSystem) -> ScaledLP:
    """The SPP with the units divided out, so that HiGHS sees the same LP in any units.

    Variables: the fractions x_e = lambda_ij / lambda_i and t = rho / S; rows
    ``sum_j x_ij = 1`` and ``sum_i c_ij x_ij <= t`` with the dimensionless loads
    ``c_ij = lambda_i / (mu_ij beta_j S)``, where S is the largest over classes of the
    smallest load of one class (computed in logarithms). These are invariant under changes
    of units (all rates by one factor; lambda and beta together) and under re-scaling one
    class's customers or one pool's servers. Column x_e is scaled by
    g_i = min(b_i^(-1/2), 1e7) (b_i: class i's smallest load over S) so that light classes keep
    entries above HiGHS's 1e-9 cut-off; entries stay below 1e13 (HiGHS rejects 1e15):
    activities above it, more than ~1e13 times less efficient than their class's best, are
    left out of the LP (they carry no flow in its solution). This LP serves
    ``require_crp=False`` and the diagnosis of CRP failures; the CRP optimum itself is found
    and certified exactly (:mod:`.tree_simplex`).
    """
    acts, mu = activity_rates(system)
    log_mu = np.log(mu)
    n_i, n_j = system.n_classes, system.n_pools
    log_lam, log_beta = np.log(system.arrival_rates), np.log(system.pool_sizes)
    log_a = log_lam[acts[:, 0]] - log_mu - log_beta[acts[:, 1]]
    best = np.full(n_i, np.inf)
    np.minimum.at(best, acts[:, 0], log_a)
    log_scale = float(best.max())
    log_g = np.minimum(-0.5 * (best - log_scale), np.log(1e7))[acts[:, 0]]
    log_entry = log_a - log_scale + log_g
    keep = np.flatnonzero(log_entry <= np.log(1e13))
    k = keep.size
    g = np.exp(log_g[keep])
    cols = np.arange(k)
    a_eq = _csr_array((g, (acts[keep, 0], cols)), shape=(n_i, k + 1))
    entries = np.exp(np.maximum(log_entry[keep], np.log(1.01e-9)))
    a_ub = _csr_array(
        (
            np.concatenate([entries, -np.ones(n_j)]),
            (
                np.concatenate([acts[keep, 1], np.arange(n_j)]),
                np.concatenate([cols, np.full(n_j, k)]),
            ),
        ),
        shape=(n_j, k + 1),
    )
    return ScaledLP(a_eq, a_ub, keep, g, log_scale, n_j)


def run_lp(lp: ScaledLP, c: np.ndarray, t_max: float | None = None):
    """HiGHS on the scaled LP with objective ``c`` (and t <= t_max): the result, or None.

    Tight tolerances first; if HiGHS fails or returns a point that is not feasible to 1e-6
    (in the scaled units: class fractions summing to 1, pool loads at most t), its default
    tolerances; None if that fails too.
    """
    k = lp.cols.size
    bounds = [(0.0, None)] * k + [(None, t_max)]
    for options in (_HIGHS_OPTIONS, {}):
        res = _linprog(
            c,
            A_ub=lp.a_ub,
            b_ub=np.zeros(lp.n_pools),
            A_eq=lp.a_eq,
            b_eq=np.ones(lp.a_eq.shape[0]),
            bounds=bounds,
            method="highs",
            options=options,
        )
        if res.status == 0 and _feasible(lp, res.x):
            return res
    return None


def _feasible(lp: ScaledLP, z: np.ndarray) -> bool:
    """Whether the scaled LP's point ``z`` (y and t) is feasible to 1e-6 (relative)."""
    k = lp.cols.size
    y, t = np.clip(z[:k], 0.0, None), float(z[k])
    with np.errstate(all="ignore"):
        sums = lp.a_eq[:, :k] @ y
        loads = lp.a_ub[:, :k] @ y
    return bool(
        np.isfinite(t)
        and t > 0
        and np.all(np.abs(sums - 1.0) <= 1e-6)
        and np.all(loads <= t * (1.0 + 1e-6))
    )


def lp_solution(system: ServerPoolSystem, tol: float) -> tuple[SPPSolution, ScaledLP, float]:
    """An SPP optimum by HiGHS on the scaled LP, in the system's units; and t* = rho / S."""
    lp = scaled_lp(system)
    k = lp.cols.size
    c = np.zeros(k + 1)
    c[k] = 1.0
    res = run_lp(lp, c)
    if res is None:
        raise ServerPoolError(
            "the SPP linear program failed: HiGHS found no accurate solution of the scaled LP "
            "(its loads lambda_i / (mu_ij beta_j) are too far apart for double precision)"
        )
    acts = system.activities
    lam, beta = system.arrival_rates, system.pool_sizes
    x = np.clip(res.x[:k], 0.0, None) * lp.col_scale  # fractions of each class
    t = float(res.x[k])
    flows = np.zeros((system.n_classes, system.n_pools))
    flows[acts[lp.cols, 0], acts[lp.cols, 1]] = x * lam[acts[lp.cols, 0]]
    u = np.asarray(res.eqlin.marginals, dtype=float)
    w = -np.asarray(res.ineqlin.marginals, dtype=float)
    with np.errstate(all="ignore"):  # nu_i = u_i S / lambda_i, alpha_j = w_j / beta_j
        nu = np.sign(u) * np.exp(np.log(np.abs(u)) + lp.log_scale - np.log(lam))
        alpha = w / beta
        rho = t * float(np.exp(lp.log_scale))
    nu = np.where(np.isfinite(nu), nu, 0.0)
    return spp_solution(system, rho, flows, nu, alpha, tol), lp, t
