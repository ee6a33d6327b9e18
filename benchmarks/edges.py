"""How long the edge cases take that must stay cheap.

Usage::

    python benchmarks/edges.py

Some refusals and long index rows must cost little whatever the input (docs/limits.md, "Limits and
error messages"): the tests check what they return or refuse, this script times them against
the bounds they are meant to stay under (one core, compiled code already cached):

* Part B, RB's index row up to ``MAX_UPTO`` = 100,000 jobs (``deadlines.rb_index``; linear in
  the row's length), against 5 s;
* Part B, ``deadlines.index_function(instance, "rb", k, MAX_UPTO)`` (one cluster's row, not
  the whole table), against 10 s;
* Part C, ``serverpools.fluid_trajectory`` refusing a horizon of 10¹² time units before its
  first step, against 1 s.

The last line reads ``edges: worst time/bound ratio <r> (<case>)``.
"""

from __future__ import annotations

import time

import _common
import numpy as np

from queue_routing.deadlines import Cluster, Deadline, Instance, index_function
from queue_routing.deadlines.indices import MAX_UPTO, rb_index
from queue_routing.serverpools import example_system, fluid_trajectory, solve_spp

README_CLUSTERS = {
    "arrival_rate": 3.0,
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "rejection_cost": 2.0,
    "deadline": {"kind": "constant", "t": 1.5},
}


def seconds(call) -> float:
    """Wall time of one call (s), after a first call that compiles and warms the caches."""
    call()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def refused(call, words: str):
    """``call`` made a function that must raise a ValueError mentioning ``words``."""

    def run():
        try:
            call()
        except ValueError as error:
            if words not in str(error):
                raise
            return
        raise AssertionError(f"not refused: {call}")

    return run


def main() -> None:
    for line in _common.machine("scipy"):
        print(line)
    cluster, deadline = Cluster(2, 0.8), Deadline("exponential", mean=1.5)
    instance = Instance.from_dict(README_CLUSTERS)
    solution = solve_spp(example_system("stable"))
    edges = solution.basic  # 5% of the equilibrium occupancy on the basic tree
    perturbation = np.zeros_like(solution.occupancy)
    perturbation[edges[:, 0], edges[:, 1]] = 0.05 * solution.occupancy[edges[:, 0], edges[:, 1]]
    cases = [
        ("rb_index to MAX_UPTO", 5.0, lambda: rb_index(cluster, deadline, 5.0, MAX_UPTO)),
        (
            "index_function rb to MAX_UPTO",
            10.0,
            lambda: index_function(instance, "rb", 2, MAX_UPTO),
        ),
        (
            "fluid_trajectory refuses t_end 1e12",
            1.0,
            refused(lambda: fluid_trajectory(solution, perturbation, 1e12, 101), "steps"),
        ),
    ]
    worst = (0.0, "")
    for name, bound, call in cases:
        t = seconds(call)
        print(f"{name}: {t:.3f} s (bound {bound:g} s, ratio {t / bound:.3f})")
        worst = max(worst, (t / bound, name))
    print(f"edges: worst time/bound ratio {worst[0]:.3f} ({worst[1]})")


if __name__ == "__main__":
    main()
