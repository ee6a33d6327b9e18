"""The instances of Part B's numerical study (ours): Niño-Mora (2012),
``docs/deadlines.md#numerical-study``.

* :func:`study_instance`: the instance of a sweep's point, on the first ``n`` clusters of a
  config block, one parameter changed at a time; :func:`base_instance` (the two-cluster
  block ``deadlines.base``) and :func:`three_cluster_instance` (the block
  ``deadlines.three_cluster``, matched two- and three-cluster systems) are its two blocks;
* :func:`sweep_points`: the points of one sweep (one parameter changed at a time), and
  :func:`sweep_keys`, :func:`sweep_values`: the config lists they read;
* :func:`large_instance`: ``n`` random clusters (the large systems), drawn from the root
  seed;
* :func:`deadline_dict`: a deadline law of a given mean;
* :data:`HEURISTICS`: the policies the study benchmarks against the optimal one.

Rates in jobs per unit time, deadlines in time units. Nothing here imports the solvers or
the simulators.

>>> inst = base_instance({"servers": [3, 2], "service_rates": [1.0, 0.8],
...     "arrival_rate": 3.5, "rejection_cost": 2.0, "deadline": "constant",
...     "mean_deadline": 1.5, "uniform_spread": 0.6}, arrival_rate=4.0)
>>> inst.arrival_rate, inst.capacity, inst.deadline.t
(4.0, 4.6, 1.5)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..seeding import rng_for
from .model import Instance

__all__ = [
    "BASE_KEYS",
    "HEURISTICS",
    "LARGE_KEY",
    "base_instance",
    "deadline_dict",
    "large_instance",
    "study_instance",
    "sweep_keys",
    "sweep_points",
    "sweep_values",
    "three_cluster_instance",
]

#: Heuristic policies benchmarked against the optimal one (BS, IO, PI, RB).
HEURISTICS = ("bs", "io", "pi", "rb")

#: The key of the large systems' random numbers: the draw of the clusters
#: (``rng_for(seed, LARGE_KEY, n)``) and the simulations' streams (keys ``(LARGE_KEY, n)``).
LARGE_KEY = "deadlines-large"

#: The keys of a two-cluster base block (config ``deadlines.base``, :func:`base_instance`).
BASE_KEYS = (
    "servers",
    "service_rates",
    "arrival_rate",
    "rejection_cost",
    "deadline",
    "mean_deadline",
    "uniform_spread",
)


def deadline_dict(kind: str, mean: float, uniform_spread: float) -> dict[str, Any]:
    """Deadline law of mean ``mean`` (time units): constant ``t = mean``, uniform on
    ``mean (1 -+ uniform_spread)``, or exponential with mean ``mean``."""
    if kind == "constant":
        return {"kind": "constant", "t": float(mean)}
    if kind == "uniform":
        return {
            "kind": "uniform",
            "low": float(mean * (1.0 - uniform_spread)),
            "high": float(mean * (1.0 + uniform_spread)),
        }
    if kind == "exponential":
        return {"kind": "exponential", "mean": float(mean)}
    raise ValueError(f"deadline kind must be constant, uniform or exponential, got {kind!r}")


def study_instance(
    family: Mapping[str, Any], clusters: int | None = None, **changes: Any
) -> Instance:
    """The instance of a config block ``family`` (keys ``servers``, ``service_rates``,
    ``rejection_cost`` (``None``: pure routing), ``deadline`` (a kind), ``mean_deadline``,
    ``uniform_spread``, and ``arrival_rate`` or ``load``) with ``changes`` applied, on its
    first ``clusters`` clusters (all by default). The arrival rate is ``arrival_rate`` if the
    block (or a change) gives one, else ``lam = load * sum_{k <= clusters} m_k mu_k`` (jobs
    per unit time), so that the systems of one point on different numbers of clusters share
    the load, the rejection cost and the deadline law.

    >>> block = {"servers": [3, 2, 1], "service_rates": [1.0, 0.8, 0.6], "load": 0.5,
    ...     "rejection_cost": None, "deadline": "exponential", "mean_deadline": 2.0,
    ...     "uniform_spread": 0.6}
    >>> two = study_instance(block, 2)
    >>> two.servers.tolist(), two.arrival_rate, two.rejection_cost, two.deadline.mean
    ([3, 2], 2.3, None, 2.0)
    """
    b = {**family, **changes}
    m = [int(v) for v in b["servers"]][:clusters]
    mu = [float(v) for v in b["service_rates"]][:clusters]
    if "arrival_rate" in b:
        lam = float(b["arrival_rate"])
    else:
        lam = float(b["load"]) * float(np.dot(m, mu))
    return Instance.from_dict(
        {
            "arrival_rate": lam,
            "servers": m,
            "service_rates": mu,
            "rejection_cost": None if b["rejection_cost"] is None else float(b["rejection_cost"]),
            "deadline": deadline_dict(b["deadline"], b["mean_deadline"], b["uniform_spread"]),
        }
    )


def base_instance(base: Mapping[str, Any], **changes: Any) -> Instance:
    """The two-cluster base instance of the config block ``deadlines.base`` (keys servers,
    service_rates, arrival_rate, rejection_cost, deadline, mean_deadline, uniform_spread)
    with ``changes`` applied: :func:`study_instance` of every cluster."""
    return study_instance(base, **changes)


def three_cluster_instance(block: Mapping[str, Any], clusters: int, **changes: Any) -> Instance:
    """The instance of the config block ``deadlines.three_cluster`` (keys ``servers``,
    ``service_rates``, ``load``, ``rejection_cost``, ``deadline``, ``mean_deadline``,
    ``uniform_spread``) with ``changes`` applied, on its first ``clusters`` clusters (2: the
    matched two-cluster system; 3: all three): :func:`study_instance`, at arrival rate
    ``lam = load * sum_{k <= clusters} m_k mu_k``."""
    return study_instance(block, clusters, **changes)


def sweep_points(
    sweeps: Mapping[str, Sequence], sweep: str, *, rate: str = "arrival_rate"
) -> tuple[str, list[dict[str, Any]]]:
    """``(varied parameter, changes of each point)`` of ``sweep``, a key of ``sweeps``:
    ``rate`` (``arrival_rate`` or ``load``), ``rejection_cost`` or ``mean_deadline``, one
    value at a time; ``distribution``, every deadline law of ``sweeps["distribution"]`` at
    every rate of ``sweeps["distribution_loads"]`` if given, else of ``sweeps[rate]``;
    ``pure_routing``, the rates of ``sweeps["pure_routing"]`` without rejection.

    >>> sweep_points({"load": [0.5], "distribution": ["uniform"],
    ...     "distribution_loads": [0.6, 0.9]}, "distribution", rate="load")
    ('load', [{'deadline': 'uniform', 'load': 0.6}, {'deadline': 'uniform', 'load': 0.9}])
    """
    if sweep in (rate, "rejection_cost", "mean_deadline"):
        return sweep, [{sweep: v} for v in sweeps[sweep]]
    if sweep == "distribution":
        rates = sweeps[sweep_keys(sweeps, sweep, rate=rate)[1]]
        return rate, [{"deadline": kind, rate: v} for kind in sweeps["distribution"] for v in rates]
    if sweep == "pure_routing":
        return rate, [{rate: v, "rejection_cost": None} for v in sweeps["pure_routing"]]
    allowed = (rate, "rejection_cost", "mean_deadline", "distribution", "pure_routing")
    raise ValueError(f"sweep must be one of {allowed}, got {sweep!r}")


def sweep_keys(sweeps: Mapping[str, Sequence], sweep: str, *, rate: str) -> list[str]:
    """The keys of the config block ``sweeps`` that the points of ``sweep`` read
    (:func:`sweep_points`): ``distribution`` crosses the deadline laws with
    ``distribution_loads`` if given, else with ``rate``; every other sweep reads its own list.
    A pipeline job of one sweep is given only these lists (editing another sweep reruns none
    of its points).

    >>> sweep_keys({"arrival_rate": [1.0], "distribution": ["uniform"]}, "distribution",
    ...     rate="arrival_rate")
    ['distribution', 'arrival_rate']
    """
    if sweep == "distribution":
        return ["distribution", "distribution_loads" if "distribution_loads" in sweeps else rate]
    return [sweep]


def sweep_values(sweeps: Mapping[str, Sequence], sweep: str, *, rate: str) -> dict[str, Sequence]:
    """The lists of the config block ``sweeps`` that the points of ``sweep`` read
    (:func:`sweep_keys`)."""
    return {key: sweeps[key] for key in sweep_keys(sweeps, sweep, rate=rate)}


def large_instance(
    seed: int,
    n: int,
    *,
    servers_range: Sequence[int],
    rate_range: Sequence[float],
    load: float,
    rejection_cost: float,
    deadline: Mapping[str, Any],
) -> Instance:
    """``n`` clusters drawn by ``rng_for(seed, LARGE_KEY, n)``: ``m_k`` uniform on the
    integers of ``servers_range``, ``mu_k`` uniform on ``rate_range``; ``lam = load sum m mu``.

    >>> a = large_instance(7, 3, servers_range=[1, 3], rate_range=[0.5, 1.5], load=0.9,
    ...     rejection_cost=2.0, deadline={"kind": "constant", "t": 1.5})
    >>> a.n_clusters, a == large_instance(7, 3, servers_range=[1, 3], rate_range=[0.5, 1.5],
    ...     load=0.9, rejection_cost=2.0, deadline={"kind": "constant", "t": 1.5})
    (3, True)
    """
    rng = rng_for(seed, LARGE_KEY, n)
    m = rng.integers(int(servers_range[0]), int(servers_range[1]) + 1, n)
    mu = rng.uniform(float(rate_range[0]), float(rate_range[1]), n)
    return Instance.from_dict(
        {
            "arrival_rate": float(load * np.sum(m * mu)),
            "servers": m.tolist(),
            "service_rates": mu.tolist(),
            "rejection_cost": float(rejection_cost),
            "deadline": dict(deadline),
        }
    )
