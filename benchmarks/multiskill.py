"""Benchmark of the multi-skilled LOAD-OPT solvers (Part A).

Usage::

    python benchmarks/multiskill.py [--quick] [--seed SEED]

Prints the machine, then at C = 200 on the paper's random instances (Sec. 6.3; the generic
solvers run on the first few of the instances the exact solver runs on):

* time per instance of the exact solver, one ``solve_exact`` call per instance and batched
  (``solve_exact_batch``), and of the generic solvers (L-BFGS-B, SLSQP, cvxpy if installed);
* the generic solvers' largest relative cost error against the exact solver, and how many of
  their runs did not report convergence (counted, never averaged away);
* the batched exact solver's throughput on one core;
* the wall time of the full C = 10, 20, ..., 200 sweep (10 instances per C): generation,
  exact solver and Algorithm 1 (both update rules) if ``fixed_point`` is available.

Targets: the exact solver at least 1000x faster per instance than the best generic solver, and
at least 50,000 instances/s batched at C = 200. The last line reads
``multiskill: <ratio>x vs <best generic solver> (<throughput> instances/s at C=200)``, where
the ratio compares one ``solve_exact`` call with one call of the best generic solver (the
fastest one whose runs all converged within 1e-6 of the exact cost).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import warnings

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine

from queue_routing.multiskill import solve_exact, solve_exact_batch
from queue_routing.multiskill.generic import solve_generic
from queue_routing.multiskill.instances import random_instance
from queue_routing.multiskill.model import holding_cost

C_BENCH = 200
SWEEP_SIZES = tuple(range(10, 201, 10))
SWEEP_PER_SIZE = 10


def time_exact_single(instances, repeats: int) -> float:
    """Seconds per ``solve_exact`` call (best mean over ``repeats`` passes)."""
    solve_exact(instances[0])  # compile / load the numba cache
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for inst in instances:
            solve_exact(inst)
        best = min(best, (time.perf_counter() - t0) / len(instances))
    return best


def time_exact_batch(mu, cost, eta, repeats: int) -> tuple[float, np.ndarray]:
    """Seconds per instance of one ``solve_exact_batch`` call (best of ``repeats``)."""
    solve_exact_batch(mu[:2], cost[:2], eta[:2])  # compile / load the numba cache
    best, loads = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        loads = solve_exact_batch(mu, cost, eta)
        best = min(best, (time.perf_counter() - t0) / mu.shape[0])
    return best, loads


def run_generic(method: str, instances, exact_costs) -> dict:
    """Time and accuracy of one generic solver on ``instances``."""
    times, errors, failed = [], [], 0
    for inst, exact_cost in zip(instances, exact_costs, strict=True):
        t0 = time.perf_counter()
        sol = solve_generic(inst, method)
        times.append(time.perf_counter() - t0)
        cost = sol.cost
        errors.append((cost - exact_cost) / exact_cost if np.isfinite(cost) else np.inf)
        failed += not sol.converged
    errors = np.asarray(errors)
    return {
        "method": method,
        "n": len(instances),
        "mean_s": float(np.mean(times)),
        "median_s": float(np.median(times)),
        "max_s": float(np.max(times)),
        "max_err": float(np.max(np.abs(errors))),
        "min_err": float(np.min(errors)),
        "failed": failed,
    }


def sweep(seed: int) -> list[str]:
    """The full C = 10..200 sweep: generation, exact, Algorithm 1 (if available)."""
    lines = []
    t0 = time.perf_counter()
    instances = [random_instance(c, seed, k) for c in SWEEP_SIZES for k in range(SWEEP_PER_SIZE)]
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact = [solve_exact(inst) for inst in instances]
    t_exact = time.perf_counter() - t0
    lines.append(
        f"sweep C=10..200 x {SWEEP_PER_SIZE} ({len(instances)} instances): "
        f"generate {t_gen:.3f} s, exact {t_exact:.3f} s"
    )
    total = t_gen + t_exact
    try:
        from queue_routing.multiskill.fixed_point import fixed_point
    except ImportError:
        lines.append("  fixed point: queue_routing.multiskill.fixed_point not available, skipped")
        return [*lines, f"sweep total wall time: {total:.3f} s"]
    fixed_point(instances[0])  # warm-up (imports, compilation)
    for update in ("jacobi", "single"):
        t0 = time.perf_counter()
        sols = [fixed_point(inst, update=update) for inst in instances]
        elapsed = time.perf_counter() - t0
        total += elapsed
        conv = [s for s in sols if s.converged]
        gaps = [
            abs(s.cost - e.cost) / e.cost
            for s, e in zip(sols, exact, strict=True)
            if s.converged and np.isfinite(s.cost)
        ]
        iters = [s.iterations for s in sols if s.iterations is not None]
        lines.append(
            f"  fixed point ({update}): {elapsed:.3f} s, converged {len(conv)}/{len(sols)}, "
            f"iterations median {np.median(iters):.0f} max {max(iters)}, "
            f"max rel cost gap vs exact (converged) {max(gaps, default=float('nan')):.1e}"
        )
    return [*lines, f"sweep total wall time: {total:.3f} s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer instances, fewer repeats")
    parser.add_argument("--seed", type=int, default=2022, help="root seed of the instances")
    args = parser.parse_args(argv)

    n_exact = 2_000 if args.quick else 20_000
    n_single = 500 if args.quick else 2_000
    n_generic = (
        {"L-BFGS-B": 5, "SLSQP": 2, "cvxpy": 5}
        if args.quick
        else {
            "L-BFGS-B": 20,
            "SLSQP": 20,
            "cvxpy": 20,
        }
    )
    repeats = 2 if args.quick else 5

    for line in machine("scipy", "cvxpy"):
        print(line)
    print(f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}; C = {C_BENCH}")
    sys.stdout.flush()

    t0 = time.perf_counter()
    instances = [random_instance(C_BENCH, args.seed, k) for k in range(n_exact)]
    print(f"generated {n_exact} instances at C={C_BENCH} in {time.perf_counter() - t0:.2f} s")
    mu = np.stack([i.mu for i in instances])
    cost = np.stack([i.cost for i in instances])
    eta = np.stack([i.eta for i in instances])

    t_single = time_exact_single(instances[:n_single], repeats)
    t_batch, loads = time_exact_batch(mu, cost, eta, repeats)
    exact_costs = holding_cost(loads, cost)
    throughput = 1.0 / t_batch
    print(
        f"exact, one solve_exact call per instance ({n_single} instances): "
        f"{t_single * 1e6:.1f} us/instance"
    )
    print(
        f"exact, solve_exact_batch on {n_exact} instances (one core): "
        f"{t_batch * 1e6:.2f} us/instance = {throughput:,.0f} instances/s"
    )

    methods = ["L-BFGS-B", "SLSQP"]
    if importlib.util.find_spec("cvxpy") is not None:
        methods.append("cvxpy")
    else:
        print("cvxpy not installed: conic solver skipped")
    results = []
    for method in methods:
        n = n_generic[method]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cvxpy's "inaccurate" warnings: counted below
            res = run_generic(method, instances[:n], exact_costs[:n])
        results.append(res)
        print(
            f"generic {method:9s} on {res['n']:2d} instances: mean {res['mean_s'] * 1e3:8.2f} ms, "
            f"median {res['median_s'] * 1e3:8.2f} ms, max {res['max_s'] * 1e3:8.2f} ms; "
            f"max |rel cost error| {res['max_err']:.1e} (min signed {res['min_err']:.1e}); "
            f"not converged {res['failed']}/{res['n']}; "
            f"exact is {res['mean_s'] / t_single:,.0f}x faster per call, "
            f"{res['mean_s'] / t_batch:,.0f}x batched"
        )
    sys.stdout.flush()

    for line in sweep(args.seed):
        print(line)

    good = [r for r in results if r["failed"] == 0 and r["max_err"] < 1e-6]
    if good:
        best = min(good, key=lambda r: r["mean_s"])
        best_name = best["method"]
    else:
        best = min(results, key=lambda r: r["mean_s"])
        best_name = best["method"] + " (no generic solver was reliable)"
    ratio = best["mean_s"] / t_single
    ratio_batch = best["mean_s"] / t_batch
    print(
        f"targets: per-call ratio {ratio:,.0f}x (batched {ratio_batch:,.0f}x) vs >= 1000x: "
        f"{'met' if ratio >= 1000 else 'NOT met per call'}"
        f"{'' if ratio >= 1000 else (', met batched' if ratio_batch >= 1000 else ', not batched')}"
        f"; batched {throughput:,.0f} instances/s vs >= 50,000: "
        f"{'met' if throughput >= 50_000 else 'NOT met'}"
    )
    print(
        f"multiskill: {ratio_batch:.0f}x vs {best_name} (batched exact "
        f"{t_batch * 1e6:.2f} us/instance = {throughput:.0f} instances/s at C=200 on one core; "
        f"single call {ratio:.0f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
