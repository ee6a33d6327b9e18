"""Index functions of Niño-Mora (2012), Sec. 5 (``shared/spec/deadlines.md``, "Index policies").

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
  ``P(x) > Pbar``: we use the head form (the spec's forward recursion, which is stable
  there) below the crossing and the tail form, as the backward recursion
  ``T(x) = (lam/mu_{x+1}) (P(x+1) - Pbar + T(x+1))`` started deep in the geometric tail,
  above it. The spec's forward recursion applied beyond the crossing is what explodes.
* **RB** (restless-bandit marginal productivity index): with weights
  ``w_x = prod_{y=1}^x r_{y-1}``, ``r_y = lam/mu_{y+1}`` (``r`` nonincreasing), the
  M/M/m/z chain has ``F(z) = lam sum_{x<z} w_x P(x) / W_z``, ``G(z) = lam w_z / W_z``,
  ``W_z = sum_{x<=z} w_x``, and ``(F(x+1) - F(x))/(G(x) - G(x+1))`` simplifies to

      ``nu(x) = [w_0 P(x) + sum_{y<x} w_y (r_y (P(x) - P(y)) + P(y) (r_y - r_x))]
               / [w_0 + sum_{y<x} w_y (r_y - r_x)]``,

  a ratio of sums of nonnegative terms (no cancellation even when ``lam > m mu``). The
  weights are scaled by ``max_{y<=x} w_y`` (log space) so nothing overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .miss import miss_probability, steady_state_miss
from .model import Cluster, Deadline

__all__ = [
    "IndexabilityCheck",
    "IndexabilityWarning",
    "check_indexable",
    "io_index",
    "pi_increments",
    "pi_index",
    "rb_index",
]

_TAIL_EPS = 1e-18  # neglected geometric tail mass (relative) when starting the PI recursion
_MAX_TAIL = 2_000_000
_MONO_RTOL = 1e-12


class IndexabilityWarning(RuntimeWarning):
    """An RB index that is not nondecreasing in ``x`` on the computed range."""


def _levels(upto: int) -> np.ndarray:
    if isinstance(upto, bool) or int(upto) != upto or upto < 0:
        raise ValueError(f"upto must be an integer >= 0, got {upto!r}")
    return np.arange(int(upto) + 1)


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
    x = _levels(upto)
    return np.asarray(miss_probability(x, cluster.servers, cluster.rate, deadline), dtype=float)


def pi_increments(cluster: Cluster, deadline: Deadline, lam_k: float, upto: int) -> np.ndarray:
    """``Delta(x) = h(x+1) - h(x)``, ``x = 0..upto``, of the M/M/m queue at rate ``lam_k``
    (cost per job, i.e. units of the miss cost) with cost rate ``lam_k P(x)``.

    Needs ``0 < lam_k < m mu``. Head form (nonnegative terms, forward) where
    ``P(x) <= Pbar``, tail form (nonnegative terms, backward from ``N`` with
    ``rho^(N-upto) <= 1e-18``, started at its lower bound ``rho/(1-rho) (P(N+1)-Pbar)``) above.
    """
    m, mu = cluster.servers, cluster.rate
    lam = float(lam_k)
    if not (0.0 < lam < m * mu):
        raise ValueError(f"lam_k = {lam:g} must lie in (0, m mu = {m * mu:g})")
    x = _levels(upto)
    rho = lam / (m * mu)
    extra = min(_MAX_TAIL, max(m + 1, math.ceil(math.log(_TAIL_EPS) / math.log(rho))))
    big = int(upto) + extra
    p = np.asarray(miss_probability(np.arange(big + 2), m, mu, deadline), dtype=float)
    pbar = steady_state_miss(m, mu, lam, deadline)
    d = p - pbar  # P(y) - Pbar, nondecreasing in y
    ratio = lam / _service(np.arange(1, big + 2), cluster)  # pi_{y+1}/pi_y, y = 0..big
    # tail form, backward: T(y) = ratio[y] (d[y+1] + T(y+1)), T(big) ~ geometric tail
    tail = np.empty(big + 1)
    tail[big] = rho / (1.0 - rho) * max(d[big + 1], 0.0)
    for y in range(big - 1, -1, -1):
        tail[y] = ratio[y] * (d[y + 1] + tail[y + 1])
    # head form, forward: H(x) = -d[x] + (mu_x/lam) H(x-1), exact nonnegative sums below
    head = np.empty(int(upto) + 1)
    prev = 0.0
    for y in range(int(upto) + 1):
        prev = -d[y] + (_service(np.array([y]), cluster)[0] / lam) * prev
        head[y] = prev
    out = np.where(d[x] <= 0.0, head, tail[x])
    return out


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
    if float(lam_k) == 0.0:
        return io_index(cluster, deadline, upto)
    p = io_index(cluster, deadline, upto)
    return p + pi_increments(cluster, deadline, lam_k, upto)


def rb_index(cluster: Cluster, deadline: Deadline, lam: float, upto: int) -> np.ndarray:
    """RB marginal productivity index ``nu(x)``, ``x = 0..upto`` (cost per rejected job).

    ``lam`` is the whole arrival stream (jobs per unit time), any value ``> 0`` (also above
    ``m mu``). Evaluated as a ratio of nonnegative sums (module docstring), ``O(upto^2)``.
    Indexability is not checked here: see :func:`check_indexable`.

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
    lam = float(lam)
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be finite and > 0, got {lam!r}")
    x = _levels(upto)
    p = io_index(cluster, deadline, upto)
    r = lam / _service(x + 1, cluster)  # r_y = lam / mu_{y+1}, y = 0..upto
    logw = np.concatenate([[0.0], np.cumsum(np.log(r[:-1]))])  # log w_y, w_0 = 1
    nu = np.empty(x.size)
    for i in range(x.size):
        lw = logw[: i + 1]
        w = np.exp(lw - lw.max())  # w_y / max w, y = 0..i
        wy, ry, py = w[:i], r[:i], p[:i]
        num = w[0] * p[i] + np.sum(wy * (ry * (p[i] - py) + py * (ry - r[i])))
        den = w[0] + np.sum(wy * (ry - r[i]))
        nu[i] = num / den
    return nu


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
    drop = nu[:-1] - nu[1:]
    bad = np.flatnonzero(drop > rtol * np.maximum(1.0, np.abs(nu[:-1])))
    return IndexabilityCheck(
        indexable=bad.size == 0,
        violations=tuple(int(i) for i in bad),
        max_drop=float(max(drop.max(initial=0.0), 0.0)),
    )
