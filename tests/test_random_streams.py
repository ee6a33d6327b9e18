"""The random-stream convention (docs/README.md#random-numbers) against independent references.

* xoshiro256** (``queue_routing.rng``) against a pure-Python transcription of the published
  algorithm on big integers (and its published first outputs), and its uniforms' moments;
* ``stream_states``: named, keyed streams seeded by ``seed_sequence``, independent of the
  order of the names.
"""

from __future__ import annotations

import numpy as np
import pytest

from queue_routing.rng import uniforms
from queue_routing.seeding import seed_sequence, stream_states

MASK = (1 << 64) - 1


def xoshiro_reference(state, n):
    """xoshiro256** as published (Blackman and Vigna), on Python integers."""
    s = [int(v) for v in state]

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    out = []
    for _ in range(n):
        out.append(rotl((s[1] * 5) & MASK, 7) * 9 & MASK)
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_xoshiro_matches_the_reference_algorithm():
    for state in ([1, 2, 3, 4], stream_states(7, "k", 3, streams=("events",))[0].tolist()):
        ref = xoshiro_reference(state, 1000)
        got = uniforms(np.array(state, dtype=np.uint64), 1000)
        np.testing.assert_array_equal(got, [(v >> 11) * 2.0**-53 for v in ref])
    # The published first outputs from the state (1, 2, 3, 4).
    assert xoshiro_reference([1, 2, 3, 4], 4) == [11520, 0, 1509978240, 1215971899390074240]


def test_uniforms_have_the_uniform_moments():
    u = uniforms(stream_states(2022, "moments", streams=("u",))[0], 1_000_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    se = np.sqrt(1 / 12 / u.size)
    assert abs(u.mean() - 0.5) < 4.5 * se
    # Var(U^2) = 1/5 - 1/9 for the second moment 1/3.
    assert abs((u**2).mean() - 1 / 3) < 4.5 * np.sqrt((1 / 5 - 1 / 9) / u.size)
    lag = np.corrcoef(u[:-1], u[1:])[0, 1]
    assert abs(lag) < 4.5 / np.sqrt(u.size)


def test_stream_states_are_named_keyed_and_seeded_by_seed_sequence():
    a = stream_states(5, "job", 1, streams=("events", "routing"))
    b = stream_states(5, "job", 1, streams=("routing", "events"))
    np.testing.assert_array_equal(a, b[::-1])
    expected = seed_sequence(5, "job", 1, "routing").generate_state(4, np.uint64)
    np.testing.assert_array_equal(a[1], expected)
    assert not np.array_equal(a, stream_states(5, "job", 2, streams=("events", "routing")))
    assert not np.array_equal(a, stream_states(6, "job", 1, streams=("events", "routing")))
    with pytest.raises(TypeError, match="streams"):
        stream_states(5, "job", streams="events")
