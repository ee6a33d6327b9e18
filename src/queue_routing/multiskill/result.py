"""Result objects shared by every multi-skilled solver."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import AccuracyError, PrecisionWarning
from .model import Instance, Partition, holding_cost

__all__ = [
    "PRECISION_FAIL",
    "PRECISION_WARN",
    "Solution",
    "check_precision",
    "kkt_residual",
    "precision_limit",
    "warn_if_imprecise",
]

#: :func:`precision_limit` above which the solvers warn that double precision limits the
#: accuracy of the cost (a :class:`~queue_routing.errors.PrecisionWarning`) ...
PRECISION_WARN = 1e-9
#: ... and above which they refuse to return it (:class:`~queue_routing.errors.AccuracyError`).
PRECISION_FAIL = 1e-1


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


def warn_if_imprecise(limit: float, what: str = "the cost") -> None:
    """Act on a :func:`precision_limit` ``limit``: warn (:class:`PrecisionWarning`, one line)
    above :data:`PRECISION_WARN`, refuse (:class:`~queue_routing.errors.AccuracyError`) above
    :data:`PRECISION_FAIL`."""
    if limit > PRECISION_FAIL:
        raise AccuracyError(
            f"double precision cannot resolve {what} here: its relative accuracy would be about "
            f"{limit:.0e} (loads too close to 1, or too close to 0 for the spare capacity)"
        )
    if limit > PRECISION_WARN:
        warnings.warn(
            PrecisionWarning(
                f"double precision limits {what} to a relative accuracy of about {limit:.0e}"
            ),
            stacklevel=3,
        )


def check_precision(solution: Solution) -> None:
    """Warn or refuse by :func:`warn_if_imprecise`, and refuse a solution whose flow residual
    (constraint (7)) exceeds the accuracy it would claim: the a-posteriori check that catches
    what the estimate cannot (a root that double precision cannot place, e.g. a dedicated
    load of 1e-283 to split)."""
    limit = solution.precision_limit
    flow = solution.flow_residual
    if np.isfinite(limit) and flow > max(PRECISION_WARN, limit):
        raise AccuracyError(
            f"double precision cannot resolve this instance: the loads found miss flow "
            f"conservation by {flow:.1e} (relative), more than their stated accuracy {limit:.0e}"
        )
    warn_if_imprecise(limit)


def precision_limit(instance: Instance, loads: np.ndarray) -> float:
    """Relative accuracy to expect of the holding cost at ``loads`` in double precision.

    The solvers find the spare capacity ``s = 1 - rho_0`` of server 0 and set
    ``rho_j = 1 - delta_j s`` for the classes in C_b (Proposition 2), so those loads carry an
    absolute rounding error of about ``eps max(delta_j, 1)`` (``eps`` the unit roundoff),
    server 0's about ``eps``, and the loads of C_d and C_0 only their own ``eps rho_j``; the
    cost ``sum_j c_j rho_j / (1 - rho_j)`` moves by ``c_j / (1 - rho_j)^2`` per unit of load.
    The estimate is four times the sum of those moves relative to the cost: about
    ``4 eps / (1 - max rho)`` near capacity and ``4 eps delta / rho`` at very light load. At loads
    1e-12 below 1 it is 1e-3: costs of different models may then differ in their fourth digit
    by rounding alone. Checked in the tests against a 60-digit evaluation of the optimum.

    >>> from queue_routing.multiskill import Instance, solve_exact
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> bool(precision_limit(inst, solve_exact(inst).loads) < 1e-14)
    True
    """
    rho = np.asarray(loads, dtype=float)
    if not np.all(rho < 1.0):
        return float("inf")
    c = instance.cost
    dedicated = instance.eta / instance.mu[1:]
    interior = (rho[1:] > 0.0) & (rho[1:] < dedicated)  # C_b: the load moves with s
    # C_b moves by delta_j per unit of s; C_d (rho = eta/mu) and C_0 (rho = 0) do not move,
    # they carry only their own rounding, eps rho_j.
    weight = np.concatenate([[1.0], np.where(interior, np.maximum(instance.delta, 1.0), rho[1:])])
    eps = float(np.finfo(float).eps)
    with np.errstate(all="ignore"):
        cost = float(np.sum(c * rho / (1.0 - rho)))
        sensitivity = float(np.sum(c * weight / (1.0 - rho) ** 2))
        # x 4: on 400 random instances (rates, costs over 1e-6..1e6, loads from 1e-12 to
        # 1 - 1e-12) the exact solver's error against 60 digits reached 1.2 x the sum.
        limit = 4.0 * eps * sensitivity / cost if cost > 0 else float("inf")
    return max(limit, eps) if np.isfinite(limit) else float("inf")


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
        return precision_limit(self.instance, self.loads)

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
