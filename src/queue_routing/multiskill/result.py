"""Result objects shared by every multi-skilled solver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .model import Instance, Partition, holding_cost

__all__ = ["Solution"]


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
