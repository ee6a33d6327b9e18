"""Time averages with evidence: derived warm-up, a stationarity test, intervals, slopes (ours).

The paper's non-tightness claim is about *stationary* distributions, so every time average
of the diffusion-scaled deviation that the pipeline reports must come from a window that is
past the transient of its start. Four small pure functions (``docs/serverpools.md``,
"Stationarity, intervals and the verdict"):

* :func:`derived_warmup` -- the warm-up from the linearisation and the scale r: a stable
  equilibrium (leading real part gamma < 0) forgets the nominal start like exp(2 gamma t)
  (the covariance of the Ornstein-Uhlenbeck limit); an unstable one (gamma > 0) needs
  ln(sqrt(r)) / gamma to grow from the diffusion scale to the fluid scale, then the same
  margin to settle;
* :func:`halves_test` -- the first-half / second-half test with batch means: the window of
  every replication is cut into an even number of equal batches; the difference of the two
  halves' means, pooled over replications, is compared with its standard error from the
  spread of the batch means inside the halves (Student t), at a ``confidence`` level (0.99:
  a stationary window is flagged with probability 0.01);
* :func:`mean_interval` -- mean of independent replications with its Student-t interval;
* :func:`slope_interval` and :func:`slope_verdict` -- the slope of log10(time average)
  against log10(r) with its interval (per-replication slopes) and the verdict read off that
  interval: ``tight`` if it contains 0 but not 1/2, ``escaping`` if it contains 1/2 but not
  0, ``growing, slower / faster than sqrt(r)`` if it lies strictly between 0 and 1/2 / above
  1/2, else ``undetermined``.

Units: times in units of 1/mu; rates per unit time; time averages in the units of the
averaged quantity (customers / sqrt(r) for the diffusion-scaled deviation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..checks import confidence_level, positive
from ..errors import ArgumentError
from ..stats import t_cdf, t_quantile

__all__ = [
    "DEFAULT_STATIONARITY_CONFIDENCE",
    "DEFAULT_WARMUP_MARGIN",
    "VERDICTS",
    "MeanInterval",
    "SlopeInterval",
    "StationarityCheck",
    "derived_warmup",
    "halves_test",
    "mean_interval",
    "slope_interval",
    "slope_verdict",
]

#: e-folds of the leading mode allowed for settling (ln 1000: the transient's weight 1e-3).
DEFAULT_WARMUP_MARGIN = math.log(1000.0)
#: Confidence level of the stationarity test (two-sided): a stationary window is flagged with
#: probability 1 - confidence (0.01).
DEFAULT_STATIONARITY_CONFIDENCE = 0.99
#: The verdicts of :func:`slope_verdict`.
VERDICTS = (
    "tight",
    "escaping",
    "growing, slower than sqrt(r)",
    "growing, faster than sqrt(r)",
    "undetermined",
)


def derived_warmup(growth_rate: float, r: float, *, margin: float = DEFAULT_WARMUP_MARGIN) -> float:
    """Warm-up (time units of 1/mu) of a run started at the nominal point r x*.

    ``growth_rate``: gamma, the largest real part of the spectrum of A_u (per unit time,
    :func:`~.linear.stability_verdict`); ``r``: the scale; ``margin``: e-folds m >= 0.

    * gamma < 0 (stable): the diffusion-scaled deviation starts at 0 and its covariance
      approaches the stationary Sigma like ``Sigma - exp(A_u t) Sigma exp(A_u^T t)``, i.e.
      like exp(2 gamma t); warm-up ``m / (2 |gamma|)`` leaves a weight exp(-m). Independent
      of r.
    * gamma > 0 (unstable): noise of diffusion size O(1) grows like exp(gamma t) until it
      reaches the fluid scale O(sqrt(r)), which takes ``ln(sqrt(r)) / gamma``; then m
      e-folds more to settle onto the fluid limit cycle: ``(ln(r) / 2 + m) / gamma``.

    ``docs/serverpools.md`` ("Stationarity, intervals and the verdict"). Whether the window
    after it is stationary is then tested, not assumed (:func:`halves_test`).

    >>> round(derived_warmup(-1.0, 1e4, margin=math.log(1000)), 3)  # ln(1000) / 2
    3.454
    >>> round(derived_warmup(0.5, 1e4, margin=math.log(1000)), 3)  # (ln(100) + ln(1000)) / 0.5
    23.026
    """
    gamma = float(growth_rate)
    if not math.isfinite(gamma) or gamma == 0.0:
        raise ArgumentError(
            "growth_rate", f"growth_rate must be finite and non-zero, got {gamma:g}"
        )
    r = positive("r", r)
    margin = float(margin)
    if not (math.isfinite(margin) and margin >= 0):
        raise ArgumentError("margin", f"margin must be finite and >= 0, got {margin:g}")
    if gamma < 0:
        return margin / (2.0 * -gamma)
    return (max(math.log(r), 0.0) / 2.0 + margin) / gamma


@dataclass(frozen=True)
class StationarityCheck:
    """The first-half / second-half test of one window over replications (:func:`halves_test`).

    ``first_half``, ``second_half``: means over replications of the time average over each
    half of the window; ``difference`` = second - first; ``se``: its standard error from the
    batch means; ``statistic`` = difference / se; ``dof``: degrees of freedom of the t
    reference; ``p_value`` (two-sided); ``confidence``: the test's confidence level;
    ``stationary``: ``p_value >= 1 - confidence`` (the window is not flagged); ``batches`` per
    replication and ``replications``.
    """

    first_half: float
    second_half: float
    difference: float
    se: float
    statistic: float
    dof: int
    p_value: float
    confidence: float
    stationary: bool
    batches: int
    replications: int


def halves_test(
    batch_means, *, confidence: float = DEFAULT_STATIONARITY_CONFIDENCE
) -> StationarityCheck:
    """First-half / second-half test with batch means (``docs/serverpools.md``).

    ``batch_means``: shape ``(K, B)``: for each of K independent replications, the time
    averages over B equal consecutive batches of its window (B even, >= 4; a 1-d array is
    one replication). With halves of m = B/2 batches, replication k gives
    ``D_k = mean(second half) - mean(first half)``; under stationarity (batches longer than
    the correlation time, so their means are nearly independent) D_k has mean 0 and
    variance ``2 s^2 / m``, s^2 the pooled within-half variance of the batch means
    (2K(m - 1) degrees of freedom). The statistic ``mean_k D_k / sqrt(2 s^2 / (m K))`` is
    compared with Student's t two-sided at significance ``1 - confidence``: ``stationary``
    is False (the window is flagged) when ``p < 1 - confidence``. A window that still
    carries the transient of the start (growth towards a limit cycle, decay towards a
    stationary law) has halves that differ by far more than the batch means scatter.

    Zero spread (constant batches) counts as stationary only if the halves are equal.

    >>> import numpy as np
    >>> flat = np.array([[1.0, 1.1, 0.9, 1.0, 1.05, 0.95], [0.9, 1.0, 1.1, 1.0, 0.95, 1.05]])
    >>> halves_test(flat).stationary
    True
    >>> halves_test(np.array([[1.0, 1.1, 1.2, 2.0, 2.1, 2.2]])).stationary  # a jump
    False
    """
    x = np.asarray(batch_means, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"batch_means must have shape (replications, batches), got {x.shape}")
    k, b = x.shape
    if k < 1 or b < 4 or b % 2:
        raise ValueError(f"need >= 1 replication and an even number >= 4 of batches, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("batch means must be finite")
    confidence = confidence_level(confidence)
    significance = 1.0 - confidence
    m = b // 2
    first, second = x[:, :m], x[:, m:]
    h1, h2 = first.mean(axis=1), second.mean(axis=1)
    dof = 2 * k * (m - 1)
    within = ((first - h1[:, None]) ** 2).sum() + ((second - h2[:, None]) ** 2).sum()
    s2 = within / dof
    diff = float((h2 - h1).mean())
    se = float(math.sqrt(2.0 * s2 / (m * k)))
    if se > 0:
        stat = diff / se
        p = float(2.0 * t_cdf(-abs(stat), dof))  # scipy.stats.t.sf, bit for bit
    else:
        stat = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        p = 1.0 if diff == 0 else 0.0
    return StationarityCheck(
        first_half=float(h1.mean()),
        second_half=float(h2.mean()),
        difference=diff,
        se=se,
        statistic=float(stat),
        dof=int(dof),
        p_value=p,
        confidence=confidence,
        stationary=bool(p >= significance),
        batches=int(b),
        replications=int(k),
    )


@dataclass(frozen=True)
class MeanInterval:
    """Mean of independent replications, its standard error and Student-t interval.

    ``half_width`` = t(1 - (1 - confidence)/2, n - 1) * se (NaN with one replication).
    """

    mean: float
    se: float
    half_width: float
    n: int
    confidence: float

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


def mean_interval(values, *, confidence: float = 0.95) -> MeanInterval:
    """The mean of ``values`` (independent replications) with its t interval.

    >>> iv = mean_interval([1.0, 2.0, 3.0])
    >>> iv.mean, round(iv.se, 6), round(iv.half_width, 4)  # t(0.975, 2) = 4.3027
    (2.0, 0.57735, 2.4841)
    """
    confidence = confidence_level(confidence)
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("need at least one finite value")
    n = int(x.size)
    if n < 2:
        return MeanInterval(float(x[0]), math.nan, math.nan, 1, confidence)
    se = float(x.std(ddof=1) / math.sqrt(n))
    t = float(t_quantile(0.5 + confidence / 2.0, n - 1))
    return MeanInterval(float(x.mean()), se, t * se, n, confidence)


@dataclass(frozen=True)
class SlopeInterval:
    """Slope of log10(y) against log10(r) with its interval (:func:`slope_interval`).

    ``slope``: mean of the per-replication least-squares slopes; ``se``, ``low``, ``high``:
    its standard error and t interval at ``confidence``; ``replications``; ``r``: the scales
    fitted; ``verdict``: :func:`slope_verdict` of the interval.
    """

    slope: float
    se: float
    low: float
    high: float
    replications: int
    r: tuple[float, ...]
    confidence: float
    verdict: str


def slope_interval(r: Sequence[float], values, *, confidence: float = 0.95) -> SlopeInterval:
    """Slope of log10(value) against log10(r), with a t interval over replications.

    ``values``: shape ``(K, n_r)``, replication k's value at scale ``r[j]`` (K >= 2
    independent replications per scale; replications at different r are independent, so
    pairing them by index is arbitrary and harmless). Each row gives a least-squares slope;
    the slope is their mean and the interval ``mean +- t(K - 1) sd / sqrt(K)``. If the
    values follow ``c r^b Z`` with Z of a fixed law, every row's slope is unbiased for b
    (the logarithm's bias cancels between scales). ``docs/serverpools.md``.

    >>> import numpy as np
    >>> r = [1e4, 1e5, 1e6]
    >>> v = np.array([[1.0, 3.2, 10.1], [1.1, 3.4, 10.0], [0.9, 3.1, 9.8]])
    >>> s = slope_interval(r, v)
    >>> round(s.slope, 3), s.verdict
    (0.5, 'escaping')
    """
    confidence = confidence_level(confidence)
    x = np.log10(np.asarray(r, dtype=float))
    y = np.asarray(values, dtype=float)
    if y.ndim != 2 or y.shape[1] != x.size:
        raise ValueError(f"values must have shape (replications, {x.size}), got {y.shape}")
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("need at least two distinct scales r")
    if y.shape[0] < 2:
        raise ValueError("need at least two replications for an interval")
    if not (np.all(np.isfinite(y)) and np.all(y > 0)):
        raise ValueError("values must be finite and > 0")
    ly = np.log10(y)
    xc = x - x.mean()
    slopes = (ly - ly.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
    iv = mean_interval(slopes, confidence=confidence)
    return SlopeInterval(
        slope=iv.mean,
        se=iv.se,
        low=iv.low,
        high=iv.high,
        replications=iv.n,
        r=tuple(float(v) for v in r),
        confidence=confidence,
        verdict=slope_verdict(iv.low, iv.high),
    )


def slope_verdict(low: float, high: float) -> str:
    """The verdict read off a slope interval ``[low, high]`` (``docs/serverpools.md``).

    A tight family of stationary laws has slope 0; deviations that follow a persistent
    fluid oscillation grow like sqrt(r), slope 1/2. ``tight``: the interval contains 0 and
    not 1/2; ``escaping``: it contains 1/2 and not 0; ``growing, slower than sqrt(r)``: it
    lies strictly between 0 and 1/2; ``growing, faster than sqrt(r)``: it lies above 1/2
    (a time average still approaching its a sqrt(r) asymptote from below on these scales);
    otherwise ``undetermined`` (too wide to tell, NaN, or below 0).

    >>> slope_verdict(-0.02, 0.03), slope_verdict(0.46, 0.53), slope_verdict(0.1, 0.2)
    ('tight', 'escaping', 'growing, slower than sqrt(r)')
    >>> slope_verdict(-0.1, 0.7), slope_verdict(0.6, 0.7), slope_verdict(-0.3, -0.1)
    ('undetermined', 'growing, faster than sqrt(r)', 'undetermined')
    """
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return "undetermined"
    zero = low <= 0.0 <= high
    half = low <= 0.5 <= high
    if zero and not half:
        return "tight"
    if half and not zero:
        return "escaping"
    if 0.0 < low and high < 0.5:
        return "growing, slower than sqrt(r)"
    if 0.5 < low:
        return "growing, faster than sqrt(r)"
    return "undetermined"
