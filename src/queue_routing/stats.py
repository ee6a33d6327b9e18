"""Small statistics shared by the simulators."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["t_half_width"]


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
