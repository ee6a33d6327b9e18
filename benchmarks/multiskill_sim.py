"""Benchmark of the compiled multi-skilled simulator against an idiomatic SimPy model.

Usage::

    python benchmarks/multiskill_sim.py [--quick] [--seed SEED]

Model: ``docs/multiskill.md#index-policy-simulations``. Same model, policy (JSQ between the
dedicated server and server 0, ties to the dedicated server), warm-up and horizon semantics on
both sides: start empty, discard ``warmup`` time units, average the number of jobs at each
server over the next ``horizon`` time units. The compiled simulator
(:func:`queue_routing.multiskill.simulation.simulate`) uniformises the CTMC (``horizon`` is then
met in expectation, ``round(Lambda * horizon)`` steps); the SimPy model is the textbook one: a
source process per class, a ``simpy.Resource`` (capacity 1, FCFS, the same count process as
PS with exponential sizes) per server and a process per job, exponential inter-arrival and
service times, time-weighted counts updated on every change, ``env.run(until=warmup +
horizon)``.

Throughput is real events (arrivals plus departures, warm-up included) per wall second, on
one core, compilation excluded (one small run first). Instances: the paper's Table 1 and
``random_instance(50, seed, 0)``. Both simulators' cost estimates are printed as a check that
they simulate the same system. The last line reads
``multiskill_sim: <ratio>x vs SimPy (<events/s> events/s compiled)``, the smaller of the two
instances' ratios and the compiled throughput on that instance. Target: >= 100x.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import (
    machine,
    simpy_missing,
    simpy_run_line,
    smallest_ratio,
    target_line,
    versus_simpy,
)

from queue_routing.multiskill.instances import random_instance, table1
from queue_routing.multiskill.model import Instance
from queue_routing.multiskill.simulation import policy_weights, simulate
from queue_routing.seeding import seed_sequence

try:
    import simpy
except ImportError:  # reported in the output
    simpy = None

POLICY = "jsq"


def simpy_run(instance: Instance, horizon: float, warmup: float, seed: int) -> dict:
    """One replication of the JSQ model in SimPy; mean jobs per server, events, wall time."""
    n = instance.n_classes
    w = policy_weights(instance, POLICY).tolist()
    mu = instance.mu.tolist()
    eta = instance.eta.tolist()
    state = seed_sequence(seed, "multiskill-sim-bench-simpy", instance.name).generate_state(1)
    rnd = random.Random(int(state[0]))
    env = simpy.Environment()
    servers = [simpy.Resource(env, capacity=1) for _ in range(n + 1)]
    count = [0] * (n + 1)
    area = [0.0] * (n + 1)
    last = [0.0] * (n + 1)
    events = [0]

    def change(j: int, delta: int) -> None:
        now = env.now
        start = last[j] if last[j] > warmup else warmup
        if now > start:
            area[j] += count[j] * (now - start)
        last[j] = now
        count[j] += delta
        events[0] += 1

    def job(j: int):
        change(j, +1)
        with servers[j].request() as req:
            yield req
            yield env.timeout(rnd.expovariate(mu[j]))  # unit-mean exponential size / mu_j
        change(j, -1)

    def source(i: int):
        while True:
            yield env.timeout(rnd.expovariate(eta[i - 1]))
            j = i if w[i] * (count[i] + 1) <= w[0] * (count[0] + 1) else 0
            env.process(job(j))

    for i in range(1, n + 1):
        env.process(source(i))
    t0 = time.perf_counter()
    env.run(until=warmup + horizon)
    wall = time.perf_counter() - t0
    end = warmup + horizon
    means = np.array(
        [(area[j] + count[j] * (end - max(last[j], warmup))) / horizon for j in range(n + 1)]
    )
    return {"means": means, "events": events[0], "wall": wall}


def compiled_run(instance: Instance, horizon: float, replications: int, seed: int):
    simulate(instance, POLICY, horizon=1.0, replications=2, seed=seed)  # compile / load cache
    return simulate(
        instance, POLICY, horizon=horizon, replications=replications, seed=seed, keys=("bench",)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short horizons")
    parser.add_argument("--seed", type=int, default=2022, help="root seed")
    args = parser.parse_args(argv)

    for line in machine("simpy"):
        print(line)
    print(f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}; policy {POLICY}")
    sys.stdout.flush()

    scale = 0.1 if args.quick else 1.0
    cases = [
        # (instance, SimPy horizon, compiled horizon per replication, compiled replications)
        (table1(), 2_000.0 * scale, 100_000.0 * scale, 10),
        (random_instance(50, args.seed, 0), 500.0 * scale, 20_000.0 * scale, 10),
    ]
    ratios = []
    for inst, h_simpy, h_comp, reps in cases:
        lam = inst.eta.sum() + inst.mu.sum()
        print(
            f"\ninstance {inst.name}: C = {inst.n_classes}, sum eta = {inst.eta.sum():g}, "
            f"uniformisation rate {lam:g} steps per time unit"
        )
        res = compiled_run(inst, h_comp, reps, args.seed)
        comp_eps = res.events / res.wall_seconds
        print(
            f"  compiled: {reps} x horizon {h_comp:g} (+10% warm-up): {res.events:,} events, "
            f"{res.steps:,} uniformised steps in {res.wall_seconds:.2f} s = "
            f"{comp_eps:,.0f} events/s ({res.steps / res.wall_seconds:,.0f} steps/s); "
            f"cost {res.cost:.4g} +- {res.ci95:.2g}"
        )
        if simpy is None:
            simpy_missing("  ")
            ratios.append((float("nan"), comp_eps))
            continue
        out = simpy_run(inst, h_simpy, 0.1 * h_simpy, args.seed)
        simpy_cost = float(out["means"] @ inst.cost)
        simpy_eps = simpy_run_line(
            out, horizon=h_simpy, quantity="cost", value=simpy_cost, reference=res.cost,
            label="  simpy:    ",
        )  # fmt: skip
        ratio = comp_eps / simpy_eps
        print(f"  ratio: {ratio:,.0f}x events/s")
        ratios.append((ratio, comp_eps))
        sys.stdout.flush()

    ratio, comp_eps = smallest_ratio(ratios)
    print(f"\n{target_line(ratio, 100)} (smaller ratio of the {len(ratios)} instances)")
    print(versus_simpy("multiskill_sim", ratio, comp_eps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
