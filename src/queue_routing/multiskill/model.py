"""The multi-skilled server model of Miguelez, Doncel and Prabhu (2022), Sec. 2.

Servers ``j = 0..C`` are processor-sharing queues; server ``j >= 1`` is dedicated to class
``j`` and server 0 (the multi-skilled server) serves every class. Units, used throughout the
subpackage:

``mu``   capacity of each server, work per unit time, shape ``(C + 1,)``, index 0 = server 0;
``cost`` holding cost of each server, cost per job per unit time, shape ``(C + 1,)``;
``eta``  traffic intensity of each class, work per unit time, shape ``(C,)``, ``eta[i - 1]``
         is class ``i``.

Loads ``rho`` are dimensionless (work arriving per unit capacity), shape ``(C + 1,)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "BOTH",
    "DEDICATED",
    "SHARED",
    "Instance",
    "InstanceError",
    "Partition",
    "UnstableInstanceError",
    "delta",
    "holding_cost",
    "partition_at",
    "stability_margin",
]

#: Labels of the three sets of Proposition 2: C_d (all traffic to the dedicated server),
#: C_b (split between both servers) and C_0 (all traffic to server 0).
DEDICATED, BOTH, SHARED = 0, 1, 2


class InstanceError(ValueError):
    """An instance whose parameters are malformed (wrong length, NaN, non-positive)."""


class UnstableInstanceError(InstanceError):
    """An instance that no routing can stabilise (Proposition 1 fails).

    Attributes
    ----------
    classes:
        The violating class set ``A = {i : eta_i > mu_i}`` (1-based class numbers).
    deficit:
        ``sum_{i in A} (eta_i - mu_i) - mu_0 >= 0``, in work per unit time.
    """

    def __init__(self, classes: tuple[int, ...], deficit: float, where: str = ""):
        self.classes = classes
        self.deficit = deficit = float(deficit) + 0.0  # a zero deficit is 0, never -0
        shown = ", ".join(map(str, classes[:20])) + (", ..." if len(classes) > 20 else "")
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}unstable instance: class set A = {{{shown}}} has "
            f"sum(eta_i - mu_i) over A >= mu_0 (deficit {deficit:.6g}); "
            "Proposition 1 needs mu_0 + sum_A mu_i > sum_A eta_i"
        )


#: Smallest and largest ratio of two parameters the solvers accept (see :func:`_representable`).
RATIO_RANGE = (1e-300, 1e300)


def _label(name: str, k: int) -> str:
    """``mu_j``/``cost_j`` for server j = 0..C, ``eta_i`` for class i = 1..C (the paper's
    numbering, also that of the CLI's output)."""
    return f"{name}_{k + 1}" if name == "eta" else f"{name}_{k}"


def _as_vector(name: str, value: Any, length: int | None) -> np.ndarray:
    if isinstance(value, list | tuple):
        for k, v in enumerate(value):  # JSON numbers only: no booleans, no numeric strings
            if isinstance(v, bool) or not isinstance(v, int | float | np.number):
                raise InstanceError(f"{_label(name, k)} must be a number, got {v!r}")
    try:
        arr = np.array(value, dtype=float)
    except OverflowError:
        raise InstanceError(f"{name} holds an integer too large for a double") from None
    except (TypeError, ValueError) as exc:
        raise InstanceError(f"{name} must be a list of numbers ({exc})") from None
    if arr.ndim != 1:
        raise InstanceError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if length is not None and arr.size != length:
        raise InstanceError(f"{name} must have length {length}, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InstanceError(f"{_label(name, bad)} is not a finite number ({arr[bad]})")
    if np.any(arr <= 0):
        bad = int(np.flatnonzero(arr <= 0)[0])
        raise InstanceError(f"{_label(name, bad)} = {arr[bad]:g} must be > 0")
    arr.setflags(write=False)
    return arr


def _representable(mu: np.ndarray, cost: np.ndarray, eta: np.ndarray) -> None:
    """Refuse parameters whose solution double precision cannot represent.

    The solvers work with the totals ``sum mu`` and ``sum eta`` (work per unit time), the
    cost-per-capacity ratios ``(c_j/mu_j) / (c_0/mu_0)`` (whose square roots are delta_j) and
    the dedicated loads ``eta_i/mu_i``: each must be finite, and each ratio within
    :data:`RATIO_RANGE`, else some load or delta under- or overflows and the answer would be
    silently wrong. Scaling every rate, or every cost, by one factor leaves the ratios
    unchanged, so uniformly scaled instances are accepted over the whole double range.
    """
    low, high = RATIO_RANGE
    for name, values in (("mu", mu), ("eta", eta)):
        total = float(np.sum(values))
        if not np.isfinite(total):
            raise InstanceError(f"sum of {name} overflows double precision ({name} too large)")
    with np.errstate(all="ignore"):
        ratio = (cost[1:] / mu[1:]) * (mu[0] / cost[0])
        load = eta / mu[1:]
    for what, values in (("cost-per-capacity ratio", ratio), ("eta_i/mu_i", load)):
        bad = np.flatnonzero(~((values >= low) & (values <= high)))
        if bad.size:
            i = int(bad[0]) + 1
            raise InstanceError(
                f"class {i}: {what} {values[i - 1]:.3g} is outside [{low:g}, {high:g}], the "
                "range the solvers represent in double precision"
            )


def stability_margin(mu: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Proposition 1 in O(C): ``mu_0 - sum_i (eta_i - mu_i)^+``, batched over leading axes.

    The instance is stabilisable iff the margin is > 0: the binding subset of the
    proposition is ``A = {i : eta_i > mu_i}``.
    """
    mu = np.asarray(mu, dtype=float)
    eta = np.asarray(eta, dtype=float)
    return mu[..., 0] - np.clip(eta - mu[..., 1:], 0.0, None).sum(axis=-1)


@dataclass(frozen=True)
class Instance:
    """One multi-skilled system (validated at construction; see the module docstring).

    Raises :class:`InstanceError` for malformed parameters and
    :class:`UnstableInstanceError` when Proposition 1 fails.

    >>> inst = Instance(mu=[25, 34, 38], cost=[5, 10, 11], eta=[28, 33])
    >>> inst.n_classes, inst.delta.round(4).tolist()  # delta_j = sqrt((c_j/mu_j)/(c_0/mu_0))
    (2, [1.2127, 1.2031])
    >>> Instance(mu=[1, 2], cost=[1, 1], eta=[5])
    Traceback (most recent call last):
    ...
    queue_routing.multiskill.model.UnstableInstanceError: unstable instance: class set A = {1} ...
    """

    mu: np.ndarray
    cost: np.ndarray
    eta: np.ndarray
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        eta = _as_vector("eta", self.eta, None)
        if eta.size == 0:
            raise InstanceError("eta must hold at least one class")
        mu = _as_vector("mu", self.mu, eta.size + 1)
        cost = _as_vector("cost", self.cost, eta.size + 1)
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "cost", cost)
        margin = float(stability_margin(mu, eta))
        if not margin > 0:
            over = tuple(int(i) + 1 for i in np.flatnonzero(eta > mu[1:]))
            raise UnstableInstanceError(over, max(-margin, 0.0))
        _representable(mu, cost, eta)

    # -- derived quantities -------------------------------------------------------------
    @property
    def n_classes(self) -> int:
        """C, the number of classes (and of dedicated servers)."""
        return int(self.eta.size)

    @property
    def delta(self) -> np.ndarray:
        """delta_j = sqrt((c_j/mu_j) / (c_0/mu_0)), j = 1..C (corrected Sec. 4 definition)."""
        return delta(self.mu, self.cost)

    @property
    def dedicated_loads(self) -> np.ndarray:
        """r_j = eta_j / mu_j: the load of server j when class j is fully dedicated."""
        return self.eta / self.mu[1:]

    # -- (de)serialisation -------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str = "") -> Instance:
        if not isinstance(data, dict):
            raise InstanceError("instance must be a JSON object with keys mu, cost, eta")
        missing = [k for k in ("mu", "cost", "eta") if k not in data]
        if missing:
            raise InstanceError(f"instance is missing key(s): {', '.join(missing)}")
        extra = sorted(set(data) - {"mu", "cost", "eta", "name"})
        if extra:
            raise InstanceError(f"instance has unknown key(s): {', '.join(extra)}")
        return cls(
            mu=data["mu"], cost=data["cost"], eta=data["eta"], name=str(data.get("name", name))
        )

    @classmethod
    def from_json(cls, text: str) -> Instance:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstanceError(f"instance is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mu": self.mu.tolist(),
            "cost": self.cost.tolist(),
            "eta": self.eta.tolist(),
        }
        if self.name:
            out["name"] = self.name
        return out


def delta(mu: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """delta_j = sqrt((c_j/mu_j)/(c_0/mu_0)) for j = 1..C, batched over leading axes.

    From the KKT conditions (30)-(32) of the paper's appendix,
    ``c_0/(mu_0 (1-rho_0)^2) = c_j/(mu_j (1-rho_j)^2)`` for classes in C_b; the square root
    is lost in our copy of the paper (``docs/multiskill.md#kkt-conditions-and-delta``).
    """
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    return np.sqrt((cost[..., 1:] / mu[..., 1:]) / (cost[..., :1] / mu[..., :1]))


def holding_cost(loads: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Mean holding cost rate sum_j c_j rho_j / (1 - rho_j) (objective of LOAD-OPT).

    Returns ``inf`` where some load is >= 1. Batched over leading axes.
    """
    loads = np.asarray(loads, dtype=float)
    cost = np.asarray(cost, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(loads < 1.0, cost * loads / (1.0 - loads), np.inf)
    return terms.sum(axis=-1)


@dataclass(frozen=True)
class Partition:
    """A partition of the classes into C_d, C_b and C_0 (Proposition 2).

    ``labels[i - 1]`` is :data:`DEDICATED`, :data:`BOTH` or :data:`SHARED` for class i.
    """

    labels: np.ndarray

    def __post_init__(self) -> None:
        labels = np.array(self.labels, dtype=np.int8)
        if labels.ndim != 1 or np.any((labels < 0) | (labels > 2)):
            raise InstanceError("partition labels must be a 1-D array of 0, 1, 2")
        labels.setflags(write=False)
        object.__setattr__(self, "labels", labels)

    @classmethod
    def trusted(cls, labels: np.ndarray) -> Partition:
        """Wrap int8 labels already known to be valid (a solver's output) without copying."""
        obj = object.__new__(cls)
        labels.setflags(write=False)
        object.__setattr__(obj, "labels", labels)
        return obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partition) and np.array_equal(self.labels, other.labels)

    def __hash__(self) -> int:
        return hash(self.labels.tobytes())

    @classmethod
    def from_sets(cls, n_classes: int, dedicated=(), both=(), shared=()) -> Partition:
        """Build from 1-based class numbers; classes not named are dedicated."""
        labels = np.full(n_classes, DEDICATED, dtype=np.int8)
        seen: set[int] = set()
        for label, members in ((DEDICATED, dedicated), (BOTH, both), (SHARED, shared)):
            for i in members:
                i = int(i)
                if not 1 <= i <= n_classes:
                    raise InstanceError(f"class {i} is not in 1..{n_classes}")
                if i in seen:
                    raise InstanceError(f"class {i} appears in two sets of the partition")
                seen.add(i)
                labels[i - 1] = label
        return cls(labels)

    def sets(self) -> dict[str, list[int]]:
        """The partition as ``{"dedicated": [...], "both": [...], "shared": [...]}``."""
        return {
            name: (np.flatnonzero(self.labels == label) + 1).tolist()
            for name, label in (("dedicated", DEDICATED), ("both", BOTH), ("shared", SHARED))
        }

    def __repr__(self) -> str:
        s = self.sets()
        return f"Partition(C_d={s['dedicated']}, C_b={s['both']}, C_0={s['shared']})"


def partition_at(s: np.ndarray, delta_: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Classify every class by Proposition 2 at spare capacity ``s = 1 - rho_0`` of server 0.

    In multiplied-out form (valid at ``s = 0``, an overloaded server 0): class i is in C_0 iff
    ``delta_i s >= 1``, in C_b iff ``1 - r_i < delta_i s < 1``, else in C_d. Batched: ``s`` has
    the leading shape of ``delta_``; returns int8 labels.
    """
    x = np.asarray(delta_) * np.asarray(s)[..., None]
    labels = np.full(x.shape, DEDICATED, dtype=np.int8)
    labels[x > 1.0 - np.asarray(r)] = BOTH
    labels[x >= 1.0] = SHARED
    return labels
