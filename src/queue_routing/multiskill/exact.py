"""Exact solution of LOAD-OPT (ours; the reference every other solver is tested against).

For a fixed spare capacity ``s = 1 - rho_0`` of server 0 the optimal dedicated loads are
``rho_j(s) = clip(1 - delta_j s, 0, eta_j/mu_j)`` (Proposition 2 with the corrected delta), and
the flow-conservation residual (constraint (7))

    H(s) = mu_0 (1 - s) + sum_j mu_j rho_j(s) - sum_i eta_i

is continuous, piecewise linear and strictly decreasing in ``s``, with one linear piece per
partition (C_d, C_b, C_0): every class moves monotonically C_0 -> C_b -> C_d as ``s`` falls.
The root of the piece of partition P is equation (10) of the paper. We find the root of H by
a safeguarded Newton iteration on pieces: starting from the root of the all-C_b piece,
``s <- (10)(P(s))`` while it stays inside the current bracket, bisection otherwise. It stops
when the piece's own root lies in that piece, which makes the answer exact up to rounding
(no tolerance to tune). Each step is O(C); 2-6 passes suffice on the paper's instances
(C = 10..200) and bisection bounds the worst case.

The kernel is compiled with numba and loops over a batch of instances.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .model import Instance, Partition, UnstableInstanceError, stability_margin
from .result import Solution

__all__ = ["solve_exact", "solve_exact_batch"]

_MAX_STEPS = 200


@njit(cache=True)
def _spare_capacity(mu, dlt, eta, s_enter, s_leave):  # pragma: no cover - compiled
    """Root s* in [0, 1] of H(s) for one instance; returns (s*, passes over the classes).

    Class i is in C_0 for ``s >= s_leave[i] = 1/delta_i``, in C_b for
    ``s_enter[i] < s < s_leave[i]`` with ``s_enter[i] = (1 - eta_i/mu_i)/delta_i``, and in C_d
    for ``s <= s_enter[i]`` (Proposition 2). Each pass computes H(s), the sums of equation
    (10) for the partition P(s) and the interval [p_lo, p_hi] on which P(s) holds; when the
    piece's own root lies in that interval it is the answer.
    """
    n = eta.size
    mu0 = mu[0]
    total = 0.0
    num0 = mu0
    den0 = mu0
    for i in range(n):
        total += eta[i]
        num0 += mu[i + 1] - eta[i]
        den0 += dlt[i] * mu[i + 1]
    lo, hi = 0.0, 1.0  # H(lo) > 0 >= H(hi) for a stable instance
    # Start at the root of the all-C_b piece (clipped into the bracket).
    s = min(max(num0 / den0, 0.0), 1.0)
    for step in range(1, _MAX_STEPS + 1):
        h = mu0 * (1.0 - s) - total
        num = mu0  # mu_0 + sum_{C_b} mu_j - sum_{C_b u C_0} eta_j
        den = mu0  # mu_0 + sum_{C_b} delta_j mu_j
        p_lo, p_hi = 0.0, 1.0
        for i in range(n):
            if s >= s_leave[i]:  # C_0
                num -= eta[i]
                p_lo = max(p_lo, s_leave[i])
            elif s > s_enter[i]:  # C_b
                h += mu[i + 1] * (1.0 - dlt[i] * s)
                num += mu[i + 1] - eta[i]
                den += dlt[i] * mu[i + 1]
                p_lo = max(p_lo, s_enter[i])
                p_hi = min(p_hi, s_leave[i])
            else:  # C_d
                h += eta[i]
                p_hi = min(p_hi, s_enter[i])
        if h >= 0.0 and s == 1.0:
            return 1.0, step  # H(1) = 0: no sharing is optimal, rho_0 = 0
        if h > 0.0:
            lo = s
        else:
            hi = s
        s_new = num / den  # root of the linear piece through s (equation (10))
        if p_lo <= s_new <= p_hi or s_new == s:
            return s_new, step
        if not (lo < s_new < hi):
            s_new = 0.5 * (lo + hi)
            if s_new == lo or s_new == hi:
                return s, step
        s = s_new
    return s, _MAX_STEPS


@njit(cache=True)
def _solve_into(mu, cost, eta, loads, labels):  # pragma: no cover - compiled
    """Solve one instance: fills ``loads`` (C + 1,) and Proposition 2 ``labels`` (C,)."""
    n = eta.size
    dlt = np.empty(n)
    s_enter = np.empty(n)
    s_leave = np.empty(n)
    scale = mu[0] / cost[0]
    for i in range(n):
        d = np.sqrt(cost[i + 1] / mu[i + 1] * scale)
        dlt[i] = d
        s_leave[i] = 1.0 / d
        s_enter[i] = (1.0 - eta[i] / mu[i + 1]) / d
    s, steps = _spare_capacity(mu, dlt, eta, s_enter, s_leave)
    loads[0] = 1.0 - s
    for i in range(n):
        r = eta[i] / mu[i + 1]
        v = 1.0 - dlt[i] * s
        loads[i + 1] = 0.0 if v < 0.0 else (r if v > r else v)
        labels[i] = 2 if s >= s_leave[i] else (1 if s > s_enter[i] else 0)  # C_0, C_b, C_d
    return steps


@njit(cache=True)
def _solve_batch(mu, cost, eta, loads, labels, steps):  # pragma: no cover - compiled
    for k in range(eta.shape[0]):
        steps[k] = _solve_into(mu[k], cost[k], eta[k], loads[k], labels[k])


def solve_exact_batch(mu, cost, eta) -> np.ndarray:
    """Optimal loads of a batch of instances of equal size C.

    Parameters
    ----------
    mu, cost:
        Arrays of shape ``(B, C + 1)``: capacities (work per unit time) and holding costs
        (cost per job per unit time), column 0 = server 0.
    eta:
        Array of shape ``(B, C)``: class intensities (work per unit time).

    Returns
    -------
    loads:
        Array ``(B, C + 1)`` of optimal loads ``rho_0..rho_C``.

    Raises
    ------
    UnstableInstanceError
        If some instance violates Proposition 1 (the message names the batch row).
    """
    mu = np.ascontiguousarray(mu, dtype=float)
    cost = np.ascontiguousarray(cost, dtype=float)
    eta = np.ascontiguousarray(eta, dtype=float)
    if mu.ndim != 2 or eta.ndim != 2 or mu.shape != cost.shape or mu.shape[1] != eta.shape[1] + 1:
        raise ValueError(
            "expected mu, cost of shape (B, C + 1) and eta of shape (B, C); got "
            f"{mu.shape}, {cost.shape}, {eta.shape}"
        )
    if not (np.all(mu > 0) and np.all(cost > 0) and np.all(eta > 0)):
        raise ValueError("mu, cost and eta must be finite and > 0")
    margin = stability_margin(mu, eta)
    bad = np.flatnonzero(~(margin > 0))
    if bad.size:
        k = int(bad[0])
        over = tuple(int(i) + 1 for i in np.flatnonzero(eta[k] > mu[k, 1:]))
        raise UnstableInstanceError(over, float(-margin[k]), where=f"batch row {k}")
    loads = np.empty_like(mu)
    labels = np.empty(eta.shape, dtype=np.int8)
    steps = np.empty(mu.shape[0], dtype=np.int64)
    _solve_batch(mu, cost, eta, loads, labels, steps)
    return loads


def solve_exact(instance: Instance) -> Solution:
    """Exact optimum of LOAD-OPT for one instance (see the module docstring).

    The returned partition is read off the optimal spare capacity by Proposition 2, so a
    class with a tiny positive dedicated load is reported in C_b (as on Table 1's class 4,
    which the paper reports with rho_4 = 0).

    Examples
    --------
    One class: delta_1 = sqrt((c_1/mu_1)/(c_0/mu_0)) = sqrt((3/1.5)/(1/2)) = 2, so the optimum
    has rho_1 = 1 - 2 (1 - rho_0) and, with the flow 2 rho_0 + 1.5 rho_1 = 1.6, rho_0 = 0.62:

    >>> from queue_routing.multiskill import Instance, solve_exact
    >>> sol = solve_exact(Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6]))
    >>> sol.loads.round(12).tolist(), round(sol.cost, 10)  # 0.62/0.38 + 3 (0.24/0.76)
    ([0.62, 0.24], 2.5789473684)
    >>> sol.partition.sets()
    {'dedicated': [], 'both': [1], 'shared': []}
    """
    loads = np.empty(instance.mu.size)
    labels = np.empty(instance.eta.size, dtype=np.int8)
    steps = _solve_into(instance.mu, instance.cost, instance.eta, loads, labels)
    return Solution(
        instance=instance,
        loads=loads,
        partition=Partition.trusted(labels),
        method="exact",
        info={"newton_steps": int(steps)},
    )
