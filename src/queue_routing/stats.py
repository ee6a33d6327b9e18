"""Small statistics shared by the simulators."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

__all__ = ["Replicated", "t_cdf", "t_half_width", "t_quantile"]


# Student-t through scipy.special (the functions scipy.stats.t calls, bit for bit): importing
# scipy.stats costs most of a second, paid by every pipeline job that reports an interval.
def t_quantile(p, df):
    """Quantile of Student's ``t`` with ``df`` degrees of freedom at probability ``p``
    (``scipy.stats.t.ppf(p, df)``; NaN for ``df <= 0``).

    >>> round(float(t_quantile(0.975, 9)), 6)
    2.262157
    """
    return special.stdtrit(df, p)


def t_cdf(x, df):
    """Distribution function of Student's ``t`` with ``df`` degrees of freedom
    (``scipy.stats.t.cdf(x, df)``; the survival function is ``t_cdf(-x, df)``).

    >>> float(t_cdf(0.0, 3))
    0.5
    """
    return special.stdtr(df, x)


def t_half_width(samples, confidence: float = 0.95):
    """Half-width of the t confidence interval for the mean over axis 0 of ``samples``.

    ``samples`` holds one value per independent replication (axis 0). Returns a float for 1-D
    input, an array of the remaining shape otherwise (NaN/inf propagate without warnings).
    """
    samples = np.asarray(samples, dtype=float)
    r = samples.shape[0]
    with np.errstate(invalid="ignore"):
        hw = (
            t_quantile(0.5 + confidence / 2, r - 1) * np.std(samples, axis=0, ddof=1) / math.sqrt(r)
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
