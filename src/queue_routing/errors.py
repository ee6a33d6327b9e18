"""Errors and warnings shared by the three parts.

Each part has its own input errors about its *model* (``multiskill.InstanceError``,
``deadlines.InstanceError``, ``serverpools.ServerPoolError``, all ``ValueError``); this module
holds what every part can raise about an *argument* of a function (:class:`ArgumentError`,
raised by the checks of :mod:`queue_routing.checks`), about its *answer*
(:class:`AccuracyError`, :class:`PrecisionWarning`), and about a user policy's index table
(:class:`TableBoundWarning`).
"""

from __future__ import annotations

__all__ = ["AccuracyError", "ArgumentError", "PrecisionWarning", "TableBoundWarning"]


class ArgumentError(ValueError):
    """A bad argument of a library function: wrong type or out of its range.

    ``argument`` names it, and the one-line message starts with that name, so the command
    line can report the option it came from (``--horizon must be finite and > 0, got -1.0``,
    exit status 2).

    >>> e = ArgumentError("horizon", "horizon must be finite and > 0, got -1.0")
    >>> e.argument, isinstance(e, ValueError)
    ('horizon', True)
    """

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(message)


class AccuracyError(ValueError):
    """A number the code cannot trust: a truncation that still decides the result, a method
    that did not converge, or double precision that limits the accuracy below what the caller
    asked for. Raised instead of returning that number; the message says which, and by how
    much, in one line."""


class PrecisionWarning(UserWarning):
    """The answer is returned, but double precision limits its accuracy (for example loads
    within 1e-9 of capacity); the message gives the relative accuracy to expect."""


class TableBoundWarning(UserWarning):
    """A simulation in which the end of an index table may have decided some arrivals.

    Index policies are tabulated for ``x = 0..table_size`` jobs per server or cluster; an
    arrival that finds a compared server beyond the table is decided as if its index were
    ``+inf`` (the server counted as full), i.e. by the truncated table, not by the policy.
    Raise ``table_size`` (Parts A and B; ``docs/README.md#your-own-policy``)."""
