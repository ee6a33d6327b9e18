"""Benchmark: the five policies of a Part A comparison in lockstep vs one policy at a time.

Usage::

    python benchmarks/multiskill_lockstep.py [--quick] [--seed SEED]

A paired comparison (``docs/multiskill.md#common-random-numbers``) simulates Bernoulli
routing, JSQ, LED, IO and PI on common random numbers: the same uniformised event sequence.
:func:`queue_routing.multiskill.simulation.simulate_policies` runs them in one kernel pass
(each event drawn once, every policy's state moved); the baseline is the same replications
one policy at a time (:func:`~queue_routing.multiskill.simulation.simulate_replications`, the
same kernel with one policy), as the pipeline did before. Both give the same replications bit
for bit (checked here too). Instances: ``random_instance(C, seed, 0)`` for C = 20, 100, 200
and the paper's Table 1, 3 replications of the pipeline's horizon (600 + 60 time units; a
tenth with ``--quick``), one core, compilation excluded. The last line reads
``multiskill_lockstep: <ratio>x vs one policy at a time (...)``, the smallest ratio over the
instances.
"""

from __future__ import annotations

import argparse
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine

from queue_routing.multiskill.instances import random_instance, table1
from queue_routing.multiskill.simulation import (
    POLICIES,
    simulate_policies,
    simulate_replications,
)


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the horizon")
    parser.add_argument("--seed", type=int, default=2022, help="root seed")
    args = parser.parse_args(argv)
    for line in machine():
        print(line)
    scale = 0.1 if args.quick else 1.0
    run = {"horizon": 600.0 * scale, "warmup": 60.0 * scale, "seed": args.seed}
    print(f"mode: {'quick' if args.quick else 'full'}; {run}; policies {', '.join(POLICIES)}")
    sys.stdout.flush()
    small = random_instance(10, args.seed, 0)
    simulate_policies(small, POLICIES, range(1), horizon=1.0, seed=1)  # compile / load cache
    simulate_replications(small, "pi", range(1), horizon=1.0, seed=1)
    cases = [(f"C={c} random", random_instance(c, args.seed, 0)) for c in (20, 100, 200)]
    cases.append(("Table 1", table1()))
    ratios = []
    for name, inst in cases:
        kw = {**run, "keys": ("bench", name), "start": "bernoulli"}
        together, t_lock = _timed(lambda inst=inst, kw=kw: simulate_policies(
            inst, POLICIES, range(3), **kw))  # fmt: skip
        alone, t_one = _timed(lambda inst=inst, kw=kw: {
            p: simulate_replications(inst, p, range(3), **kw) for p in POLICIES})  # fmt: skip
        same = all(np.array_equal(together[p].means, alone[p].means) for p in POLICIES)
        steps = together[POLICIES[0]].steps
        ratios.append(t_one / t_lock)
        print(
            f"  {name}: {steps:,} steps x 5 policies: one at a time {t_one:.2f} s "
            f"({1e9 * t_one / steps / 5:.1f} ns per policy-step), lockstep {t_lock:.2f} s "
            f"({1e9 * t_lock / steps / 5:.1f} ns); ratio {t_one / t_lock:.2f}x; "
            f"identical replications: {same}"
        )
        if not same:
            print("lockstep and one-at-a-time replications differ", file=sys.stderr)
            return 1
    worst = min(ratios)
    print(
        f"multiskill_lockstep: {worst:.2f}x vs one policy at a time "
        f"(five policies, smallest over C = 20, 100, 200 and Table 1)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
