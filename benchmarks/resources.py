"""Calibration of the jobs' cost model (``queue_routing.workflow.resources``) on this machine.

Usage::

    python benchmarks/resources.py [--quick]

Measures, on one core, each unit cost that the cost model multiplies by a job's work -- a
uniformised step of Part A's kernel, an event of its general job-size simulator, an arrival of
Part B's simulator per policy, an event of Part C's kernel, a sample of the instability
search, the start-up of a job -- and prints it next to the constant of
``queue_routing.workflow.resources``, with their ratio (measured / model: the model's
constants sit at the upper end of what was measured on the machine of
docs/benchmarks.md, so the ratios should be at most about 1; the requests add the safety
factor on top). The last line reads ``resources: worst measured/model ratio <r>
(<quantity>)`` over the timings (the rows marked ``check:`` compare the model's inputs with
the instances: at most 1 is right).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine

from queue_routing.workflow import resources as cost

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def part_a(quick: bool) -> list[tuple[str, float, float]]:
    from queue_routing.multiskill.experiments import policy_replication_costs
    from queue_routing.multiskill.instances import random_instance

    rows = []
    for c in (10, 50, 200):
        drawn = [random_instance(c, 2022, k) for k in range(20)]
        lams = [float(i.eta.sum() + i.mu.sum()) for i in drawn]
        fit = cost.multiskill_event_rate(c)
        print(
            f"  Part A C={c}: Lambda mean {np.mean(lams):.1f} (fit {fit:.1f}), "
            f"range {min(lams) / fit - 1:+.1%} .. {max(lams) / fit - 1:+.1%}"
        )
        rows.append((f"check: Part A max Lambda(C={c}) / 1.1 fit", max(lams), fit * 1.1))
    policies = ["bernoulli", "jsq", "led", "io", "pi"]
    inst = [(0, random_instance(10, 1, 0))]
    policy_replication_costs(
        inst, policies=policies, horizon=1.0, warmup=0.1, replications=range(1), seed=1
    )  # compile / load the cache
    horizon = 100.0 if quick else 1000.0
    for c in (10, 50, 200):
        inst = [(0, random_instance(c, 2022, 0))]
        lam = float(inst[0][1].eta.sum() + inst[0][1].mu.sum())
        _, wall = _timed(
            lambda inst=inst: policy_replication_costs(
                inst,
                policies=policies,
                horizon=horizon,
                warmup=0.1 * horizon,
                replications=range(3),
                seed=1,
            )
        )
        steps = 3 * round(lam * 1.1 * horizon)  # each step moves the five policies
        per_step = wall / steps
        print(
            f"  Part A C={c}: {steps:,} steps of 5 policies in {wall:.2f} s = "
            f"{per_step * 1e9:.1f} ns/step"
        )
        a, b = cost.MULTISKILL_SECONDS_PER_STEP
        rows.append((f"Part A step of 5 policies (C={c})", per_step, a + 5 * b))
    from queue_routing.multiskill.general import simulate_general
    from queue_routing.multiskill.instances import table1

    simulate_general(table1(), "pi", job_sizes="lognormal:4", horizon=1.0, replications=2)
    horizon = 500.0 if quick else 5000.0
    res = simulate_general(
        table1(), "pi", job_sizes="lognormal:4", horizon=horizon, replications=3, seed=1
    )
    per_event = res.wall_seconds / res.events
    expected = cost.multiskill_job_sizes_event_rate() * 1.1 * horizon * 3  # 10% warm-up
    print(
        f"  Part A job sizes (Table 1, PI, lognormal:4): {res.events:,} events "
        f"({res.events / expected:.3f} of 2 sum(eta) per unit time) in "
        f"{res.wall_seconds:.2f} s = {per_event * 1e9:.0f} ns/event"
    )
    rows.append(
        ("Part A job-size event (Table 1)", per_event, cost.MULTISKILL_JOB_SIZES_SECONDS_PER_EVENT)
    )
    return rows


def part_b(quick: bool) -> list[tuple[str, float, float]]:
    from queue_routing.deadlines.experiments import (
        deadline_dict,
        large_instance,
        large_system_replications,
    )

    rows = []
    horizon = 200.0 if quick else 2000.0
    for n in (4, 20, 50):
        deadline = deadline_dict("constant", 1.5, 0.6)
        draw = {"servers_range": [1, 4], "rate_range": [0.5, 1.5], "load": 0.9}
        inst = large_instance(2022, n, **draw, rejection_cost=2.0, deadline=deadline)
        run = {"table_size": 200, "horizon": horizon, "warmup": 0.1 * horizon, "seed": 1}
        large_system_replications(inst, **{**run, "horizon": 1.0}, replications=range(1))
        _, wall = _timed(
            lambda inst=inst, run=run: large_system_replications(inst, **run, replications=range(3))
        )
        predicted = cost.deadlines_large_seconds(
            inst.arrival_rate, n, replications=3, horizon=horizon, warmup=0.1 * horizon
        )
        print(
            f"  Part B n={n}: {wall:.2f} s, predicted {predicted:.2f} s "
            f"(index tables of 200 included)"
        )
        rows.append((f"Part B large system (n={n})", wall, predicted))
    return rows


def part_c(quick: bool) -> list[tuple[str, float, float]]:
    from queue_routing.serverpools import solve_spp
    from queue_routing.serverpools.experiments import search_chunk, stochastic_runs
    from queue_routing.serverpools.instances import example_system

    rows = []
    for example in ("stable", "unstable"):
        system = example_system(example)
        total = float(np.sum(system.arrival_rates))
        rows.append(
            (
                f"check: Part C sum(lambda) {example}",
                total,
                cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES[example],
            )
        )
        sol = solve_spp(system)
        stochastic_runs(
            example, sol, 100, horizon=1.0, warmup=1.0, record_every=0.5, replications=1, seed=1
        )
        for r in (1000, 100000) if not quick else (1000, 10000):
            (_, summary), wall = _timed(
                lambda sol=sol, r=r, example=example: stochastic_runs(
                    example,
                    sol,
                    r,
                    horizon=40.0,
                    warmup=20.0,
                    record_every=0.5,
                    replications=1,
                    seed=1,
                )
            )
            events = int(summary["events"].sum())
            expected = cost.serverpools_events(r, total, 60.0)
            print(
                f"  Part C {example} r={r}: {events:,} events ({events / expected:.3f} of "
                f"2 r sum(lambda) (warmup + horizon)) in {wall:.2f} s = "
                f"{wall / events * 1e9:.0f} ns/event"
            )
            model = cost.SERVERPOOLS_SECONDS_PER_EVENT
            rows.append((f"Part C event ({example}, r={r})", wall / events, model))
    samples = 200 if quick else 1000
    settings = {"mu_range": [1e-3, 1e3], "flow_range": [1e-3, 1.0]}
    search_chunk(1, [(2, 2)], range(5), **settings)
    for size in ((2, 2), (3, 4), (5, 5)):
        _, wall = _timed(lambda size=size: search_chunk(1, [size], range(samples), **settings))
        model = cost.serverpools_search_seconds(1, size, 1)
        print(f"  Part C search {size}: {wall / samples * 1e3:.2f} ms/sample")
        rows.append((f"Part C search sample {size}", wall / samples, model))
    return rows


def start_up() -> list[tuple[str, float, float]]:
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import queue_routing.multiskill.experiments, "
            "queue_routing.deadlines.experiments, queue_routing.serverpools.experiments",
        ],
        check=True,
    )
    imports = time.perf_counter() - t0
    snakemake = Path(sys.executable).with_name("snakemake")
    with tempfile.TemporaryDirectory(prefix="qr-bench-dry-") as workdir:
        t0 = time.perf_counter()
        subprocess.run(
            [
                str(snakemake),
                "-s",
                str(ROOT / "Snakefile"),
                "--directory",
                workdir,
                "-n",
                "--quiet",
                "--configfile",
                str(ROOT / "workflow/config/smoke.yaml"),
            ],
            check=True,
            capture_output=True,
        )
        dry = time.perf_counter() - t0
    print(
        f"  start-up: library imports {imports:.2f} s, Snakemake reading the workflow "
        f"(dry run of the smoke DAG) {dry:.2f} s"
    )
    return [("job start-up (dry run + imports)", imports + dry, cost.JOB_OVERHEAD_SECONDS)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (about a minute)")
    args = parser.parse_args(argv)
    for line in machine("scipy", "pandas"):
        print(line)
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[0]}")
    rows = start_up() + part_a(args.quick) + part_b(args.quick) + part_c(args.quick)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.append(("peak memory of this process (MB)", peak, cost.BASE_MEMORY_MB))
    print(f"\n{'quantity':45s} {'measured':>12s} {'model':>12s} {'ratio':>7s}")
    for name, measured, model in rows:
        print(f"{name:45s} {measured:12.4g} {model:12.4g} {measured / model:7.2f}")
    timings = [r for r in rows if not r[0].startswith("check:")]
    name, measured, model = max(timings, key=lambda r: r[1] / r[2])
    print(f"resources: worst measured/model ratio {measured / model:.2f} ({name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
