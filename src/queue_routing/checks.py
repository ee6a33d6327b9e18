"""Argument checks shared by the three parts.

Each returns the checked value (as a Python ``int`` or ``float``) or raises
:class:`~queue_routing.errors.ArgumentError` (a ``ValueError``) whose ``argument`` names the
argument and whose one-line message starts with that name, for a value of the wrong type as
for one out of range.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .errors import ArgumentError

__all__ = [
    "MAX_EVENTS_PER_REPLICATION",
    "REPLICATION_BYTES",
    "confidence_level",
    "events_per_replication",
    "integer",
    "is_int",
    "nonnegative_int",
    "positive",
    "replication_count",
    "replication_memory",
    "show",
    "time_length",
]

#: The most events one replication of a simulation may ask for (Part A's uniformised steps or
#: events, Part B's arrivals): 1e10, hours of compiled simulation per replication. A longer
#: run is refused up front (:func:`events_per_replication`) rather than left running for days.
MAX_EVENTS_PER_REPLICATION = 10**10

#: Memory (bytes) that one replication's results take, at most, in every part's simulators:
#: the per-replication costs, counts and stream keys they keep. Measured with ``tracemalloc``
#: (the peak's growth per replication): 170 bytes for one policy of Part A or B, 430 for Part
#: A's comparison of five policies; 1 KiB leaves room for comparisons of more policies.
REPLICATION_BYTES = 1024


def show(value: Any) -> str:
    """A short rendering of a rejected value for an error message (huge ints summarised,
    long reprs cut at 60 characters).

    >>> show(10**20), show("abc")
    ('an integer with 21 digits', "'abc'")
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"an integer with {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or numpy), booleans excluded."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_)


def time_length(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """A finite duration (time units) ``> 0`` (``>= 0`` with ``allow_zero``), as a float.

    >>> time_length("horizon", 1000)
    1000.0
    >>> time_length("warmup", -1.0, allow_zero=True)
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: warmup must be finite and >= 0, got -1.0
    """
    if not _is_number(value):
        raise ArgumentError(name, f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ArgumentError(
            name, f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {v}"
        )
    return v


def positive(name: str, value: Any) -> float:
    """A finite number ``> 0`` that is not a time (a rate, a scale, a factor), as a float.

    >>> positive("scale", 2)
    2.0
    """
    if not _is_number(value):
        raise ArgumentError(name, f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ArgumentError(name, f"{name} must be finite and > 0, got {v}")
    return v


def integer(name: str, value: Any, low: int, high: int | None = None) -> int:
    """An integer in ``low..high`` (no upper bound when ``high`` is ``None``).

    >>> integer("upto", 3, 0, 10)
    3
    >>> integer("upto", 11, 0, 10)
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: upto must be an integer in 0..10, got 11
    """
    if not is_int(value) or value < low or (high is not None and value > high):
        allowed = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"
        raise ArgumentError(name, f"{name} must be {allowed}, got {show(value)}")
    return int(value)


def replication_count(value: Any, *, minimum: int = 2) -> int:
    """The number of independent replications: an int ``>= minimum`` (a confidence
    interval needs two; a control variate three) whose results fit in memory
    (:func:`replication_memory`).

    >>> replication_count(1)
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: replications must be >= 2 (for a confidence interval), got 1
    """
    if not is_int(value):
        raise ArgumentError(
            "replications", f"replications must be an int, got {type(value).__name__}"
        )
    if value < minimum:
        raise ArgumentError(
            "replications",
            f"replications must be >= {minimum} (for a confidence interval), got {value}",
        )
    return replication_memory(int(value))


def _memory_bytes() -> float | None:
    """The machine's memory (bytes), or the process's control group's limit if lower;
    ``None`` where neither is known."""
    try:
        total = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit.isdigit():
            total = min(total, float(limit))
    except OSError:
        pass
    return total if total > 0 else None


def _size(n_bytes: float) -> str:
    """``n_bytes`` in a readable unit: ``"1.5 GB"``."""
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n_bytes < 1000 or unit == "TB":
            return f"{n_bytes:.3g} {unit}"
        n_bytes /= 1000
    raise AssertionError  # pragma: no cover


def replication_memory(replications: int, memory: float | None = None) -> int:
    """``replications`` if their results fit in half the machine's ``memory`` (bytes; default
    the physical memory, or the control group's limit) at :data:`REPLICATION_BYTES` each;
    else an :class:`~queue_routing.errors.ArgumentError` naming ``replications`` with the
    estimate, raised before anything is allocated (rather than a ``MemoryError`` later).

    >>> replication_memory(10**9, memory=16e9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: replications = 1000000000 need about 1.02 TB of memory...
    """
    if memory is None:
        memory = _memory_bytes()
    need = float(replications) * REPLICATION_BYTES
    if memory is not None and need > memory / 2:
        raise ArgumentError(
            "replications",
            f"replications = {replications} need about {_size(need)} of memory for their "
            f"results ({REPLICATION_BYTES} bytes each), more than half of the "
            f"{_size(memory)} here; use fewer",
        )
    return int(replications)


def events_per_replication(name: str, rate: float, length: float, what: str) -> float:
    """The events of one replication, ``rate`` (events per unit time) times ``length`` (time
    units: warm-up plus horizon), if at most :data:`MAX_EVENTS_PER_REPLICATION`; else an
    :class:`~queue_routing.errors.ArgumentError` naming ``name`` (the time argument that
    makes the run long), whose message says ``what`` the rate is.

    >>> events_per_replication("horizon", 300.0, 1e13, "steps")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: horizon: 300 steps per unit time ... exceeds 1e+10
    """
    events = float(rate) * float(length)
    if not events <= MAX_EVENTS_PER_REPLICATION:
        raise ArgumentError(
            name,
            f"{name}: {rate:.3g} {what} per unit time x (warmup + horizon) {length:.3g} = "
            f"{events:.3g} {what} per replication exceeds {MAX_EVENTS_PER_REPLICATION:.0e}",
        )
    return events


def nonnegative_int(name: str, value: Any) -> int:
    """A non-negative int, such as the root ``seed``.

    >>> nonnegative_int("seed", 2022)
    2022
    """
    if not is_int(value) or value < 0:
        raise ArgumentError(name, f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def confidence_level(value: Any, name: str = "confidence") -> float:
    """A confidence level in ``(0, 1)``: the coverage of an interval (0.95 for 95%), or, for
    a family of tests, one minus the family-wise error rate.

    >>> confidence_level(0.95)
    0.95
    >>> confidence_level(95)
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: confidence must be in (0, 1), got 95.0
    """
    if not _is_number(value):
        raise ArgumentError(name, f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ArgumentError(name, f"{name} must be in (0, 1), got {v}")
    return v
