"""The exceptions of Part C, in a module of their own (every other module imports them).

* :class:`ServerPoolError` -- a malformed system or an SPP that cannot be solved;
* :class:`CRPError` and its subclasses -- complete resource pooling fails (Sec. 2):
  :class:`NonUniqueOptimumError`, :class:`NotATreeError`, :class:`DisconnectedError`,
  :class:`NonBindingPoolError`;
* :class:`UnstableEquilibriumError` -- the diffusion limit has no stationary law.

All are :class:`ValueError` subclasses. Classes and pools in messages and in the
``classes`` / ``pools`` attributes are numbered from 1.

>>> issubclass(NotATreeError, NonUniqueOptimumError) and issubclass(CRPError, ServerPoolError)
True
>>> err = NonBindingPoolError("pool 2 is slack", pools=[2])
>>> str(err), err.kind, err.pools
('complete resource pooling fails (non-binding): pool 2 is slack', 'non-binding', (2,))
"""

from __future__ import annotations

__all__ = [
    "CRPError",
    "DisconnectedError",
    "NonBindingPoolError",
    "NonUniqueOptimumError",
    "NotATreeError",
    "ServerPoolError",
    "UnstableEquilibriumError",
]


class ServerPoolError(ValueError):
    """A malformed server-pool system or an SPP that cannot be solved."""


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


class UnstableEquilibriumError(ValueError):
    """The drift matrix has an eigenvalue with non-negative real part: no stationary law."""
