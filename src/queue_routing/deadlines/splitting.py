"""Optimal Bernoulli splitting (BS) of Niño-Mora (2012), Sec. 4.

Derivation: ``docs/deadlines.md#bernoulli-splitting``.

Choose rates ``lam_0`` (rejected) and ``lam_1..lam_n`` (jobs per unit time) with
``sum = lam`` and ``0 <= lam_k <= m_k mu_k`` minimising ``R lam_0 + sum_k f_k(lam_k)``,
where ``f_k(lam_k) = lam_k P-bar_k(lam_k)`` is cluster k's deadline-miss rate
(:func:`~queue_routing.deadlines.miss.f`). With every ``f_k`` convex the KKT conditions
say: there is a level ``alpha`` with ``f_k'(lam_k) = alpha`` on clusters in use,
``lam_k = 0`` if ``f_k'(0) >= alpha``, ``lam_k = m_k mu_k`` if ``f_k'(m_k mu_k-) <= alpha``,
and ``alpha = R`` whenever ``lam_0 > 0``. Each ``lam_k(alpha)`` is nondecreasing, so we solve
``sum_k lam_k(alpha) = lam`` by Brent's method on ``alpha`` (each ``lam_k(alpha)`` itself by
Brent's method on ``f_k' - alpha``). Pure routing (``R = None``) drops ``lam_0``.

Convexity of every ``f_k`` is checked on a grid of ``f_k'``; a failure is reported in the
result and as a :class:`ConvexityWarning` (the KKT search then need not be optimal).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .miss import f, f_prime
from .model import Instance

__all__ = ["BernoulliSplit", "ConvexityWarning", "optimal_split"]

_GRID = 41


def _brentq(*args, **kwargs):
    """:func:`scipy.optimize.brentq`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import brentq

    return brentq(*args, **kwargs)


class ConvexityWarning(UserWarning):
    """Some ``f_k'`` decreases on the check grid: ``f_k`` is not convex there (a diagnostic
    of the model, not a floating-point event: a ``UserWarning``)."""


@dataclass(frozen=True)
class BernoulliSplit:
    """Optimal Bernoulli splitting of an :class:`Instance`.

    Attributes
    ----------
    instance:
        The solved instance.
    rates:
        ``lam_1..lam_n`` routed to each cluster (jobs per unit time), shape ``(n,)``.
    rejected_rate:
        ``lam_0`` (jobs per unit time); 0 for pure routing.
    cost:
        Long-run average cost per unit time, ``R lam_0 + sum_k f_k(lam_k)``.
    alpha:
        The KKT level (cost per job): the common marginal miss rate ``f_k'(lam_k)`` of the
        clusters in use; equal to ``R`` when ``lam_0 > 0``.
    nonconvex:
        Indices (from 0) of clusters whose ``f_k`` failed the convexity check (normally
        empty); messages number the clusters from 1.
    info:
        Solver extras: ``f_prime_zero``, ``f_prime_cap`` (``f_k'(0)``, ``f_k'(m_k mu_k-)``).
    """

    instance: Instance
    rates: np.ndarray
    rejected_rate: float
    cost: float
    alpha: float
    nonconvex: tuple[int, ...] = ()
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def probabilities(self) -> np.ndarray:
        """``lam_k / lam``: routing probabilities of the BS policy, shape ``(n,)``."""
        return self.rates / self.instance.arrival_rate

    @property
    def rejection_probability(self) -> float:
        """``lam_0 / lam``."""
        return self.rejected_rate / self.instance.arrival_rate

    @property
    def saturated(self) -> np.ndarray:
        """Clusters fed at their capacity ``m_k mu_k`` (boolean, shape ``(n,)``)."""
        cap = self.instance.servers * self.instance.service_rates
        return self.rates >= cap * (1 - 1e-12)

    @property
    def unused(self) -> np.ndarray:
        """Clusters receiving no traffic (boolean, shape ``(n,)``)."""
        return self.rates <= 0.0


def _check_convexity(m: int, mu: float, deadline) -> bool:
    """``f'`` nondecreasing on a grid of ``[0, m mu]`` within the derivative's error."""
    cap = m * mu
    grid = np.linspace(0.0, cap, _GRID)
    vals = np.array([f_prime(x, m, mu, deadline, with_error=True) for x in grid])
    d, err = vals[:, 0], vals[:, 1]
    slack = 1e-9 * np.maximum(1.0, np.abs(d)) + err
    return bool(np.all(np.diff(d) >= -(slack[1:] + slack[:-1])))


_FAR = 1e6  # a rejection cost this far above every f_k'(cap) is clipped for the search
_ALPHA_FLOOR = 1e-300  # lowest level searched: marginal miss rates below it underflow


def _fill(rates: np.ndarray, caps: np.ndarray, d0: np.ndarray, residual: float, lam: float):
    """Place a residual the level search left (clusters whose ``f_k'`` is flat at the level,
    so that their rates jump from 0 to capacity there): add it to the clusters with spare
    capacity, cheapest ``f_k'(0)`` first, or take it from the dearest. In place."""
    if abs(residual) <= 1e-12 * lam:
        return
    order = np.argsort(d0, kind="stable")
    if residual > 0:
        for k in order:
            add = min(residual, caps[k] - rates[k])
            if add > 0:
                rates[k] += add
                residual -= add
    else:
        for k in order[::-1]:
            take = min(-residual, rates[k])
            if take > 0:
                rates[k] -= take
                residual += take


def optimal_split(instance: Instance, *, check_convexity: bool = True) -> BernoulliSplit:
    """Solve the BS problem of ``instance`` by the monotone KKT search on ``alpha``.

    The level is found to a relative 1e-13 and each rate to ``1e-13 m_k mu_k``; the final
    rates are then adjusted (on one unsaturated cluster in use) so that they sum exactly to
    ``lam - lam_0``. The cost is first-order insensitive to the residual error in ``alpha``.

    Two identical clusters share the stream equally; a rejection cost below every cluster's
    ``f_k'(0) = P_k^miss(0)`` (here ``e^{-mu t} = e^{-1.5}``, about 0.22) rejects every job:

    >>> from queue_routing.deadlines import Instance
    >>> data = {"arrival_rate": 1.5, "servers": [2, 2], "service_rates": [1.0, 1.0],
    ...         "rejection_cost": None, "deadline": {"kind": "constant", "t": 1.5}}
    >>> split = optimal_split(Instance.from_dict(data))
    >>> split.rates.round(9).tolist(), split.rejected_rate
    ([0.75, 0.75], 0.0)
    >>> split = optimal_split(Instance.from_dict({**data, "rejection_cost": 0.2}))
    >>> split.rejected_rate, split.cost == 0.2 * 1.5, split.rates.tolist()
    (1.5, True, [0.0, 0.0])
    """
    lam = instance.arrival_rate
    big_r = instance.rejection_cost
    dl = instance.deadline
    ms = [int(m) for m in instance.servers]
    mus = [float(mu) for mu in instance.service_rates]
    caps = np.array([m * mu for m, mu in zip(ms, mus, strict=True)])
    n = len(ms)

    d0 = np.array([f_prime(0.0, m, mu, dl) for m, mu in zip(ms, mus, strict=True)])
    dcap = np.array([f_prime(c, m, mu, dl) for c, m, mu in zip(caps, ms, mus, strict=True)])

    nonconvex: tuple[int, ...] = ()
    if check_convexity:
        nonconvex = tuple(k for k in range(n) if not _check_convexity(ms[k], mus[k], dl))
        if nonconvex:
            numbers = [k + 1 for k in nonconvex]
            warnings.warn(
                f"f_k is not convex for cluster(s) {numbers}: the KKT level search "
                "may not return the optimal Bernoulli splitting",
                ConvexityWarning,
                stacklevel=2,
            )

    def rate(k: int, alpha: float) -> float:
        if alpha <= d0[k]:
            return 0.0
        if alpha >= dcap[k]:
            return float(caps[k])
        return _brentq(
            lambda x: f_prime(x, ms[k], mus[k], dl) - alpha,
            0.0,
            float(caps[k]),
            xtol=1e-13 * caps[k],
            rtol=1e-14,
        )

    def rates_at(alpha: float) -> np.ndarray:
        return np.array([rate(k, alpha) for k in range(n)])

    def excess(alpha: float) -> float:
        return float(rates_at(alpha).sum()) - lam

    rejected = 0.0
    lo = float(d0.min())
    if big_r is not None and excess(big_r) <= 0.0:
        alpha = float(big_r)
        rates = rates_at(alpha)
        rejected = lam - float(rates.sum())
    else:
        top = float(dcap.max())  # at alpha >= max f'(cap) every cluster is saturated
        hi = top if big_r is None else float(big_r)
        if big_r is not None and big_r > _FAR * max(1.0, top):
            hi = top  # keep the bracket (and brentq's tolerance, relative to it) meaningful
        # the level is searched in log space to a relative 1e-14: with long deadlines the
        # marginal miss rates are astronomically small (e^{-(m mu - lam) t}), and a search
        # to an absolute tolerance would stop at a level far above them (a split orders of
        # magnitude worse than the optimum); below 1e-300 (f' underflows) it stops there
        lo = max(lo, _ALPHA_FLOOR)

        def log_excess(u: float) -> float:
            return excess(math.exp(u))

        if excess(lo) >= 0.0 or not hi > lo:  # lam > 0: at min f'(0) every rate is 0
            alpha = lo if excess(lo) >= 0.0 else hi
        elif log_excess(math.log(lo)) >= 0.0:
            # exp(log(lo)) exceeds lo by an ulp, and where a cluster's f' is flat from 0 (a
            # marginal miss rate constant to 16 digits, e.g. e^{-113} over half its capacity)
            # that ulp already routes more than lam to it: the level is lo itself, and the
            # fill below sends the rest to the clusters of lowest f'(0)
            alpha = lo
        elif log_excess(math.log(hi)) <= 0.0:  # the same at the top, by symmetry
            alpha = hi
        else:
            s = _brentq(log_excess, math.log(lo), math.log(hi), xtol=1e-14, rtol=1e-15)
            alpha = min(max(math.exp(s), lo), hi)
        rates = rates_at(alpha)
        residual = lam - float(rates.sum())
        interior = np.flatnonzero((rates > 0) & (rates < caps))
        if interior.size:
            k = interior[np.argmax(rates[interior])]
            rates[k] = float(np.clip(rates[k] + residual, 0.0, caps[k]))
        _fill(rates, caps, d0, lam - float(rates.sum()), lam)
    cost = (0.0 if big_r is None else big_r * rejected) + sum(
        f(float(rates[k]), ms[k], mus[k], dl) for k in range(n)
    )
    rates.setflags(write=False)
    return BernoulliSplit(
        instance=instance,
        rates=rates,
        rejected_rate=float(rejected),
        cost=float(cost),
        alpha=float(alpha),
        nonconvex=nonconvex,
        info={"f_prime_zero": d0, "f_prime_cap": dcap},
    )
