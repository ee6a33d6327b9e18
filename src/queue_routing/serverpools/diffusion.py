"""Stationary covariance of the diffusion limit near a stable underloaded equilibrium.

In the r-th underloaded system, state space collapse makes the diffusion-scaled class totals
``Y^r_i = (X^r_i - r psi*_i) / sqrt(r)`` (no queueing, ``X_i = Psi_i``) converge to the
Ornstein-Uhlenbeck process

    dY = A_u Y dt + sqrt(2 diag(lambda)) dW,

with A_u = :func:`~queue_routing.serverpools.linear.a_underloaded`. The drift is the
linearised fluid model (Theorem 3.1). The noise: class i changes only through its arrivals
(rate r lambda_i) and its service completions (rate sum_j mu_ij r psi*_ij = r lambda_i at
equilibrium), each by +-1 and independent, so after scaling by 1/sqrt(r) the infinitesimal
covariance is diag(lambda_i + lambda_i) = 2 diag(lambda); routing only moves a customer
between pools and does not change class totals. If A_u is Hurwitz the stationary law is
N(0, Sigma) with Sigma the solution of the Lyapunov equation

    A_u Sigma + Sigma A_u^T + 2 diag(lambda) = 0.

Check (one class, one pool, an M/M/N queue with N = r beta > r lambda/mu): A_u = -mu, so
Sigma = lambda / mu = psi*; the M/M/infinity stationary law Poisson(r lambda/mu) has
variance r lambda/mu, i.e. lambda/mu after scaling by 1/sqrt(r) -- the factor 2 is right.

Units: Sigma in customers^2 per unit r (that is, of the 1/sqrt(r)-scaled deviations).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_continuous_lyapunov

from .errors import NotUnderloadedError, UnstableEquilibriumError
from .linear import a_underloaded
from .model import SPPSolution

__all__ = [
    "lyapunov_residual",
    "noise_covariance",
    "stationary_covariance",
]


def noise_covariance(solution: SPPSolution) -> np.ndarray:
    """2 diag(lambda): infinitesimal covariance of the scaled class totals, shape ``(I, I)``."""
    return 2.0 * np.diag(np.asarray(solution.system.arrival_rates, dtype=float))


def stationary_covariance(solution: SPPSolution, drift: np.ndarray | None = None) -> np.ndarray:
    """Sigma solving ``A Sigma + Sigma A^T + 2 diag(lambda) = 0`` with ``A = A_u``.

    ``drift`` overrides A (shape ``(I, I)``). Raises :class:`UnstableEquilibriumError`
    unless every eigenvalue of A has a negative real part, and
    :class:`~.errors.NotUnderloadedError` (a ``ValueError``) for a system that is not
    underloaded. Returns a symmetric ``(I, I)`` array.

    Examples
    --------
    One class and one pool (module docstring): Sigma = lambda / mu.

    >>> from queue_routing.serverpools import ServerPoolSystem, solve_spp
    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    >>> round(float(stationary_covariance(sol)[0, 0]), 12)
    1.5

    The stable example: Sigma solves the Lyapunov equation to round-off.

    >>> from queue_routing.serverpools.instances import example_system
    >>> stable = solve_spp(example_system("stable"))
    >>> sigma = stationary_covariance(stable)
    >>> lyapunov_residual(stable, sigma) < 1e-12, bool(np.all(np.linalg.eigvalsh(sigma) > 0))
    (True, True)
    """
    if drift is None:
        if not solution.underloaded:
            raise NotUnderloadedError(
                solution.rho, "the diffusion limit here needs an underloaded system (rho < 1)"
            )
        drift = a_underloaded(solution)
    a = np.asarray(drift, dtype=float)
    n = solution.system.n_classes
    if a.shape != (n, n):
        raise ValueError(f"drift must have shape ({n}, {n}), got {a.shape}")
    eig = np.linalg.eigvals(a)
    if not np.all(eig.real < 0):
        k = int(np.argmax(eig.real))
        raise UnstableEquilibriumError(
            f"the drift has eigenvalue {eig[k]:.6g} with real part >= 0: the equilibrium is "
            "not stable and the diffusion has no stationary distribution"
        )
    # scipy solves A X + X A^H = Q, so Q = -2 diag(lambda).
    sigma = solve_continuous_lyapunov(a, -noise_covariance(solution))
    return 0.5 * (sigma + sigma.T)


def lyapunov_residual(solution: SPPSolution, sigma: np.ndarray) -> float:
    """max |A_u Sigma + Sigma A_u^T + 2 diag(lambda)|, for checking a covariance."""
    a = a_underloaded(solution)
    sigma = np.asarray(sigma, dtype=float)
    return float(np.abs(a @ sigma + sigma @ a.T + noise_covariance(solution)).max())
