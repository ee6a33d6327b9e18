"""Index functions of Niño-Mora (2012), Sec. 5 (``docs/deadlines.md#index-policies``).

The formulas of one cluster; the index table of a whole instance is
:func:`~queue_routing.deadlines.policies.index_table`. Each function returns ``nu(0..X)``
for one cluster (``m`` servers of rate ``mu`` jobs per
unit time per server, FCFS), where ``nu(x)`` is the index of routing a new job to the
cluster when it holds ``x`` jobs. An index policy rejects iff ``min_k nu_k(x_k) >= R`` and
otherwise routes to a cluster of smallest index, ties to the lowest ``k`` (as
:func:`~queue_routing.deadlines.simulation.simulate` does).

* **IO**: ``nu(x) = P^miss(x)``.
* **PI** (one policy-improvement step from Bernoulli splitting): ``nu(x) = P(x) + Delta(x)``
  with ``Delta(x) = h(x+1) - h(x)`` the relative-value increments of the M/M/m queue at rate
  ``lam_k`` with cost ``lam_k P(x)`` per unit time in state ``x``. Multiplying the Poisson
  equation ``lam Delta(x) = g - lam P(x) + mu_x Delta(x-1)`` (``mu_x = mu min(x, m)``) by
  ``pi_x`` and using ``mu_x pi_x = lam pi_{x-1}`` telescopes to

      ``Delta(x) = sum_{y <= x} (pi_y/pi_x) (Pbar - P(y))
                 = sum_{y > x} (pi_y/pi_x) (P(y) - Pbar)``,  ``Pbar = g/lam``,

  (the two agree because ``sum_y pi_y (P(y) - Pbar) = 0``). ``P`` is nondecreasing, so the
  head form sums nonnegative terms when ``P(x) <= Pbar`` and the tail form when
  ``P(x) > Pbar``: we use the head form (the forward recursion of
  ``docs/deadlines.md#pi-index``, which is stable there) below the crossing and the tail
  form, as the backward recursion ``T(x) = (lam/mu_{x+1}) (P(x+1) - Pbar + T(x+1))`` started
  deep in the geometric tail, above it. The forward recursion applied beyond the crossing is
  what explodes.
* **RB** (restless-bandit marginal productivity index): with weights
  ``w_x = prod_{y=1}^x r_{y-1}``, ``r_y = lam/mu_{y+1}`` (``r`` nonincreasing), the
  M/M/m/z chain has ``F(z) = lam sum_{x<z} w_x P(x) / W_z``, ``G(z) = lam w_z / W_z``,
  ``W_z = sum_{x<=z} w_x``, and ``(F(x+1) - F(x))/(G(x) - G(x+1))`` simplifies to

      ``nu(x) = [w_0 P(x) + sum_{y<x} w_y (r_y (P(x) - P(y)) + P(y) (r_y - r_x))]
               / [w_0 + sum_{y<x} w_y (r_y - r_x)]
             = P(x) + r_x N(x) / D(x)``,

  with ``N(x) = sum_{y<x} w_y (P(x) - P(y))`` and ``D(x) = w_0 + sum_{y<x} w_y (r_y - r_x)``.
  Both obey recursions of nonnegative terms, ``N(x+1) = N(x) + W_x delta(x)`` and
  ``D(x+1) = D(x) + W_x (r_x - r_{x+1})`` with ``delta(x) = P(x+1) - P(x)``
  (:func:`~queue_routing.deadlines.miss.miss_increments`, computed directly, so that it
  keeps its relative accuracy where ``P`` is within rounding of 1), which makes the index
  ``O(upto)`` with no cancellation at any load. ``W``, ``N`` and ``D`` range far beyond the
  doubles (``w_x`` grows like ``(lam/(m mu))^x``), so the recursion carries them as a
  mantissa and a binary exponent; an index beyond the largest double is ``+inf`` (it still
  orders correctly: above every finite index and every rejection cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import gammainc

from ..checks import show
from ..errors import AccuracyError
from .miss import (
    check_levels,
    log_miss_increments,
    log_miss_probability,
    miss_probability,
    pbar_excess,
    steady_state_miss,
)
from .model import Cluster, Deadline, InstanceError

__all__ = [
    "MAX_UPTO",
    "UNDERFLOW",
    "IndexabilityCheck",
    "IndexabilityWarning",
    "check_indexable",
    "io_index",
    "io_log_index",
    "pi_increments",
    "pi_index",
    "rb_index",
    "rb_log_index",
]

#: Largest ``upto`` (number of jobs in one cluster) of the index functions: 100 000 jobs
#: queued at one cluster is beyond any study of the model, and it bounds time and memory.
MAX_UPTO = 100_000

_TAIL_EPS = 1e-18  # neglected geometric tail mass (relative) when starting the PI recursion
_MAX_TAIL = 2_000_000
_RHO_TAIL = 100_000  # beyond this many levels of geometric decay, use the deadline's decay
_MONO_RTOL = 1e-12
#: Index values below this (underflowing, or subnormal with few digits) are ordered by their
#: logarithms (:func:`io_log_index`, :func:`rb_log_index`) when a policy compares them.
UNDERFLOW = 1e-290


class IndexabilityWarning(UserWarning):
    """An index that is not nondecreasing in ``x`` on the computed range (a property of the
    model, not a floating-point event: a ``UserWarning``)."""


def _levels(upto: int) -> np.ndarray:
    if (
        isinstance(upto, bool | np.bool_)
        or not isinstance(upto, int | np.integer)
        or not 0 <= upto <= MAX_UPTO
    ):
        raise InstanceError(f"upto must be an integer in 0..{MAX_UPTO}, got {show(upto)}")
    return np.arange(int(upto) + 1)


def _check_arguments(cluster: Cluster, deadline: Deadline) -> None:
    if not isinstance(cluster, Cluster):
        raise InstanceError(f"cluster must be a Cluster, got {type(cluster).__name__}")
    if not isinstance(deadline, Deadline):
        raise InstanceError(f"deadline must be a Deadline, got {type(deadline).__name__}")


def _check_rate(name: str, value, *, low_open: float = 0.0) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise InstanceError(f"{name} must be a number, got {show(value)}")
    v = float(value)
    if not math.isfinite(v) or v < low_open:
        raise InstanceError(f"{name} must be finite and >= {low_open:g}, got {show(value)}")
    return v


def _service(x: np.ndarray, cluster: Cluster) -> np.ndarray:
    """``mu_x = mu min(x, m)``, total service rate (jobs per unit time) in state ``x``."""
    return cluster.rate * np.minimum(x, cluster.servers).astype(float)


def io_index(cluster: Cluster, deadline: Deadline, upto: int) -> np.ndarray:
    """IO index ``nu(x) = P^miss(x)``, ``x = 0..upto`` (probabilities).

    At one server of rate 2 a job finding ``x`` jobs has an ``Erlang(x + 1, 2)`` response
    time, so it misses an ``Exp(1)`` deadline with probability ``1 - (2/3)^(x+1)``:

    >>> from queue_routing.deadlines import Cluster, Deadline
    >>> nu = io_index(Cluster(1, 2.0), Deadline("exponential", mean=1.0), 2)
    >>> bool(np.allclose(nu, [1 - (2 / 3) ** (x + 1) for x in range(3)], rtol=1e-14))
    True
    """
    _check_arguments(cluster, deadline)
    x = _levels(upto)
    return np.asarray(miss_probability(x, cluster.servers, cluster.rate, deadline), dtype=float)


def _tail_levels(cluster: Cluster, deadline: Deadline, rho: float, pbar: float, upto: int) -> int:
    """Levels beyond ``upto`` at which the backward PI recursion starts (constant and
    uniform deadlines), started at its lower bound ``rho/(1-rho) (P(N+1) - Pbar)``.

    Its relative error at every ``x <= upto`` is at most that at the start ``N``, itself at
    most ``min(rho^(N-upto) / ((1-rho) Pbar), Q(N+1) / (1 - Pbar - Q(N+1)))`` with
    ``Q = 1 - P``. Normally ``N - upto`` makes ``rho^(N-upto) <= 1e-18``; when that needs
    more than 100 000 levels (load near 1), ``N`` is instead where ``Q(N+1) <= 1e-18 (1 -
    Pbar)``, bounded by ``P(W(N+1) <= t_max) = P(Pois(m mu t_max) >= N - m + 2)``.
    """
    m, mu = cluster.servers, cluster.rate
    extra = max(m + 1, math.ceil(math.log(_TAIL_EPS) / math.log(rho)))
    if extra <= _RHO_TAIL:
        return extra
    qbar = 1.0 - pbar
    t_max = float(deadline.t) if deadline.kind == "constant" else float(deadline.high)
    a = m * mu * t_max
    if qbar <= 0.0:
        return m + 1
    target = _TAIL_EPS * qbar

    def small(j: int) -> bool:
        return bool(gammainc(float(j), a) <= target)

    lo, hi = max(1, math.floor(a)), max(2, math.ceil(a) + 1)
    while not small(hi):
        lo, hi = hi, 2 * hi
        if hi > 4 * (_MAX_TAIL + upto + m + a):
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if small(mid) else (mid, hi)
    extra_q = max(m + 1, hi + m - 2 - upto)
    extra = min(extra, extra_q)
    if extra > _MAX_TAIL:
        raise AccuracyError(
            f"pi: the relative values of a cluster at load {rho:.9g} with m mu t = {a:.3g} need "
            f"{extra:.3g} levels beyond x = {upto}, more than {_MAX_TAIL}"
        )
    return extra


def pi_increments(cluster: Cluster, deadline: Deadline, lam_k: float, upto: int) -> np.ndarray:
    """``Delta(x) = h(x+1) - h(x)``, ``x = 0..upto``, of the M/M/m queue at rate ``lam_k``
    (cost per job, i.e. units of the miss cost) with cost rate ``lam_k P(x)``.

    Needs ``0 < lam_k < m mu``. Head form (nonnegative terms, forward) where
    ``P(x) <= Pbar`` (always for ``x < m``, where ``Pbar - P(x)`` is the queueing excess of
    ``Pbar``, computed without cancellation), tail form above: for exponential deadlines in
    closed form (``Q = 1 - P`` is geometric with ratio ``q = m mu/(m mu + theta)`` from
    ``x = m - 1`` on, so ``T(x) = rho Q(x)(1-q)/((1-rho)(1-rho q)) + rho (P(x) - Pbar)/(1 -
    rho)``), otherwise backward from a level ``N`` chosen by :func:`_tail_levels`, started at
    its lower bound ``rho/(1-rho) (P(N+1)-Pbar)``.
    """
    _check_arguments(cluster, deadline)
    m, mu = cluster.servers, cluster.rate
    lam = _check_rate("lam_k", lam_k)
    if not (0.0 < lam < m * mu):
        raise InstanceError(f"lam_k = {lam:g} must lie in (0, m mu = {m * mu:g})")
    x = _levels(upto)
    upto = int(upto)
    rho = lam / (m * mu)
    pbar = steady_state_miss(m, mu, lam, deadline)
    excess = pbar_excess(m, mu, lam, deadline)  # Pbar - P(y) for every y < m
    need_tail = upto >= m
    big = upto
    if need_tail and deadline.kind != "exponential":
        big = upto + _tail_levels(cluster, deadline, rho, pbar, upto)
    p = np.asarray(miss_probability(np.arange(big + 2), m, mu, deadline), dtype=float)
    d = p - pbar  # P(y) - Pbar, nondecreasing in y
    service = _service(np.arange(big + 2), cluster)
    # head form, forward: H(x) = (Pbar - P(x)) + (mu_x/lam) H(x-1), nonnegative terms
    # up to the crossing only: beyond it the forward recursion explodes (and overflows)
    head = np.zeros(upto + 1)
    prev = 0.0
    cross = upto + 1  # first level of the tail form
    for y in range(upto + 1):
        if y >= m and d[y] > 0.0:
            cross = y
            break
        minus_d = excess if y < m else -d[y]
        prev = minus_d + (service[y] / lam) * prev
        head[y] = prev
    if not need_tail:
        return head
    # the tail form from the crossing on (also where rounding makes d dip to 0 again)
    use_tail = x >= cross
    if deadline.kind == "exponential":
        theta = 1.0 / deadline.mean
        one_q = theta / (m * mu + theta)  # 1 - q
        j = np.maximum(x - m + 1, 0).astype(float)
        with np.errstate(under="ignore"):
            hit = np.exp(-j * math.log1p(theta / (m * mu)))  # Q(x) = q^j (waiting)
        if deadline.on == "response":
            hit = hit * (mu / (mu + theta))
        one_rho_q = (1.0 - rho) + rho * one_q  # 1 - rho q without cancellation
        head_part = rho * hit * one_q / ((1.0 - rho) * one_rho_q)
        tail = head_part + rho * np.maximum(d[x], 0.0) / (1.0 - rho)
        return np.where(use_tail, tail, head)
    ratio = lam / service[1:]  # pi_{y+1}/pi_y, y = 0..big
    # tail form, backward: T(y) = ratio[y] (d[y+1] + T(y+1)), T(big) ~ geometric tail
    tail = np.empty(big + 1)
    tail[big] = rho / (1.0 - rho) * max(d[big + 1], 0.0)
    for y in range(big - 1, -1, -1):
        tail[y] = ratio[y] * (d[y + 1] + tail[y + 1])
    return np.where(use_tail, tail[x], head)


def pi_index(cluster: Cluster, deadline: Deadline, lam_k: float, upto: int) -> np.ndarray:
    """PI index ``nu(x) = P(x) + Delta(x)``, ``x = 0..upto`` (cost per job).

    ``lam_k`` is the Bernoulli-splitting rate of the cluster (jobs per unit time); with
    ``lam_k = 0`` the index is IO's. Note ``nu(0) = Pbar(lam_k)``. Needs ``lam_k < m mu``
    (a saturated cluster has no relative values).

    The index starts at the stationary miss probability and, unlike IO's, keeps growing once
    every server is busy (here ``m = 3``):

    >>> from queue_routing.deadlines import Cluster, Deadline, io_index, steady_state_miss
    >>> c, dl = Cluster(3, 1.0), Deadline("constant", t=1.5)
    >>> nu = pi_index(c, dl, 2.4, 3)
    >>> bool(abs(nu[0] - steady_state_miss(3, 1.0, 2.4, dl)) < 1e-12)
    True
    >>> bool(check_indexable(nu).indexable and (nu > io_index(c, dl, 3)).all())
    True
    """
    if _check_rate("lam_k", lam_k) == 0.0:
        return io_index(cluster, deadline, upto)
    p = io_index(cluster, deadline, upto)
    return p + pi_increments(cluster, deadline, lam_k, upto)


@njit(cache=True)
def _xnorm(f, e):  # pragma: no cover - compiled
    """``f 2^e`` with the mantissa in ``[0.5, 1)`` (or zero)."""
    if f == 0.0:
        return 0.0, 0
    mf, me = math.frexp(f)
    return mf, e + me


@njit(cache=True)
def _xadd(af, ae, bf, be):  # pragma: no cover - compiled
    """``a + b`` for nonnegative extended numbers ``(mantissa, binary exponent)``."""
    if af == 0.0:
        return bf, be
    if bf == 0.0:
        return af, ae
    if ae >= be:
        return _xnorm(af + math.ldexp(bf, max(be - ae, -2000)), ae)
    return _xnorm(bf + math.ldexp(af, max(ae - be, -2000)), be)


@njit(cache=True)
def _xmul_log(af, ae, logc):  # pragma: no cover - compiled
    """``a * exp(logc)`` for any finite ``logc`` (far below the smallest double too)."""
    ec = math.floor(logc / math.log(2.0))
    fc = math.exp(logc - ec * math.log(2.0))
    return _xnorm(af * fc, ae + int(ec))


@njit(cache=True)
def _rb_kernel(p, logp, logdelta, r, dr):  # pragma: no cover - compiled
    """``nu(x) = P(x) + r_x N(x)/D(x)`` and ``log nu(x)``, ``x = 0..X``, by the recursions of
    the module docstring with ``W``, ``w``, ``N``, ``D`` as (mantissa, binary exponent) pairs.

    ``p[x] = P(x)``, ``logp[x] = log P(x)``, ``logdelta[x] = log(P(x+1) - P(x))`` (``-inf``
    for 0), ``r[x] = lam/mu_{x+1}`` and ``dr[x] = r_x - r_{x+1} >= 0``. ``log nu`` stays
    finite where ``nu`` underflows (it orders such indices)."""
    size = p.size
    nu = np.empty(size)
    lognu = np.empty(size)
    ln2 = math.log(2.0)
    wf, we = 0.5, 1  # w_0 = 1
    bf, be = 0.5, 1  # W_0 = 1
    nf, ne = 0.0, 0  # N(0) = 0
    df, de = 0.5, 1  # D(0) = 1
    for x in range(size):
        if nf == 0.0:
            nu[x] = p[x]
            lognu[x] = logp[x]
        else:
            nu[x] = p[x] + math.ldexp(nf / df * r[x], max(min(ne - de, 5000), -5000))
            lt = math.log(nf / df * r[x]) + (ne - de) * ln2
            hi, lo = max(lt, logp[x]), min(lt, logp[x])
            lognu[x] = hi if lo == -np.inf else hi + math.log1p(math.exp(lo - hi))
        if x == size - 1:
            break
        if logdelta[x] > -np.inf:
            tf, te = _xmul_log(bf, be, logdelta[x])
            nf, ne = _xadd(nf, ne, tf, te)
        if dr[x] > 0.0:
            tf, te = _xnorm(bf * dr[x], be)
            df, de = _xadd(df, de, tf, te)
        wf, we = _xnorm(wf * r[x], we)
        bf, be = _xadd(bf, be, wf, we)
    return nu, lognu


def rb_index(cluster: Cluster, deadline: Deadline, lam: float, upto: int) -> np.ndarray:
    """RB marginal productivity index ``nu(x)``, ``x = 0..upto`` (cost per rejected job).

    ``lam`` is the whole arrival stream (jobs per unit time), any value ``> 0`` (also above
    ``m mu``). Evaluated in ``O(upto)`` by recursions of nonnegative terms in extended range
    (module docstring); accurate to ~1e-13 relative wherever ``P^miss`` and its increments
    are, at any load; values beyond the largest double are ``+inf``. Indexability is not
    checked here: see :func:`check_indexable`.

    With no queue ahead the index is the miss probability (``nu(0) = P^miss(0)``); it stays
    finite and nondecreasing far beyond capacity (here ``lam = 2 m mu``):

    >>> from queue_routing.deadlines import Cluster, Deadline, io_index
    >>> c, dl = Cluster(3, 1.0), Deadline("constant", t=1.5)
    >>> nu = rb_index(c, dl, 6.0, 200)
    >>> bool(nu[0] == io_index(c, dl, 0)[0]), check_indexable(nu).indexable
    (True, True)
    >>> bool(abs(nu[200] / nu[100] - 1) < 1e-9)  # converges geometrically
    True
    """
    return _rb_index_and_log(cluster, deadline, lam, upto)[0]


def _log_of(p: np.ndarray, cluster: Cluster, deadline: Deadline) -> np.ndarray:
    """``log P^miss(x)`` for ``p = P^miss(0..X)``: ``log p`` where ``p`` is a normal double
    of full accuracy (``>= UNDERFLOW``), the log-space evaluation below."""
    with np.errstate(divide="ignore"):
        out = np.log(p)
    low = np.flatnonzero(p < UNDERFLOW)
    if low.size:
        out[low] = log_miss_probability(low, cluster.servers, cluster.rate, deadline)
    return out


def io_log_index(cluster: Cluster, deadline: Deadline, upto: int) -> np.ndarray:
    """``log nu(x) = log P^miss(x)``, ``x = 0..upto`` (``-inf`` where ``P^miss = 0``): finite
    where :func:`io_index` underflows, so that it orders those indices."""
    _check_arguments(cluster, deadline)
    return _log_of(io_index(cluster, deadline, upto), cluster, deadline)


def rb_log_index(cluster: Cluster, deadline: Deadline, lam: float, upto: int) -> np.ndarray:
    """``log nu(x)`` of :func:`rb_index` (``-inf`` where ``nu = 0``), finite where ``nu``
    underflows, so that it orders those indices."""
    return _rb_index_and_log(cluster, deadline, lam, upto)[1]


def _rb_index_and_log(cluster: Cluster, deadline: Deadline, lam: float, upto: int):
    _check_arguments(cluster, deadline)
    lam = _check_rate("lam", lam)
    if not lam > 0:
        raise InstanceError(f"lam must be finite and > 0, got {show(lam)}")
    x = _levels(upto)
    m, mu = cluster.servers, cluster.rate
    p = io_index(cluster, deadline, upto)
    logp = _log_of(p, cluster, deadline)
    _, flat = check_levels(x[:-1])
    logdelta = log_miss_increments(flat, m, mu, deadline)
    k = np.minimum(x + 1, m).astype(float)  # mu_{x+1} / mu
    r = lam / (mu * k)  # r_x = lam / mu_{x+1}
    # r_x - r_{x+1} = lam/(mu (x+1)(x+2)) while x + 2 <= m, else 0 (no cancellation)
    xs = x[:-1].astype(float)
    dr = np.where(xs + 2 <= m, lam / (mu * (xs + 1.0) * (xs + 2.0)), 0.0)
    return _rb_kernel(p, logp, logdelta, r, dr)


@dataclass(frozen=True)
class IndexabilityCheck:
    """Numerical indexability check: ``nu`` nondecreasing within a relative ``1e-12``.

    Attributes
    ----------
    indexable:
        True iff no decrease larger than the tolerance was found.
    violations:
        The ``x`` with ``nu(x+1) < nu(x)`` beyond the tolerance.
    max_drop:
        Largest ``nu(x) - nu(x+1)`` (0 if none).
    """

    indexable: bool
    violations: tuple[int, ...]
    max_drop: float


def check_indexable(nu: np.ndarray, rtol: float = _MONO_RTOL) -> IndexabilityCheck:
    """Check that the index ``nu(0..X)`` is nondecreasing (``nu(x+1) >= nu(x) - rtol |nu(x)|``)."""
    nu = np.asarray(nu, dtype=float)
    with np.errstate(invalid="ignore"):  # inf - inf (an index beyond the doubles): no drop
        drop = np.nan_to_num(nu[:-1] - nu[1:], nan=0.0, posinf=np.inf, neginf=-np.inf)
        bad = np.flatnonzero(drop > rtol * np.maximum(1.0, np.abs(nu[:-1])))
    return IndexabilityCheck(
        indexable=bad.size == 0,
        violations=tuple(int(i) for i in bad),
        max_drop=float(max(drop.max(initial=0.0), 0.0)),
    )
