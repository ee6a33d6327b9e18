"""Closed-form deadline-miss probabilities and M/M/m formulas of one FCFS cluster
(``shared/spec/deadlines.md``): ``P^miss(x)``, the stationary tails, Erlang C, the stationary
distribution, ``P-bar(lam)`` and the miss rate ``f(lam) = lam P-bar(lam)`` with ``f'``.

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

import math
import warnings

import numpy as np
from scipy.special import gammainc, gammaincc, gammaln, roots_legendre

from .model import Deadline

__all__ = [
    "erlang_c",
    "f",
    "f_prime",
    "miss_probability",
    "sojourn_tail",
    "stationary_distribution",
    "steady_state_miss",
    "waiting_tail",
]

_TINY = 1e-280  # below this scipy's regularised gammas go to the log-space series
_SERIES_RTOL = 1e-17
_QUAD_RTOL = 1e-13
_TRUNC_TOL = 1e-15


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
    j = (x[high] - m + 1).astype(float)
    a = m * mu * t
    log_q = _log_pois_below(j, a)
    if on == "waiting":
        out[high] = np.exp(log_q)
    else:
        s = (m - 1) / m
        out[high] = np.exp(np.logaddexp(log_q, _log_tail_weighted(j, a, s)))
    np.clip(out, 0.0, 1.0, out=out)
    return out


def _gauss_legendre(lo: float, hi: float, panels: int, order: int) -> tuple[np.ndarray, ...]:
    z, w = roots_legendre(order)
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
    (values below 1e-300 excepted); a ``RuntimeWarning`` is issued if 2048 panels do not.
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
            ok = (diff <= _QUAD_RTOL * np.abs(acc)) | (np.abs(acc) < 1e-300)
            if np.all(ok):
                return acc
        if panels >= 2048:
            warnings.warn(
                "uniform-deadline quadrature did not reach relative 1e-13 with 2048 panels",
                RuntimeWarning,
                stacklevel=3,
            )
            return acc
        prev = acc
        panels *= 2


def _check_cluster(m: int, mu: float) -> tuple[int, float]:
    if isinstance(m, bool) or int(m) != m or int(m) < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    mu = float(mu)
    if not (math.isfinite(mu) and mu > 0):
        raise ValueError(f"mu must be finite and > 0, got {mu!r}")
    return int(m), mu


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
    xa = np.asarray(x)
    if xa.size and (np.any(xa < 0) or np.any(np.floor(xa) != xa)):
        raise ValueError("x must hold integers >= 0")
    flat = xa.astype(np.int64).ravel()
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
    return out.reshape(xa.shape)


# ---------------------------------------------------------------------------------------
# stationary M/M/m quantities
# ---------------------------------------------------------------------------------------
def erlang_c(m: int, a: float) -> float:
    """Erlang-C probability of waiting ``C(m, a)``, offered load ``a = lam/mu`` (< m for a
    stable queue; the formula is evaluated as written otherwise). Erlang-B recursion."""
    b = 1.0
    for k in range(1, m + 1):
        b = a * b / (k + a * b)
    rho = a / m
    return b / (1.0 - rho * (1.0 - b))


def _check_stable(m: int, mu: float, lam: float) -> float:
    lam = float(lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam must be finite and >= 0, got {lam!r}")
    if lam >= m * mu:
        raise ValueError(f"lam = {lam:g} must be < m mu = {m * mu:g} (unstable cluster)")
    return lam


def _expm1_ratio(d: float, t: np.ndarray) -> np.ndarray:
    """``(1 - e^{-d t})/d``, equal to ``t`` at ``d = 0`` (no cancellation)."""
    if d == 0.0:
        return np.asarray(t, dtype=float)
    return -np.expm1(-d * np.asarray(t, dtype=float)) / d


def _sojourn_tail_formula(t, m: int, mu: float, lam: float) -> np.ndarray:
    c = erlang_c(m, lam / mu)
    d = (m - 1) * mu - lam
    em = np.exp(-mu * np.asarray(t, dtype=float))
    return em * (1.0 + c * mu * _expm1_ratio(d, t))


def sojourn_tail(t, m: int, mu: float, lam: float) -> np.ndarray:
    """Stationary FCFS M/M/m response-time tail ``P{T > t}`` (``t`` units of time).

    ``e^{-mu t} + C mu/((m-1)mu - lam) (e^{-mu t} - e^{-(m mu - lam) t})``, written as
    ``e^{-mu t}(1 + C mu (1 - e^{-d t})/d)`` with ``d = (m-1)mu - lam`` so that the case
    ``lam = (m-1) mu`` (``e^{-mu t}(1 + C mu t)``) is the continuous limit. Needs ``lam < m mu``.
    """
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    return _sojourn_tail_formula(t, m, mu, lam)


def waiting_tail(t, m: int, mu: float, lam: float) -> np.ndarray:
    """Stationary FCFS M/M/m waiting-time tail ``P{W > t} = C e^{-(m mu - lam) t}``, ``t >= 0``."""
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    return erlang_c(m, lam / mu) * np.exp(-(m * mu - lam) * np.asarray(t, dtype=float))


def stationary_distribution(m: int, mu: float, lam: float, tol: float = _TRUNC_TOL):
    """Stationary M/M/m queue length (= the number seen by an arrival, PASTA).

    Returns ``(pi, tail)``: ``pi[x]`` for ``x = 0..X`` with ``X`` the smallest level whose
    neglected mass ``tail = sum_{x>X} pi_x = C rho^{X-m+1}`` is ``<= tol``.
    ``pi_x = (1-C) Pois(x; a)/P(Pois(a) <= m-1)`` for ``x < m``, ``C (1-rho) rho^{x-m}`` after.
    """
    m, mu = _check_cluster(m, mu)
    lam = _check_stable(m, mu, lam)
    a = lam / mu
    rho = a / m
    c = erlang_c(m, a)
    if lam == 0.0:
        pi = np.zeros(m)
        pi[0] = 1.0
        return pi, 0.0
    k = np.arange(m, dtype=float)
    logp = k * math.log(a) - a - gammaln(k + 1.0)
    low = (1.0 - c) * np.exp(logp - np.logaddexp.reduce(logp))
    n_high = 1 if c <= tol else math.ceil(math.log(tol / c) / math.log(rho))
    high = c * (1.0 - rho) * rho ** np.arange(n_high, dtype=float)
    tail = c * rho**n_high
    return np.concatenate([low, high]), float(tail)


def _mean_over_deadline(fun, deadline: Deadline) -> float:
    """``E[fun(tau)]`` for a constant or uniform deadline (``fun`` vectorised in t).

    Uniform: composite 20-point Gauss-Legendre, panels doubling until two rules agree to a
    relative 1e-13 (the stationary tails are smooth, one or two panels usually suffice).
    """
    if deadline.kind == "constant":
        return float(fun(np.array([deadline.t]))[0])
    lo, hi = float(deadline.low), float(deadline.high)
    prev = None
    panels = 1
    while True:
        nodes, weights = _gauss_legendre(lo, hi, panels, 20)
        val = float(np.dot(weights, fun(nodes))) / (hi - lo)
        if prev is not None and abs(val - prev) <= _QUAD_RTOL * abs(val):
            return val
        if panels >= 2048:
            warnings.warn(
                "uniform-deadline tail quadrature did not reach relative 1e-13",
                RuntimeWarning,
                stacklevel=3,
            )
            return val
        prev = val
        panels *= 2


def _pbar_formula(m: int, mu: float, lam: float, deadline: Deadline) -> float:
    """``P-bar(lam)`` by the stationary tails averaged over the deadline.

    The expressions are analytic in ``lam`` across ``[0, m mu]`` (and slightly beyond), which
    :func:`f_prime` uses. Exponential deadlines (rate theta, ``gamma = m mu - lam``):
    response ``theta/(theta+mu) + C mu theta/((theta+mu)(theta+gamma))``; waiting
    ``C theta/(theta+gamma)``. Uniform ones average the tails by quadrature.
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
    if lam >= m * mu:
        return 1.0
    lam = _check_stable(m, mu, lam)
    if method == "tail":
        return float(_pbar_formula(m, mu, lam, deadline))
    if method == "sum":
        pi, _ = stationary_distribution(m, mu, lam)
        p = miss_probability(np.arange(pi.size), m, mu, deadline)
        return float(np.dot(pi, p))
    raise ValueError(f"method must be 'tail' or 'sum', got {method!r}")


def f(lam: float, m: int, mu: float, deadline: Deadline) -> float:
    """``f(lam) = lam P-bar(lam)``: deadline-miss rate (jobs per unit time) of a cluster fed
    at rate ``lam`` in ``[0, m mu]``; ``f(m mu) = m mu`` (saturated: every job misses)."""
    m, mu = _check_cluster(m, mu)
    lam = float(lam)
    if lam < 0 or lam > m * mu * (1 + 1e-15):
        raise ValueError(f"lam = {lam:g} must lie in [0, m mu = {m * mu:g}]")
    if lam >= m * mu:
        return m * mu
    return lam * _pbar_formula(m, mu, lam, deadline)


def f_prime(lam: float, m: int, mu: float, deadline: Deadline, *, with_error: bool = False):
    """``f'(lam)`` on ``[0, m mu]`` (at ``m mu`` the left derivative ``f'(m mu-)``).

    ``f(lam) = lam P-bar(lam)`` with ``P-bar`` given by closed forms analytic in ``lam`` on a
    neighbourhood of ``[0, m mu]`` (Erlang C and the tails are rational/exponential in lam),
    so a five-point central difference with step ``h = 1e-3 m mu`` can straddle both ends.
    The error estimate ``|D(h) - D(2h)|/15`` (Richardson) is returned with
    ``with_error=True``; in practice it is ~1e-10 relative (truncation O(h^4) against
    rounding ~1e-13/h). At ``lam = 0``: ``f'(0) = P-bar(0) = P^miss(0)`` exactly.
    """
    m, mu = _check_cluster(m, mu)
    lam = float(lam)
    cap = m * mu
    if lam < 0 or lam > cap * (1 + 1e-15):
        raise ValueError(f"lam = {lam:g} must lie in [0, m mu = {cap:g}]")
    if lam == 0.0:
        d = _pbar_formula(m, mu, 0.0, deadline)
        return (d, 0.0) if with_error else d

    def g(x: float) -> float:
        return x * _pbar_formula(m, mu, x, deadline)

    def stencil(h: float) -> float:
        return (-g(lam + 2 * h) + 8 * g(lam + h) - 8 * g(lam - h) + g(lam - 2 * h)) / (12 * h)

    h = 1e-3 * cap
    if deadline.kind == "exponential":  # keep theta + (m mu - lam - 2h) away from its pole
        h = min(h, 0.1 / deadline.mean)
    d1 = stencil(h)
    d2 = stencil(2 * h)
    d = d1 + (d1 - d2) / 15.0
    err = abs(d1 - d2) / 15.0
    return (d, err) if with_error else d
