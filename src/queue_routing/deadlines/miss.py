"""Closed-form deadline-miss probabilities and M/M/m formulas of one FCFS cluster
(``docs/deadlines.md#miss-probability``): ``P^miss(x)``, the stationary tails, Erlang C, the
stationary distribution, ``P-bar(lam)`` and the miss rate ``f(lam) = lam P-bar(lam)`` with ``f'``.

Units: ``m`` servers (integer >= 1), ``mu`` service rate per server (jobs per unit time),
``lam`` arrival rate (jobs per unit time), ``t`` and deadlines in units of time, ``x`` the
number of jobs a new job finds in its cluster (integer >= 0).

A job that finds ``x`` jobs waits ``W(x) = 0`` if ``x < m`` and ``W(x) ~ Erlang(j, m mu)``
with ``j = x - m + 1`` otherwise; its response time is ``T(x) = W(x) + S``, ``S ~ Exp(mu)``.
With ``a = m mu t`` and ``s = (m-1)/m`` the constant-deadline miss probabilities are

* response: ``P(T(x) > t) = sum_{k<j} Pois(k; a) + sum_{k>=j} Pois(k; a) s^(k-j)``
  (spec "Numerics that bite": the sums of nonnegative terms replace the paper's recursion
  and the closed form ``r^j e^{-mu t}[...]``, which lose accuracy at large ``x``);
* waiting: ``P(W(x) > t) = sum_{k<j} Pois(k; a)`` (ours: the Erlang tail).

Both sums are evaluated in log space: the first by ``scipy.special.gammaincc`` with a
log-space series when it underflows, the second as ``e^{-mu t} s^{-j} P(Pois(a s) >= j)``
(``scipy.special.gammainc``) when ``j <= a s`` and as ``Pois(j; a) * 1F1(1; j+1; a s)``
(a series of positive terms with ratio ``< 1``) otherwise. Every term is nonnegative, so
the relative error is a few hundred ulps wherever the value is a normal double.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit
from scipy.special import gammainc, gammaincc, gammaln, roots_legendre

from ..checks import show
from ..errors import AccuracyError
from .model import MAX_SERVERS, RATE_RANGE, Deadline, InstanceError

__all__ = [
    "erlang_c",
    "f",
    "f_prime",
    "miss_increments",
    "miss_probability",
    "sojourn_tail",
    "stationary_distribution",
    "steady_state_miss",
    "waiting_tail",
]

_TINY = 1e-280  # below this scipy's regularised gammas go to the log-space series
_SERIES_RTOL = 1e-17
_QUAD_RTOL = 1e-13
_QUAD_ACCEPT = 1e-9  # after the last panel doubling, two rules must agree to this at least
_QUAD_MAX_PANELS = 2048
_QUAD_TINY = 1e-280  # averages below this need no relative accuracy (subnormal integrands)
_TRUNC_TOL = 1e-15
_MAX_STATIONARY = 10_000_000  # longest stationary distribution stationary_distribution returns
_PRODUCT_FORM_MAX = 700.0  # sojourn tail: product form while mu t and |d| t stay below this
_SERIES_FAR_B = 1e6  # far weighted tail: above this b, gammainc where it does not underflow


# ---------------------------------------------------------------------------------------
# constant-deadline building blocks (log space)
# ---------------------------------------------------------------------------------------
def _log_pois_below(j: np.ndarray, a: float) -> np.ndarray:
    """``log P(Pois(a) < j) = log Q(j, a)`` for integers ``j >= 1``, ``a > 0``."""
    j = np.asarray(j, dtype=float)
    with np.errstate(divide="ignore"):
        q = gammaincc(j, a)
        out = np.log(q)
    bad = q < _TINY  # only when j << a: the series below has ratio (j-1)/a < 1
    if np.any(bad):
        jb = j[bad]
        logp = (jb - 1.0) * math.log(a) - a - gammaln(jb)  # log Pois(j-1; a)
        term = np.ones_like(jb)
        total = np.ones_like(jb)
        k = jb - 1.0
        while True:
            term = term * np.clip(k, 0.0, None) / a
            total += term
            k -= 1.0
            if np.all(term <= _SERIES_RTOL * total):
                break
        out[bad] = logp + np.log(total)
    return out


def _log_tail_weighted(j: np.ndarray, a: float, s: float) -> np.ndarray:
    """``log sum_{k>=j} Pois(k; a) s^(k-j)`` for integers ``j >= 1``, ``a > 0``, ``0 <= s < 1``."""
    j = np.asarray(j, dtype=float)
    out = np.empty_like(j)
    logpj = j * math.log(a) - a - gammaln(j + 1.0)
    if s == 0.0:
        return logpj
    b = a * s
    near = j <= b  # P(Pois(b) >= j) >= ~1/2: no underflow, no cancellation
    if b > _SERIES_FAR_B:  # the series below would need ~sqrt(b) terms: use gammainc while
        with np.errstate(divide="ignore", under="ignore"):  # it does not underflow
            near = near | (gammainc(j, b) > _TINY)
    if np.any(near):
        jn = j[near]
        out[near] = -(a - b) - jn * math.log(s) + np.log(gammainc(jn, b))
    far = ~near
    if np.any(far):
        jf = j[far]
        term = np.ones_like(jf)
        total = np.ones_like(jf)
        i = 1.0
        while True:
            term = term * b / (jf + i)
            total += term
            i += 1.0
            if np.all(term <= _SERIES_RTOL * total):
                break
        out[far] = logpj[far] + np.log(total)
    return out


def _constant_miss(x: np.ndarray, m: int, mu: float, t: float, on: str) -> np.ndarray:
    """Miss probability for a constant deadline ``t`` (units of time), vector ``x``."""
    out = np.empty(x.shape, dtype=float)
    low = x < m
    if on == "response":
        out[low] = math.exp(-mu * t)
    else:
        out[low] = 0.0
    high = ~low
    if not np.any(high):
        return out
    if t <= 0.0:
        out[high] = 1.0
        return out
    out[high] = np.exp(_log_queued_miss(x[high], m, mu, t, on))
    np.clip(out, 0.0, 1.0, out=out)
    return out


def _log_queued_miss(x: np.ndarray, m: int, mu: float, t: float, on: str) -> np.ndarray:
    """``log P^miss(x)`` of a job finding every server busy (``x >= m``) for a constant
    deadline ``t > 0``: with ``j = x - m + 1`` and ``a = m mu t``, ``log Q(j, a)`` (waiting)
    or ``log(Q(j, a) + sum_{k>=j} Pois(k; a) ((m-1)/m)^(k-j))`` (response), before the
    clipping to probabilities (``docs/deadlines.md#constant-deadline``)."""
    j = (x - m + 1).astype(float)
    a = m * mu * t
    log_q = _log_pois_below(j, a)
    if on == "waiting":
        return log_q
    return np.logaddexp(log_q, _log_tail_weighted(j, a, (m - 1) / m))


@functools.cache
def _legendre(order: int) -> tuple[np.ndarray, np.ndarray]:
    return roots_legendre(order)


def _gauss_legendre(lo: float, hi: float, panels: int, order: int) -> tuple[np.ndarray, ...]:
    z, w = _legendre(order)
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    nodes = (mid[:, None] + half[:, None] * z[None, :]).ravel()
    weights = (half[:, None] * w[None, :]).ravel()
    return nodes, weights


def _uniform_average(fun, lo: float, hi: float, shape: tuple[int, ...]) -> np.ndarray:
    """``(1/(hi-lo)) int_lo^hi fun(t) dt`` by composite Gauss-Legendre (order 20).

    ``fun(t)`` returns an array of ``shape`` for scalar ``t``. The number of panels doubles
    (1, 2, 4, ...) until two successive rules agree to a relative ``1e-13`` elementwise
    (values below 1e-280 excepted: their nodes may be subnormal). At 2048 panels an
    agreement to ``1e-9`` is accepted; worse raises
    :class:`~queue_routing.errors.AccuracyError`.
    """
    prev = None
    panels = 1
    while True:
        nodes, weights = _gauss_legendre(lo, hi, panels, 20)
        acc = np.zeros(shape)
        for tt, ww in zip(nodes, weights, strict=True):
            acc += ww * fun(tt)
        acc /= hi - lo
        if prev is not None:
            diff = np.abs(acc - prev)
            ok = (diff <= _QUAD_RTOL * np.abs(acc)) | (np.abs(acc) < _QUAD_TINY)
            if np.all(ok):
                return acc
            if panels >= _QUAD_MAX_PANELS:
                _quadrature_verdict(diff, acc, lo, hi)
                return acc
        prev = acc
        panels *= 2


def _quadrature_verdict(diff, acc, lo: float, hi: float) -> None:
    """Accept the last rule if it agrees with the previous one to :data:`_QUAD_ACCEPT`."""
    diff, acc = np.abs(np.asarray(diff)), np.abs(np.asarray(acc))
    worst = float(np.max(np.where(acc < _QUAD_TINY, 0.0, diff / np.maximum(acc, _QUAD_TINY))))
    if worst > _QUAD_ACCEPT:
        raise AccuracyError(
            f"deadline: the average over the uniform deadline on [{lo:g}, {hi:g}] reached only "
            f"relative {worst:.2g} with {_QUAD_MAX_PANELS} panels (needs {_QUAD_ACCEPT:g})"
        )


def _uniform_log_average(fun, lo: float, hi: float, shape: tuple[int, ...]) -> np.ndarray:
    """``log((1/(hi-lo)) int_lo^hi exp(fun(t)) dt)`` for a log-valued ``fun`` (``-inf`` for
    zero), by the panel doubling of :func:`_uniform_average` carried out in log space (no
    underflow: the values may lie far below the smallest double)."""
    prev = None
    panels = 1
    while True:
        nodes, weights = _gauss_legendre(lo, hi, panels, 20)
        logs = np.stack([fun(tt) for tt in nodes])  # (nodes, *shape)
        logw = np.log(weights / (hi - lo)).reshape((-1,) + (1,) * len(shape))
        with np.errstate(invalid="ignore", divide="ignore"):
            top = np.max(logs, axis=0)
            safe = np.where(np.isfinite(top), top, 0.0)
            acc = safe + np.log(np.sum(np.exp(logs + logw - safe), axis=0))
        acc = np.where(np.isneginf(top), -np.inf, acc)
        if prev is not None:
            both_zero = np.isneginf(acc) & np.isneginf(prev)
            with np.errstate(invalid="ignore"):
                diff = np.where(both_zero, 0.0, np.abs(acc - prev))
                # a relative 1e-13, or a few ulps of the log itself (|log| up to ~1e3 or more)
                diff = diff / np.maximum(1.0, 8.0 * np.finfo(float).eps * np.abs(acc) / _QUAD_RTOL)
            if np.all(diff <= _QUAD_RTOL):
                return acc
            if panels >= _QUAD_MAX_PANELS:
                worst = float(np.max(diff))
                if not worst <= _QUAD_ACCEPT:
                    raise AccuracyError(
                        f"deadline: the average over the uniform deadline on [{lo:g}, {hi:g}] "
                        f"reached only relative {worst:.2g} with {_QUAD_MAX_PANELS} panels"
                    )
                return acc
        prev = acc
        panels *= 2


def _check_cluster(m: int, mu: float) -> tuple[int, float]:
    """``(m, mu)`` in the ranges of :class:`~queue_routing.deadlines.model.Cluster`."""
    if (
        isinstance(m, bool | np.bool_)
        or not isinstance(m, int | np.integer | float | np.floating)
        or not (1 <= m <= MAX_SERVERS)
        or m != math.floor(m)
    ):
        raise InstanceError(f"m must be an integer in 1..{MAX_SERVERS}, got {show(m)}")
    lo, hi = RATE_RANGE
    if (
        isinstance(mu, bool | np.bool_)
        or not isinstance(mu, int | float | np.integer | np.floating)
        or not (lo <= mu <= hi)
    ):
        raise InstanceError(f"mu must be a number in [{lo:g}, {hi:g}], got {show(mu)}")
    return int(m), float(mu)


def check_levels(x) -> tuple[np.ndarray, np.ndarray]:
    """``(array as given, flat int64 copy)`` of numbers of jobs: integers in ``0..2**53``."""
    try:
        xa = np.asarray(x)
    except (TypeError, ValueError, OverflowError):
        raise InstanceError("x must hold integers >= 0") from None
    if xa.dtype == bool or not (
        np.issubdtype(xa.dtype, np.integer) or np.issubdtype(xa.dtype, np.floating)
    ):
        raise InstanceError("x must hold integers >= 0 (as numbers)")
    if xa.size and (
        not np.all(np.isfinite(xa))
        or np.any(xa < 0)
        or np.any(xa > 2**53)
        or np.any(np.floor(xa) != xa)
    ):
        raise InstanceError("x must hold integers in 0..2**53")
    return xa, xa.astype(np.int64).ravel()


def _log_constant_miss(x: np.ndarray, m: int, mu: float, t: float, on: str) -> np.ndarray:
    """``log P^miss(x)`` for a constant deadline ``t`` (``-inf`` where it is 0): the log-space
    sums of :func:`_constant_miss` before their exponential (no underflow)."""
    out = np.full(x.shape, -mu * t if on == "response" else -np.inf)
    high = x >= m
    if not np.any(high):
        return out
    if t <= 0.0:
        out[high] = 0.0
        return out
    out[high] = np.minimum(_log_queued_miss(x[high], m, mu, t, on), 0.0)
    return out


def log_miss_probability(flat: np.ndarray, m: int, mu: float, deadline: Deadline) -> np.ndarray:
    """``log P^miss(x)`` for a flat int array ``x`` (``-inf`` where 0), far below the smallest
    double too (e.g. ``-mu t`` below ``m`` jobs): what orders two index values that both
    underflow (``docs/deadlines.md#index-policies``)."""
    on = deadline.on
    if deadline.kind == "constant":
        return _log_constant_miss(flat, m, mu, float(deadline.t), on)
    if deadline.kind == "exponential":  # P >= theta/(mu + theta) or 0: no underflow
        with np.errstate(divide="ignore"):
            return np.log(miss_probability(flat, m, mu, deadline))
    lo, hi = float(deadline.low), float(deadline.high)
    out = _uniform_log_average(lambda t: _log_constant_miss(flat, m, mu, t, on), lo, hi, flat.shape)
    return np.minimum(out, 0.0)


def miss_probability(x, m: int, mu: float, deadline: Deadline) -> np.ndarray:
    """``P^miss(x)``: probability a job finding ``x`` jobs in an M/M/m FCFS cluster misses
    its deadline (on response or waiting time per ``deadline.on``). Vectorised over ``x``.

    Parameters
    ----------
    x:
        Number(s) of jobs found (integers >= 0), any shape.
    m, mu:
        Servers and service rate per server (jobs per unit time).
    deadline:
        The deadline law (units of time).

    Notes
    -----
    Exponential deadlines (rate ``theta``) use ``E[e^{-theta T}]``:
    response ``1 - mu/(mu+theta) (m mu/(m mu+theta))^{j+}``; waiting
    ``1 - (m mu/(m mu+theta))^j`` for ``x >= m`` and 0 otherwise (via ``expm1/log1p``).
    Uniform deadlines average the constant-deadline value by adaptive Gauss-Legendre.

    A job finding a free server (``x < m``) misses a response deadline ``t`` iff its service
    outlasts ``t``, probability ``e^{-mu t}``; one finding ``x = m`` jobs first waits an
    ``Exp(m mu)`` time, so it misses a waiting deadline with probability ``e^{-m mu t}``:

    >>> import math
    >>> from queue_routing.deadlines import Deadline
    >>> p = miss_probability([0, 1, 2], 2, 0.5, Deadline("constant", t=1.5))
    >>> [round(v, 12) for v in p[:2]] == [round(math.exp(-0.75), 12)] * 2, bool(p[2] > p[1])
    (True, True)
    >>> w = miss_probability(2, 2, 0.5, Deadline("constant", t=1.5, on="waiting"))
    >>> bool(abs(w - math.exp(-1.5)) < 1e-14)
    True
    """
    m, mu = _check_cluster(m, mu)
    _check_deadline(deadline)
    xa, flat = check_levels(x)
    on = deadline.on
    if deadline.kind == "constant":
        out = _constant_miss(flat, m, mu, float(deadline.t), on)
    elif deadline.kind == "exponential":
        theta = 1.0 / deadline.mean
        jp = np.clip(flat - m + 1, 0, None).astype(float)
        log_wait = -jp * math.log1p(theta / (m * mu))  # log E[e^{-theta W}]
        if on == "response":
            out = -np.expm1(log_wait - math.log1p(theta / mu))
        else:
            out = -np.expm1(log_wait)
    else:
        lo, hi = float(deadline.low), float(deadline.high)
        out = _uniform_average(lambda t: _constant_miss(flat, m, mu, t, on), lo, hi, flat.shape)
        np.clip(out, 0.0, 1.0, out=out)  # the rule's rounding may exceed 1 by an ulp
    return out.reshape(xa.shape)


# ---------------------------------------------------------------------------------------
# stationary M/M/m quantities
# ---------------------------------------------------------------------------------------
_ERLANG_PYTHON_MAX = 64  # up to this m the recursion runs in Python, beyond compiled


@njit(cache=True)
def _erlang_b_compiled(m, a, k0):  # pragma: no cover - compiled
    b = a * 0.0 + 1.0  # of a's type (float or complex: the complex step of f_prime)
    top = (a * 0.0 + 1.0).real * a.real  # Re a
    for k in range(k0 + 1, m + 1):
        b = a * b / (k + a * b)
        if k > top and abs(b) < 1e-300:  # past a, b only decreases: B_m < 1e-300 is 0
            return b * 0.0
    return b


def _erlang_start(m: int, a) -> int:
    """First step of the Erlang-B recursion worth doing. ``1/B_m = sum_{j<=m} m!/(j!
    a^(m-j))``, terms shaped like ``Pois(j; a)`` up to ``j = m``: started at ``k0`` from
    ``B = 1`` the recursion errs by at most the terms ``j <= k0`` relative to the sum, below
    ``e^-800`` for ``k0 = min(a, m) - 40 sqrt(min(a, m)) - 50``."""
    top = min(max(float(np.real(a)), 0.0), float(m))
    return max(0, math.floor(top - 40.0 * math.sqrt(top) - 50.0))


def erlang_c(m: int, a: float) -> float:
    """Erlang-C probability of waiting ``C(m, a)``, offered load ``a = lam/mu`` (< m for a
    stable queue; the formula is evaluated as written otherwise). Erlang-B recursion
    (beyond 64 servers compiled, and from the step where it starts to matter, so that a
    million servers cost ~4e4 steps); ``a`` may be complex (the complex step of
    :func:`f_prime`).

    >>> round(erlang_c(1, 0.5), 15), round(erlang_c(2, 1.0), 15)  # rho and 1/3 (M/M/2)
    (0.5, 0.333333333333333)
    """
    if m > _ERLANG_PYTHON_MAX:
        b = _erlang_b_compiled(int(m), a, _erlang_start(m, a))
    else:
        b = 1.0
        for k in range(1, m + 1):
            b = a * b / (k + a * b)
    rho = a / m
    return b / (1.0 - rho * (1.0 - b))


def _check_stable(m: int, mu: float, lam: float) -> float:
    if isinstance(lam, bool | np.bool_) or not isinstance(lam, int | float | np.number):
        raise InstanceError(f"lam must be a number, got {show(lam)}")
    lam = float(lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise InstanceError(f"lam must be finite and >= 0, got {show(lam)}")
    if lam >= m * mu:
        raise InstanceError(f"lam = {lam:g} must be < m mu = {m * mu:g} (unstable cluster)")
    return lam


def _check_deadline(deadline) -> None:
    if not isinstance(deadline, Deadline):
        raise InstanceError(f"deadline must be a Deadline, got {type(deadline).__name__}")


def _check_times(t) -> np.ndarray:
    """Times ``t >= 0`` (finite reals) as a float array."""
    try:
        ta = np.asarray(t, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InstanceError("t must hold finite numbers >= 0") from None
    if ta.size and not (np.all(np.isfinite(ta)) and np.all(ta >= 0)):
        raise InstanceError("t must hold finite numbers >= 0")
    return ta


def _expm1_ratio(d, t: np.ndarray) -> np.ndarray:
    """``(1 - e^{-d t})/d``, equal to ``t`` at ``d = 0`` (no cancellation).

    For a complex ``d`` (complex step) with ``|d| t < 1/2`` by its Taylor series
    ``t sum_k (-d t)^k/(k+1)!``: the quotient would lose the tiny imaginary part to rounding
    near the removable singularity ``d = 0``."""
    t = np.asarray(t, dtype=float)
    if d == 0.0:
        return t
    if np.iscomplexobj(d) and abs(d) * float(np.max(t, initial=0.0)) < 0.5:
        z = -d * t
        term = np.ones_like(z)
        total = np.ones_like(z)
        for k in range(1, 40):
            term = term * z / (k + 1)
            total = total + term
            if np.all(np.abs(term) <= 1e-18 * np.abs(total)):
                break
        return t * total
    return -np.expm1(-d * t) / d


def _product_form_ok(mu: float, d, t: np.ndarray) -> bool:
    """The product form ``e^{-mu t}(1 + C mu (1 - e^{-d t})/d)`` has two normal, finite
    factors: always for ``d >= 0``; for ``d < 0`` while ``mu t`` and ``|d| t`` stay <= 700."""
    if np.real(d) >= 0.0:
        return True
    tmax = float(np.max(t, initial=0.0))
    return mu * tmax <= _PRODUCT_FORM_MAX and -float(np.real(d)) * tmax <= _PRODUCT_FORM_MAX


def _sojourn_excess(t, m: int, mu: float, lam, c) -> np.ndarray:
    """``P{T > t} - e^{-mu t} = C mu (e^{-mu t} - e^{-gamma t})/d`` (``d = (m-1) mu - lam``,
    ``gamma = m mu - lam = d + mu``) as a product of nonnegative finite factors:
    ``C mu e^{-mu t} (1 - e^{-d t})/d`` for ``d >= 0`` (``C mu t e^{-mu t}`` at ``d = 0``)
    and ``(C mu/|d|) e^{-gamma t} (1 - e^{-|d| t})`` for ``d < 0``. ``lam``, ``c`` may be
    complex (the complex step of :func:`f_prime`); the branch follows ``Re d``."""
    t = np.asarray(t, dtype=float)
    d = (m - 1) * mu - lam
    if np.real(d) >= 0.0:
        return np.exp(-mu * t) * (c * mu * _expm1_ratio(d, t))
    return c * mu * np.exp(-(m * mu - lam) * t) * _expm1_ratio(-d, t)


def _sojourn_tail_formula(t, m: int, mu: float, lam) -> np.ndarray:
    """``P{T > t}`` (see :func:`sojourn_tail`); ``lam`` may be complex."""
    c = erlang_c(m, lam / mu)
    d = (m - 1) * mu - lam
    tt = np.asarray(t, dtype=float)
    if _product_form_ok(mu, d, tt):
        em = np.exp(-mu * tt)
        return em * (1.0 + c * mu * _expm1_ratio(d, tt))
    return np.exp(-mu * tt) + _sojourn_excess(tt, m, mu, lam, c)


def sojourn_tail(t, m: int, mu: float, lam: float) -> np.ndarray:
    """Stationary FCFS M/M/m response-time tail ``P{T > t}`` (``t`` units of time).

    ``e^{-mu t} + C mu/((m-1)mu - lam) (e^{-mu t} - e^{-(m mu - lam) t})``, evaluated as a
    sum of nonnegative finite terms: with ``d = (m-1)mu - lam``, ``e^{-mu t}(1 + C mu
    (1 - e^{-d t})/d)`` for ``d >= 0`` (``e^{-mu t}(1 + C mu t)`` at ``d = 0``, the
    continuous limit) and ``e^{-mu t} + (C mu/|d|) e^{-(m mu - lam) t} (1 - e^{-|d| t})``
    for ``d < 0`` (no ``0 * inf`` at long times). Needs ``lam < m mu``.

    >>> 0.0 < float(sojourn_tail(5000.0, 3, 1.0, 2.9)) < 1e-200  # e^{-0.1 t} decay, no 0 * inf
    True
    """
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    return _sojourn_tail_formula(_check_times(t), m, mu, lam)


def waiting_tail(t, m: int, mu: float, lam: float) -> np.ndarray:
    """Stationary FCFS M/M/m waiting-time tail ``P{W > t} = C e^{-(m mu - lam) t}``, ``t >= 0``."""
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    return erlang_c(m, lam / mu) * np.exp(-(m * mu - lam) * _check_times(t))


def stationary_distribution(m: int, mu: float, lam: float, tol: float = _TRUNC_TOL):
    """Stationary M/M/m queue length (= the number seen by an arrival, PASTA).

    Returns ``(pi, tail)``: ``pi[x]`` for ``x = 0..X`` with ``X`` the smallest level whose
    neglected mass ``tail = sum_{x>X} pi_x = C rho^{X-m+1}`` is ``<= tol``.
    ``pi_x = (1-C) Pois(x; a)/P(Pois(a) <= m-1)`` for ``x < m``, ``C (1-rho) rho^{x-m}`` after.
    Near capacity ``X`` grows like ``log(tol)/log(rho)``; beyond 10 000 000 levels an
    :class:`~queue_routing.errors.AccuracyError` says so (raise ``tol``).
    """
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0.0 < tol < 1.0:
        raise InstanceError(f"tol must be a number in (0, 1), got {show(tol)}")
    a = lam / mu
    rho = a / m
    c = erlang_c(m, a)
    if lam == 0.0:
        pi = np.zeros(m)
        pi[0] = 1.0
        return pi, 0.0
    n_high = 1 if c <= tol else math.ceil(math.log(tol / c) / math.log(rho))
    if m + n_high > _MAX_STATIONARY:
        raise AccuracyError(
            f"tol: at load {rho:.12g} the neglected mass {tol:g} needs {m + n_high:.3g} levels, "
            f"more than {_MAX_STATIONARY}; raise tol"
        )
    k = np.arange(m, dtype=float)
    logp = k * math.log(a) - a - gammaln(k + 1.0)
    low = (1.0 - c) * np.exp(logp - np.logaddexp.reduce(logp))
    with np.errstate(under="ignore"):
        high = c * (1.0 - rho) * rho ** np.arange(n_high, dtype=float)
        tail = c * rho**n_high
    return np.concatenate([low, high]), float(tail)


def _mean_over_deadline(fun, deadline: Deadline):
    """``E[fun(tau)]`` for a constant or uniform deadline (``fun`` vectorised in t; real, or
    complex for the complex step of :func:`f_prime`).

    Uniform: composite 20-point Gauss-Legendre, panels doubling until two rules agree to a
    relative 1e-13 (the real and imaginary parts each); at 2048 panels 1e-9 is accepted,
    worse raises :class:`~queue_routing.errors.AccuracyError`.
    """
    if deadline.kind == "constant":
        return fun(np.array([deadline.t]))[0].item()
    lo, hi = float(deadline.low), float(deadline.high)
    prev = None
    panels = 1
    while True:
        nodes, weights = _gauss_legendre(lo, hi, panels, 20)
        vals = fun(nodes)
        if np.iscomplexobj(vals):
            val = complex(np.dot(weights, vals)) / (hi - lo)
            if prev is not None:
                diff = np.abs([val.real - prev.real, val.imag - prev.imag])
                ref = np.abs([val.real, val.imag])
                if np.all(diff <= _QUAD_RTOL * ref):
                    return val
                if panels >= _QUAD_MAX_PANELS:
                    _quadrature_verdict(diff, ref, lo, hi)
                    return val
        else:
            val = float(np.dot(weights, vals)) / (hi - lo)
            if prev is not None and abs(val - prev) <= _QUAD_RTOL * abs(val):
                return val
            if prev is not None and panels >= _QUAD_MAX_PANELS:
                _quadrature_verdict(abs(val - prev), abs(val), lo, hi)
                return val
        prev = val
        panels *= 2


def _pbar_formula(m: int, mu: float, lam, deadline: Deadline):
    """``P-bar(lam)`` by the stationary tails averaged over the deadline.

    The expressions are analytic in ``lam`` across ``[0, m mu]`` (and slightly beyond), which
    :func:`f_prime` uses (``lam`` may be complex). Exponential deadlines (rate theta,
    ``gamma = m mu - lam``): response ``theta/(theta+mu) + C mu theta/((theta+mu)(theta+gamma))``;
    waiting ``C theta/(theta+gamma)``. Uniform ones average the tails by quadrature.
    """
    c = erlang_c(m, lam / mu)
    gamma = m * mu - lam
    if deadline.kind == "exponential":
        theta = 1.0 / deadline.mean
        if deadline.on == "waiting":
            return c * theta / (theta + gamma)
        return theta / (theta + mu) + c * mu * theta / ((theta + mu) * (theta + gamma))
    if deadline.on == "waiting":
        return _mean_over_deadline(lambda t: c * np.exp(-gamma * t), deadline)
    return _mean_over_deadline(lambda t: _sojourn_tail_formula(t, m, mu, lam), deadline)


def pbar_excess(m: int, mu: float, lam: float, deadline: Deadline) -> float:
    """``P-bar(lam) - P^miss(0) >= 0`` (jobs that find a free server miss with probability
    ``P^miss(0)``; the excess is due to queueing) as a sum of nonnegative terms: the part of
    :func:`_pbar_formula` carrying the Erlang-C factor. Needs ``lam < m mu``."""
    c = erlang_c(m, lam / mu)
    gamma = m * mu - lam
    if deadline.kind == "exponential":
        theta = 1.0 / deadline.mean
        if deadline.on == "waiting":
            return float(c * theta / (theta + gamma))
        return float(c * mu * theta / ((theta + mu) * (theta + gamma)))
    if deadline.on == "waiting":
        return float(_mean_over_deadline(lambda t: c * np.exp(-gamma * t), deadline))
    return float(_mean_over_deadline(lambda t: _sojourn_excess(t, m, mu, lam, c), deadline))


def steady_state_miss(
    m: int, mu: float, lam: float, deadline: Deadline, method: str = "tail"
) -> float:
    """``P-bar(lam)``: stationary deadline-miss probability of an M/M/m FCFS cluster.

    ``method="tail"``: the sojourn (or waiting) tail averaged over the deadline law.
    ``method="sum"``: ``sum_x pi_x P^miss(x)`` over the stationary distribution truncated
    with neglected mass ``<= 1e-15`` (``P^miss <= 1`` bounds the error by that mass).
    At ``lam >= m mu`` (saturated) the value is 1.
    """
    m, mu = _check_cluster(m, mu)
    _check_deadline(deadline)
    if isinstance(lam, int | float | np.number) and not isinstance(lam, bool):
        if math.isfinite(lam) and lam >= m * mu:
            return 1.0
    lam = _check_stable(m, mu, lam)
    if method == "tail":
        return float(_pbar_formula(m, mu, lam, deadline))
    if method == "sum":
        pi, _ = stationary_distribution(m, mu, lam)
        p = miss_probability(np.arange(pi.size), m, mu, deadline)
        return float(np.dot(pi, p))
    raise InstanceError(f"method must be 'tail' or 'sum', got {show(method)}")


def _check_rate_in_capacity(m: int, mu: float, lam) -> float:
    if isinstance(lam, bool | np.bool_) or not isinstance(lam, int | float | np.number):
        raise InstanceError(f"lam must be a number, got {show(lam)}")
    lam = float(lam)
    if not (math.isfinite(lam) and 0.0 <= lam <= m * mu * (1 + 1e-15)):
        raise InstanceError(f"lam = {show(lam)} must lie in [0, m mu = {m * mu:g}]")
    return lam


def f(lam: float, m: int, mu: float, deadline: Deadline) -> float:
    """``f(lam) = lam P-bar(lam)``: deadline-miss rate (jobs per unit time) of a cluster fed
    at rate ``lam`` in ``[0, m mu]``; ``f(m mu) = m mu`` (saturated: every job misses)."""
    m, mu = _check_cluster(m, mu)
    _check_deadline(deadline)
    lam = _check_rate_in_capacity(m, mu, lam)
    if lam >= m * mu:
        return m * mu
    return lam * _pbar_formula(m, mu, lam, deadline)


_FPRIME_ACCEPT = 1e-8  # the stencil's Richardson error estimate must be below this (relative)
_STENCIL_MAX_SERVERS = 10_000  # beyond, Erlang C has a pole within the stencil's reach
_COMPLEX_STEP_ERROR = 1e-13  # relative error reported for the complex-step derivative


def _f_prime_complex_step(lam: float, m: int, mu: float, deadline: Deadline) -> float:
    """``f'(lam) = Im f(lam + i h)/h``: ``f`` is analytic in ``lam`` and its formulas accept
    complex rates, so the complex step has no cancellation. Its error is ``(h s)^2/6``
    relative, with ``1/s`` the scale on which ``f`` varies (``1/t_max`` through
    ``e^{-(m mu - lam) t}``, ``m mu / sqrt(m)`` through Erlang C), so ``h = 1e-9 / s``: small
    enough, and the imaginary parts stay far from underflow."""
    t_max = {"constant": deadline.t, "uniform": deadline.high, "exponential": deadline.mean}
    h = 1e-9 * min(m * mu / math.sqrt(m), 1.0 / float(t_max[deadline.kind]))
    z = complex(lam, h)
    return float(np.imag(z * _pbar_formula(m, mu, z, deadline))) / h


def f_prime(lam: float, m: int, mu: float, deadline: Deadline, *, with_error: bool = False):
    """``f'(lam)`` on ``[0, m mu]`` (at ``m mu`` the left derivative ``f'(m mu-)``).

    ``f(lam) = lam P-bar(lam)`` with ``P-bar`` given by closed forms analytic in ``lam`` on a
    neighbourhood of ``[0, m mu]`` (Erlang C and the tails are rational/exponential in lam),
    so a five-point central difference with step ``h = 1e-3 m mu`` can straddle both ends.
    The error estimate ``|D(h) - D(2h)|/15`` (Richardson) is returned with
    ``with_error=True``; it is ~1e-10 relative in moderate cases (truncation O(h^4) against
    rounding ~1e-13/h). When it exceeds 1e-8 relative (long deadlines, on which ``f`` varies
    on the scale ``1/t``, so the stencil is too wide), or beyond 10 000 servers (Erlang C has
    a pole just above capacity), the derivative is the complex step ``Im f(lam + ih)/h``,
    exact to rounding (error reported as 1e-13 relative). At ``lam = 0``:
    ``f'(0) = P-bar(0) = P^miss(0)`` exactly.
    """
    m, mu = _check_cluster(m, mu)
    _check_deadline(deadline)
    lam = _check_rate_in_capacity(m, mu, lam)
    cap = m * mu
    if lam == 0.0:
        d = _pbar_formula(m, mu, 0.0, deadline)
        return (d, 0.0) if with_error else d

    def g(x: float) -> float:
        return x * _pbar_formula(m, mu, x, deadline)

    def stencil(h: float) -> float:
        return (-g(lam + 2 * h) + 8 * g(lam + h) - 8 * g(lam - h) + g(lam - 2 * h)) / (12 * h)

    if m <= _STENCIL_MAX_SERVERS:
        h = 1e-3 * cap
        if deadline.kind == "exponential":  # keep theta + (m mu - lam - 2h) away from its pole
            h = min(h, 0.1 / deadline.mean)
        with np.errstate(all="ignore"):
            d1 = stencil(h)
            d2 = stencil(2 * h)
            d = d1 + (d1 - d2) / 15.0
            err = abs(d1 - d2) / 15.0
        if math.isfinite(d) and err <= _FPRIME_ACCEPT * abs(d):
            return (d, err) if with_error else d
    with np.errstate(all="ignore"):
        d = _f_prime_complex_step(lam, m, mu, deadline)
    if not math.isfinite(d):
        raise AccuracyError(f"lam: f'({lam:g}) is not finite in double precision")
    return (d, _COMPLEX_STEP_ERROR * abs(d)) if with_error else d


# ---------------------------------------------------------------------------------------
# increments of P^miss in x (the restless-bandit index needs them without cancellation)
# ---------------------------------------------------------------------------------------
def _log_increments_constant(x: np.ndarray, m: int, mu: float, t: float, on: str) -> np.ndarray:
    """``log(P(x+1) - P(x))`` for a constant deadline ``t``; ``-inf`` for ``x < m - 1``.

    With ``j = x - m + 1 >= 0`` waiting phases for ``x`` jobs, ``a = m mu t``, ``s = (m-1)/m``:
    waiting ``Pois(j; a)``; response ``(1/m) sum_{k>j} Pois(k; a) s^(k-j-1)`` (from the
    Poisson sums of the module docstring; for ``m = 1`` this is ``Pois(j+1; a)``).
    """
    out = np.full(x.shape, -np.inf)
    sel = x >= m - 1
    if not np.any(sel):
        return out
    j = (x[sel] - m + 1).astype(float)
    a = m * mu * t
    if on == "waiting":
        out[sel] = j * math.log(a) - a - gammaln(j + 1.0)
    else:
        out[sel] = _log_tail_weighted(j + 1.0, a, (m - 1) / m) - math.log(m)
    return out


def log_miss_increments(flat: np.ndarray, m: int, mu: float, deadline: Deadline) -> np.ndarray:
    """``log(P^miss(x+1) - P^miss(x))`` for a flat int array ``x`` (``-inf`` where 0)."""
    on = deadline.on
    if deadline.kind == "constant":
        return _log_increments_constant(flat, m, mu, float(deadline.t), on)
    if deadline.kind == "exponential":
        theta = 1.0 / deadline.mean
        out = np.full(flat.shape, -np.inf)
        sel = flat >= m - 1
        j = (flat[sel] - m + 1).astype(float)
        log_q = -math.log1p(theta / (m * mu))  # q = m mu/(m mu + theta)
        log_1mq = -math.log1p(m * mu / theta)  # 1 - q
        val = j * log_q + log_1mq
        if on == "response":
            val = val - math.log1p(theta / mu)  # mu/(mu + theta)
        out[sel] = val
        return out
    lo, hi = float(deadline.low), float(deadline.high)
    return _uniform_log_average(
        lambda t: _log_increments_constant(flat, m, mu, t, on), lo, hi, flat.shape
    )


def miss_increments(x, m: int, mu: float, deadline: Deadline) -> np.ndarray:
    """``P^miss(x+1) - P^miss(x) >= 0``, computed directly (not as a difference), so that it
    keeps its relative accuracy where ``P^miss`` is within rounding of 1. Vectorised over
    ``x`` (integers >= 0); 0 for ``x < m - 1`` (both jobs find a free server).

    Exponential deadlines (rate theta, ``q = m mu/(m mu + theta)``, ``j = x - m + 1``):
    response ``mu/(mu + theta) q^j (1 - q)``, waiting ``q^j (1 - q)``; constant ones the
    Poisson sums of :func:`_log_increments_constant`; uniform ones their average.

    >>> from queue_routing.deadlines import Deadline
    >>> dl = Deadline("exponential", mean=1.0)
    >>> d = miss_increments([0, 1, 500], 1, 2.0, dl)  # m = 1: P = 1 - (2/3)^(x+1)
    >>> bool(abs(d[1] - (2 / 3) ** 2 / 3) < 1e-16), bool(0 < d[2] < 1e-80)
    (True, True)
    """
    m, mu = _check_cluster(m, mu)
    _check_deadline(deadline)
    xa, flat = check_levels(x)
    with np.errstate(under="ignore"):
        return np.exp(log_miss_increments(flat, m, mu, deadline)).reshape(xa.shape)
