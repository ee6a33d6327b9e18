"""Benchmark of Part A's compiled relative value iteration on numba's threads against the same
kernel on one thread (what a job with ``threads: 1`` runs), on the same boxes.

Usage::

    python benchmarks/optimal_threads.py [--quick] [--threads N]

Model: ``docs/multiskill.md#the-optimal-dynamic-policy``. Table 1's first two classes at total
load 0.95 (the optimal study's heaviest case, ``multiskill.optimal_study.scaled_instance``),
the optimum's iteration (``MODE_OPTIMAL``) for a fixed number of steps on two boxes, one that
fits the caches of a core and one of the size a 0.95 case ends on. Both sides start from the
same values; the values and span bounds must agree to the bit (checked). Compilation excluded
(one small run first). The last line reads ``optimal_threads: <ratio>x with <N> threads vs
one (<ns> ns per state and step on <N> threads)``, the ratio the smallest over the boxes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", str(len(os.sched_getaffinity(0))))
import _common  # noqa: F401  (pins the BLAS threads; numba's count is set above)
import numba
import numpy as np
from _common import machine

from queue_routing.multiskill.optimal_kernels import (
    MODE_OPTIMAL,
    relative_value_iteration_2,
)
from queue_routing.multiskill.optimal_study import scaled_instance

BOXES = [(60, 40, 40), (405, 180, 180)]
QUICK_BOXES = [(60, 40, 40), (200, 90, 90)]
STEPS = 200


def _run(inst, top, steps, threads):
    numba.set_num_threads(threads)
    eta = np.ascontiguousarray(inst.eta, dtype=float)
    mu = np.ascontiguousarray(inst.mu, dtype=float)
    cost = np.ascontiguousarray(inst.cost, dtype=float)
    top = np.array(top, dtype=np.int64)
    h = np.zeros(int(np.prod(top + 1)))
    no_mask, no_split = np.zeros(1, dtype=np.uint32), np.zeros(2)
    big_lam = float(eta.sum() + mu.sum())
    t0 = time.perf_counter()
    out = relative_value_iteration_2(
        h, top, eta, mu, cost, big_lam, MODE_OPTIMAL, no_mask, no_split, 0.0, steps
    )
    return h, out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller second box")
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    args = parser.parse_args(argv)
    threads = max(1, min(args.threads, numba.config.NUMBA_NUM_THREADS))
    for line in machine():
        print(line)
    print(f"mode: {'quick' if args.quick else 'full'}; {STEPS} steps a box; threads {threads}")
    sys.stdout.flush()
    inst = scaled_instance("table1-2", 0.95)
    _run(inst, (4, 4, 4), 2, 1)  # compile / load the cache
    results = []  # (ratio, ns per state and step on the threads) per box
    for top in QUICK_BOXES if args.quick else BOXES:
        states = int(np.prod(np.array(top) + 1))
        h1, out1, t1 = _run(inst, top, STEPS, 1)
        hn, outn, tn = _run(inst, top, STEPS, threads)
        if not (np.array_equal(h1, hn) and out1 == outn):
            print(f"box {top}: the values differ between 1 and {threads} threads", file=sys.stderr)
            return 1
        results.append((t1 / tn, 1e9 * tn / (states * STEPS)))
        box = "x".join(map(str, top))
        print(
            f"  box {box}: {states:,} states; one thread {t1:.2f} s, {threads} threads "
            f"{tn:.2f} s; ratio {results[-1][0]:.2f}x; the same values bit for bit"
        )
    ratio, ns = min(r for r, _ in results), max(n for _, n in results)
    print(
        f"optimal_threads: {ratio:.2f}x with {threads} threads vs one "
        f"({ns:.1f} ns per state and step on {threads} threads)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
