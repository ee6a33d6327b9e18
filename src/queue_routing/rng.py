"""A compiled random-number generator with explicit state: xoshiro256** (Blackman and Vigna).

The convention of the project's random streams is in ``docs/README.md#random-numbers``:
every stream is seeded from :func:`queue_routing.seeding.stream_states` (a
``numpy.random.SeedSequence`` keyed by the root seed, the job's keys, the replication index
and the stream's name) and drawn inside numba kernels by :func:`next_uniform` from a state
array the kernel receives as an argument. No kernel reseeds or draws from numba's global
generator, so a kernel's output is a function of its arguments alone, and two kernels given
the same state see the same numbers (common random numbers).

The state is a ``uint64`` array of length 4, not all zero; each draw advances it in place.
xoshiro256** has period ``2^256 - 1`` and passes BigCrush; the uniform is the top 53 bits of
the 64-bit output scaled by ``2^-53``, so it lies in ``[0, 1)`` on the grid ``k 2^-53``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .seeding import STATE_WORDS

__all__ = ["STATE_WORDS", "next_uint64", "next_uniform", "uniforms"]

_U53 = 1.0 / 9007199254740992.0  # 2^-53


@njit(cache=True, nogil=True, inline="always")
def _rotl(x, k):  # pragma: no cover - compiled
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, nogil=True, inline="always")
def next_uint64(s):  # pragma: no cover - compiled
    """The next 64-bit output of xoshiro256** with state ``s`` (``uint64[4]``, advanced in
    place)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(cache=True, nogil=True, inline="always")
def next_uniform(s):  # pragma: no cover - compiled
    """A uniform on ``[0, 1)`` (dimensionless) from state ``s`` (advanced in place)."""
    return float(next_uint64(s) >> np.uint64(11)) * _U53


@njit(cache=True, nogil=True)
def _fill_uniforms(s, out):  # pragma: no cover - compiled
    for i in range(out.size):
        out[i] = next_uniform(s)


def uniforms(state: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` uniforms on ``[0, 1)`` of the stream with ``state`` (``uint64[4]``),
    without changing ``state``: what a kernel given that state draws first.

    >>> s = np.array([1, 2, 3, 4], dtype=np.uint64)
    >>> u = uniforms(s, 3)
    >>> bool(u[0] == (11520 >> 11) * 2.0**-53), s.tolist()  # state untouched
    (True, [1, 2, 3, 4])
    """
    state = np.array(state, dtype=np.uint64)
    if state.shape != (STATE_WORDS,) or not state.any():
        raise ValueError(f"state must be {STATE_WORDS} uint64 words, not all zero")
    out = np.empty(int(n))
    _fill_uniforms(state, out)
    return out
