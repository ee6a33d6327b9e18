"""Small statistics shared by the simulators."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["Replicated", "t_half_width"]


def t_half_width(samples, confidence: float = 0.95):
    """Half-width of the t confidence interval for the mean over axis 0 of ``samples``.

    ``samples`` holds one value per independent replication (axis 0). Returns a float for 1-D
    input, an array of the remaining shape otherwise (NaN/inf propagate without warnings).
    """
    samples = np.asarray(samples, dtype=float)
    r = samples.shape[0]
    with np.errstate(invalid="ignore"):
        hw = (
            stats.t.ppf(0.5 + confidence / 2, r - 1)
            * np.std(samples, axis=0, ddof=1)
            / math.sqrt(r)
        )
    return float(hw) if np.ndim(hw) == 0 else hw


class Replicated:
    """Mixin of the simulation results: the number of replications and the standard error.

    A result class that holds the per-replication costs in ``replication_costs`` (shape
    ``(R,)``) and their mean in ``cost`` gets :attr:`replications` and
    :attr:`standard_error`; its ``ci95`` is ``t_{0.975, R-1}`` times the standard error
    (:func:`t_half_width`).
    """

    replication_costs: np.ndarray

    @property
    def replications(self) -> int:
        """R, the number of independent replications."""
        return int(self.replication_costs.size)

    @property
    def standard_error(self) -> float:
        """Standard error of the mean cost: sample sd of the replications over sqrt(R)."""
        r = self.replication_costs
        return float(np.std(r, ddof=1) / math.sqrt(r.size))
