"""Benchmark of the LQFS-LB stochastic simulator (Part C).

Usage::

    python benchmarks/serverpools.py [--quick] [--seed SEED]

Prints the machine, then on a stable 3-class, 3-pool path instance (rates of order 1,
rho = 0.7, sum lambda = 2.7, so about 5.4 r events per unit time):

* the compiled Gillespie kernel (:func:`queue_routing.serverpools.simulation.simulate`):
  events per second and the wall time of one r = 1e5 run of ``T_LONG`` time units;
* a straightforward pure-Python event-driven simulator of the same system (``heapq`` of
  scheduled events: one next-arrival per class and one completion per busy server; the same
  LQFS-LB routing and scheduling and random tie-breaking), run in the same process on a
  shorter run (smaller t_end) at the same r;
* a statistical cross-check of the two at r = 1000: time-averaged covariance of the scaled
  class totals against each other and against the Lyapunov solution.

The last line reads
``serverpools: <ratio>x vs Python heapq (<events/s> events/s compiled; r=1e5 run <s> s)``.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine

from queue_routing.seeding import rng_for
from queue_routing.serverpools import (
    STABLE,
    ServerPoolSystem,
    initial_state,
    simulate,
    solve_spp,
    stationary_covariance,
)

R_BIG = 1e5
T_LONG = 200.0
T_PYTHON = 2.0


def path_instance():
    """P1 - C1 - P2 - C2 - P3 - C3, rho = 0.7: the stable example of the pipeline and tests."""
    return solve_spp(ServerPoolSystem.from_dict(STABLE))


def simulate_python(solution, r: float, t_end: float, seed: int, keys=(), warmup: float = 0.0):
    """Pure-Python heapq event-driven LQFS-LB simulation; returns (events, seconds, cov).

    Same model, start and rules as the compiled kernel (a run on [0, t_end], time averages
    over [warmup, t_end]); the stream is Python's Mersenne Twister seeded from
    ``rng_for(seed, "serverpools-bench-python", *keys)``.
    """
    system = solution.system
    edges = [(int(i), int(j)) for i, j in solution.basic]
    n_i, n_j = system.n_classes, system.n_pools
    z0, q0, n_servers = initial_state(solution, r)
    z = [int(v) for v in z0]
    q = [int(v) for v in q0]
    cap = [int(v) for v in n_servers]
    mu = [float(system.rates[i, j]) for i, j in edges]
    lam = [float(r * v) for v in system.arrival_rates]
    class_edges = [[e for e, (i, _) in enumerate(edges) if i == c] for c in range(n_i)]
    pool_edges = [[e for e, (_, j) in enumerate(edges) if j == p] for p in range(n_j)]
    busy = [0] * n_j
    x = list(q)
    for e, (i, j) in enumerate(edges):
        busy[j] += z[e]
        x[i] += z[e]
    target = r * solution.class_occupancy
    inv_sqrt_r = 1.0 / np.sqrt(r)
    gen = random.Random(int(rng_for(seed, "serverpools-bench-python", *keys).integers(2**63)))
    expo = gen.expovariate
    heap: list[tuple[float, int, int]] = []  # (time, kind 0 = arrival / 1 = completion, id)
    for c in range(n_i):
        heap.append((expo(lam[c]), 0, c))
    for e in range(len(edges)):
        for _ in range(z[e]):
            heap.append((expo(mu[e]), 1, e))
    heapq.heapify(heap)
    acc = np.zeros((n_i, n_i))
    t = 0.0
    events = 0
    start = time.perf_counter()
    while True:
        t_new, kind, ident = heapq.heappop(heap)
        if t_new > t_end:
            t_new = t_end
        lo = max(t, warmup)
        if t_new > lo:
            dev = [(x[c] - target[c]) * inv_sqrt_r for c in range(n_i)]
            w = t_new - lo
            for a in range(n_i):
                for b in range(n_i):
                    acc[a, b] += w * dev[a] * dev[b]
        if t_new >= t_end:
            break
        t = t_new
        events += 1
        if kind == 0:  # arrival: least-loaded pool of S(i) with an idle server
            c = ident
            heapq.heappush(heap, (t + expo(lam[c]), 0, c))
            x[c] += 1
            best, n_tie = -1, 0
            for e in class_edges[c]:
                j = edges[e][1]
                if busy[j] >= cap[j]:
                    continue
                if best < 0:
                    best, n_tie = e, 1
                    continue
                jb = edges[best][1]
                lhs, rhs = busy[j] * cap[jb], busy[jb] * cap[j]
                if lhs < rhs:
                    best, n_tie = e, 1
                elif lhs == rhs:
                    n_tie += 1
                    if gen.random() * n_tie < 1.0:
                        best = e
            if best >= 0:
                z[best] += 1
                busy[edges[best][1]] += 1
                heapq.heappush(heap, (t + expo(mu[best]), 1, best))
            else:
                q[c] += 1
        else:  # completion: the freed server takes the head of the longest queue of C(j)
            e_done = ident
            c, j = edges[e_done]
            x[c] -= 1
            z[e_done] -= 1
            busy[j] -= 1
            best, n_tie = -1, 0
            for e in pool_edges[j]:
                i = edges[e][0]
                if q[i] <= 0:
                    continue
                if best < 0 or q[i] > q[edges[best][0]]:
                    best, n_tie = e, 1
                elif q[i] == q[edges[best][0]]:
                    n_tie += 1
                    if gen.random() * n_tie < 1.0:
                        best = e
            if best >= 0:
                q[edges[best][0]] -= 1
                z[best] += 1
                busy[j] += 1
                heapq.heappush(heap, (t + expo(mu[best]), 1, best))
    seconds = time.perf_counter() - start
    return events, seconds, acc / (t_end - warmup)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (smaller t_end)")
    parser.add_argument("--seed", type=int, default=2022)
    args = parser.parse_args(argv)
    t_long = T_LONG / 10 if args.quick else T_LONG
    t_python = T_PYTHON / 4 if args.quick else T_PYTHON
    t_check = 50.0 if args.quick else 200.0

    for line in machine("scipy"):
        print(line)
    solution = path_instance()
    lam_total = float(solution.system.arrival_rates.sum())
    print(
        f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}; instance: 3-class "
        f"3-pool path, rho = {solution.rho:.2f}, sum lambda = {lam_total:.2f} "
        f"(~{2 * lam_total:.1f} r events per unit time)"
    )
    sys.stdout.flush()

    t0 = time.perf_counter()
    simulate(solution, 100.0, horizon=1.0, record_every=1.0, seed=args.seed, keys=("bench", "jit"))
    print(f"compile / load cache: {time.perf_counter() - t0:.2f} s")

    warmup = min(20.0, t_long / 10)
    run = simulate(
        solution,
        R_BIG,
        horizon=t_long - warmup,
        warmup=warmup,
        record_every=1.0,
        seed=args.seed,
        keys=("bench", "long"),
    )
    rate = run.events_per_second
    print(
        f"compiled: r = {R_BIG:.0e}, t_end = {t_long:g}: {run.events:,} events in "
        f"{run.wall_seconds:.2f} s = {rate:,.0f} events/s; time-averaged |deviation| "
        f"{run.mean_norm:.3f}"
    )
    events_py, seconds_py, _ = simulate_python(solution, R_BIG, t_python, args.seed, ("long",))
    rate_py = events_py / seconds_py
    print(
        f"python heapq: r = {R_BIG:.0e}, t_end = {t_python:g}: {events_py:,} events in "
        f"{seconds_py:.2f} s = {rate_py:,.0f} events/s"
    )
    sys.stdout.flush()

    sigma = stationary_covariance(solution)
    check = simulate(
        solution,
        1000.0,
        horizon=t_check - 10.0,
        warmup=10.0,
        record_every=1.0,
        seed=args.seed,
        keys=("bench", "check"),
    )
    _, seconds_chk, second_py = simulate_python(
        solution, 1000.0, t_check, args.seed, ("check",), warmup=10.0
    )
    print(
        f"cross-check at r = 1000, t_end = {t_check:g}: diagonal of the time-averaged second "
        f"moment: compiled {np.round(np.diag(check.second_moment), 3).tolist()}, python heapq "
        f"{np.round(np.diag(second_py), 3).tolist()} ({seconds_chk:.1f} s), Lyapunov "
        f"{np.round(np.diag(sigma), 3).tolist()}"
    )
    ratio = rate / rate_py
    print(
        f"serverpools: {ratio:.0f}x vs Python heapq ({rate:.0f} events/s compiled; "
        f"r=1e5 run {run.wall_seconds:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
