"""Benchmark of the general-size multi-skilled simulator against the exponential one and SimPy.

Usage::

    python benchmarks/multiskill_general.py [--quick] [--seed SEED]

Model: ``docs/multiskill.md#general-job-sizes``. The same system on every side: Table 1 (C = 5
classes, six PS servers), a routing policy on the counts at each arrival, job sizes of mean 1
from a given law, start empty, discard ``warmup`` time units, average the number of jobs at
each server over the next ``horizon`` time units.

* general: :func:`queue_routing.multiskill.general.simulate_general`, the compiled
  event-driven kernel (per-server virtual time and a heap of finishing tags, a tournament
  tree over the servers' next departures);
* exponential: :func:`queue_routing.multiskill.simulation.simulate`, the uniformised chain
  (exponential sizes only), for scale;
* SimPy: the same PS model written for SimPy 4: a source process per class, a process per
  server that sleeps until its next departure or until an arrival wakes it
  (``timeout | wake``), and the same virtual-time bookkeeping with :mod:`heapq` (O(log n) per
  event, as the compiled kernel; the textbook alternative, decrementing every job's
  remaining work at each event, is O(n) per event and slower still), sizes from
  :mod:`random` of the same law.

Throughput is real events (arrivals plus departures, warm-up included) per wall second, on
one core, compilation excluded (one small run first). The cost estimates of the general
simulator and SimPy are printed as a check that they simulate the same system (SimPy's from
one short replication). The last line reads ``multiskill_general: <ratio>x vs SimPy
(<events/s> events/s compiled)``: the smaller ratio over the cases and the compiled
general-size throughput of that case. Target: >= 30x.
"""

from __future__ import annotations

import argparse
import heapq
import math
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

from queue_routing.multiskill.general import simulate_general
from queue_routing.multiskill.instances import table1
from queue_routing.multiskill.model import Instance
from queue_routing.multiskill.policies import policy_arrays
from queue_routing.multiskill.simulation import simulate
from queue_routing.multiskill.sizes import JobSizes, job_sizes
from queue_routing.seeding import seed_sequence

try:
    import simpy
except ImportError:  # reported in the output
    simpy = None


def _python_sampler(law: JobSizes, rnd: random.Random):
    """A function drawing one size (work units) of ``law`` with :mod:`random`."""
    kind = law.kind
    _, params = law.kernel_args()
    if kind == "exponential":
        return lambda: rnd.expovariate(1.0)
    if kind == "deterministic":
        return lambda: 1.0
    if kind == "erlang":
        k = law.k
        return lambda: rnd.gammavariate(k, 1.0 / k)
    if kind == "hyperexponential":
        p, r1, r2 = params
        return lambda: rnd.expovariate(r1 if rnd.random() < p else r2)
    m, s = params[0], params[1]
    return lambda: rnd.lognormvariate(m, s)


def simpy_run(instance: Instance, policy: str, law: JobSizes, horizon: float, warmup: float,
              seed: int) -> dict:  # fmt: skip
    """One replication of the PS model in SimPy; mean jobs per server, events, wall time."""
    n = instance.n_classes
    mode, prob, weight = policy_arrays(instance, policy)
    prob, w = prob.tolist(), weight.tolist()
    mu, eta = instance.mu.tolist(), instance.eta.tolist()
    state = seed_sequence(seed, "multiskill-general-bench-simpy", policy, law.spec)
    rnd = random.Random(int(state.generate_state(1)[0]))
    draw = _python_sampler(law, rnd)
    env = simpy.Environment()
    heaps: list[list[float]] = [[] for _ in range(n + 1)]  # finishing tags (work units)
    vt = [0.0] * (n + 1)  # virtual time of each server
    tv = [0.0] * (n + 1)  # when vt was last brought up to date
    wake = [env.event() for _ in range(n + 1)]
    area = [0.0] * (n + 1)
    last = [warmup] * (n + 1)
    events = [0]

    def advance(j: int) -> None:
        now = env.now
        x = len(heaps[j])
        if x:
            vt[j] += (now - tv[j]) * mu[j] / x
        tv[j] = now

    def count_change(j: int) -> None:  # call before the count of server j changes
        now = env.now
        if now > warmup:
            area[j] += len(heaps[j]) * (now - last[j])
            last[j] = now
        events[0] += 1

    def server(j: int):
        while True:
            h = heaps[j]
            if not h:
                yield wake[j]
                continue
            delay = max(h[0] - vt[j], 0.0) * len(h) / mu[j]
            done = env.timeout(delay)
            fired = yield done | wake[j]
            if done in fired:  # the job with the least tag leaves
                advance(j)
                count_change(j)
                heapq.heappop(h)

    def source(i: int):
        rate = eta[i - 1]
        while True:
            yield env.timeout(rnd.expovariate(rate))
            if mode == 0:
                j = i if rnd.random() < prob[i - 1] else 0
            else:
                j = i if w[i] * (len(heaps[i]) + 1) <= w[0] * (len(heaps[0]) + 1) else 0
            advance(j)
            if not heaps[j]:
                vt[j] = 0.0
            count_change(j)
            heapq.heappush(heaps[j], vt[j] + draw())
            wake[j].succeed()
            wake[j] = env.event()

    for j in range(n + 1):
        env.process(server(j))
    for i in range(1, n + 1):
        env.process(source(i))
    t0 = time.perf_counter()
    env.run(until=warmup + horizon)
    wall = time.perf_counter() - t0
    end = warmup + horizon
    means = np.array([(area[j] + len(heaps[j]) * (end - last[j])) / horizon for j in range(n + 1)])
    return {"means": means, "events": events[0], "wall": wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short horizons")
    parser.add_argument("--seed", type=int, default=2022, help="root seed")
    args = parser.parse_args(argv)

    for line in machine("simpy"):
        print(line)
    print(f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}")
    sys.stdout.flush()

    scale = 0.1 if args.quick else 1.0
    inst = table1()
    cases = [
        # (policy, law, SimPy horizon, compiled horizon per replication, replications)
        ("pi", "lognormal:4", 500.0 * scale, 20_000.0 * scale, 10),
        ("jsq", "hyperexponential:16", 500.0 * scale, 20_000.0 * scale, 10),
        ("bernoulli", "deterministic", 500.0 * scale, 20_000.0 * scale, 10),
    ]
    simulate_general(inst, "pi", job_sizes="lognormal:4", horizon=1.0, replications=2)  # compile
    simulate(inst, "pi", horizon=1.0, replications=2)
    ratios = []
    print(f"\ninstance {inst.name}: C = {inst.n_classes}, sum eta = {inst.eta.sum():g} jobs per "
          "time unit, start empty, warm-up 10% of the horizon")  # fmt: skip
    for policy, spec, h_simpy, h_comp, reps in cases:
        law = job_sizes(spec)
        print(f"\n{policy}, job sizes {law.spec} (SCV {law.scv:g}):")
        res = simulate_general(
            inst, policy, job_sizes=law, horizon=h_comp, replications=reps, seed=args.seed,
            keys=("bench",),
        )  # fmt: skip
        gen_eps = res.events / res.wall_seconds
        print(
            f"  general:     {reps} x horizon {h_comp:g}: {res.events:,} events in "
            f"{res.wall_seconds:.2f} s = {gen_eps:,.0f} events/s; cost {res.cost:.4g} "
            f"+- {res.ci95:.2g}"
        )
        exp = simulate(
            inst, policy, horizon=h_comp, replications=reps, seed=args.seed, keys=("bench",)
        )
        exp_eps = exp.events / exp.wall_seconds
        print(
            f"  exponential: {reps} x horizon {h_comp:g} (uniformised, exponential sizes): "
            f"{exp.events:,} events in {exp.wall_seconds:.2f} s = {exp_eps:,.0f} events/s "
            f"({gen_eps / exp_eps:.2f}x of it)"
        )
        if simpy is None:
            simpy_missing("  ")
            ratios.append((math.nan, gen_eps))
            continue
        out = simpy_run(inst, policy, law, h_simpy, 0.1 * h_simpy, args.seed)
        simpy_cost = float(out["means"] @ inst.cost)
        simpy_eps = simpy_run_line(
            out, horizon=h_simpy, quantity="cost", value=simpy_cost, reference=res.cost,
            label="  simpy:       ", warmup="",
        )  # fmt: skip
        ratio = gen_eps / simpy_eps
        print(f"  ratio general / SimPy: {ratio:,.0f}x events/s")
        ratios.append((ratio, gen_eps))
        sys.stdout.flush()

    ratio, gen_eps = smallest_ratio(ratios)
    print(f"\n{target_line(ratio, 30)} (smallest ratio of the {len(ratios)} cases)")
    print(versus_simpy("multiskill_general", ratio, gen_eps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
