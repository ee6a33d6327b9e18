"""The run-length model of ``queue_routing.workflow.schedule`` against brute force: the
critical path as the longest of every chain of a small DAG enumerated one by one, and list
scheduling against a second implementation that steps time one unit at a time, within
Graham's bounds, and against every possible schedule of tiny DAGs (the optimum, found by
exhaustive search, is never above it and it is never above twice the optimum).
"""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_routing.errors import ArgumentError
from queue_routing.workflow.schedule import bottom_levels, critical_path, list_schedule

#: A hand-made DAG: two sources, a long chain through job 2 and a short one through job 3.
#:   0 (2) -> 2 (4) -> 4 (1)
#:   1 (3) -> 3 (1) -> 4
#:   1     -> 5 (2)
HAND = ([2.0, 3.0, 4.0, 1.0, 1.0, 2.0], [[], [], [0], [1], [2, 3], [1]])


@st.composite
def dags(draw, max_jobs=7, max_duration=5):
    """Acyclic DAGs (a job's predecessors have smaller indices) with integer durations."""
    n = draw(st.integers(1, max_jobs))
    durations = [float(draw(st.integers(0, max_duration))) for _ in range(n)]
    predecessors = [sorted(draw(st.sets(st.integers(0, k - 1)))) if k else [] for k in range(n)]
    return durations, predecessors


def _chains(predecessors):
    """Every chain of jobs, each after one of its predecessors (not only the maximal ones)."""
    successors = [
        [k for k, p in enumerate(predecessors) if j in p] for j in range(len(predecessors))
    ]

    def walk(path):
        yield path
        for s in successors[path[-1]]:
            yield from walk([*path, s])

    for start in range(len(predecessors)):
        yield from walk([start])


def _stepped(durations, predecessors, cores):
    """List scheduling again, time stepped one unit at a time (integer durations): at each
    step the idle cores take the ready jobs of the largest bottom level (computed here from
    every chain), ties to the smaller index. Returns the start of every job."""
    n = len(durations)
    level = [
        max(sum(durations[j] for j in c) for c in _chains(predecessors) if c[0] == k)
        for k in range(n)
    ]
    start, end = [None] * n, [None] * n
    t = 0
    while None in end:
        for k in range(n):  # jobs ending now (zero-length ones end when they start)
            if start[k] is not None and end[k] is None and start[k] + durations[k] <= t:
                end[k] = start[k] + durations[k]
        busy = sum(1 for k in range(n) if start[k] is not None and end[k] is None)
        ready = [
            k
            for k in range(n)
            if start[k] is None and all(end[p] is not None and end[p] <= t for p in predecessors[k])
        ]
        ready.sort(key=lambda k: (-level[k], k))
        started = ready[: cores - busy]
        for k in started:
            start[k] = t
        if not started or all(durations[k] > 0 for k in started):
            t += 1
    return start


def _optimum(durations, predecessors, cores):
    """The shortest makespan of any non-preemptive schedule, by exhaustive search over every
    assignment of integer start times up to the sum of the durations."""
    n, horizon = len(durations), int(sum(durations))
    best = float("inf")
    for starts in itertools.product(range(horizon + 1), repeat=n):
        if any(starts[k] < starts[p] + durations[p] for k in range(n) for p in predecessors[k]):
            continue
        events = sorted({s for s in starts})
        if any(
            sum(1 for k in range(n) if starts[k] <= t < starts[k] + durations[k]) > cores
            for t in events
        ):
            continue
        best = min(best, max((starts[k] + durations[k] for k in range(n)), default=0))
    return best


def test_the_hand_made_dag():
    durations, predecessors = HAND
    assert critical_path(durations, predecessors) == (7.0, [0, 2, 4])
    assert bottom_levels(durations, predecessors).tolist() == [7.0, 5.0, 5.0, 2.0, 1.0, 2.0]
    # two cores: 0 and 1 at 0; 2 at 2 (ends 6); 3 at 3, 5 at 4 (ends 6); 4 at 6: ends at 7
    two = list_schedule(durations, predecessors, 2)
    assert two.start == (0.0, 0.0, 2.0, 3.0, 6.0, 4.0) and two.makespan == 7.0
    assert list_schedule(durations, predecessors, 1).makespan == sum(durations)
    assert list_schedule(durations, predecessors, 64).makespan == 7.0
    assert _optimum(durations, predecessors, 2) == 7.0


@given(dags())
def test_the_critical_path_is_the_longest_chain(dag):
    durations, predecessors = dag
    length, path = critical_path(durations, predecessors)
    longest = max(sum(durations[j] for j in c) for c in _chains(predecessors))
    assert length == longest == sum(durations[j] for j in path)
    assert all(path[i] in predecessors[path[i + 1]] for i in range(len(path) - 1))


@given(dags(), st.integers(1, 4))
def test_list_scheduling_matches_a_time_stepped_simulation(dag, cores):
    durations, predecessors = dag
    schedule = list_schedule(durations, predecessors, cores)
    assert list(schedule.start) == _stepped(durations, predecessors, cores)
    # feasible: after its predecessors, one job at a time per core
    for k, preds in enumerate(predecessors):
        assert all(schedule.start[k] >= schedule.start[p] + durations[p] for p in preds)
    for c in range(cores):
        on_core = sorted(
            (schedule.start[k], schedule.start[k] + durations[k])
            for k in range(len(durations))
            if schedule.core[k] == c and durations[k] > 0
        )
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(on_core))
    work, path = sum(durations), critical_path(durations, predecessors)[0]
    assert schedule.lower_bound <= schedule.makespan <= work / cores + (1 - 1 / cores) * path


@given(dags(max_jobs=4, max_duration=3), st.integers(1, 2))
def test_list_scheduling_is_within_twice_the_exhaustive_optimum(dag, cores):
    durations, predecessors = dag
    optimum = _optimum(durations, predecessors, cores)
    makespan = list_schedule(durations, predecessors, cores).makespan
    assert optimum <= makespan <= (2 - 1 / cores) * optimum


def test_bad_inputs_are_refused_naming_the_argument():
    for args, name in (
        (([1.0, -1.0], [[], []], 1), "durations"),
        (([1.0], [[], []], 1), "predecessors"),
        (([1.0, 1.0], [[1], [0]], 1), "predecessors"),  # a cycle
        (([1.0], [[0]], 1), "predecessors"),
        (([1.0], [[]], 0), "cores"),
    ):
        with pytest.raises(ArgumentError) as error:
            list_schedule(*args)
        assert error.value.argument == name and str(error.value).startswith(name)
