"""How long a run of the pipeline takes on N cores: the critical path of its DAG of jobs and
the makespan of list scheduling, from each job's duration (docs/running.md, "Scaling a study").

A run is a DAG of jobs: job ``k`` takes ``durations[k]`` seconds on one core and starts once
every job of ``predecessors[k]`` has finished. Its **critical path** (:func:`critical_path`)
is the longest chain of dependent jobs, the run's length on unlimited cores; with the total
work W, no schedule on N cores ends before ``max(critical path, W / N)``. Snakemake starts
ready jobs whenever cores are free; :func:`list_schedule` models that as list scheduling
(Graham 1969): whenever a core is idle, start the ready job whose remaining chain
(:func:`bottom_levels`, its duration plus the longest chain after it) is longest. Any such
schedule ends by ``W / N + (1 - 1/N) * critical path`` (Graham's bound), so a run whose
longest job is a small fraction of ``W / N`` uses its cores to within that fraction.

>>> durations = [3.0, 2.0, 2.0, 1.0]          # a diamond: 0 -> {1, 2} -> 3
>>> predecessors = [[], [0], [0], [1, 2]]
>>> critical_path(durations, predecessors)
(6.0, [0, 1, 3])
>>> list_schedule(durations, predecessors, cores=1).makespan, list_schedule(
...     durations, predecessors, cores=2).makespan
(8.0, 6.0)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError

__all__ = ["Schedule", "bottom_levels", "critical_path", "list_schedule", "topological_order"]


def _check(durations: Sequence[float], predecessors: Sequence[Sequence[int]]) -> np.ndarray:
    d = np.asarray(durations, dtype=float)
    if d.ndim != 1:
        raise ArgumentError("durations", "durations must be a sequence of numbers")
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ArgumentError("durations", "durations must be finite and >= 0 (seconds)")
    if len(predecessors) != len(d):
        raise ArgumentError(
            "predecessors",
            f"predecessors must list one sequence per job ({len(d)}), got {len(predecessors)}",
        )
    for k, preds in enumerate(predecessors):
        for p in preds:
            if not (isinstance(p, int | np.integer) and 0 <= p < len(d)) or p == k:
                raise ArgumentError(
                    "predecessors",
                    f"predecessors of job {k} must be other jobs' indices, got {p!r}",
                )
    return d


def topological_order(predecessors: Sequence[Sequence[int]]) -> list[int]:
    """The jobs in an order where every job comes after its predecessors (the smallest ready
    index first); a cycle is refused (:class:`~queue_routing.errors.ArgumentError`).

    >>> topological_order([[1], [], [0, 1]])
    [1, 0, 2]
    """
    n = len(predecessors)
    successors: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for k, preds in enumerate(predecessors):
        for p in set(preds):
            successors[p].append(k)
            waiting[k] += 1
    ready = [k for k in range(n) if waiting[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for s in successors[k]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, s)
    if len(order) != n:
        raise ArgumentError("predecessors", "predecessors must not form a cycle")
    return order


def bottom_levels(durations: Sequence[float], predecessors: Sequence[Sequence[int]]) -> np.ndarray:
    """Each job's bottom level (s): its duration plus the longest chain of jobs that depend on
    it, i.e. how long the run lasts after the job starts even on unlimited cores.

    >>> bottom_levels([3.0, 2.0, 2.0, 1.0], [[], [0], [0], [1, 2]]).tolist()
    [6.0, 3.0, 3.0, 1.0]
    """
    d = _check(durations, predecessors)
    level = d.copy()
    for k in reversed(topological_order(predecessors)):
        for p in predecessors[k]:
            level[p] = max(level[p], d[p] + level[k])
    return level


def critical_path(
    durations: Sequence[float], predecessors: Sequence[Sequence[int]]
) -> tuple[float, list[int]]:
    """The longest chain of dependent jobs: its length (s, the sum of its durations) and its
    jobs in order (the first of equal chains by index). Empty DAG: ``(0.0, [])``.

    >>> critical_path([1.0, 5.0, 1.0], [[], [], [0, 1]])
    (6.0, [1, 2])
    """
    d = _check(durations, predecessors)
    if len(d) == 0:
        return 0.0, []
    level = bottom_levels(d, predecessors)
    successors: list[list[int]] = [[] for _ in range(len(d))]
    for k, preds in enumerate(predecessors):
        for p in set(preds):
            successors[p].append(k)
    has_preds = [bool(p) for p in predecessors]
    sources = [k for k in range(len(d)) if not has_preds[k]]
    job = max(sources, key=lambda k: (level[k], -k))
    path = [job]
    while successors[job]:
        job = max(sorted(successors[job]), key=lambda s: (level[s], -s))
        path.append(job)
    return float(level[path[0]]), path


@dataclass(frozen=True)
class Schedule:
    """A list schedule of a DAG of jobs on ``cores`` cores (:func:`list_schedule`).

    Attributes
    ----------
    makespan : float
        When the last job ends (s), the run's predicted wall time.
    start : tuple of float
        Each job's start (s).
    core : tuple of int
        The core (0 .. cores - 1) each job runs on.
    cores : int
        Cores of the schedule.
    critical_path : float
        The DAG's critical path (s): the makespan on unlimited cores.
    work : float
        Total work (core-seconds), the sum of the durations.
    """

    makespan: float
    start: tuple[float, ...]
    core: tuple[int, ...]
    cores: int
    critical_path: float
    work: float

    @property
    def lower_bound(self) -> float:
        """No schedule ends earlier: ``max(critical path, work / cores)`` (s)."""
        return max(self.critical_path, self.work / self.cores)

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan": self.makespan,
            "cores": self.cores,
            "critical_path": self.critical_path,
            "work": self.work,
            "lower_bound": self.lower_bound,
            "start": list(self.start),
            "core": list(self.core),
        }


def list_schedule(
    durations: Sequence[float], predecessors: Sequence[Sequence[int]], cores: int
) -> Schedule:
    """List scheduling on ``cores`` identical cores without preemption: at time 0 and at each
    job's end, every idle core starts the ready job of the largest bottom level
    (:func:`bottom_levels`; ties: the smaller index); a job is ready once its predecessors
    have ended. Returns the :class:`Schedule`.

    >>> s = list_schedule([4.0, 1.0, 1.0, 1.0], [[], [], [], []], cores=2)
    >>> s.makespan, s.start, s.core
    (4.0, (0.0, 0.0, 1.0, 2.0), (0, 1, 1, 1))
    """
    if not isinstance(cores, int | np.integer) or cores < 1:
        raise ArgumentError("cores", f"cores must be an integer >= 1, got {cores!r}")
    d = _check(durations, predecessors)
    n = len(d)
    level = bottom_levels(d, predecessors)
    successors: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for k, preds in enumerate(predecessors):
        for p in set(preds):
            successors[p].append(k)
            waiting[k] += 1
    ready = [(-level[k], k) for k in range(n) if waiting[k] == 0]
    heapq.heapify(ready)
    idle = list(range(int(cores)))  # a heap of idle cores: the smallest index first
    running: list[tuple[float, int, int]] = []  # (end, job, core)
    start, core = [0.0] * n, [0] * n
    now = 0.0
    while ready or running:
        while ready and idle:
            _, k = heapq.heappop(ready)
            start[k], core[k] = now, heapq.heappop(idle)
            heapq.heappush(running, (now + d[k], k, core[k]))
        now = running[0][0]
        while running and running[0][0] == now:
            _, k, c = heapq.heappop(running)
            heapq.heappush(idle, c)
            for s in successors[k]:
                waiting[s] -= 1
                if waiting[s] == 0:
                    heapq.heappush(ready, (-level[s], s))
    makespan = max((start[k] + d[k] for k in range(n)), default=0.0)
    return Schedule(
        makespan=float(makespan),
        start=tuple(float(t) for t in start),
        core=tuple(core),
        cores=int(cores),
        critical_path=float(level.max()) if n else 0.0,
        work=float(d.sum()),
    )
