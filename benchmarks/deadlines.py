"""Benchmark of the compiled deadline simulator against an idiomatic SimPy model.

Usage::

    python benchmarks/deadlines.py [--quick] [--seed SEED]

Model: ``docs/deadlines.md#simulation`` and ``#truncated-chain``. Same model on both sides: two
clusters (``m = (2, 3)``, ``mu = (1.0, 0.5)``), Poisson arrivals at ``lambda = 2.5`` (load
0.71), exponential deadlines of mean 2 on the response time, pure routing by the JSQ-like
index table ``index[k, x] = (x + 1)/(m_k mu_k)`` (ties to the lowest k), start empty,
discard ``warmup`` time units, count the arrivals of the next ``horizon`` time units. The
compiled simulator is :func:`queue_routing.deadlines.simulation.simulate`; the SimPy model is
the textbook one: a source process, a ``simpy.Resource`` (capacity ``m_k``, FCFS) per cluster,
a process per job, counts of jobs per cluster updated on arrival and departure.

Throughput is events (arrivals plus departures) per wall second on one core, compilation
excluded (one small run first). Both miss-rate estimates are printed as a check that the two
programs simulate the same system. Value iteration is timed for two clusters (vectorised)
and for three (the compiled kernel against the vectorised iteration on the same chain: states,
iterations, seconds, memory). The last line reads
``deadlines: <ratio>x vs SimPy (<events/s> events/s compiled)``. Target: >= 100x.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine, simpy_missing, simpy_run_line, target_line, versus_simpy

from queue_routing.deadlines.model import Instance
from queue_routing.deadlines.simulation import simulate
from queue_routing.seeding import seed_sequence

try:
    import simpy
except ImportError:  # reported in the output
    simpy = None

LAM = 2.5
SERVERS = (2, 3)
MU = (1.0, 0.5)
DEADLINE_MEAN = 2.0
TABLE_WIDTH = 2_000  # far beyond any queue length reached at load 0.71


def index_table() -> np.ndarray:
    """JSQ-like index ``(x + 1)/(m_k mu_k)``: the expected time to clear the queue ahead."""
    x = np.arange(TABLE_WIDTH, dtype=float)
    return np.array([(x + 1) / (m * mu) for m, mu in zip(SERVERS, MU, strict=True)])


def simpy_run(horizon: float, warmup: float, seed: int) -> dict:
    """One replication in SimPy: arrivals, misses (measured window), events and wall time."""
    table = index_table().tolist()
    n = len(SERVERS)
    state = seed_sequence(seed, "deadlines-bench-simpy").generate_state(1)
    rnd = random.Random(int(state[0]))
    env = simpy.Environment()
    clusters = [simpy.Resource(env, capacity=m) for m in SERVERS]
    count = [0] * n
    stats = {"arrivals": 0, "misses": 0, "events": 0}
    end = warmup + horizon

    def job(k: int, tau: float, counted: bool):
        arrival = env.now
        with clusters[k].request() as req:
            yield req
            yield env.timeout(rnd.expovariate(MU[k]))
        count[k] -= 1
        stats["events"] += 1
        if counted and env.now - arrival > tau:
            stats["misses"] += 1

    def source():
        while True:
            yield env.timeout(rnd.expovariate(LAM))
            stats["events"] += 1
            counted = env.now >= warmup
            stats["arrivals"] += counted
            best, dest = float("inf"), -1
            for k in range(n):
                v = table[k][count[k]] if count[k] < TABLE_WIDTH else float("inf")
                if v < best:
                    best, dest = v, k
            tau = rnd.expovariate(1.0 / DEADLINE_MEAN)
            count[dest] += 1
            env.process(job(dest, tau, counted))

    env.process(source())
    t0 = time.perf_counter()
    env.run(until=end)
    wall = time.perf_counter() - t0
    # Jobs of the window still in system at the end: their miss is not yet known in SimPy
    # (a bias of a few jobs out of many thousands, negligible for this check).
    return {**stats, "wall": wall, "miss_rate": stats["misses"] / horizon}


def instance() -> Instance:
    """The benchmarked instance: pure routing, exponential deadlines on the response time."""
    return Instance.from_dict(
        {
            "arrival_rate": LAM,
            "servers": list(SERVERS),
            "service_rates": list(MU),
            "rejection_cost": None,
            "deadline": {"kind": "exponential", "mean": DEADLINE_MEAN},
        }
    )


def compiled_run(horizon: float, replications: int, seed: int):
    inst = instance()
    kw = {"index": index_table(), "warmup": 0.1 * horizon, "seed": seed}
    simulate(inst, horizon=10.0, replications=2, **kw)  # compile / load the cache
    return simulate(inst, horizon=horizon, replications=replications, keys=("bench",), **kw)


def rvi_timing(level: int = 60) -> None:
    """Time relative value iteration for two clusters on the chain truncated at ``level``."""
    from queue_routing.deadlines.markov import optimal_policy
    from queue_routing.deadlines.model import Cluster, Deadline

    for rejection_cost in (2.0, None):
        inst = Instance(
            arrival_rate=3.5,
            clusters=(Cluster(3, 1.0), Cluster(2, 0.8)),
            rejection_cost=rejection_cost,
            deadline=Deadline(kind="constant", t=1.5),
        )
        optimal_policy(inst, 10)  # compile / warm caches
        t0 = time.perf_counter()
        opt = optimal_policy(inst, level)
        wall = time.perf_counter() - t0
        what = "pure routing" if rejection_cost is None else f"R = {rejection_cost:g}"
        print(
            f"value iteration, 2 clusters, truncation {level} ({(level + 1) ** 2:,} states), "
            f"{what}: {wall:.2f} s, {opt.iterations:,} iterations, cost {opt.cost:.6f}"
        )


def rvi_three_cluster_timing(level: int = 30) -> None:
    """Relative value iteration for three clusters on the chain truncated at ``level``: the
    compiled kernel (``deadlines.markov.optimal_policy``) against the vectorised numpy
    iteration (``deadlines.markov.optimal_policy_vectorised``) on the same chain (the same
    operator and stopping rule; the results are equal bit for bit). Instance: the study's
    three clusters, m = (3, 2, 1), mu = (1, 0.8, 0.6), load 0.8, constant deadline 1.5."""
    import tracemalloc

    from queue_routing.deadlines.markov import optimal_policy, optimal_policy_vectorised
    from queue_routing.deadlines.model import Cluster, Deadline

    clusters = (Cluster(3, 1.0), Cluster(2, 0.8), Cluster(1, 0.6))
    states = (level + 1) ** 3
    for rejection_cost in (1.25, None):
        inst = Instance(
            arrival_rate=0.8 * 5.2,
            clusters=clusters,
            rejection_cost=rejection_cost,
            deadline=Deadline(kind="constant", t=1.5),
        )
        optimal_policy(inst, 4)  # compile / load the cache
        t0 = time.perf_counter()
        opt = optimal_policy(inst, level)
        wall = time.perf_counter() - t0
        tracemalloc.start()
        t0 = time.perf_counter()
        ref = optimal_policy_vectorised(inst, level)
        ref_wall = time.perf_counter() - t0
        ref_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert ref.cost == opt.cost and ref.iterations == opt.iterations
        what = "pure routing" if rejection_cost is None else f"R = {rejection_cost:g}"
        kernel_mb = 2 * 8 * states / 1e6  # h and Th; the tables are (L+1) x 3
        print(
            f"value iteration, 3 clusters, truncation {level} ({states:,} states), {what}: "
            f"{opt.iterations:,} iterations; compiled {wall:.2f} s "
            f"({1e9 * wall / (opt.iterations * states):.1f} ns per state and iteration), "
            f"working memory {kernel_mb:.1f} MB; vectorised numpy {ref_wall:.2f} s, peak "
            f"{ref_peak / 1e6:.1f} MB; {ref_wall / wall:.1f}x; cost {opt.cost:.6f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short horizons")
    parser.add_argument("--seed", type=int, default=2012, help="root seed")
    args = parser.parse_args(argv)

    for line in machine("simpy"):
        print(line)
    print(
        f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}; lambda {LAM}, m {SERVERS}, "
        f"mu {MU}, exponential deadlines of mean {DEADLINE_MEAN}, JSQ-like index (x+1)/(m mu)"
    )
    sys.stdout.flush()

    scale = 0.1 if args.quick else 1.0
    h_simpy, h_comp, reps = 20_000.0 * scale, 400_000.0 * scale, 10
    res = compiled_run(h_comp, reps, args.seed)
    comp_eps = res.events_per_second
    print(
        f"compiled: {reps} x horizon {h_comp:g} (+10% warm-up): {res.events:,} events in "
        f"{res.events / comp_eps:.2f} s of kernel time = {comp_eps:,.0f} events/s; "
        f"miss rate {res.miss_rate:.4f} +- {res.miss_ci95:.4f}"
    )
    if simpy is None:
        simpy_missing()
        print(versus_simpy("deadlines", float("nan"), comp_eps))
        return 0
    out = simpy_run(h_simpy, 0.1 * h_simpy, args.seed)
    simpy_eps = simpy_run_line(
        out, horizon=h_simpy, quantity="miss rate", value=out["miss_rate"],
        reference=res.miss_rate, digits=".4f", run="one replication",
    )  # fmt: skip
    ratio = comp_eps / simpy_eps
    print(target_line(ratio, 100))
    rvi_timing()
    rvi_three_cluster_timing()
    print(versus_simpy("deadlines", ratio, comp_eps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
