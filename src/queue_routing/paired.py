"""Paired estimators over replications: means, control variates, differences, Holm, the best.

The statistics of a paired comparison of policies (``docs/README.md#paired-comparisons``),
shared by the three parts. The input is always one value per replication (axis 0), the
replications independent of each other, and the ``r``-th value of every policy computed from
the same random numbers (common random numbers, ``docs/README.md#random-numbers``), so the
values of two policies are paired by replication and their difference is estimated from the
per-replication differences.

* :func:`mean_estimate` -- the mean with the Student-``t`` interval, ``R - 1`` degrees of
  freedom;
* :func:`control_variate_estimate` -- the mean of ``y`` corrected by a paired control ``x``
  with a known mean (Lavenberg and Welch's regression estimator, ``R - 2`` degrees of
  freedom; the interval is exact when ``(x, y)`` is bivariate normal);
* :func:`regression_estimate` -- the mean corrected by several controls of known means
  (multiple control variates, ``R - 1 - q`` degrees of freedom, or the jackknife);
* :func:`pairwise_differences` -- every pair's mean difference, with or without the control;
* :func:`holm` -- Holm's step-down adjustment of p-values;
* :func:`select_best` -- the ranking, and the best only where it is separated from every
  other (Holm-adjusted, family-wise confidence ``confidence``);
* :func:`ratio_of_means` -- ``E[y] / E[x]`` from paired replications, delta-method interval;
* :class:`PolicyComparison` -- the result of a paired comparison of policies, the same for
  Parts A and B: each part computes only its ratios to its own baseline and the differences
  (:func:`queue_routing.multiskill.compare_policies`,
  :func:`queue_routing.deadlines.compare_policies`), :meth:`PolicyComparison.from_samples`
  the rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from .checks import confidence_level, show
from .errors import ArgumentError
from .stats import t_cdf, t_quantile

__all__ = [
    "PairedEstimate",
    "PolicyComparison",
    "PolicyEstimate",
    "Selection",
    "control_variate_estimate",
    "holm",
    "mean_estimate",
    "paired_samples",
    "pairwise_differences",
    "ratio_of_means",
    "regression_estimate",
    "select_best",
]


@dataclass(frozen=True)
class PolicyEstimate:
    """One policy's simulated cost and its paired ratio to a comparison's baseline: the
    entries of ``PolicyComparison.policies`` in every part (Part A:
    :func:`queue_routing.multiskill.compare_policies`, baseline the exact optimal Bernoulli
    cost, ``docs/multiskill.md#paired-policy-comparisons``; Part B:
    :func:`queue_routing.deadlines.compare_policies`, baseline PI's simulated cost,
    ``docs/deadlines.md#paired-policy-comparisons``).

    Attributes
    ----------
    policy:
        The policy's name.
    cost, ci95, standard_error:
        Mean cost rate over the replications (cost per unit time, no control variate), its
        Student-``t`` 95% half-width (``R - 1`` degrees of freedom) and standard error.
    ratio, ratio_ci95, ratio_standard_error:
        The paired estimate of ``E[cost] / baseline`` (dimensionless; each part's docs give
        the estimator), its 95% half-width and standard error; exactly 1 with half-width 0
        for the baseline policy itself.
    """

    policy: str
    cost: float
    ci95: float
    standard_error: float
    ratio: float
    ratio_ci95: float
    ratio_standard_error: float

    @classmethod
    def of(cls, policy: str, samples, ratio: PairedEstimate) -> PolicyEstimate:
        """``policy``'s estimate from its cost in each replication (``samples``, cost per
        unit time): the plain mean with its ``t`` interval (:func:`mean_estimate`), and
        ``ratio``, the paired estimate of its ratio to the baseline that its part computed.

        >>> e = PolicyEstimate.of("a", [1.0, 2.0, 3.0], PairedEstimate(0.5, 0.1, 0.02, 2, 3))
        >>> e.cost, e.standard_error, e.ratio
        (2.0, 0.5773502691896258, 0.5)
        """
        plain = mean_estimate(samples)
        return cls(
            policy=policy,
            cost=plain.estimate,
            ci95=plain.ci95,
            standard_error=plain.standard_error,
            ratio=ratio.estimate,
            ratio_ci95=ratio.ci95,
            ratio_standard_error=ratio.standard_error,
        )


@dataclass(frozen=True)
class PairedEstimate:
    """A mean estimated from independent replications, with its Student-``t`` interval.

    Attributes
    ----------
    estimate:
        The point estimate (the unit of the samples).
    ci95:
        Half-width of the 95% interval, ``t_{0.975, df} * standard_error``.
    standard_error:
        Estimated standard deviation of :attr:`estimate`.
    df:
        Degrees of freedom of the ``t`` distribution: ``R - 1`` for a mean, ``R - 2`` with a
        control variate.
    replications:
        ``R``, the number of independent replications.
    """

    estimate: float
    ci95: float
    standard_error: float
    df: int
    replications: int

    def p_value(self, null: float = 0.0) -> float:
        """Two-sided ``t`` test of ``estimate == null``: ``2 P(T_df > |estimate - null| / se)``.

        A zero standard error gives 0 if the estimate differs from ``null``, 1 otherwise.

        >>> round(PairedEstimate(2.0, 4.3, 1.0, 2, 3).p_value(), 6)  # 2 P(T_2 > 2) = 1 - 2/sqrt(6)
        0.183503
        """
        gap = abs(self.estimate - null)
        if self.standard_error == 0.0:
            return 0.0 if gap > 0 else 1.0
        return float(2.0 * t_cdf(-gap / self.standard_error, self.df))

    def divided_by(self, scale: float) -> PairedEstimate:
        """The estimate of ``E / scale`` for an exact ``scale`` (no error of its own): the
        estimate, half-width and standard error divided by it, the same degrees of freedom.

        >>> PairedEstimate(3.0, 0.6, 0.2, 4, 5).divided_by(2.0)
        PairedEstimate(estimate=1.5, ci95=0.3, standard_error=0.1, df=4, replications=5)
        """
        return PairedEstimate(
            estimate=self.estimate / scale,
            ci95=self.ci95 / scale,
            standard_error=self.standard_error / scale,
            df=self.df,
            replications=self.replications,
        )


def paired_samples(
    replication_costs: Mapping[str, Sequence[float]], names: Sequence[str]
) -> tuple[dict[str, np.ndarray], int]:
    """``({name: costs as a 1-D float array}, R)`` for ``names``, checked to be paired: one
    cost per replication for every name, the same number ``R`` for all (the per-replication
    costs a paired comparison is made from, split or not).

    >>> samples, r = paired_samples({"a": [1.0, 2.0], "b": [3.0, 4.0]}, ["a", "b"])
    >>> r, samples["b"].tolist()
    (2, [3.0, 4.0])
    """
    samples = {name: np.ascontiguousarray(replication_costs[name], dtype=float) for name in names}
    replications = int(samples[names[0]].size)
    if any(v.shape != (replications,) for v in samples.values()):
        raise ArgumentError(
            "replication_costs",
            "replication_costs: every policy needs one cost per replication, the same replications",
        )
    return samples, replications


def _samples(name: str, values, minimum: int) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.ndim != 1 or a.size < minimum:
        raise ArgumentError(
            name, f"{name} must be 1-D with at least {minimum} replications, got {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ArgumentError(name, f"{name} must be finite")
    return a


def _make(estimate: float, se: float, df: int, r: int) -> PairedEstimate:
    return PairedEstimate(
        estimate=float(estimate),
        ci95=float(t_quantile(0.975, df) * se),
        standard_error=float(se),
        df=int(df),
        replications=int(r),
    )


def mean_estimate(samples) -> PairedEstimate:
    """Mean of ``samples`` (one value per replication, ``R >= 2``) with its ``t`` interval.

    ``se = s / sqrt(R)``, ``s`` the sample standard deviation, ``df = R - 1``.

    >>> e = mean_estimate([1.0, 2.0, 3.0])
    >>> e.estimate, e.standard_error, e.df
    (2.0, 0.5773502691896258, 2)
    """
    y = _samples("samples", samples, 2)
    r = y.size
    return _make(y.mean(), y.std(ddof=1) / math.sqrt(r), r - 1, r)


def control_variate_estimate(samples, control, control_mean: float) -> PairedEstimate:
    """Mean of ``samples`` corrected by the paired ``control`` of known mean ``control_mean``.

    With ``y_r`` = ``samples[r]`` and ``x_r`` = ``control[r]`` (``R >= 3`` independent pairs;
    same unit as ``control_mean`` for ``x``), the estimator is the regression one of
    ``docs/README.md#paired-comparisons``::

        beta  = S_xy / S_xx,   S_xy = sum (x_r - xbar)(y_r - ybar),  S_xx = sum (x_r - xbar)^2
        theta = ybar - beta (xbar - control_mean)
        s^2   = sum (y_r - ybar - beta (x_r - xbar))^2 / (R - 2)
        se^2  = s^2 (1/R + (xbar - control_mean)^2 / S_xx),   df = R - 2,

    i.e. the least-squares line of ``y`` on ``x`` evaluated at ``x = control_mean`` with its
    standard error (Lavenberg and Welch): an unbiased estimator with an exact ``t`` interval
    when ``(x_r, y_r)`` is bivariate normal, unbiased to ``O(1/R)`` otherwise. If the control
    does not vary (``S_xx = 0``) there is nothing to regress on and the plain mean is returned
    (:func:`mean_estimate`).

    >>> x = [1.0, 2.0, 3.0, 4.0]
    >>> e = control_variate_estimate([2.1, 3.9, 6.1, 7.9], x, 2.0)  # LS line y = 1.96 x + 0.1
    >>> round(e.estimate, 6), e.df  # the line at x = 2
    (4.02, 2)
    """
    y = _samples("samples", samples, 3)
    x = _samples("control", control, 3)
    if x.size != y.size:
        raise ArgumentError(
            "control", f"control must pair up with samples, got {x.size} and {y.size} values"
        )
    if not math.isfinite(control_mean):
        raise ArgumentError("control_mean", f"control_mean must be finite, got {control_mean}")
    r = y.size
    dx, dy = x - x.mean(), y - y.mean()
    sxx = float(dx @ dx)
    if sxx == 0.0:
        return mean_estimate(y)
    beta = float(dx @ dy) / sxx
    resid = dy - beta * dx
    s2 = float(resid @ resid) / (r - 2)
    gap = x.mean() - control_mean
    se = math.sqrt(s2 * (1.0 / r + gap * gap / sxx))
    return _make(y.mean() - beta * gap, se, r - 2, r)


#: The ways :func:`regression_estimate` treats the fitted coefficients: the regression's own
#: interval, or the jackknife's bias correction and variance.
REGRESSION_METHODS = ("regression", "jackknife")


def _regression_point(y: np.ndarray, x: np.ndarray, means: np.ndarray):
    """``(theta, residual sum of squares, g' S^+ g, rank)`` of the least-squares fit of ``y``
    on the centred columns of ``x`` (``g`` the gap of the columns' means to ``means``)."""
    dx = x - x.mean(axis=0)
    dy = y - y.mean()
    beta, _, rank, _ = np.linalg.lstsq(dx, dy, rcond=None)
    resid = dy - dx @ beta
    gap = x.mean(axis=0) - means
    # g' (dx' dx)^+ g by the pseudo-inverse: a control that does not vary counts for nothing
    leverage = float(gap @ np.linalg.pinv(dx.T @ dx) @ gap)
    return float(y.mean() - gap @ beta), float(resid @ resid), leverage, int(rank)


def regression_estimate(
    samples, controls, means=None, *, method: str = "regression"
) -> PairedEstimate:
    """Mean of ``samples`` corrected by several paired controls of known means (multiple
    control variates, ``docs/multiskill.md#control-variates-with-known-means``).

    ``y_r`` = ``samples[r]``, ``x_r`` = ``controls[r]`` (shape ``(R, q)``, or ``(R,)`` for one
    control; the unit of each column that of its entry of ``means``, default 0), ``R``
    independent replications, ``R >= q + 2``. With ``method="regression"`` (Lavenberg and
    Welch)::

        beta  = least squares of (y_r - ybar) on (x_r - xbar)
        theta = ybar - beta' (xbar - means)
        s^2   = sum (y_r - ybar - beta'(x_r - xbar))^2 / (R - 1 - k)
        se^2  = s^2 (1/R + (xbar - means)' S^+ (xbar - means)),   df = R - 1 - k,

    ``S`` = ``sum (x_r - xbar)(x_r - xbar)'`` and ``k`` its rank (``q`` unless controls are
    collinear or constant): the intercept of the regression of ``y`` on ``x - means`` with
    its standard error, an exact ``t`` interval when ``(x_r, y_r)`` is multivariate normal,
    and the factor ``1 + R g' S^+ g`` the price of estimating ``beta``. With
    ``method="jackknife"`` the same ``theta`` computed without each replication in turn,
    ``theta_(r)``, gives the bias-corrected ``R theta - (R - 1) mean_r theta_(r)`` and the
    variance ``(R - 1)/R sum_r (theta_(r) - mean theta_(.))^2`` (``df = R - 1 - k``), which
    do not lean on normality. One control with ``method="regression"`` is
    :func:`control_variate_estimate`.

    >>> x = [[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, 1.0]]
    >>> e = regression_estimate([0.0, 3.0, 2.0, 5.0], x, [2.0, 0.5])  # y = x1 + 2 x2 - 1
    >>> round(e.estimate, 12), round(e.standard_error, 12), e.df  # 2 + 1 - 1, exactly
    (2.0, 0.0, 1)
    """
    y = _samples("samples", samples, 3)
    x = np.asarray(controls, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] != y.size:
        raise ArgumentError(
            "controls",
            f"controls must be (R, q) paired with the {y.size} samples, got {x.shape}",
        )
    q = x.shape[1]
    r = y.size
    if r < q + 2:
        raise ArgumentError(
            "controls", f"controls: {q} controls need R >= {q + 2} replications, got {r}"
        )
    if not np.all(np.isfinite(x)):
        raise ArgumentError("controls", "controls must be finite")
    m = np.zeros(q) if means is None else np.asarray(means, dtype=float).reshape(-1)
    if m.shape != (q,) or not np.all(np.isfinite(m)):
        raise ArgumentError("means", f"means must be {q} finite numbers, got {m.shape}")
    if method not in REGRESSION_METHODS:
        raise ArgumentError(
            "method", f"method must be one of {REGRESSION_METHODS}, got {show(method)}"
        )
    theta, rss, leverage, rank = _regression_point(y, x, m)
    if rank == 0:
        return mean_estimate(y)
    df = r - 1 - rank
    if method == "regression":
        se = math.sqrt(rss / df * (1.0 / r + leverage))
        return _make(theta, se, df, r)
    keep = np.ones(r, dtype=bool)
    leave_out = np.empty(r)
    for k in range(r):
        keep[k] = False
        leave_out[k] = _regression_point(y[keep], x[keep], m)[0]
        keep[k] = True
    centre = leave_out.mean()
    se = math.sqrt((r - 1) / r * float(((leave_out - centre) ** 2).sum()))
    return _make(r * theta - (r - 1) * centre, se, df, r)


def pairwise_differences(
    samples: Mapping[str, np.ndarray],
    control: np.ndarray | None = None,
    control_mean: float | None = None,
) -> dict[tuple[str, str], PairedEstimate]:
    """Every pair's mean difference ``E[a - b]`` from the per-replication differences.

    ``samples`` maps a name to its values per replication, paired by index (same random
    numbers in replication ``r``). Returns ``{(a, b): estimate of E[a_r - b_r]}`` for every
    pair with ``a`` before ``b`` in the mapping's order: :func:`mean_estimate` of ``a - b``, or
    with ``control`` (and its known mean) :func:`control_variate_estimate` of ``a - b``, whose
    point estimate is then exactly the difference of the two control-variate estimates.

    >>> d = pairwise_differences({"a": [3.0, 4.0, 6.0], "b": [1.0, 2.0, 3.0]})
    >>> list(d), d["a", "b"].estimate
    ([('a', 'b')], 2.3333333333333335)
    """
    names = list(samples)
    if len(names) != len(set(names)):  # pragma: no cover - a Mapping has unique keys
        raise ArgumentError("samples", "samples must name each policy once")
    values = {k: np.asarray(v, dtype=float) for k, v in samples.items()}
    out = {}
    for a, b in combinations(names, 2):
        d = values[a] - values[b]
        if control is None:
            out[a, b] = mean_estimate(d)
        else:
            if control_mean is None:
                raise ArgumentError("control_mean", "control_mean is needed with a control")
            out[a, b] = control_variate_estimate(d, control, control_mean)
    return out


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    ``k``-th is ``max_{j <= k} min(1, (m - j + 1) p_(j))``; rejecting every hypothesis whose
    adjusted p-value is ``<= alpha`` controls the family-wise error rate at ``alpha`` under any
    dependence between the tests.

    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ArgumentError("p_values", "p_values must be a 1-D sequence of probabilities")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


@dataclass(frozen=True)
class Selection:
    """The outcome of :func:`select_best`.

    Attributes
    ----------
    ranking:
        Names by increasing point estimate (lower is better; ties keep the input order).
    best:
        ``ranking[0]`` if it is separated from every other name, else ``None`` ("not
        separated").
    adjusted_p_values:
        ``{(a, b): p}``, for every ordered pair of names, the Holm-adjusted p-value of the
        one-sided hypothesis "``a`` is not better than ``b``" (``E[a - b] >= 0``); a small
        value means ``a`` is separated from ``b`` and lower.
    confidence:
        Family-wise confidence of the Holm correction: a best is declared wrongly with
        probability at most ``1 - confidence``.
    """

    ranking: tuple[str, ...]
    best: str | None
    adjusted_p_values: dict[tuple[str, str], float]
    confidence: float


def _p_lower(e: PairedEstimate) -> float:
    """One-sided p-value of ``E >= 0`` against ``E < 0``: ``P(T_df <= estimate / se)`` (1, no
    evidence, when the estimate is undefined)."""
    if math.isnan(e.estimate) or math.isnan(e.standard_error):
        return 1.0
    if e.standard_error == 0.0:
        return 0.0 if e.estimate < 0 else 1.0
    return float(t_cdf(e.estimate / e.standard_error, e.df))


def select_best(
    point: Mapping[str, float],
    differences: Mapping[tuple[str, str], PairedEstimate],
    confidence: float = 0.95,
    *,
    baseline: str | None = None,
) -> Selection:
    """Rank by ``point`` (lower is better) and declare the first the best only if separated.

    ``differences`` holds a paired estimate of ``E[a - b]`` for every pair of names (either
    order, e.g. from :func:`pairwise_differences`). The comparisons made are, for every
    ordered pair ``(a, b)``, the one-sided ``t`` test of "``a`` is not better than ``b``"
    (``E[a - b] >= 0``), all ``K (K - 1)`` of them corrected together by :func:`holm` at
    family-wise level ``alpha = 1 - confidence``. The leader (lowest point estimate) is
    declared the best iff its test against every other name, the runner-up included, is
    rejected; otherwise ``best`` is ``None`` ("not separated"). A wrong declaration rejects
    the true hypothesis "the leader is not better than the true best", a family-wise error,
    so it happens with probability at most ``alpha`` whatever the dependence between the tests
    (``docs/README.md#paired-comparisons``). This is at least as strict as Holm over the
    ``K (K - 1)/2`` two-sided tests of the pairs at the same level.

    ``baseline``, a name not in ``point`` (the policy a comparison divides by, simulated
    beside the others but not asked for), takes part in the tests as every name does --
    ``differences`` must hold its pair with every name -- but is neither ranked nor declared:
    the leader is the best only if it is also separated from the baseline and better, so a
    comparison of one policy declares it only when it beats the baseline. (A ``baseline`` in
    ``point`` is one of the names.)

    >>> d = pairwise_differences({"a": [1.0, 1.1, 0.9, 1.0], "b": [2.0, 2.2, 2.1, 1.9]})
    >>> s = select_best({"a": 1.0, "b": 2.05}, d)
    >>> s.ranking, s.best
    (('a', 'b'), 'a')
    >>> select_best({"b": 2.05}, d, baseline="a").best is None  # b alone, worse than a
    True
    """
    confidence = confidence_level(confidence)
    alpha = 1.0 - confidence
    names = list(point)
    ranking = tuple(sorted(names, key=lambda k: (point[k], names.index(k))))
    family = names if baseline is None or baseline in point else [*names, baseline]
    raw: dict[tuple[str, str], float] = {}
    for a, b in combinations(family, 2):
        if (a, b) in differences:
            e = differences[a, b]
            raw[a, b], raw[b, a] = _p_lower(e), _p_lower(_negated(e))
        elif (b, a) in differences:
            e = differences[b, a]
            raw[b, a], raw[a, b] = _p_lower(e), _p_lower(_negated(e))
        else:
            raise ArgumentError("differences", f"differences lack the pair {a!r}, {b!r}")
    keys = list(raw)
    adjusted = holm([raw[k] for k in keys]) if keys else np.empty(0)
    adj = {k: float(v) for k, v in zip(keys, adjusted, strict=True)}
    best = None
    if ranking and all(adj[ranking[0], other] <= alpha for other in family if other != ranking[0]):
        best = ranking[0]
    return Selection(ranking=ranking, best=best, adjusted_p_values=adj, confidence=confidence)


def _negated(e: PairedEstimate) -> PairedEstimate:
    return PairedEstimate(-e.estimate, e.ci95, e.standard_error, e.df, e.replications)


def ratio_of_means(samples, baseline) -> PairedEstimate:
    """``E[y] / E[x]`` from paired replications ``y_r`` = ``samples[r]``, ``x_r`` =
    ``baseline[r]`` (same unit; ``R >= 2`` independent pairs), with a delta-method interval.

    The estimator of ``docs/deadlines.md#paired-policy-comparisons``::

        ratio = ybar / xbar
        e_r   = (y_r - ratio x_r) / xbar          (the linearised ratio, mean 0)
        se    = s_e / sqrt(R),   df = R - 1,      s_e the sample standard deviation of e_r

    i.e. the first-order (delta-method) standard error of ``ybar / xbar``, which accounts for
    the correlation of ``y_r`` and ``x_r`` (common random numbers make it large and positive,
    and the error of the ratio small). The estimator is consistent with an ``O(1/R)`` bias.
    A zero ``xbar`` gives ``nan`` (the ratio is undefined); a unit (dimensionless) result.

    >>> e = ratio_of_means([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])  # y = 2 x exactly
    >>> e.estimate, e.standard_error, e.df
    (2.0, 0.0, 2)
    >>> e = ratio_of_means([2.0, 3.0, 7.0], [1.0, 2.0, 3.0])  # e_r = (0, -1/2, 1/2)
    >>> e.estimate, round(e.standard_error, 6)  # s_e = 1/2, se = 1/(2 sqrt(3))
    (2.0, 0.288675)
    """
    y = np.asarray(samples, dtype=float)
    x = np.asarray(baseline, dtype=float)
    if y.ndim != 1 or y.shape != x.shape or y.size < 2:
        raise ArgumentError(
            "samples",
            f"samples and baseline must be paired 1-D arrays of >= 2 replications, got "
            f"{y.shape} and {x.shape}",
        )
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(x))):
        raise ArgumentError("samples", "samples and baseline must be finite")
    r = y.size
    xbar = float(x.mean())
    if xbar == 0.0:
        return PairedEstimate(math.nan, math.nan, math.nan, r - 1, r)
    ratio = float(y.mean()) / xbar
    e = (y - ratio * x) / xbar
    se = float(e.std(ddof=1)) / math.sqrt(r)
    return PairedEstimate(
        estimate=ratio,
        ci95=float(t_quantile(0.975, r - 1) * se),
        standard_error=se,
        df=r - 1,
        replications=r,
    )


@dataclass(frozen=True)
class PolicyComparison:
    """A paired comparison of policies on one instance (``docs/README.md#paired-comparisons``):
    what Part A's and Part B's ``compare_policies`` and ``paired_comparison`` return.

    Each part divides every ratio by its own baseline: Part A by the exact optimal Bernoulli
    cost, with controls of known mean (:attr:`controls`: the simulated Bernoulli cost and
    others, ``docs/multiskill.md#control-variates-with-known-means``); Part B by PI's
    simulated cost, a paired ratio of means (``docs/deadlines.md#paired-policy-comparisons``).

    Attributes
    ----------
    baseline:
        The policy whose cost divides every ratio (``"bernoulli"`` in Part A, ``"pi"`` in
        Part B); simulated even when not asked.
    policies:
        ``{name: PolicyEstimate}`` in the order asked.
    differences:
        ``{(a, b): PairedEstimate of E[cost_a - cost_b]}`` (cost per unit time) for every pair
        with ``a`` before ``b``, from the per-replication differences (with the control
        variate where the ratios have it).
    ranking:
        Policies from the best estimate to the worst (Part A by ratio, Part B by cost).
    best:
        ``ranking[0]`` when it is separated from every other policy after Holm's correction
        (:func:`select_best`), the baseline included even when not asked (then by its ratio
        to the baseline, ``ratio < 1``), else ``None`` ("not separated"): a comparison of
        one policy declares it only if it beats the baseline.
    selection:
        The Holm-adjusted p-values behind :attr:`best`, and the family-wise ``confidence``.
    horizon, warmup:
        Measured time per replication and the discarded warm-up before it (time units).
    replications:
        ``R``, independent replications per policy (paired across policies).
    seed, keys:
        The stream identity shared by every policy (common random numbers).
    table_bound:
        ``{name: count}`` of every policy simulated: measured arrivals that the end of a
        policy's index table may have decided (0 for policies without a table; nonzero only
        when a comparison is asked to report them rather than refuse them). Empty when not
        known.
    simulations:
        The simulation result of every policy simulated (the baseline included); empty when
        the comparison is made from the replications' costs.
    baseline_cost:
        The baseline's exact cost (cost per unit time) when it is known and divides the ratios
        without error (Part A: ``B``, the exact optimal Bernoulli cost); ``None`` when the
        baseline's cost is itself simulated (Part B).
    control_variate:
        Whether the baseline's simulated cost was the control variate of every estimate.
    controls:
        The names of the controls of every estimate (Part A,
        ``docs/multiskill.md#control-variates-with-known-means``); empty without controls.
    table_size:
        Index tables cover ``x = 0..table_size`` jobs per server (``None`` when not recorded).
    """

    baseline: str
    policies: dict[str, PolicyEstimate]
    differences: dict[tuple[str, str], PairedEstimate]
    ranking: tuple[str, ...]
    best: str | None
    selection: Selection = field(repr=False)
    horizon: float
    warmup: float
    replications: int
    seed: int
    keys: tuple
    table_bound: dict[str, int] = field(default_factory=dict)
    simulations: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    baseline_cost: float | None = None
    control_variate: bool = False
    table_size: int | None = None
    controls: tuple[str, ...] = ()

    @classmethod
    def from_estimates(
        cls,
        estimates: Mapping[str, PolicyEstimate],
        differences: Mapping[tuple[str, str], PairedEstimate],
        point: Mapping[str, float],
        *,
        confidence: float = 0.95,
        tests: Mapping[tuple[str, str], PairedEstimate] | None = None,
        **attributes: Any,
    ) -> PolicyComparison:
        """The comparison of ``estimates``: ranked by ``point`` (lower is better) with the best
        of :func:`select_best` at family-wise ``confidence``, the ``baseline`` (an attribute)
        taking part in the tests; ``tests`` are the estimates tested (default
        ``differences``; with the baseline's pairs when it is not among the estimates);
        ``attributes`` are the other attributes (``baseline``, ``horizon``, ...)."""
        selection = select_best(
            point,
            differences if tests is None else tests,
            confidence=confidence,
            baseline=attributes.get("baseline"),
        )
        return cls(
            policies=dict(estimates),
            differences=dict(differences),
            ranking=selection.ranking,
            best=selection.best,
            selection=selection,
            **attributes,
        )

    @classmethod
    def from_samples(
        cls,
        samples: Mapping[str, np.ndarray],
        ratios: Mapping[str, PairedEstimate],
        differences: Mapping[tuple[str, str], PairedEstimate],
        *,
        rank_by: str,
        confidence: float = 0.95,
        baseline: str,
        horizon: float,
        warmup: float,
        seed: int,
        keys: Sequence = (),
        table_size: int | None = None,
        table_bound: Mapping[str, int] | None = None,
        simulations: Mapping[str, Any] | None = None,
        baseline_cost: float | None = None,
        control_variate: bool = False,
        controls: Sequence[str] = (),
    ) -> PolicyComparison:
        """The comparison of the policies of ``ratios`` (in its order), what both parts'
        ``paired_comparison`` share; each part estimates only the ratios to its baseline and
        the differences (``docs/README.md#paired-comparisons``).

        ``samples[p]`` is the cost (per unit time) of each replication of policy ``p``, paired
        across the policies (:func:`paired_samples`), the baseline's included; ``ratios[p]``
        the paired estimate of ``E[cost_p] / baseline`` and ``differences`` those of
        :attr:`differences`. Each policy's :class:`PolicyEstimate` is its plain mean cost and
        its ratio (:meth:`PolicyEstimate.of`); the policies are ranked by ``rank_by``
        (``"cost"`` or ``"ratio"``) and the best selected at family-wise ``confidence``
        (:meth:`from_estimates`), the baseline taking part in the tests: when it is not among
        the policies compared, a policy's test against it is that of its ratio,
        ``E[cost_p] / baseline >= 1`` (the part's paired estimate, ``ratios[p]``, as printed).
        The other keywords are the attributes recorded, as Python numbers (``replications`` is
        the baseline's number of samples).
        """
        estimates = {p: PolicyEstimate.of(p, samples[p], ratio) for p, ratio in ratios.items()}
        tests = dict(differences)
        if baseline not in ratios:
            for p, r in ratios.items():
                tests[p, baseline] = PairedEstimate(
                    r.estimate - 1.0, r.ci95, r.standard_error, r.df, r.replications
                )
        return cls.from_estimates(
            estimates,
            differences,
            {p: getattr(e, rank_by) for p, e in estimates.items()},
            confidence=confidence,
            tests=tests,
            baseline=baseline,
            baseline_cost=None if baseline_cost is None else float(baseline_cost),
            control_variate=bool(control_variate),
            controls=tuple(controls),
            horizon=float(horizon),
            warmup=float(warmup),
            replications=len(samples[baseline]),
            seed=int(seed),
            keys=tuple(keys),
            table_size=None if table_size is None else int(table_size),
            table_bound={p: int(v) for p, v in (table_bound or {}).items()},
            simulations=dict(simulations or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON object: first the baseline, ``{"exact_<baseline>_cost": cost}`` when
        its cost is exact (Part A: ``exact_bernoulli_cost``), else ``{"baseline": name}`` (Part
        B); then ``policies`` (``cost``, ``ci95``, ``ratio``, ``ratio_ci95`` each),
        ``ranking`` and ``best`` (``None`` if not separated); last ``controls`` (their names)
        when the estimates have controls of known mean.

        >>> e = PolicyEstimate("pi", 2.0, 0.1, 0.05, 1.0, 0.0, 0.0)
        >>> s = Selection(("pi",), "pi", {}, 0.95)
        >>> c = PolicyComparison("pi", {"pi": e}, {}, ("pi",), "pi", s, 10.0, 1.0, 3, 0, ())
        >>> list(c.to_dict())
        ['baseline', 'policies', 'ranking', 'best']
        """
        if self.baseline_cost is None:
            head: dict[str, Any] = {"baseline": self.baseline}
        else:
            head = {f"exact_{self.baseline}_cost": float(self.baseline_cost)}
        return {
            **head,
            "policies": {
                name: {
                    "cost": float(e.cost),
                    "ci95": float(e.ci95),
                    "ratio": float(e.ratio),
                    "ratio_ci95": float(e.ratio_ci95),
                }
                for name, e in self.policies.items()
            },
            "ranking": list(self.ranking),
            "best": self.best,
            **({"controls": list(self.controls)} if self.controls else {}),
        }


#: What a comparison does when the end of a policy's index table may have decided a measured
#: arrival: refuse the result (``"raise"``) or count those arrivals in
#: :attr:`PolicyComparison.table_bound` (``"report"``).
ON_TABLE_BOUND = ("raise", "report")


def on_table_bound_choice(value: Any) -> str:
    """``value`` if it is one of :data:`ON_TABLE_BOUND`, else an
    :class:`~queue_routing.errors.ArgumentError` naming ``on_table_bound``.

    >>> on_table_bound_choice("report")
    'report'
    """
    if value not in ON_TABLE_BOUND:
        raise ArgumentError(
            "on_table_bound", f"on_table_bound must be 'raise' or 'report', got {show(value)}"
        )
    return value


def simulated_run(simulations: Mapping[str, Any], baseline: str) -> dict[str, Any]:
    """What a comparison made from ``simulations`` (``{policy: simulation result}`` of one
    run, :class:`~queue_routing.stats.Replicated` results with the vocabulary's ``horizon``,
    ``warmup``, ``seed``, ``keys`` and ``table_bound``) records of them: the window and the
    streams they share (the baseline's), each policy's ``table_bound`` count, and the
    results themselves (the keywords of :meth:`PolicyComparison.from_samples`)."""
    first = simulations[baseline]
    return {
        "horizon": first.horizon,
        "warmup": first.warmup,
        "seed": first.seed,
        "keys": first.keys,
        "table_bound": {p: int(sim.table_bound) for p, sim in simulations.items()},
        "simulations": dict(simulations),
    }
