"""Part B against high-precision evaluations of the definitions (mpmath, >= 40 correct digits).

The references are independent of ``miss.py`` and ``indices.py``:

* ``P^miss(x)`` from the definition ``P(W + S > t)`` with ``W ~ Erlang(j, m mu)``,
  ``S ~ Exp(mu)`` by the convolution ``P(W > t) + int_0^t f_W(w) e^{-mu (t - w)} dw
  = Q(j, m mu t) + e^{-mu t} (m/(m-1))^j P(j, (m-1) mu t)`` (regularised incomplete gammas;
  ``e^{-mu t} (mu t)^j / j!`` for ``m = 1``), not the code's Poisson sums; uniform deadlines
  by the exact integral over ``t`` of that expression (each piece integrates to incomplete
  gammas); exponential ones by the Laplace transform ``E[e^{-theta T}]``;
* the RB index from its definition ``(F(x+1) - F(x)) / (G(x) - G(x+1))`` with ``F``, ``G``
  the miss and rejection rates of the M/M/m/z chain (``indices.py``), summed term by term;
* the PI index ``P(x) + Delta(x)`` from the Poisson equation of the M/M/m queue: ``Delta``
  by its head sum ``sum_{y<=x} (pi_y/pi_x) (Pbar - P(y))`` and ``Pbar = sum_y pi_y P(y)``
  summed over the stationary law (the geometric part in closed form).

The definitions cancel catastrophically (e.g. ``G(x) - G(x+1)`` is ``r^-x`` relative at load
``r > 1``), so each reference runs with ``40 + (digits lost)`` decimal digits.
"""

from __future__ import annotations

import math
from functools import cache

import mpmath as mp
import numpy as np
import pytest

from queue_routing.deadlines import (
    Cluster,
    Deadline,
    miss_increments,
    miss_probability,
    pi_index,
    rb_index,
)

KINDS = {
    "constant": {"kind": "constant", "t": 1.5},
    "uniform": {"kind": "uniform", "low": 0.6, "high": 2.4},
    "exponential": {"kind": "exponential", "mean": 1.5},
}


def _deadline(kind: str, on: str = "response") -> Deadline:
    return Deadline.from_dict({**KINDS[kind], "on": on})


# -- references ---------------------------------------------------------------------------
def _lower(j, u):
    """Regularised lower incomplete gamma ``P(j, u)`` (``P(0, u) = 1``)."""
    return mp.mpf(1) if j == 0 else mp.gammainc(j, 0, u, regularized=True)


def _conv(j, m, mu, t):
    """``int_0^t f_W(w) e^{-mu (t - w)} dw`` for ``W ~ Erlang(j, m mu)`` (``j >= 1``)."""
    if m == 1:
        return mp.exp(-mu * t) * (mu * t) ** j / mp.factorial(j)
    return mp.exp(-mu * t) * (mp.mpf(m) / (m - 1)) ** j * _lower(j, (m - 1) * mu * t)


def _p_constant(x, m, mu, t, on):
    j = x - m + 1
    if j <= 0:
        return mp.exp(-mu * t) if on == "response" else mp.mpf(0)
    wait_tail = 1 - _lower(j, m * mu * t)  # P(W > t)
    return wait_tail if on == "waiting" else wait_tail + _conv(j, m, mu, t)


def _p_uniform(x, m, mu, lo, hi, on):
    """``(1/(hi-lo)) int_lo^hi P(T > t) dt`` in closed form: ``int P(W > t) dt`` term by term
    (``P(W > t) = sum_{k<j} Pois(k; c t)``, ``int_lo^hi Pois(k; c t) dt = (P(k+1, c hi) -
    P(k+1, c lo))/c``) and ``int conv(t) dt`` by Fubini: ``(conv(lo) + P(j, c hi) -
    P(j, c lo) - conv(hi))/mu``."""
    j = x - m + 1
    c = m * mu
    span = hi - lo
    if j <= 0:
        if on == "waiting":
            return mp.mpf(0)
        return (mp.exp(-mu * lo) - mp.exp(-mu * hi)) / (mu * span)
    wait = sum((_lower(k + 1, c * hi) - _lower(k + 1, c * lo)) for k in range(j)) / c
    if on == "waiting":
        return wait / span
    conv = (_conv(j, m, mu, lo) + _lower(j, c * hi) - _lower(j, c * lo) - _conv(j, m, mu, hi)) / mu
    return (wait + conv) / span


def _p_exponential(x, m, mu, mean, on):
    theta = 1 / mp.mpf(mean)
    j = max(x - m + 1, 0)
    wait = (m * mu / (m * mu + theta)) ** j  # E[e^{-theta W}]
    if on == "waiting":
        return 1 - wait if x >= m else mp.mpf(0)
    return 1 - wait * mu / (mu + theta)


def p_reference(x: int, m: int, mu: float, deadline: Deadline):
    """``P^miss(x)`` as an mpmath number at the current precision."""
    mu = mp.mpf(mu)
    if deadline.kind == "constant":
        return _p_constant(x, m, mu, mp.mpf(deadline.t), deadline.on)
    if deadline.kind == "uniform":
        return _p_uniform(x, m, mu, mp.mpf(deadline.low), mp.mpf(deadline.high), deadline.on)
    return _p_exponential(x, m, mu, deadline.mean, deadline.on)


@cache
def p_table(upto: int, m: int, mu: float, kind: str, on: str, dps: int) -> tuple:
    """``P^miss(0..upto)`` at ``dps`` digits (uniform: the sums over ``k`` accumulated)."""
    with mp.workdps(dps):
        dl = _deadline(kind, on)
        if kind != "uniform":
            return tuple(p_reference(x, m, mu, dl) for x in range(upto + 1))
        mu_, lo, hi = mp.mpf(mu), mp.mpf(dl.low), mp.mpf(dl.high)
        c, span = m * mu_, hi - lo
        out, wait = [], mp.mpf(0)  # wait = int_lo^hi P(W > t) dt for the current j
        for x in range(upto + 1):
            j = x - m + 1
            if j <= 0:
                out.append(_p_uniform(x, m, mu_, lo, hi, on))
                continue
            wait += (_lower(j, c * hi) - _lower(j, c * lo)) / c  # the k = j - 1 term
            if on == "waiting":
                out.append(wait / span)
                continue
            conv = _conv(j, m, mu_, lo) + _lower(j, c * hi) - _lower(j, c * lo)
            conv = (conv - _conv(j, m, mu_, hi)) / mu_
            out.append((wait + conv) / span)
        return tuple(out)


def rb_reference(p: tuple, m: int, mu: float, lam: float, upto: int, dps: int) -> list:
    """``nu(x) = (F(x+1) - F(x)) / (G(x) - G(x+1))``, ``x = 0..upto``, summed term by term
    (``F(z) = lam sum_{x<z} w_x P(x)/W_z``, ``G(z) = lam w_z/W_z``, ``W_z = sum_{x<=z} w_x``,
    ``w_x = prod_{y<x} lam/mu_{y+1}``)."""
    with mp.workdps(dps):
        lam, mu = mp.mpf(lam), mp.mpf(mu)
        w = [mp.mpf(1)]
        for y in range(upto + 1):
            w.append(w[-1] * lam / (mu * min(y + 1, m)))
        big_w, a = [], []  # W_z, A_z = sum_{x<z} w_x P(x)
        acc_w, acc_a = mp.mpf(0), mp.mpf(0)
        for z in range(upto + 2):
            a.append(acc_a)
            acc_w += w[z]
            big_w.append(acc_w)
            acc_a += w[z] * p[z]
        f = [lam * a[z] / big_w[z] for z in range(upto + 2)]
        g = [lam * w[z] / big_w[z] for z in range(upto + 2)]
        return [(f[x + 1] - f[x]) / (g[x] - g[x + 1]) for x in range(upto + 1)]


def pi_reference(
    p: tuple, m: int, mu: float, lam: float, upto: int, dps: int, geometric: bool
) -> list:
    """``P(x) + sum_{y<=x} (pi_y/pi_x) (Pbar - P(y))``, ``x = 0..upto``, with
    ``Pbar = sum_y pi_y P(y)`` over the stationary law: the ``y < n = len(p)`` terms one by
    one, the rest ``pi_{n-1} sum_{i>=1} rho^i (1 - Q(n-1+i))`` in closed form, ``Q = 1 - P``
    either negligible there (constant, uniform: checked) or ``geometric`` (exponential:
    ``Q(y+1)/Q(y)`` is then constant for ``y >= m - 1``)."""
    with mp.workdps(dps):
        lam, mu = mp.mpf(lam), mp.mpf(mu)
        n = len(p)
        rho = lam / (m * mu)
        pi = [mp.mpf(1)]  # unnormalised: prod_{z<=y} lam / mu_z
        for y in range(1, n):
            pi.append(pi[-1] * lam / (mu * min(y, m)))
        q_end = 1 - p[-1]
        ratio = q_end / (1 - p[-2]) if geometric else 0
        geo = pi[-1] * rho / (1 - rho)
        total = sum(pi) + geo
        tail = geo - (pi[-1] * q_end * rho * ratio / (1 - rho * ratio) if geometric else 0)
        pbar = (sum(pi[y] * p[y] for y in range(n)) + tail) / total
        if not geometric:  # the neglected part is below 1e-45 of Pbar
            assert pi[-1] * q_end * rho / (1 - rho) / total <= mp.mpf(10) ** -45 * pbar
        out, acc = [], mp.mpf(0)
        for x in range(upto + 1):
            # H(x) = (Pbar - P(x)) + (pi_{x-1}/pi_x) H(x-1)
            acc = (pbar - p[x]) + (acc * pi[x - 1] / pi[x] if x else 0)
            out.append(p[x] + acc)
        return out


def _digits_lost(ratio: float, upto: int) -> int:
    return math.ceil(upto * abs(math.log10(ratio))) + 5


def _assert_close(got: np.ndarray, ref: list, rtol: float, what: str) -> None:
    for x, (g, r) in enumerate(zip(got, ref, strict=True)):
        r = float(r)
        if r == 0.0 or abs(r) < 1e-300:
            assert abs(g) <= 1e-290, (what, x, g, r)
            continue
        if math.isinf(g):
            assert r > 1.7e308, (what, x, g, r)
            continue
        assert abs(g - r) <= rtol * abs(r), (what, x, g, r, abs(g - r) / abs(r))


# -- the tests -------------------------------------------------------------------------------
X = 300  # largest x checked
ALL_ON = [(kind, on) for kind in KINDS for on in ("response", "waiting")]


@pytest.mark.parametrize(("kind", "on"), ALL_ON)
@pytest.mark.parametrize("m", [1, 3, 8])
def test_miss_probability_matches_the_definition(kind, on, m):
    mu = 0.9
    dps = 360  # the increments are differences of P within 1e-300 of 1
    ref = p_table(X + 1, m, mu, kind, on, dps)
    dl = _deadline(kind, on)
    got = miss_probability(np.arange(X + 2), m, mu, dl)
    _assert_close(got, list(ref), 1e-12, "P^miss")
    # the increments directly, relative to themselves (where P is within rounding of 1 too)
    with mp.workdps(dps):
        inc = [ref[x + 1] - ref[x] for x in range(X + 1)]
    _assert_close(miss_increments(np.arange(X + 1), m, mu, dl), inc, 1e-11, "increments")


RB_LOADS = [0.1, 0.9, 2.5, 9.0]  # lam / (m mu)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("m", [1, 3])
def test_rb_index_matches_the_definition(kind, m):
    """``(F(x+1) - F(x))/(G(x) - G(x+1))`` term by term, x = 0..300, at every load of
    ``RB_LOADS`` (far beyond capacity the definition loses ``x log10(load)`` digits, so it
    runs with that many more)."""
    mu = 1.0
    dps = 40 + _digits_lost(max(RB_LOADS), X)
    p = p_table(X + 1, m, mu, kind, "response", dps)
    for load in RB_LOADS:
        lam = load * m * mu
        ref = rb_reference(p, m, mu, lam, X, dps)
        got = rb_index(Cluster(m, mu), _deadline(kind), lam, X)
        _assert_close(got, ref, 1e-9, f"rb load {load}")


PI_LOADS = [0.1, 0.5, 0.9, 0.99, 1 - 1e-6]  # lam_k / (m mu); 1 - 1e-6 is PI's clamp


@pytest.mark.parametrize(("kind", "on"), ALL_ON)
@pytest.mark.parametrize("m", [1, 3])
def test_pi_index_matches_the_poisson_equation(kind, on, m):
    """``P(x) + sum_{y<=x} (pi_y/pi_x)(Pbar - P(y))`` with ``Pbar`` summed over the
    stationary law, x = 0..300, at every load of ``PI_LOADS`` (the head sum loses up to
    ``x log10(1/rho)`` digits at light load: it runs with that many more)."""
    mu = 1.0
    n = 700 if kind != "exponential" else X + 3  # far enough that 1 - P is negligible
    dps = 40 + _digits_lost(PI_LOADS[0], X)
    p = p_table(n, m, mu, kind, on, dps)
    for load in PI_LOADS:
        lam = load * m * mu
        ref = pi_reference(p, m, mu, lam, X, dps, kind == "exponential")
        got = pi_index(Cluster(m, mu), _deadline(kind, on), lam, X)
        # near capacity the index inherits Pbar's rounding times rho/(1-rho)
        rtol = 1e-9 if load < 0.999 else 1e-9 * max(1.0, 1e-6 / (1 - load))
        _assert_close(got, ref, rtol, f"pi load {load}")


@pytest.mark.slow
@pytest.mark.parametrize(("m", "on"), [(1, "response"), (3, "waiting")])
def test_wide_uniform_deadline_matches_the_definition(m, on):
    """A deadline uniform on [1e-3, 1e4] service times (``m mu (high - low) = 1e4 m``): the
    integrand varies on a scale far below the spread, so the quadrature needs all its 2048
    panels; the closed-form integral at 60 digits is the reference (seconds: slow)."""
    mu, lo, hi, upto = 1.0, 1e-3, 1e4, 60
    dl = Deadline.from_dict({"kind": "uniform", "low": lo, "high": hi, "on": on})
    with mp.workdps(60):
        ref = [_p_uniform(x, m, mp.mpf(mu), mp.mpf(lo), mp.mpf(hi), on) for x in range(upto + 2)]
        inc = [ref[x + 1] - ref[x] for x in range(upto + 1)]
    _assert_close(miss_probability(np.arange(upto + 2), m, mu, dl), ref, 1e-12, "P^miss")
    _assert_close(miss_increments(np.arange(upto + 1), m, mu, dl), inc, 1e-11, "increments")
