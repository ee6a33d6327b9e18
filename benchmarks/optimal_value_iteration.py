"""Benchmark of Part A's compiled relative value iteration against the same iteration in
numpy, vectorised over the state grid, on the same truncated chain.

Usage::

    python benchmarks/optimal_value_iteration.py [--quick]

Model: ``docs/multiskill.md#the-optimal-dynamic-policy``. Two classes (``mu = (2, 1.5, 1)``,
costs ``(1, 3, 2)``, ``eta = (1.2, 0.6)``, total load 0.4) and three (``mu = (1, 1, 1, 1)``,
unit costs, ``eta = 0.5`` each), each at a fixed truncation level; both sides start from PI's
separable values and iterate to the same span tolerance, so they run the same number of steps
(checked) and reach the same bounds (printed). Compilation excluded (one small run first).
The last line reads ``optimal_value_iteration: <ratio>x vs numpy (<ns> ns per state and step
compiled)``, the ratio the smallest over the chains.
"""

from __future__ import annotations

import argparse
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine

from queue_routing.multiskill import Instance
from queue_routing.multiskill.optimal import optimal_values, optimal_values_vectorised

CASES = [
    ("C=2", Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.6]), 60),
    ("C=3", Instance(mu=[1.0] * 4, cost=[1.0] * 4, eta=[0.5] * 3), 20),
]
RTOL = 1e-8


def _timed(func):
    t0 = time.perf_counter()
    out = func()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller truncation levels")
    args = parser.parse_args(argv)
    for line in machine():
        print(line)
    print(f"mode: {'quick' if args.quick else 'full'}; span tolerance {RTOL:g} (relative)")
    sys.stdout.flush()
    for _, inst, _ in CASES:  # compile / load the cache of each kernel
        optimal_values(inst, 4, 1e-3)
    ratios, per_state = [], []
    for name, inst, level in CASES:
        L = level // 2 if args.quick else level
        states = (L + 1) ** (inst.n_classes + 1)
        (hc, itc, lo_c, up_c, ok_c), t_c = _timed(
            lambda inst=inst, L=L: optimal_values(inst, L, RTOL)
        )
        (h, it, lower, upper, ok), t_v = _timed(
            lambda inst=inst, L=L: optimal_values_vectorised(inst, L, RTOL)
        )
        if not (ok and ok_c and it == itc):
            print(f"{name}: the two iterations differ ({it} vs {itc} steps)", file=sys.stderr)
            return 1
        same = float(np.max(np.abs(h - hc)))
        ns = 1e9 * t_c / (states * itc)
        ratios.append(t_v / t_c)
        per_state.append(ns)
        print(
            f"  {name}, L = {L}: {states:,} states, {it} steps; compiled {t_c:.2f} s "
            f"({ns:.1f} ns per state and step), numpy "
            f"{t_v:.2f} s; ratio {t_v / t_c:.1f}x; bounds [{lo_c:.9g}, {up_c:.9g}] "
            f"vs [{lower:.9g}, {upper:.9g}]; max |h difference| {same:.2g}"
        )
    print(
        f"optimal_value_iteration: {min(ratios):.1f}x vs numpy "
        f"({max(per_state):.1f} ns per state and step compiled)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
