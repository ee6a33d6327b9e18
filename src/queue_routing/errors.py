"""Errors shared by the three parts.

Each part has its own input errors (``multiskill.InstanceError``,
``deadlines.InstanceError``, ``serverpools.ServerPoolError``, all ``ValueError``); this module
holds what every part can raise about its *answer*.
"""

from __future__ import annotations

__all__ = ["AccuracyError", "PrecisionWarning"]


class AccuracyError(ValueError):
    """A number the code cannot trust: a truncation that still decides the result, a method
    that did not converge, or double precision that limits the accuracy below what the caller
    asked for. Raised instead of returning that number; the message says which, and by how
    much, in one line."""


class PrecisionWarning(UserWarning):
    """The answer is returned, but double precision limits its accuracy (for example loads
    within 1e-9 of capacity); the message gives the relative accuracy to expect."""
