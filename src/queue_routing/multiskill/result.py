"""Result objects shared by every multi-skilled solver."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PrecisionWarning
from .model import Instance, Partition, holding_cost

__all__ = ["PRECISION_WARN", "Solution", "kkt_residual", "precision_limit", "warn_if_imprecise"]

#: :func:`precision_limit` above which the solvers warn that double precision limits the
#: accuracy of the cost (a :class:`~queue_routing.errors.PrecisionWarning`).
PRECISION_WARN = 1e-9


def kkt_residual(instance: Instance, loads: np.ndarray) -> float:
    """Largest violation of the KKT conditions of LOAD-OPT at ``loads`` (dimensionless, >= 0).

    With ``g_j = c_j / (mu_j (1 - rho_j)^2)``, the marginal holding cost per unit of work sent
    to server ``j`` (cost per unit work), the loads are optimal iff for every class ``i``:
    ``g_i = g_0`` if ``0 < p_i < 1``, ``g_i >= g_0`` if ``p_i = 0`` (class in C_0) and
    ``g_i <= g_0`` if ``p_i = 1`` (class in C_d) -- the conditions behind Proposition 2. Class
    ``i``'s violation is the relative mismatch ``|g_i - g_0| / max(g_i, g_0)``, but no more
    than the distance of ``p_i`` to the bound the mismatch pushes it to (``p_i`` if
    ``g_i > g_0``, ``1 - p_i`` otherwise): a solver that stops a hair inside the box, as an
    interior-point method does, is not penalised for it. ``inf`` if a load is >= 1.

    >>> from queue_routing.multiskill import Instance, solve_exact
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> kkt_residual(inst, solve_exact(inst).loads) < 1e-15
    True
    >>> round(kkt_residual(inst, [0.8, 0.0]), 6)  # all to server 0: (12.5 - 2) / 12.5
    0.84
    """
    rho = np.asarray(loads, dtype=float)
    if not np.all(rho < 1.0):
        return float("inf")
    mu, c, eta = instance.mu, instance.cost, instance.eta
    g = c / (mu * (1.0 - rho) ** 2)
    g0, gi = g[0], g[1:]
    p = np.clip(mu[1:] * rho[1:] / eta, 0.0, 1.0)
    mismatch = np.abs(gi - g0) / np.maximum(gi, g0)
    room = np.where(gi > g0, p, 1.0 - p)  # how far p_i may still move the way g pushes it
    return float(np.minimum(mismatch, room).max(initial=0.0))


def warn_if_imprecise(loads: np.ndarray, what: str = "the cost") -> None:
    """Warn (:class:`~queue_routing.errors.PrecisionWarning`, one line) when
    :func:`precision_limit` of ``loads`` exceeds :data:`PRECISION_WARN`."""
    limit = precision_limit(loads)
    if limit > PRECISION_WARN:
        gap = 1.0 - float(np.max(loads))
        warnings.warn(
            PrecisionWarning(
                f"a load is within {gap:.1e} of capacity: double precision limits {what} to a "
                f"relative accuracy of about {limit:.0e}"
            ),
            stacklevel=3,
        )


def precision_limit(loads: np.ndarray) -> float:
    """Relative accuracy to expect of a holding cost at ``loads`` in double precision.

    A load near 1 is known to about one unit roundoff ``eps``, so ``1 - rho_j`` and the term
    ``c_j rho_j / (1 - rho_j)`` carry a relative rounding error of up to about
    ``eps / (1 - rho_j)``; the estimate is ``eps / (1 - max_j rho_j)``. At loads 1e-12 below 1
    that is 2e-4: costs of different models may then differ in their fourth digit by rounding
    alone. It is an estimate, checked in the tests: against a 60-digit evaluation the exact
    solver's cost stays within it on near-critical instances.

    >>> precision_limit([0.5, 0.9]) < 1e-14, precision_limit([0.5, 1 - 1e-12]) > 1e-4
    (True, True)
    """
    rho = np.asarray(loads, dtype=float)
    return float(np.finfo(float).eps / max(1.0 - float(rho.max()), np.finfo(float).tiny))


@dataclass(frozen=True)
class Solution:
    """Optimal (or candidate) loads of a multi-skilled instance.

    Attributes
    ----------
    instance:
        The solved :class:`~queue_routing.multiskill.model.Instance`.
    loads:
        ``rho_0..rho_C`` (dimensionless), shape ``(C + 1,)``.
    partition:
        The sets C_d, C_b, C_0 the loads correspond to (Proposition 2).
    method:
        ``"exact"``, ``"fixed-point"``, ``"generic"``, ``"closed-form"``.
    iterations:
        Partition changes of Algorithm 1; ``None`` for non-iterative methods.
    converged:
        Whether the method met its own stopping rule (a generic solver's success flag,
        Algorithm 1's "no class moves"). A non-converged solution's loads are its last
        iterate and are not optimal.
    message:
        Human-readable status, e.g. the cycle Algorithm 1 fell into.
    info:
        Method-specific extras (trajectories, solver statistics).
    """

    instance: Instance
    loads: np.ndarray
    partition: Partition
    method: str
    iterations: int | None = None
    converged: bool = True
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def cost(self) -> float:
        """Mean holding cost rate sum_j c_j rho_j/(1 - rho_j) (cost per unit time)."""
        return float(holding_cost(self.loads, self.instance.cost))

    @property
    def probabilities(self) -> np.ndarray:
        """p_i = mu_i rho_i / eta_i, the fraction of class i sent to its dedicated server."""
        p = self.instance.mu[1:] * self.loads[1:] / self.instance.eta
        return np.clip(p, 0.0, 1.0)

    @property
    def kkt_residual(self) -> float:
        """:func:`kkt_residual` at these loads (0 at the optimum, up to rounding)."""
        return kkt_residual(self.instance, self.loads)

    @property
    def flow_residual(self) -> float:
        """``|sum_j mu_j rho_j - sum_i eta_i| / sum_i eta_i``: constraint (7), relative."""
        total = float(self.instance.eta.sum())
        return abs(float(self.instance.mu @ self.loads) - total) / total

    @property
    def precision_limit(self) -> float:
        """:func:`precision_limit` of these loads."""
        return precision_limit(self.loads)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the ``queue-routing multiskill solve`` contract."""
        cost = self.cost
        return {
            "loads": self.loads.tolist(),
            "probabilities": self.probabilities.tolist(),
            "partition": self.partition.sets(),
            "cost": cost if np.isfinite(cost) else None,
            "iterations": self.iterations,
            "converged": bool(self.converged),
        }
