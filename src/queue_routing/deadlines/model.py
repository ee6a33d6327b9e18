"""Model objects of Part B: Niño-Mora (2012), Sec. 2 (``docs/deadlines.md#model-and-units``).

``n`` clusters; cluster ``k`` has ``m_k`` identical exponential servers of rate ``mu_k``
(jobs per unit time per server), its own FCFS queue and unlimited buffer. Jobs arrive as
Poisson(``lam``) (jobs per unit time) and carry i.i.d. relative deadlines (units of time) on
their response time (arrival to end of service) or waiting time (arrival to start of
service). A rejected job costs ``R``; an admitted job that misses its deadline costs 1.
Pure routing (no rejection, ``R = None``) needs ``lam < sum_k m_k mu_k``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..checks import show

__all__ = [
    "DEADLINE_KINDS",
    "DEADLINE_RANGE",
    "DEADLINE_TARGETS",
    "MAX_CLUSTERS",
    "MAX_REJECTION_COST_RATE",
    "MAX_SERVERS",
    "RATE_RANGE",
    "REJECTION_COST_RANGE",
    "Cluster",
    "Deadline",
    "Instance",
    "InstanceError",
    "UnstableInstanceError",
]

#: Supported deadline laws and the quantity the deadline applies to.
DEADLINE_KINDS = ("constant", "uniform", "exponential")
DEADLINE_TARGETS = ("response", "waiting")

_KIND_KEYS = {"constant": ("t",), "uniform": ("low", "high"), "exponential": ("mean",)}


class InstanceError(ValueError):
    """A deadline, cluster or instance with malformed parameters (the message names the field)."""


class UnstableInstanceError(InstanceError):
    """Pure routing with ``lam >= sum_k m_k mu_k``: no routing keeps every queue stable.

    Attributes
    ----------
    deficit:
        ``lam - sum_k m_k mu_k >= 0``, in jobs per unit time.
    """

    def __init__(self, deficit: float):
        self.deficit = deficit = float(deficit) + 0.0  # a zero deficit is 0, never -0
        super().__init__(
            "arrival_rate: pure routing (rejection_cost null) needs arrival_rate < "
            f"sum_k servers_k * service_rates_k; the deficit is {deficit:.6g} jobs per unit time"
        )


#: Accepted ranges (the units are those of the instance: jobs and time units). Rates and
#: deadlines span 24 orders of magnitude around the unit, servers up to a million per
#: cluster: every accepted instance computes finite results in double precision (products
#: such as ``m mu t`` stay below 1e30 and ``lam / mu`` below 1e24), and a researcher can
#: always rescale the time unit into this range.
RATE_RANGE = (1e-12, 1e12)
DEADLINE_RANGE = (1e-12, 1e12)
MAX_SERVERS = 10**6
#: ``R`` is in units of the miss cost; up to 1e300 (effectively "never reject unless
#: forced"), with ``R * lam <= 1e306`` so that every cost rate is a finite double.
REJECTION_COST_RANGE = (1e-12, 1e300)
MAX_REJECTION_COST_RATE = 1e306
#: At most this many clusters in one instance.
MAX_CLUSTERS = 10_000


def _number(name: str, value: Any, *, low: float, high: float, allow_low: bool = True) -> float:
    """A JSON number (int or float, not bool, not a string) in ``[low, high]`` (``(low,
    high]`` without ``allow_low``), as a float; one-line :class:`InstanceError` otherwise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise InstanceError(f"{name} must be a JSON number, got {show(value)}")
    if isinstance(value, np.complexfloating):
        raise InstanceError(f"{name} must be a real number, got {show(value)}")
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        raise InstanceError(f"{name} must be finite, got {show(value)}")
    # compare before converting: an int such as 10**400 has no float
    ok = (low <= value if allow_low else low < value) and value <= high
    if not ok:
        bracket = "[" if allow_low else "("
        raise InstanceError(f"{name} = {show(value)} must lie in {bracket}{low:g}, {high:g}]")
    return float(value)


@dataclass(frozen=True)
class Deadline:
    """Law of the relative deadline ``tau`` of a job (units of time).

    Attributes
    ----------
    kind:
        ``"constant"`` (``tau = t``), ``"uniform"`` (``tau ~ U[low, high]``) or
        ``"exponential"`` (``tau ~ Exp`` with mean ``mean = 1/theta``).
    t, low, high, mean:
        The parameters of ``kind`` (units of time); the others must be ``None``.
        ``t`` and ``mean`` in ``[1e-12, 1e12]``; ``0 <= low < high <= 1e12``,
        ``high >= 1e-12`` (JSON numbers; see :data:`DEADLINE_RANGE`).
    on:
        ``"response"`` (arrival to end of service, the paper's default) or ``"waiting"``
        (arrival to start of service).
    """

    kind: str
    t: float | None = None
    low: float | None = None
    high: float | None = None
    mean: float | None = None
    on: str = "response"

    def __post_init__(self) -> None:
        if self.kind not in DEADLINE_KINDS:
            raise InstanceError(
                f"deadline.kind must be one of {DEADLINE_KINDS}, got {show(self.kind)}"
            )
        if self.on not in DEADLINE_TARGETS:
            raise InstanceError(
                f"deadline.on must be one of {DEADLINE_TARGETS}, got {show(self.on)}"
            )
        wanted = _KIND_KEYS[self.kind]
        for key in ("t", "low", "high", "mean"):
            value = getattr(self, key)
            if key in wanted:
                if value is None:
                    raise InstanceError(f"deadline.{key} is required for kind {show(self.kind)}")
            elif value is not None:
                raise InstanceError(f"deadline.{key} is not a parameter of kind {show(self.kind)}")
        lo, hi = DEADLINE_RANGE
        if self.kind == "constant":
            object.__setattr__(self, "t", _number("deadline.t", self.t, low=lo, high=hi))
        elif self.kind == "exponential":
            mean = _number("deadline.mean", self.mean, low=lo, high=hi)
            object.__setattr__(self, "mean", mean)
        else:
            low = _number("deadline.low", self.low, low=0.0, high=hi, allow_low=True)
            high = _number("deadline.high", self.high, low=lo, high=hi)
            if not high > low:
                raise InstanceError(f"deadline.high = {high:g} must be > deadline.low = {low:g}")
            object.__setattr__(self, "low", low)
            object.__setattr__(self, "high", high)

    # -- derived --------------------------------------------------------------------------
    @property
    def expected(self) -> float:
        """E[tau], units of time."""
        if self.kind == "constant":
            return float(self.t)
        if self.kind == "uniform":
            return 0.5 * (self.low + self.high)
        return float(self.mean)

    @property
    def theta(self) -> float:
        """Rate ``1/mean`` of an exponential deadline (per unit time)."""
        if self.kind != "exponential":
            raise InstanceError(
                f"deadline.theta is only defined for kind 'exponential', not {show(self.kind)}"
            )
        return 1.0 / self.mean

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` i.i.d. deadlines (units of time) drawn from ``rng`` (``seeding.rng_for``)."""
        if self.kind == "constant":
            return np.full(size, float(self.t))
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, size)
        return rng.exponential(self.mean, size)

    # -- (de)serialisation ----------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], on: str | None = None) -> Deadline:
        """Build from ``{"kind": "constant", "t": ..}``, ``{"kind": "uniform", "low": ..,
        "high": ..}`` or ``{"kind": "exponential", "mean": ..}``; optional ``"on"``."""
        if not isinstance(data, dict):
            raise InstanceError("deadline must be a JSON object with a 'kind' key")
        if "kind" not in data:
            raise InstanceError("deadline is missing key 'kind'")
        kind = data["kind"]
        if kind not in DEADLINE_KINDS:
            raise InstanceError(f"deadline.kind must be one of {DEADLINE_KINDS}, got {show(kind)}")
        allowed = {"kind", "on", *_KIND_KEYS[kind]}
        extra = sorted(set(data) - allowed)
        if extra:
            raise InstanceError(
                f"deadline of kind {show(kind)} has unknown key(s): {', '.join(extra)}"
            )
        params = {k: data.get(k) for k in _KIND_KEYS[kind]}
        target = data.get("on", on if on is not None else "response")
        return cls(kind=kind, on=target, **params)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for key in _KIND_KEYS[self.kind]:
            out[key] = getattr(self, key)
        if self.on != "response":
            out["on"] = self.on
        return out


@dataclass(frozen=True)
class Cluster:
    """One cluster: ``servers`` (integer m in 1..10**6) exponential servers of rate ``rate``
    (mu in [1e-12, 1e12] jobs per unit time per server), FCFS, unlimited buffer."""

    servers: int
    rate: float

    def __post_init__(self) -> None:
        m = self.servers
        servers = _number("servers", m, low=1, high=MAX_SERVERS)
        if servers != math.floor(servers):
            raise InstanceError(f"servers must be an integer in 1..{MAX_SERVERS}, got {show(m)}")
        object.__setattr__(self, "servers", int(servers))
        lo, hi = RATE_RANGE
        object.__setattr__(self, "rate", _number("service_rates", self.rate, low=lo, high=hi))

    @property
    def capacity(self) -> float:
        """``m mu``, jobs per unit time."""
        return self.servers * self.rate


@dataclass(frozen=True)
class Instance:
    """Admission and routing instance (validated at construction).

    Attributes
    ----------
    arrival_rate:
        ``lam`` in ``[1e-12, 1e12]``, jobs per unit time.
    clusters:
        Tuple of :class:`Cluster` (1 to :data:`MAX_CLUSTERS`), numbered from 1 in messages.
    rejection_cost:
        ``R`` in ``[1e-12, 1e300]`` (cost per rejected job, with ``R lam <= 1e306``) or
        ``None`` for pure routing, which then requires ``lam < sum_k m_k mu_k`` (else
        :class:`UnstableInstanceError` naming the deficit).

    Every number must be a JSON number (``int`` or ``float``; ``true`` and ``"3.5"`` are
    refused with a one-line :class:`InstanceError` naming the field).
    deadline:
        The :class:`Deadline` law shared by all jobs (a miss costs 1).

    Examples
    --------
    >>> inst = Instance(3.5, (Cluster(3, 1.0), Cluster(2, 0.8)), 2.0, Deadline("constant", t=1.5))
    >>> inst.n_clusters, round(inst.capacity, 12), inst.pure_routing
    (2, 4.6, False)
    >>> inst == Instance.from_dict(inst.to_dict())
    True
    """

    arrival_rate: float
    clusters: tuple[Cluster, ...]
    rejection_cost: float | None
    deadline: Deadline

    def __post_init__(self) -> None:
        lam = _number("arrival_rate", self.arrival_rate, low=RATE_RANGE[0], high=RATE_RANGE[1])
        object.__setattr__(self, "arrival_rate", lam)
        if not isinstance(self.clusters, tuple | list):
            raise InstanceError("clusters must be a tuple of Cluster")
        clusters = tuple(self.clusters)
        if not clusters:
            raise InstanceError("clusters must hold at least one cluster")
        if len(clusters) > MAX_CLUSTERS:
            raise InstanceError(f"clusters: at most {MAX_CLUSTERS} clusters, got {len(clusters)}")
        for k, c in enumerate(clusters):
            if not isinstance(c, Cluster):
                raise InstanceError(f"cluster {k + 1} must be a Cluster, got {type(c).__name__}")
        object.__setattr__(self, "clusters", clusters)
        if not isinstance(self.deadline, Deadline):
            raise InstanceError("deadline must be a Deadline")
        if self.rejection_cost is not None:
            lo, hi = REJECTION_COST_RANGE
            r = _number("rejection_cost", self.rejection_cost, low=lo, high=hi)
            if r * lam > MAX_REJECTION_COST_RATE:
                raise InstanceError(
                    f"rejection_cost * arrival_rate = {r * lam:.3g} must be <= "
                    f"{MAX_REJECTION_COST_RATE:g} (cost rates must be finite doubles)"
                )
            object.__setattr__(self, "rejection_cost", r)
        else:
            deficit = lam - self.capacity
            if deficit >= 0:
                raise UnstableInstanceError(deficit)

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def servers(self) -> np.ndarray:
        """``m_k``, shape ``(n,)``."""
        return np.array([c.servers for c in self.clusters], dtype=np.int64)

    @property
    def service_rates(self) -> np.ndarray:
        """``mu_k`` (jobs per unit time per server), shape ``(n,)``."""
        return np.array([c.rate for c in self.clusters], dtype=float)

    @property
    def capacity(self) -> float:
        """``sum_k m_k mu_k``, jobs per unit time."""
        return float(sum(c.capacity for c in self.clusters))

    @property
    def pure_routing(self) -> bool:
        return self.rejection_cost is None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Instance:
        """Build from ``{"arrival_rate": lam, "servers": [m_k], "service_rates": [mu_k],
        "rejection_cost": R or null, "deadline": {...}}`` (the JSON of the CLI; an optional
        ``"name"`` is ignored).

        Pure routing (``"rejection_cost": null``) needs ``lam < sum_k m_k mu_k``; otherwise
        the error names the deficit:

        >>> data = {"arrival_rate": 3.5, "servers": [3, 2], "service_rates": [1.0, 0.8],
        ...         "rejection_cost": None,
        ...         "deadline": {"kind": "uniform", "low": 0.5, "high": 2.5}}
        >>> inst = Instance.from_dict(data)
        >>> inst.servers.tolist(), inst.deadline.expected, inst.pure_routing
        ([3, 2], 1.5, True)
        >>> try:
        ...     Instance.from_dict({**data, "arrival_rate": 5.0})
        ... except UnstableInstanceError as exc:
        ...     print(round(exc.deficit, 12))
        0.4
        """
        if not isinstance(data, dict):
            raise InstanceError("instance must be a JSON object")
        keys = ("arrival_rate", "servers", "service_rates", "rejection_cost", "deadline")
        missing = [k for k in keys if k not in data]
        if missing:
            raise InstanceError(f"instance is missing key(s): {', '.join(missing)}")
        extra = sorted(set(data) - {*keys, "name"})
        if extra:
            raise InstanceError(f"instance has unknown key(s): {', '.join(extra)}")
        servers, rates = data["servers"], data["service_rates"]
        for key, value in (("servers", servers), ("service_rates", rates)):
            if not isinstance(value, list | tuple):
                raise InstanceError(f"{key} must be a list, got {show(value)}")
        if len(servers) != len(rates):
            raise InstanceError(
                f"servers has length {len(servers)} but service_rates has length {len(rates)}"
            )
        clusters = []
        for k, (m, mu) in enumerate(zip(servers, rates, strict=True)):
            try:
                clusters.append(Cluster(m, mu))
            except InstanceError as exc:
                raise InstanceError(f"cluster {k + 1}: {exc}") from None
        return cls(
            arrival_rate=data["arrival_rate"],
            clusters=tuple(clusters),
            rejection_cost=data["rejection_cost"],
            deadline=Deadline.from_dict(data["deadline"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "arrival_rate": self.arrival_rate,
            "servers": self.servers.tolist(),
            "service_rates": self.service_rates.tolist(),
            "rejection_cost": self.rejection_cost,
            "deadline": self.deadline.to_dict(),
        }
