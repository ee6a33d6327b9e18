"""Compiled kernels of :mod:`.optimal`: value iteration and stationary distributions on the
truncated count chain of Part A (``docs/multiskill.md#the-optimal-dynamic-policy``).

The state ``x = (x_0, ..., x_C)``, each count in ``0..L``, is flattened in C order (the last
server's count varies fastest): ``s = sum_j x_j stride_j`` with ``stride_j = (L + 1)^(C - j)``.
A kernel walks the grid in that order with an odometer of the counts, so no array of
coordinates is ever stored (a chain of ``(L + 1)^(C + 1)`` states keeps only a few flat
arrays of that length, :data:`~.optimal.BYTES_PER_STATE`).

Routing is given in one of three modes, the same in every kernel:

``MODE_OPTIMAL`` (0)  minimise over the two servers (value iteration only);
``MODE_TABLE`` (1)    a decision table ``mask`` (one unsigned integer per state): bit ``i - 1``
                      set routes an arriving class-``i`` job to server ``i``, clear to server 0;
``MODE_SPLIT`` (2)    Bernoulli routing: class ``i`` to server ``i`` with probability
                      ``p[i - 1]`` in every state.

A job routed to a server that holds ``L`` jobs is lost (the chain of :mod:`.markov`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "MODE_OPTIMAL",
    "MODE_SPLIT",
    "MODE_TABLE",
    "greedy_mask",
    "index_mask",
    "relative_value_iteration",
    "relative_value_iteration_2",
    "relative_value_iteration_3",
    "stationary_gauss_seidel",
    "stationary_summary",
    "strides",
]

MODE_OPTIMAL = 0
MODE_TABLE = 1
MODE_SPLIT = 2


def strides(n_servers: int, L: int) -> np.ndarray:
    """``stride_j = (L + 1)^(n_servers - 1 - j)`` (int64, shape ``(n_servers,)``), the flat
    offset of one more job at server ``j``.

    >>> strides(3, 4).tolist()
    [25, 5, 1]
    """
    return np.array([(L + 1) ** (n_servers - 1 - j) for j in range(n_servers)], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _advance(x, L):  # pragma: no cover - compiled
    """The odometer: ``x`` to the next state in C order (in place)."""
    j = x.size - 1
    while j >= 0:
        if x[j] < L:
            x[j] += 1
            return
        x[j] = 0
        j -= 1


@njit(cache=True, nogil=True, inline="always")
def _dedicated_share(mode, mask, p, s, i):  # pragma: no cover - compiled
    """Probability that an arriving class-``i`` job is routed to server ``i`` in state ``s``
    (``MODE_TABLE`` or ``MODE_SPLIT``)."""
    if mode == MODE_SPLIT:
        return p[i - 1]
    return float((mask[s] >> np.uint32(i - 1)) & np.uint32(1))


@njit(cache=True, nogil=True)
def relative_value_iteration(
    h, L, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """Relative value iteration in place on ``h`` (flat, C order); returns ``(iterations,
    lower, upper, converged)``.

    One step is ``Th(x) = (c.x + sum_i eta_i V_i(x) + sum_{j: x_j > 0} mu_j h(x - e_j)
    + (Lambda - sum_i eta_i - sum_{j: x_j > 0} mu_j) h(x)) / Lambda`` with ``V_i(x)`` the value
    after a class-``i`` arrival (``min`` of the two servers in ``MODE_OPTIMAL``, the policy's
    server or mixture otherwise; ``h(x)`` for a server at ``L``, the job lost), followed by
    ``h <- Th - Th(0)``. ``lower = Lambda min(Th - h)``, ``upper = Lambda max(Th - h)`` bound
    the average cost per unit time (of the best policy, or of the given one); the iteration
    stops when ``upper - lower <= rtol |upper + lower| / 2``.
    """
    n_srv = mu.size
    size = h.size
    st = np.empty(n_srv, dtype=np.int64)
    for j in range(n_srv):
        st[j] = (L + 1) ** (n_srv - 1 - j)
    sum_eta = eta.sum()
    th = np.empty(size)
    x = np.zeros(n_srv, dtype=np.int64)
    lower = np.nan
    upper = np.nan
    for it in range(1, max_iter + 1):
        lo = np.inf
        hi = -np.inf
        x[:] = 0
        for s in range(size):
            hs = h[s]
            acc = 0.0
            dep = 0.0
            for j in range(n_srv):
                acc += cost[j] * x[j]
                if x[j] > 0:
                    acc += mu[j] * h[s - st[j]]
                    dep += mu[j]
            h0 = h[s + st[0]] if x[0] < L else hs
            for i in range(1, n_srv):
                hd = h[s + st[i]] if x[i] < L else hs
                if mode == MODE_OPTIMAL:
                    v = hd if hd <= h0 else h0
                else:
                    q = _dedicated_share(mode, mask, p, s, i)
                    v = q * hd + (1.0 - q) * h0
                acc += eta[i - 1] * v
            acc += (big_lam - sum_eta - dep) * hs
            t = acc / big_lam
            th[s] = t
            d = t - hs
            if d < lo:
                lo = d
            if d > hi:
                hi = d
            _advance(x, L)
        ref = th[0]
        for s in range(size):
            h[s] = th[s] - ref
        lower = big_lam * lo
        upper = big_lam * hi
        if upper - lower <= rtol * 0.5 * abs(upper + lower):
            return it, lower, upper, True
    return max_iter, lower, upper, False


@njit(cache=True, nogil=True, inline="always")
def _arrival_value(mode, mask, p, s, i, hd, h0):  # pragma: no cover - compiled
    """The value after a class-``i`` arrival: ``min(hd, h0)`` (optimal), or the policy's
    server (table) or mixture (split)."""
    if mode == MODE_OPTIMAL:
        return hd if hd <= h0 else h0
    q = _dedicated_share(mode, mask, p, s, i)
    return q * hd + (1.0 - q) * h0


#: Value-iteration steps between two normalisations ``h <- h - h(0)`` in the unrolled
#: kernels (``T(h + r) = Th + r``, so the span bounds do not see the shift in between).
NORMALISE_EVERY = 32


@njit(cache=True, nogil=True, inline="always")
def _finish_step(src, dst, it, done, max_iter):  # pragma: no cover - compiled
    """After step ``it`` wrote ``dst`` from ``src``: normalise ``dst`` every
    :data:`NORMALISE_EVERY` steps and at the end; returns the buffers of the next step."""
    if it % NORMALISE_EVERY == 0 or done or it == max_iter:
        ref = dst[0]
        for s in range(dst.size):
            dst[s] -= ref
    return dst, src


@njit(cache=True, nogil=True)
def relative_value_iteration_2(
    h, L, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """:func:`relative_value_iteration` for two classes (three servers), the loops over the
    counts written out and two buffers used in turn (normalised every
    :data:`NORMALISE_EVERY` steps): the same operator at a fraction of the general
    kernel's cost per step (``benchmarks/optimal_value_iteration.py``)."""
    n = L + 1
    s0 = n * n
    s1 = n
    other = np.empty(h.size)
    src, dst = h, other
    eta1, eta2 = eta[0], eta[1]
    mu0, mu1, mu2 = mu[0], mu[1], mu[2]
    c0, c1, c2 = cost[0], cost[1], cost[2]
    stay_all = big_lam - eta1 - eta2
    inv = 1.0 / big_lam
    lower = np.nan
    upper = np.nan
    it = 0
    done = False
    while it < max_iter and not done:
        it += 1
        lo = np.inf
        hi = -np.inf
        for a in range(n):
            for b in range(n):
                base = (a * n + b) * n
                hold = c0 * a + c1 * b
                dep = 0.0
                if a > 0:
                    dep += mu0
                if b > 0:
                    dep += mu1
                for c in range(n):
                    s = base + c
                    hs = src[s]
                    acc = hold + c2 * c
                    d = dep
                    if a > 0:
                        acc += mu0 * src[s - s0]
                    if b > 0:
                        acc += mu1 * src[s - s1]
                    if c > 0:
                        acc += mu2 * src[s - 1]
                        d += mu2
                    h0 = src[s + s0] if a < L else hs
                    h1 = src[s + s1] if b < L else hs
                    h2 = src[s + 1] if c < L else hs
                    acc += eta1 * _arrival_value(mode, mask, p, s, 1, h1, h0)
                    acc += eta2 * _arrival_value(mode, mask, p, s, 2, h2, h0)
                    acc += (stay_all - d) * hs
                    t = acc * inv
                    dst[s] = t
                    diff = t - hs
                    if diff < lo:
                        lo = diff
                    if diff > hi:
                        hi = diff
        lower = big_lam * lo
        upper = big_lam * hi
        done = upper - lower <= rtol * 0.5 * abs(upper + lower)
        src, dst = _finish_step(src, dst, it, done, max_iter)
    if src is not h:  # the last values are in the other buffer
        h[:] = src
    return it, lower, upper, done


@njit(cache=True, nogil=True)
def relative_value_iteration_3(
    h, L, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """:func:`relative_value_iteration_2` for three classes (four servers)."""
    n = L + 1
    s0 = n * n * n
    s1 = n * n
    s2 = n
    other = np.empty(h.size)
    src, dst = h, other
    eta1, eta2, eta3 = eta[0], eta[1], eta[2]
    mu0, mu1, mu2, mu3 = mu[0], mu[1], mu[2], mu[3]
    c0, c1, c2, c3 = cost[0], cost[1], cost[2], cost[3]
    stay_all = big_lam - eta1 - eta2 - eta3
    inv = 1.0 / big_lam
    lower = np.nan
    upper = np.nan
    it = 0
    done = False
    while it < max_iter and not done:
        it += 1
        lo = np.inf
        hi = -np.inf
        for a in range(n):
            for b in range(n):
                for c in range(n):
                    base = ((a * n + b) * n + c) * n
                    hold = c0 * a + c1 * b + c2 * c
                    dep = 0.0
                    if a > 0:
                        dep += mu0
                    if b > 0:
                        dep += mu1
                    if c > 0:
                        dep += mu2
                    for e in range(n):
                        s = base + e
                        hs = src[s]
                        acc = hold + c3 * e
                        d = dep
                        if a > 0:
                            acc += mu0 * src[s - s0]
                        if b > 0:
                            acc += mu1 * src[s - s1]
                        if c > 0:
                            acc += mu2 * src[s - s2]
                        if e > 0:
                            acc += mu3 * src[s - 1]
                            d += mu3
                        h0 = src[s + s0] if a < L else hs
                        h1 = src[s + s1] if b < L else hs
                        h2 = src[s + s2] if c < L else hs
                        h3 = src[s + 1] if e < L else hs
                        acc += eta1 * _arrival_value(mode, mask, p, s, 1, h1, h0)
                        acc += eta2 * _arrival_value(mode, mask, p, s, 2, h2, h0)
                        acc += eta3 * _arrival_value(mode, mask, p, s, 3, h3, h0)
                        acc += (stay_all - d) * hs
                        t = acc * inv
                        dst[s] = t
                        diff = t - hs
                        if diff < lo:
                            lo = diff
                        if diff > hi:
                            hi = diff
        lower = big_lam * lo
        upper = big_lam * hi
        done = upper - lower <= rtol * 0.5 * abs(upper + lower)
        src, dst = _finish_step(src, dst, it, done, max_iter)
    if src is not h:
        h[:] = src
    return it, lower, upper, done


@njit(cache=True, nogil=True)
def greedy_mask(h, L, n_srv):  # pragma: no cover - compiled
    """The decision table greedy for ``h``: bit ``i - 1`` of state ``s`` set iff the value
    after routing a class-``i`` arrival to server ``i`` is at most that of server 0 (ties to
    the dedicated server; a server at ``L`` loses the job, value ``h(x)``)."""
    size = h.size
    st = np.empty(n_srv, dtype=np.int64)
    for j in range(n_srv):
        st[j] = (L + 1) ** (n_srv - 1 - j)
    out = np.zeros(size, dtype=np.uint32)
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(size):
        hs = h[s]
        h0 = h[s + st[0]] if x[0] < L else hs
        m = np.uint32(0)
        for i in range(1, n_srv):
            hd = h[s + st[i]] if x[i] < L else hs
            if hd <= h0:
                m |= np.uint32(1) << np.uint32(i - 1)
        out[s] = m
        _advance(x, L)
    return out


@njit(cache=True, nogil=True)
def index_mask(table, L):  # pragma: no cover - compiled
    """The decision table of an index policy: bit ``i - 1`` set iff ``table[i, x_i] <=
    table[0, x_0]`` (``table`` of shape ``(C + 1, L + 1)``, ties to the dedicated server)."""
    n_srv = table.shape[0]
    size = (L + 1) ** n_srv
    out = np.zeros(size, dtype=np.uint32)
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(size):
        r = table[0, x[0]]
        m = np.uint32(0)
        for i in range(1, n_srv):
            if table[i, x[i]] <= r:
                m |= np.uint32(1) << np.uint32(i - 1)
        out[s] = m
        _advance(x, L)
    return out


@njit(cache=True, nogil=True, inline="always")
def _out_rate(x, s, L, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """Total rate of leaving state ``s`` (losses are self-loops, not counted)."""
    n_srv = mu.size
    out = 0.0
    for j in range(n_srv):
        if x[j] > 0:
            out += mu[j]
    for i in range(1, n_srv):
        q = _dedicated_share(mode, mask, p, s, i)
        if x[i] < L:
            out += eta[i - 1] * q
        if x[0] < L:
            out += eta[i - 1] * (1.0 - q)
    return out


@njit(cache=True, nogil=True, inline="always")
def _inflow(pi, x, s, st, L, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """Probability flow into state ``s``: arrivals from ``x - e_j``, departures from
    ``x + e_j``."""
    n_srv = mu.size
    acc = 0.0
    for j in range(n_srv):
        if x[j] < L:
            acc += pi[s + st[j]] * mu[j]
        if x[j] > 0:
            sp = s - st[j]
            if j == 0:
                for i in range(1, n_srv):
                    acc += pi[sp] * eta[i - 1] * (1.0 - _dedicated_share(mode, mask, p, sp, i))
            else:
                acc += pi[sp] * eta[j - 1] * _dedicated_share(mode, mask, p, sp, j)
    return acc


@njit(cache=True, nogil=True)
def stationary_gauss_seidel(
    pi, L, eta, mu, mode, mask, p, rtol, max_sweeps, check_every
):  # pragma: no cover - compiled
    """Symmetric Gauss-Seidel sweeps on the balance equations ``pi(x) q(x) = inflow(x)`` in
    place on ``pi`` (flat, C order; a table or split policy), normalised after each sweep;
    every ``check_every`` sweeps the residual ``max |pi Q|`` (probability per unit time) is
    computed, and the solve stops once it is at most ``rtol * max_x q(x)``. Returns
    ``(sweeps, residual)``."""
    n_srv = mu.size
    size = pi.size
    st = np.empty(n_srv, dtype=np.int64)
    for j in range(n_srv):
        st[j] = (L + 1) ** (n_srv - 1 - j)
    x = np.zeros(n_srv, dtype=np.int64)
    qmax = eta.sum() + mu.sum()
    res = np.inf
    for sweep in range(1, max_sweeps + 1):
        x[:] = 0
        for s in range(size):
            q = _out_rate(x, s, L, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, L, eta, mu, mode, mask, p) / q
            _advance(x, L)
        # backward pass: the odometer run in reverse
        for j in range(n_srv):
            x[j] = L
        for s in range(size - 1, -1, -1):
            q = _out_rate(x, s, L, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, L, eta, mu, mode, mask, p) / q
            j = n_srv - 1
            while j >= 0:
                if x[j] > 0:
                    x[j] -= 1
                    break
                x[j] = L
                j -= 1
        total = pi.sum()
        for s in range(size):
            pi[s] /= total
        if sweep % check_every == 0 or sweep == max_sweeps:
            res = 0.0
            x[:] = 0
            for s in range(size):
                q = _out_rate(x, s, L, eta, mu, mode, mask, p)
                r = abs(_inflow(pi, x, s, st, L, eta, mu, mode, mask, p) - pi[s] * q)
                if r > res:
                    res = r
                _advance(x, L)
            if res <= rtol * qmax:
                return sweep, res
    return max_sweeps, res


@njit(cache=True, nogil=True)
def stationary_summary(pi, L, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """``(means, boundary_mass, lost_rate)`` of a stationary ``pi``: ``E[x_j]`` (shape
    ``(C + 1,)``, jobs), the probability of ``{max_j x_j = L}``, and the rate of arrivals
    routed to a server at ``L`` (jobs per unit time)."""
    n_srv = mu.size
    means = np.zeros(n_srv)
    boundary = 0.0
    lost = 0.0
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(pi.size):
        w = pi[s]
        edge = False
        for j in range(n_srv):
            means[j] += w * x[j]
            if x[j] == L:
                edge = True
        if edge:
            boundary += w
            for i in range(1, n_srv):
                q = _dedicated_share(mode, mask, p, s, i)
                if x[i] == L:
                    lost += w * eta[i - 1] * q
                if x[0] == L:
                    lost += w * eta[i - 1] * (1.0 - q)
        _advance(x, L)
    return means, boundary, lost
