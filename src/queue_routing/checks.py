"""Argument checks shared by the three parts.

Each returns the checked value (as a Python ``int`` or ``float``) or raises
:class:`~queue_routing.errors.ArgumentError` (a ``ValueError``) whose ``argument`` names the
argument and whose one-line message starts with that name, for a value of the wrong type as
for one out of range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import ArgumentError

__all__ = [
    "confidence_level",
    "integer",
    "is_int",
    "nonnegative_int",
    "positive",
    "replication_count",
    "show",
    "time_length",
]


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
    interval needs two; a control variate three).

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
    return int(value)


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
