"""Argument checks shared by the simulators of the three parts.

Each raises :class:`TypeError` for a value of the wrong type and :class:`ValueError` for a
value out of range, with a one-line message that names the argument.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["nonnegative_int", "replication_count", "time_length"]


def time_length(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """A finite duration (time units) ``> 0`` (``>= 0`` with ``allow_zero``), as a float.

    >>> time_length("horizon", 1000)
    1000.0
    >>> time_length("warmup", -1.0, allow_zero=True)
    Traceback (most recent call last):
    ...
    ValueError: warmup must be finite and >= 0, got -1.0
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {v}")
    return v


def replication_count(value: Any) -> int:
    """The number of independent replications: an int ``>= 2`` (a confidence interval needs
    two).

    >>> replication_count(1)
    Traceback (most recent call last):
    ...
    ValueError: replications must be >= 2 (for a confidence interval), got 1
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"replications must be an int, got {type(value).__name__}")
    if value < 2:
        raise ValueError(f"replications must be >= 2 (for a confidence interval), got {value}")
    return int(value)


def nonnegative_int(name: str, value: Any) -> int:
    """A non-negative int, such as the root ``seed``.

    >>> nonnegative_int("seed", 2022)
    2022
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)
