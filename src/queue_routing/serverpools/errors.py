"""The exceptions of Part C, in a module of their own (every other module imports them).

* :class:`ServerPoolError` -- a malformed system or an SPP that cannot be solved;
* :class:`CRPError` and its subclasses -- complete resource pooling fails (Sec. 2):
  :class:`NonUniqueOptimumError`, :class:`NotATreeError`, :class:`DisconnectedError`,
  :class:`NonBindingPoolError`;
* :class:`NotUnderloadedError` -- rho >= 1: no underloaded fluid equilibrium to linearise;
* :class:`UnstableEquilibriumError` -- the diffusion limit has no stationary law.

All are :class:`ValueError` subclasses. Classes and pools in messages and in the
``classes`` / ``pools`` attributes are numbered from 1. Every message is one line of fewer
than :data:`MAX_MESSAGE` characters: lists are cut to a few items by :func:`listing`
("... and N more"), and the constructor collapses whitespace and cuts what is left as a last
resort; the attributes keep the full lists.

>>> issubclass(NotATreeError, NonUniqueOptimumError) and issubclass(CRPError, ServerPoolError)
True
>>> err = NonBindingPoolError("pool 2 is slack", pools=[2])
>>> str(err), err.kind, err.pools
('complete resource pooling fails (non-binding): pool 2 is slack', 'non-binding', (2,))
>>> listing([f"pool {j}" for j in range(1, 201)])
'pool 1, pool 2, pool 3 ... and 197 more'
"""

from __future__ import annotations

__all__ = [
    "MAX_MESSAGE",
    "CRPError",
    "DisconnectedError",
    "NonBindingPoolError",
    "NonUniqueOptimumError",
    "NotATreeError",
    "NotUnderloadedError",
    "ServerPoolError",
    "UnstableEquilibriumError",
]

#: Every message of this subpackage is one line shorter than this many characters.
MAX_MESSAGE = 300


def listing(items, limit: int = 3, sep: str = ", ") -> str:
    """The first ``limit`` items joined by ``sep``, then "... and N more" if there are more."""
    items = [str(x) for x in items]
    shown = sep.join(items[:limit])
    return shown if len(items) <= limit else f"{shown} ... and {len(items) - limit} more"


def one_line(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` on one line (whitespace collapsed), cut to fewer than ``limit`` chars."""
    text = " ".join(str(message).split())
    return text if len(text) < limit else text[: limit - 5] + " ..."


class ServerPoolError(ValueError):
    """A malformed server-pool system or an SPP that cannot be solved (one short line)."""

    def __init__(self, message: str = ""):
        super().__init__(one_line(message))


class CRPError(ServerPoolError):
    """The complete resource pooling condition fails (Sec. 2).

    Attributes
    ----------
    kind:
        ``"cycle"``, ``"disconnected"``, ``"non-unique"`` or ``"non-binding"``.
    classes, pools:
        The classes and pools involved, numbered from 1.
    """

    kind = "crp"

    def __init__(self, message: str, classes=(), pools=()):
        self.classes = tuple(int(i) for i in classes)
        self.pools = tuple(int(j) for j in pools)
        super().__init__(f"complete resource pooling fails ({self.kind}): {message}")


class NonUniqueOptimumError(CRPError):
    """The SPP has several optimal flows."""

    kind = "non-unique"


class NotATreeError(NonUniqueOptimumError):
    """The activities used by optimal solutions contain a cycle.

    A subclass of :class:`NonUniqueOptimumError`: with every pool binding, a vertex of the
    SPP polytope has at most I + J - 1 positive flows, so a cycle among the activities used
    by optimal solutions means the optimum is not a single vertex.
    """

    kind = "cycle"


class DisconnectedError(CRPError):
    """The basic activities do not connect all classes and pools."""

    kind = "disconnected"


class NonBindingPoolError(CRPError):
    """A pool capacity constraint (4) is slack, or binds with zero dual price alpha_j."""

    kind = "non-binding"


class NotUnderloadedError(ServerPoolError):
    """rho >= 1: the SPP's optimal pool load is not below 1 (critically loaded or overloaded).

    The underloaded fluid equilibrium (Theorem 3.1) exists only for rho < 1. Attribute
    ``rho``: the SPP optimum (dimensionless).
    """

    def __init__(self, rho: float, message: str = ""):
        self.rho = float(rho)
        super().__init__(
            f"not underloaded: the SPP optimum rho = {self.rho:.10g} is not below 1; "
            + (message or "the fluid equilibrium exists only for rho < 1")
        )


class UnstableEquilibriumError(ValueError):
    """The drift matrix has an eigenvalue with non-negative real part: no stationary law."""

    def __init__(self, message: str = ""):
        super().__init__(one_line(message))
