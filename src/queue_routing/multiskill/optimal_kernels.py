"""Compiled kernels of :mod:`.optimal`: value iteration and stationary distributions on the
truncated count chain of Part A (``docs/multiskill.md#the-optimal-dynamic-policy``).

The chain is truncated to a box: server ``j`` holds at most ``top[j] = L_j`` jobs (``top``
an int64 array of shape ``(C + 1,)``; the cube of level ``L`` is ``top = (L, ..., L)``). The
state ``x = (x_0, ..., x_C)``, ``0 <= x_j <= L_j``, is flattened in C order (the last
server's count varies fastest): ``s = sum_j x_j stride_j`` with ``stride_j = prod_{k > j}
(L_k + 1)``. A kernel walks the grid in that order with an odometer of the counts, so no
array of coordinates is ever stored (a chain of ``prod_j (L_j + 1)`` states keeps only a few
flat arrays of that length, :data:`~.optimal.BYTES_PER_STATE`).

Routing is given in one of three modes, the same in every kernel:

``MODE_OPTIMAL`` (0)  minimise over the two servers (value iteration only);
``MODE_TABLE`` (1)    a decision table ``mask`` (one unsigned integer per state): bit ``i - 1``
                      set routes an arriving class-``i`` job to server ``i``, clear to server 0;
``MODE_SPLIT`` (2)    Bernoulli routing: class ``i`` to server ``i`` with probability
                      ``p[i - 1]`` in every state.

At the faces of the box a job is *redirected*: a class-``i`` job whose chosen server is full
(``x_j = L_j``) goes to the other server (``i`` or 0), and is lost only when both are full.
The optimum (``MODE_OPTIMAL``) then chooses only where both servers have room, and a decision
table is made to obey the rule by :func:`redirect_mask`. So no policy can lower its cost by
sending jobs into a full server to have them lost, which the optimum of a chain with losses
(:mod:`.markov`'s) does at every face it can reach; this keeps the faces of the box honest
measures of the tail. Bernoulli routing (``MODE_SPLIT``), which ignores the state, loses a
job sent to a full server: its servers stay independent finite queues.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..checks import integer, is_int, show
from ..errors import ArgumentError

__all__ = [
    "MODE_OPTIMAL",
    "MODE_SPLIT",
    "MODE_TABLE",
    "bellman_bounds",
    "chain_box",
    "greedy_mask",
    "improve_mask",
    "index_mask",
    "poisson_two_level",
    "poisson_two_level_2",
    "redirect_mask",
    "relative_value_iteration",
    "relative_value_iteration_2",
    "relative_value_iteration_3",
    "stationary_gauss_seidel",
    "stationary_summary",
    "stationary_two_level",
    "strides",
]

MODE_OPTIMAL = 0
MODE_TABLE = 1
MODE_SPLIT = 2


def chain_box(n_classes: int, truncation) -> np.ndarray:
    """The levels ``top = (L_0, ..., L_C)`` (int64) of a truncation given as one level ``L``
    (the cube) or as ``C + 1`` levels, each an integer ``>= 1``; anything else is an
    :class:`~queue_routing.errors.ArgumentError` naming ``truncation``.

    >>> chain_box(2, 5).tolist(), chain_box(2, (40, 8, 6)).tolist()
    ([5, 5, 5], [40, 8, 6])
    """
    n_srv = int(n_classes) + 1
    if is_int(truncation):
        return np.full(n_srv, integer("truncation", truncation, 1), dtype=np.int64)
    try:
        levels = list(truncation)
    except TypeError:
        levels = []
    if len(levels) != n_srv or isinstance(truncation, str):
        raise ArgumentError(
            "truncation",
            f"truncation must be a level L >= 1 or {n_srv} levels (L_0, ..., L_C), got "
            f"{show(truncation)}",
        )
    return np.array([integer("truncation", v, 1) for v in levels], dtype=np.int64)


def strides(top: np.ndarray) -> np.ndarray:
    """``stride_j = prod_{k > j} (L_k + 1)`` (int64, shape ``(C + 1,)``), the flat offset of
    one more job at server ``j`` in the box ``top = (L_0, ..., L_C)``.

    >>> strides(np.array([4, 4, 4])).tolist(), strides(np.array([9, 3, 2])).tolist()
    ([25, 5, 1], [12, 3, 1])
    """
    return _strides(np.ascontiguousarray(top, dtype=np.int64))


@njit(cache=True, nogil=True)
def _strides(top):  # pragma: no cover - compiled
    n_srv = top.size
    st = np.empty(n_srv, dtype=np.int64)
    acc = 1
    for j in range(n_srv - 1, -1, -1):
        st[j] = acc
        acc *= top[j] + 1
    return st


@njit(cache=True, nogil=True, inline="always")
def _total(top):  # pragma: no cover - compiled
    """``sum_j L_j``, the largest total count in the box."""
    t = 0
    for j in range(top.size):
        t += top[j]
    return t


@njit(cache=True, nogil=True, inline="always")
def _advance(x, top):  # pragma: no cover - compiled
    """The odometer: ``x`` to the next state of the box ``top`` in C order (in place)."""
    j = x.size - 1
    while j >= 0:
        if x[j] < top[j]:
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
    h, top, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """Relative value iteration in place on ``h`` (flat, C order); returns ``(iterations,
    lower, upper, converged)``.

    One step is ``Th(x) = (c.x + sum_i eta_i V_i(x) + sum_{j: x_j > 0} mu_j h(x - e_j)
    + (Lambda - sum_i eta_i - sum_{j: x_j > 0} mu_j) h(x)) / Lambda`` with ``V_i(x)`` the value
    after a class-``i`` arrival (``min`` of the two servers in ``MODE_OPTIMAL``, the policy's
    server or mixture otherwise; ``h(x)`` for a server at ``L_j``, the job lost), followed by
    ``h <- Th - Th(0)``. ``lower = Lambda min(Th - h)``, ``upper = Lambda max(Th - h)`` bound
    the average cost per unit time (of the best policy, or of the given one); the iteration
    stops when ``upper - lower <= rtol |upper + lower| / 2``.
    """
    n_srv = mu.size
    size = h.size
    st = _strides(top)
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
            h0 = h[s + st[0]] if x[0] < top[0] else hs
            for i in range(1, n_srv):
                hd = h[s + st[i]] if x[i] < top[i] else hs
                if mode == MODE_OPTIMAL:
                    v = _best(hd, h0, x[i] == top[i], x[0] == top[0])
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
            _advance(x, top)
        ref = th[0]
        for s in range(size):
            h[s] = th[s] - ref
        lower = big_lam * lo
        upper = big_lam * hi
        if upper - lower <= rtol * 0.5 * abs(upper + lower):
            return it, lower, upper, True
    return max_iter, lower, upper, False


@njit(cache=True, nogil=True, inline="always")
def _best(hd, h0, full_d, full_0):  # pragma: no cover - compiled
    """The optimal value after an arrival with the values ``hd`` (dedicated server) and ``h0``
    (server 0), each ``h(x)`` for a full server: the least where both have room, else the
    one with room (redirection), else ``h(x)`` (both full, the job lost)."""
    if full_d:
        return h0
    if full_0:
        return hd
    return hd if hd <= h0 else h0


@njit(cache=True, nogil=True, inline="always")
def _arrival_value(mode, mask, p, s, i, hd, h0, full_d, full_0):  # pragma: no cover - compiled
    """The value after a class-``i`` arrival: :func:`_best` (optimal), or the policy's
    server (table, made to redirect by :func:`redirect_mask`) or mixture (split)."""
    if mode == MODE_OPTIMAL:
        return _best(hd, h0, full_d, full_0)
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


@njit(cache=True, nogil=True, parallel=True)
def relative_value_iteration_2(
    h, top, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """:func:`relative_value_iteration` for two classes (three servers), the loops over the
    counts written out and two buffers used in turn (normalised every
    :data:`NORMALISE_EVERY` steps): the same operator at a fraction of the general
    kernel's cost per step (``benchmarks/optimal_value_iteration.py``).

    The rows ``x_0 = a`` of a step run in parallel on numba's threads
    (``numba.set_num_threads``; a pipeline job uses its ``threads``): a step reads only the
    last step's values, and the span bounds are a minimum and a maximum (of each row's, in
    row order), so the result is the same to the bit whatever the number of threads."""
    L0, L1, L2 = top[0], top[1], top[2]
    s1 = L2 + 1
    s0 = (L1 + 1) * s1
    other = np.empty(h.size)
    row_lo = np.empty(L0 + 1)
    row_hi = np.empty(L0 + 1)
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
        for a in prange(L0 + 1):
            lo = np.inf
            hi = -np.inf
            for b in range(L1 + 1):
                base = a * s0 + b * s1
                hold = c0 * a + c1 * b
                dep = 0.0
                if a > 0:
                    dep += mu0
                if b > 0:
                    dep += mu1
                for c in range(L2 + 1):
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
                    h0 = src[s + s0] if a < L0 else hs
                    h1 = src[s + s1] if b < L1 else hs
                    h2 = src[s + 1] if c < L2 else hs
                    acc += eta1 * _arrival_value(mode, mask, p, s, 1, h1, h0, b == L1, a == L0)
                    acc += eta2 * _arrival_value(mode, mask, p, s, 2, h2, h0, c == L2, a == L0)
                    acc += (stay_all - d) * hs
                    t = acc * inv
                    dst[s] = t
                    diff = t - hs
                    if diff < lo:
                        lo = diff
                    if diff > hi:
                        hi = diff
            row_lo[a] = lo
            row_hi[a] = hi
        lower = big_lam * row_lo.min()
        upper = big_lam * row_hi.max()
        done = upper - lower <= rtol * 0.5 * abs(upper + lower)
        src, dst = _finish_step(src, dst, it, done, max_iter)
    if src is not h:  # the last values are in the other buffer
        h[:] = src
    return it, lower, upper, done


@njit(cache=True, nogil=True, parallel=True)
def relative_value_iteration_3(
    h, top, eta, mu, cost, big_lam, mode, mask, p, rtol, max_iter
):  # pragma: no cover - compiled
    """:func:`relative_value_iteration_2` for three classes (four servers), its rows in
    parallel the same way."""
    L0, L1, L2, L3 = top[0], top[1], top[2], top[3]
    s2 = L3 + 1
    s1 = (L2 + 1) * s2
    s0 = (L1 + 1) * s1
    other = np.empty(h.size)
    row_lo = np.empty(L0 + 1)
    row_hi = np.empty(L0 + 1)
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
        for a in prange(L0 + 1):
            lo = np.inf
            hi = -np.inf
            for b in range(L1 + 1):
                for c in range(L2 + 1):
                    base = a * s0 + b * s1 + c * s2
                    hold = c0 * a + c1 * b + c2 * c
                    dep = 0.0
                    if a > 0:
                        dep += mu0
                    if b > 0:
                        dep += mu1
                    if c > 0:
                        dep += mu2
                    for e in range(L3 + 1):
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
                        h0 = src[s + s0] if a < L0 else hs
                        h1 = src[s + s1] if b < L1 else hs
                        h2 = src[s + s2] if c < L2 else hs
                        h3 = src[s + 1] if e < L3 else hs
                        f0 = a == L0
                        acc += eta1 * _arrival_value(mode, mask, p, s, 1, h1, h0, b == L1, f0)
                        acc += eta2 * _arrival_value(mode, mask, p, s, 2, h2, h0, c == L2, f0)
                        acc += eta3 * _arrival_value(mode, mask, p, s, 3, h3, h0, e == L3, f0)
                        acc += (stay_all - d) * hs
                        t = acc * inv
                        dst[s] = t
                        diff = t - hs
                        if diff < lo:
                            lo = diff
                        if diff > hi:
                            hi = diff
            row_lo[a] = lo
            row_hi[a] = hi
        lower = big_lam * row_lo.min()
        upper = big_lam * row_hi.max()
        done = upper - lower <= rtol * 0.5 * abs(upper + lower)
        src, dst = _finish_step(src, dst, it, done, max_iter)
    if src is not h:
        h[:] = src
    return it, lower, upper, done


@njit(cache=True, nogil=True)
def greedy_mask(h, top, n_srv):  # pragma: no cover - compiled
    """The decision table greedy for ``h``: bit ``i - 1`` of state ``s`` set iff server ``i``
    has room and either server 0 is full or the value after routing a class-``i`` arrival to
    server ``i`` is at most that of server 0 (ties to the dedicated server): the choice of
    :func:`_best`, redirection at the faces included."""
    size = h.size
    st = _strides(top)
    out = np.zeros(size, dtype=np.uint32)
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(size):
        full_0 = x[0] == top[0]
        h0 = h[s + st[0]] if not full_0 else h[s]
        m = np.uint32(0)
        for i in range(1, n_srv):
            if x[i] < top[i] and (full_0 or h[s + st[i]] <= h0):
                m |= np.uint32(1) << np.uint32(i - 1)
        out[s] = m
        _advance(x, top)
    return out


@njit(cache=True, nogil=True, inline="always")
def _face_bit(m, bit, full_i, full_0):  # pragma: no cover - compiled
    """The table entry ``m`` with class ``i``'s decision ``bit`` as redirection sets it: to
    server 0 (cleared) where server ``i`` is full and server 0 has room, to server ``i`` (set)
    where server 0 is full and server ``i`` has room; elsewhere, both full included (the job
    is lost whatever the bit), as it was."""
    if full_i and not full_0:
        return m & ~bit
    if full_0 and not full_i:
        return m | bit
    return m


@njit(cache=True, nogil=True)
def redirect_mask(mask, top, n_srv):  # pragma: no cover - compiled
    """A decision table made to obey redirection at the faces of the box, in place: where
    server ``i`` is full and server 0 has room, class ``i`` goes to server 0 (bit cleared);
    where server 0 is full and server ``i`` has room, to server ``i`` (bit set). Returns the
    number of decisions changed."""
    x = np.zeros(n_srv, dtype=np.int64)
    changed = 0
    for s in range(mask.size):
        m = mask[s]
        for i in range(1, n_srv):
            bit = np.uint32(1) << np.uint32(i - 1)
            new = _face_bit(m, bit, x[i] == top[i], x[0] == top[0])
            changed += new != m
            m = new
        mask[s] = m
        _advance(x, top)
    return changed


@njit(cache=True, nogil=True)
def index_mask(table, top):  # pragma: no cover - compiled
    """The decision table of an index policy: bit ``i - 1`` set iff ``table[i, x_i] <=
    table[0, x_0]`` (``table`` of shape ``(C + 1, max_j L_j + 1)``, ties to the dedicated
    server)."""
    n_srv = table.shape[0]
    size = 1
    for j in range(n_srv):
        size *= top[j] + 1
    out = np.zeros(size, dtype=np.uint32)
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(size):
        r = table[0, x[0]]
        m = np.uint32(0)
        for i in range(1, n_srv):
            if table[i, x[i]] <= r:
                m |= np.uint32(1) << np.uint32(i - 1)
        out[s] = m
        _advance(x, top)
    return out


@njit(cache=True, nogil=True, inline="always")
def _out_rate(x, s, top, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """Total rate of leaving state ``s`` (losses are self-loops, not counted)."""
    n_srv = mu.size
    out = 0.0
    for j in range(n_srv):
        if x[j] > 0:
            out += mu[j]
    for i in range(1, n_srv):
        q = _dedicated_share(mode, mask, p, s, i)
        if x[i] < top[i]:
            out += eta[i - 1] * q
        if x[0] < top[0]:
            out += eta[i - 1] * (1.0 - q)
    return out


@njit(cache=True, nogil=True, inline="always")
def _inflow(pi, x, s, st, top, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """Probability flow into state ``s``: arrivals from ``x - e_j``, departures from
    ``x + e_j``."""
    n_srv = mu.size
    acc = 0.0
    for j in range(n_srv):
        if x[j] < top[j]:
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
    pi, top, eta, mu, mode, mask, p, rtol, max_sweeps, check_every
):  # pragma: no cover - compiled
    """Symmetric Gauss-Seidel sweeps on the balance equations ``pi(x) q(x) = inflow(x)`` in
    place on ``pi`` (flat, C order; a table or split policy), normalised after each sweep;
    every ``check_every`` sweeps the residual ``max |pi Q|`` (probability per unit time) is
    computed, and the solve stops once it is at most ``rtol * max_x q(x)``. Returns
    ``(sweeps, residual)``."""
    n_srv = mu.size
    size = pi.size
    st = _strides(top)
    x = np.zeros(n_srv, dtype=np.int64)
    qmax = eta.sum() + mu.sum()
    res = np.inf
    for sweep in range(1, max_sweeps + 1):
        x[:] = 0
        for s in range(size):
            q = _out_rate(x, s, top, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, top, eta, mu, mode, mask, p) / q
            _advance(x, top)
        # backward pass: the odometer run in reverse
        for j in range(n_srv):
            x[j] = top[j]
        for s in range(size - 1, -1, -1):
            q = _out_rate(x, s, top, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, top, eta, mu, mode, mask, p) / q
            j = n_srv - 1
            while j >= 0:
                if x[j] > 0:
                    x[j] -= 1
                    break
                x[j] = top[j]
                j -= 1
        total = pi.sum()
        for s in range(size):
            pi[s] /= total
        if sweep % check_every == 0 or sweep == max_sweeps:
            res = 0.0
            x[:] = 0
            for s in range(size):
                q = _out_rate(x, s, top, eta, mu, mode, mask, p)
                r = abs(_inflow(pi, x, s, st, top, eta, mu, mode, mask, p) - pi[s] * q)
                if r > res:
                    res = r
                _advance(x, top)
            if res <= rtol * qmax:
                return sweep, res
    return max_sweeps, res


@njit(cache=True, nogil=True)
def stationary_summary(pi, top, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """``(means, boundary_mass, lost_rate)`` of a stationary ``pi``: ``E[x_j]`` (shape
    ``(C + 1,)``, jobs), the probability of the boundary ``{x_j = L_j for some j}``, and the
    rate of arrivals routed to a server at its level ``L_j`` (jobs per unit time)."""
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
            if x[j] == top[j]:
                edge = True
        if edge:
            boundary += w
            for i in range(1, n_srv):
                q = _dedicated_share(mode, mask, p, s, i)
                if x[i] == top[i]:
                    lost += w * eta[i - 1] * q
                if x[0] == top[0]:
                    lost += w * eta[i - 1] * (1.0 - q)
        _advance(x, top)
    return means, boundary, lost


# -- policy iteration: exact policy evaluation by a two-level iteration ------------------------
#
# Both solves below are Gauss-Seidel sweeps on the fine chain accelerated by a coarse
# correction on the aggregates ``I = x_0 + ... + x_C`` (the total count). Every transition
# changes the total by +1 (an arrival that is not lost), -1 (a departure) or 0 (a loss, a
# self-loop), so the aggregated chain is a birth-death chain on ``0..sum_j L_j``, solved
# exactly by a recursion; it carries the slow mode of the chain (the total count drifting up
# and down at high load) that makes plain sweeps and value iteration slow.


@njit(cache=True, nogil=True, inline="always")
def _rates_and_flow(h, x, s, st, top, eta, mu, mode, mask, p):  # pragma: no cover - compiled
    """``(sum_y q(x, y) h(y), up(x), down(x))`` over the transitions leaving ``x`` (losses,
    self-loops, excluded): ``up`` the rate of arrivals that are not lost, ``down`` of
    departures (per unit time)."""
    n_srv = mu.size
    flow = 0.0
    up = 0.0
    down = 0.0
    for j in range(n_srv):
        if x[j] > 0:
            flow += mu[j] * h[s - st[j]]
            down += mu[j]
    for i in range(1, n_srv):
        q = _dedicated_share(mode, mask, p, s, i)
        if x[i] < top[i] and q > 0.0:
            r = eta[i - 1] * q
            flow += r * h[s + st[i]]
            up += r
        if x[0] < top[0] and q < 1.0:
            r = eta[i - 1] * (1.0 - q)
            flow += r * h[s + st[0]]
            up += r
    return flow, up, down


@njit(cache=True, nogil=True)
def _poisson_sweeps(h, top, eta, mu, cost, mode, mask, p, g, omega):  # pragma: no cover - compiled
    """One symmetric Gauss-Seidel sweep (forward, then backward) on ``q(x) h(x) = c.x - g +
    sum_y q(x, y) h(y)`` in place on ``h``."""
    n_srv = mu.size
    size = h.size
    st = _strides(top)
    x = np.zeros(n_srv, dtype=np.int64)
    for s in range(size):
        hold = 0.0
        for j in range(n_srv):
            hold += cost[j] * x[j]
        flow, up, down = _rates_and_flow(h, x, s, st, top, eta, mu, mode, mask, p)
        h[s] += omega * ((hold - g + flow) / (up + down) - h[s])
        _advance(x, top)
    for j in range(n_srv):
        x[j] = top[j]
    for s in range(size - 1, -1, -1):
        hold = 0.0
        for j in range(n_srv):
            hold += cost[j] * x[j]
        flow, up, down = _rates_and_flow(h, x, s, st, top, eta, mu, mode, mask, p)
        h[s] += omega * ((hold - g + flow) / (up + down) - h[s])
        j = n_srv - 1
        while j >= 0:
            if x[j] > 0:
                x[j] -= 1
                break
            x[j] = top[j]
            j -= 1


@njit(cache=True, nogil=True)
def _birth_death_law(up, down):  # pragma: no cover - compiled
    """Stationary law of the birth-death chain of rates ``up[I]`` (``I -> I + 1``) and
    ``down[I]`` (``I -> I - 1``), by ``nu(I + 1) down(I + 1) = nu(I) up(I)``, normalised."""
    m = up.size
    nu = np.zeros(m)
    nu[0] = 1.0
    top = 1.0
    for k in range(m - 1):
        if down[k + 1] > 0.0:
            nu[k + 1] = nu[k] * up[k] / down[k + 1]
        if nu[k + 1] > top:
            top = nu[k + 1]
    total = 0.0
    for k in range(m):
        nu[k] /= top
        total += nu[k]
    for k in range(m):
        nu[k] /= total
    return nu


@njit(cache=True, nogil=True)
def poisson_two_level(
    h, top, eta, mu, cost, mode, mask, p, g, omega, rtol, max_iter
):  # pragma: no cover - compiled
    """The average cost ``g`` and relative values ``h`` of a table or split policy: the
    Poisson equation ``c.x - g + sum_y q(x, y) (h(y) - h(x)) = 0`` for every state, ``h(0) =
    0``, solved in place on ``h`` (flat, C order; any start, e.g. the previous policy's values)
    from the estimate ``g``.

    Each iteration is one symmetric successive over-relaxation sweep (factor ``omega``) at
    fixed ``g``, then the residual
    ``r = c.x - g + Q h`` with the bounds ``min(c.x + Q h) <= g_policy <= max(c.x + Q h)``
    (the span bounds of one value-iteration step of the policy, cost per unit time), then the
    coarse correction: ``h += e(I)``, ``g += dg`` with ``e`` and ``dg`` solving the equations
    summed over each aggregate ``I`` (a birth-death Poisson equation, solved downwards from
    the top, where it is stable, and ``dg`` making it solvable). Stops when ``upper - lower
    <= rtol |upper + lower| / 2``. Returns ``(iterations, g, lower, upper, converged)``, the
    bounds those of the returned ``h``.
    """
    n_srv = mu.size
    size = h.size
    st = _strides(top)
    m = _total(top) + 1
    up_c = np.empty(m)
    down_c = np.empty(m)
    res_c = np.empty(m)
    cnt = np.empty(m)
    e = np.empty(m)
    x = np.zeros(n_srv, dtype=np.int64)
    lower = np.nan
    upper = np.nan
    for it in range(1, max_iter + 1):
        _poisson_sweeps(h, top, eta, mu, cost, mode, mask, p, g, omega)
        ref = h[0]
        for s in range(size):
            h[s] -= ref
        up_c[:] = 0.0
        down_c[:] = 0.0
        res_c[:] = 0.0
        cnt[:] = 0.0
        lo = np.inf
        hi = -np.inf
        x[:] = 0
        for s in range(size):
            hold = 0.0
            tot = 0
            for j in range(n_srv):
                hold += cost[j] * x[j]
                tot += x[j]
            flow, up, down = _rates_and_flow(h, x, s, st, top, eta, mu, mode, mask, p)
            v = hold + flow - (up + down) * h[s]  # c.x + (Q h)(x)
            if v < lo:
                lo = v
            if v > hi:
                hi = v
            res_c[tot] += v - g
            up_c[tot] += up
            down_c[tot] += down
            cnt[tot] += 1.0
            _advance(x, top)
        lower = lo
        upper = hi
        if upper - lower <= rtol * 0.5 * abs(upper + lower):
            return it, 0.5 * (lower + upper), lower, upper, True
        # coarse correction: Q_c e = dg n - R r, dg from nu . (dg n - R r) = 0
        nu = _birth_death_law(up_c, down_c)
        num = 0.0
        den = 0.0
        for k in range(m):
            num += nu[k] * res_c[k]
            den += nu[k] * cnt[k]
        dg = num / den
        # d(k) = e(k + 1) - e(k): up(k) d(k) - down(k) d(k - 1) = b(k), from the top down
        d_next = 0.0  # d(m - 1) = 0: no level above the top
        e[m - 1] = 0.0
        dk = np.empty(m)
        dk[m - 1] = 0.0
        for k in range(m - 1, 0, -1):
            b = dg * cnt[k] - res_c[k]
            d_prev = (up_c[k] * d_next - b) / down_c[k]
            dk[k - 1] = d_prev
            d_next = d_prev
        e[0] = 0.0
        for k in range(m - 1):
            e[k + 1] = e[k] + dk[k]
        g += dg
        x[:] = 0
        for s in range(size):
            tot = 0
            for j in range(n_srv):
                tot += x[j]
            h[s] += e[tot]
            _advance(x, top)
    return max_iter, 0.5 * (lower + upper), lower, upper, False


@njit(cache=True, nogil=True)
def improve_mask(h, top, n_srv, mask, tol):  # pragma: no cover - compiled
    """Policy improvement in place on the table ``mask``: a class-``i`` arrival switches
    server only where the other server's value is lower than the incumbent's by more than
    ``tol`` (ties stay on the incumbent, so policy iteration cannot cycle on rounding); at
    the faces redirection decides (:func:`_face_bit`, as in :func:`redirect_mask`). Returns
    the number of decisions changed."""
    size = h.size
    st = _strides(top)
    x = np.zeros(n_srv, dtype=np.int64)
    changed = 0
    for s in range(size):
        hs = h[s]
        h0 = h[s + st[0]] if x[0] < top[0] else hs
        m = mask[s]
        for i in range(1, n_srv):
            hd = h[s + st[i]] if x[i] < top[i] else hs
            bit = np.uint32(1) << np.uint32(i - 1)
            if x[i] == top[i] or x[0] == top[0]:  # redirection decides
                new = _face_bit(m, bit, x[i] == top[i], x[0] == top[0])
                changed += new != m
                m = new
            elif m & bit:
                if h0 < hd - tol:
                    m ^= bit
                    changed += 1
            elif hd < h0 - tol:
                m |= bit
                changed += 1
        mask[s] = m
        _advance(x, top)
    return changed


@njit(cache=True, nogil=True)
def bellman_bounds(h, top, eta, mu, cost):  # pragma: no cover - compiled
    """``(lower, upper)``: ``min`` and ``max`` over the states of ``c.x + min_routing (Q h)(x)``,
    the span bounds of one step of the optimal value iteration from ``h`` on the optimal
    average cost (cost per unit time; ``Lambda (Th - h)`` of
    :func:`relative_value_iteration`), ``h`` unchanged."""
    n_srv = mu.size
    size = h.size
    st = _strides(top)
    x = np.zeros(n_srv, dtype=np.int64)
    lo = np.inf
    hi = -np.inf
    for s in range(size):
        hs = h[s]
        v = 0.0
        for j in range(n_srv):
            v += cost[j] * x[j]
            if x[j] > 0:
                v += mu[j] * (h[s - st[j]] - hs)
        d0 = h[s + st[0]] - hs if x[0] < top[0] else 0.0
        for i in range(1, n_srv):
            di = h[s + st[i]] - hs if x[i] < top[i] else 0.0
            v += eta[i - 1] * _best(di, d0, x[i] == top[i], x[0] == top[0])
        if v < lo:
            lo = v
        if v > hi:
            hi = v
        _advance(x, top)
    return lo, hi


@njit(cache=True, nogil=True)
def stationary_two_level(
    pi, top, eta, mu, mode, mask, p, rtol, max_sweeps, check_every
):  # pragma: no cover - compiled
    """:func:`stationary_gauss_seidel` accelerated by iterative aggregation-disaggregation on
    the total count (Koury, McAllister and Stewart): after each symmetric sweep the law of the
    total is replaced by the stationary law of the aggregated birth-death chain, whose rates
    are the fine ones weighted by ``pi`` within each aggregate; the law within an aggregate is
    kept. Same residual test and return ``(sweeps, residual)``."""
    n_srv = mu.size
    size = pi.size
    st = _strides(top)
    m = _total(top) + 1
    mass = np.empty(m)
    up_c = np.empty(m)
    down_c = np.empty(m)
    x = np.zeros(n_srv, dtype=np.int64)
    qmax = eta.sum() + mu.sum()
    res = np.inf
    for sweep in range(1, max_sweeps + 1):
        x[:] = 0
        for s in range(size):
            q = _out_rate(x, s, top, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, top, eta, mu, mode, mask, p) / q
            _advance(x, top)
        for j in range(n_srv):
            x[j] = top[j]
        for s in range(size - 1, -1, -1):
            q = _out_rate(x, s, top, eta, mu, mode, mask, p)
            pi[s] = _inflow(pi, x, s, st, top, eta, mu, mode, mask, p) / q
            j = n_srv - 1
            while j >= 0:
                if x[j] > 0:
                    x[j] -= 1
                    break
                x[j] = top[j]
                j -= 1
        # aggregation: the birth-death chain of the total count, weighted by pi
        mass[:] = 0.0
        up_c[:] = 0.0
        down_c[:] = 0.0
        x[:] = 0
        for s in range(size):
            tot = 0
            for j in range(n_srv):
                tot += x[j]
            w = pi[s]
            dn = 0.0
            for j in range(n_srv):
                if x[j] > 0:
                    dn += mu[j]
            upr = 0.0
            for i in range(1, n_srv):
                q = _dedicated_share(mode, mask, p, s, i)
                if x[i] < top[i]:
                    upr += eta[i - 1] * q
                if x[0] < top[0]:
                    upr += eta[i - 1] * (1.0 - q)
            mass[tot] += w
            up_c[tot] += w * upr
            down_c[tot] += w * dn
            _advance(x, top)
        for k in range(m):
            if mass[k] > 0.0:
                up_c[k] /= mass[k]
                down_c[k] /= mass[k]
        nu = _birth_death_law(up_c, down_c)
        x[:] = 0
        for s in range(size):
            tot = 0
            for j in range(n_srv):
                tot += x[j]
            if mass[tot] > 0.0:
                pi[s] *= nu[tot] / mass[tot]
            _advance(x, top)
        total = pi.sum()
        for s in range(size):
            pi[s] /= total
        if sweep % check_every == 0 or sweep == max_sweeps:
            res = 0.0
            x[:] = 0
            for s in range(size):
                q = _out_rate(x, s, top, eta, mu, mode, mask, p)
                r = abs(_inflow(pi, x, s, st, top, eta, mu, mode, mask, p) - pi[s] * q)
                if r > res:
                    res = r
                _advance(x, top)
            if res <= rtol * qmax:
                return sweep, res
    return max_sweeps, res


@njit(cache=True, nogil=True, inline="always")
def _flow_2(
    h, s, a, b, c, top, s0, s1, eta1, eta2, mu0, mu1, mu2, mode, mask, p
):  # pragma: no cover
    """:func:`_rates_and_flow` for two classes, the counts ``(a, b, c)`` given."""
    flow = 0.0
    down = 0.0
    if a > 0:
        flow += mu0 * h[s - s0]
        down += mu0
    if b > 0:
        flow += mu1 * h[s - s1]
        down += mu1
    if c > 0:
        flow += mu2 * h[s - 1]
        down += mu2
    up = 0.0
    q1 = _dedicated_share(mode, mask, p, s, 1)
    q2 = _dedicated_share(mode, mask, p, s, 2)
    if b < top[1]:
        flow += eta1 * q1 * h[s + s1]
        up += eta1 * q1
    if c < top[2]:
        flow += eta2 * q2 * h[s + 1]
        up += eta2 * q2
    if a < top[0]:
        r = eta1 * (1.0 - q1) + eta2 * (1.0 - q2)
        flow += r * h[s + s0]
        up += r
    return flow, up, down


@njit(cache=True, nogil=True)
def poisson_two_level_2(
    h, top, eta, mu, cost, mode, mask, p, g, omega, rtol, max_iter
):  # pragma: no cover - compiled
    """:func:`poisson_two_level` for two classes (three servers), the loops over the counts
    written out (four passes over the grid an iteration: the two sweeps, the residual with
    the aggregates, the correction with the shift ``h(0) = 0``)."""
    L0, L1, L2 = top[0], top[1], top[2]
    s1 = L2 + 1
    s0 = (L1 + 1) * s1
    eta1, eta2 = eta[0], eta[1]
    mu0, mu1, mu2 = mu[0], mu[1], mu[2]
    c0, c1, c2 = cost[0], cost[1], cost[2]
    m = L0 + L1 + L2 + 1
    up_c = np.empty(m)
    down_c = np.empty(m)
    res_c = np.empty(m)
    cnt = np.empty(m)
    e = np.empty(m)
    dk = np.empty(m)
    lower = np.nan
    upper = np.nan
    for it in range(1, max_iter + 1):
        for a in range(L0 + 1):
            for b in range(L1 + 1):
                base = a * s0 + b * s1
                hold = c0 * a + c1 * b
                for c in range(L2 + 1):
                    s = base + c
                    flow, up, down = _flow_2(
                        h, s, a, b, c, top, s0, s1, eta1, eta2, mu0, mu1, mu2, mode, mask, p
                    )
                    h[s] += omega * ((hold + c2 * c - g + flow) / (up + down) - h[s])
        for a in range(L0, -1, -1):
            for b in range(L1, -1, -1):
                base = a * s0 + b * s1
                hold = c0 * a + c1 * b
                for c in range(L2, -1, -1):
                    s = base + c
                    flow, up, down = _flow_2(
                        h, s, a, b, c, top, s0, s1, eta1, eta2, mu0, mu1, mu2, mode, mask, p
                    )
                    h[s] += omega * ((hold + c2 * c - g + flow) / (up + down) - h[s])
        up_c[:] = 0.0
        down_c[:] = 0.0
        res_c[:] = 0.0
        cnt[:] = 0.0
        lo = np.inf
        hi = -np.inf
        for a in range(L0 + 1):
            for b in range(L1 + 1):
                base = a * s0 + b * s1
                hold = c0 * a + c1 * b
                for c in range(L2 + 1):
                    s = base + c
                    flow, up, down = _flow_2(
                        h, s, a, b, c, top, s0, s1, eta1, eta2, mu0, mu1, mu2, mode, mask, p
                    )
                    v = hold + c2 * c + flow - (up + down) * h[s]
                    if v < lo:
                        lo = v
                    if v > hi:
                        hi = v
                    tot = a + b + c
                    res_c[tot] += v - g
                    up_c[tot] += up
                    down_c[tot] += down
                    cnt[tot] += 1.0
        lower = lo
        upper = hi
        ref = h[0]
        if upper - lower <= rtol * 0.5 * abs(upper + lower):
            for s in range(h.size):
                h[s] -= ref
            return it, 0.5 * (lower + upper), lower, upper, True
        nu = _birth_death_law(up_c, down_c)
        num = 0.0
        den = 0.0
        for k in range(m):
            num += nu[k] * res_c[k]
            den += nu[k] * cnt[k]
        dg = num / den
        d_next = 0.0
        dk[m - 1] = 0.0
        for k in range(m - 1, 0, -1):
            b_k = dg * cnt[k] - res_c[k]
            d_prev = (up_c[k] * d_next - b_k) / down_c[k]
            dk[k - 1] = d_prev
            d_next = d_prev
        e[0] = -ref
        for k in range(m - 1):
            e[k + 1] = e[k] + dk[k]
        g += dg
        for a in range(L0 + 1):
            for b in range(L1 + 1):
                base = a * s0 + b * s1
                for c in range(L2 + 1):
                    h[base + c] += e[a + b + c]
    ref = h[0]
    for s in range(h.size):
        h[s] -= ref
    return max_iter, 0.5 * (lower + upper), lower, upper, False
