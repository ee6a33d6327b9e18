"""Deterministic random streams: one root seed, one stream per job.

Every random number in the project comes from :func:`seed_sequence`, keyed by the config's
root seed and the job's identity (its wildcards), so a job run alone reproduces the numbers
it produced inside the full pipeline, and independent jobs get independent streams: in
Python through :func:`rng_for`, in compiled kernels through :func:`stream_states` and the
generator of :mod:`queue_routing.rng`. The convention for simulations (streams keyed by the
replication, never by the policy, so that policies compared on one instance see common
random numbers) is ``docs/README.md#random-numbers``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

__all__ = ["STATE_WORDS", "rng_for", "seed_sequence", "stream_states"]

#: Length of a stream's state in 64-bit words: the state of the xoshiro256** generator of
#: :mod:`queue_routing.rng` (which must not be all zero).
STATE_WORDS = 4


def _key(part: int | str) -> int:
    if isinstance(part, bool):
        raise TypeError("seed keys must be int or str, not bool")
    if isinstance(part, int | np.integer):
        if part < 0:
            raise ValueError(f"seed keys must be non-negative, got {part}")
        return int(part)
    if isinstance(part, str):
        return zlib.crc32(part.encode("utf-8"))  # stable across runs and platforms
    raise TypeError(f"seed keys must be int or str, got {type(part).__name__}")


def seed_sequence(seed: int, *keys: int | str) -> np.random.SeedSequence:
    """``SeedSequence(seed, spawn_key=keys)`` for the root ``seed``; strings are hashed with
    CRC-32, so the same keys give the same stream on every run and platform.

    >>> a = seed_sequence(2022, "multiskill-sim", 7).generate_state(2)
    >>> a.tolist() == seed_sequence(2022, "multiskill-sim", 7).generate_state(2).tolist()
    True
    """
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_key(k) for k in keys))


def rng_for(seed: int, *keys: int | str) -> np.random.Generator:
    """A PCG64 generator for the job identified by ``keys`` under the root ``seed``.

    >>> a = rng_for(2022, "multiskill", 10, 3).integers(100)
    >>> bool(a == rng_for(2022, "multiskill", 10, 3).integers(100))
    True
    >>> bool(a == rng_for(2022, "multiskill", 10, 4).integers(100))  # another job's stream
    False
    """
    return np.random.default_rng(seed_sequence(seed, *keys))


def stream_states(seed: int, *keys: int | str, streams: Sequence[str]) -> np.ndarray:
    """Generator states of the named ``streams`` of one job: shape ``(len(streams), 4)``, uint64.

    Row ``s`` is ``seed_sequence(seed, *keys, streams[s]).generate_state(STATE_WORDS,
    uint64)``, the
    state of the xoshiro256** generator of :mod:`queue_routing.rng` (a compiled kernel takes
    the array as an argument and draws stream ``s`` from row ``s``). A simulation passes the
    replication index as the last key and never the policy (``docs/README.md#random-numbers``).
    The states depend on each stream's own name, not on the order or number of ``streams``.

    >>> a = stream_states(2022, "multiskill-sim", 0, streams=("events", "routing"))
    >>> a.shape, a.dtype.name
    ((2, 4), 'uint64')
    >>> b = stream_states(2022, "multiskill-sim", 0, streams=("routing",))
    >>> bool((a[1] == b[0]).all())  # a stream is named, not numbered
    True
    """
    if isinstance(streams, str) or len(streams) == 0:
        raise TypeError("streams must be a non-empty sequence of stream names")
    out = np.empty((len(streams), STATE_WORDS), dtype=np.uint64)
    for row, name in enumerate(streams):
        if not isinstance(name, str):
            raise TypeError(f"stream names must be str, got {type(name).__name__}")
        out[row] = seed_sequence(seed, *keys, name).generate_state(STATE_WORDS, np.uint64)
        if not out[row].any():  # pragma: no cover - probability 2^-256; xoshiro needs a bit
            out[row, 0] = 1
    return out
