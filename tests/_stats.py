"""Statistical tolerances shared by the tests that compare simulations with exact values.

Each comparison of a simulated mean with an exact value is a two-sided t test over R
independent replications (R - 1 degrees of freedom). Within one test function the m
comparisons share a family-wise level of 1% by Bonferroni: each uses the quantile
``t_{1 - 0.005/m, R - 1}`` times the standard error (e.g. 3.9 SE for m = 10, R = 20). Seeds are
fixed, so a test is deterministic; the 1% is the chance that a correct simulator fails for an
arbitrary choice of seed.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

FAMILY_ALPHA = 0.01


def bonferroni_t(m: int, df: int, family_alpha: float = FAMILY_ALPHA) -> float:
    """Two-sided Bonferroni t quantile for ``m`` comparisons at family-wise level ``family_alpha``.

    >>> round(bonferroni_t(10, 19), 2)
    3.88
    """
    return float(stats.t.ppf(1.0 - family_alpha / (2 * m), df))


def assert_mean_agrees(samples, exact: float, m: int, what: str) -> None:
    """Assert that the mean of ``samples`` (one value per replication) is within the
    Bonferroni t tolerance (``m`` comparisons in the test) of ``exact``."""
    samples = np.asarray(samples, dtype=float)
    mean = samples.mean()
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    q = bonferroni_t(m, samples.size - 1)
    assert abs(mean - exact) <= q * se, (
        f"{what}: simulated {mean:.6g} +- {q * se:.2g} ({q:.2f} SE) vs exact {exact:.6g}"
    )
