"""How the full pipeline's wall time scales with cores: the critical path of its DAG of jobs
and the wall time list scheduling predicts at 2, 4, 8, 16 and 64 cores.

Usage::

    python benchmarks/pipeline_scaling.py [--configfile F ...] [--run DIR] [--cores 2 4 ...]

For each number of cores N the DAG of a complete run is built as ``snakemake --cores N``
builds it (through Snakemake's API, every job forced; the chunks are cut for N cores,
``queue_routing.workflow.plan.target_seconds``), each job is given a duration, and the run is
list-scheduled on N cores (``queue_routing.workflow.schedule``: whenever a core is idle it
starts the ready job with the longest chain after it). A job's duration is its work plus a
start-up:

- ``--run DIR``, a finished run of the same config (its ``logs/``, where every job writes
  ``done in <s>``, and Snakemake's log in ``DIR/.snakemake/log/``, which stamps each job's
  start and end): a job of that run is given its measured work; a job the run split
  otherwise (another number of cores) is given the cost model's prediction
  (``queue_routing.workflow.plan.job_seconds``) times the ratio measured / predicted over
  that rule's jobs in the run; the start-up is the run's mean of (wall in Snakemake's log -
  measured work) per job. The run's own wall time is printed beside the prediction at its
  cores.
- without a run: the cost model's prediction for the heavy jobs, ``--small-seconds`` for the
  others (tables, figures) and ``--startup-seconds`` each (defaults 0.5 s and 1.5 s: what a
  2-core run of the default config measured, median small job 0.53 s, mean start-up 1.4 s).

Columns: the jobs, their total work (core-seconds, start-ups included), the longest job, the
critical path, the predicted wall time (list scheduling, longest chain first), the lower bound
``max(critical path, work / N)`` no order beats, and Graham's bound ``work / N + (1 - 1/N) x
critical path`` that any order meets (Snakemake does not know the jobs' durations, so its
order is between the two), and the run's measured wall time at its cores.

The last line reads ``pipeline_scaling: predicted 16-core speed-up over 2 cores <x>x``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import io
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import yaml
from _common import machine

from queue_routing.workflow import plan
from queue_routing.workflow.schedule import critical_path, list_schedule

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "workflow" / "config" / "default.yaml"


def merged_config(configfiles: list[Path]) -> dict:
    """default.yaml with ``configfiles`` deep-merged over it, as Snakemake merges them."""

    def merge(base: dict, extra: dict) -> dict:
        for key, value in extra.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                merge(base[key], value)
            else:
                base[key] = value
        return base

    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    for path in configfiles:
        merge(config, yaml.safe_load(Path(path).read_text()) or {})
    return config


def build_dag(configfiles: list[Path], cores: int) -> list[tuple[str, dict, list[int]]]:
    """Every job of a complete run on ``cores`` cores: (rule, wildcards, predecessors' indices),
    from Snakemake's own DAG (its API; every job forced, nothing run)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
        StorageSettings,
    )

    with tempfile.TemporaryDirectory(prefix="pipeline-scaling-") as workdir:
        sink = io.StringIO()
        with (
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
            SnakemakeApi(OutputSettings()) as api,
        ):
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=cores),
                config_settings=ConfigSettings(configfiles=[Path(p) for p in configfiles]),
                storage_settings=StorageSettings(),
                snakefile=ROOT / "Snakefile",
                workdir=Path(workdir),
            )
            workflow_api.dag(DAGSettings(forceall=True))
            # Snakemake has no public call that returns the DAG: build it as `--dag` does.
            workflow = workflow_api._workflow
            workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
            workflow._build_dag()
            dag = workflow.dag
            jobs = sorted(dag.jobs, key=lambda j: (j.rule.name, sorted(j.wildcards_dict.items())))
            index = {job: k for k, job in enumerate(jobs)}
            return [
                (
                    job.rule.name,
                    {k: str(v) for k, v in job.wildcards_dict.items()},
                    sorted(index[d] for d in dag.dependencies[job]),
                )
                for job in jobs
            ]


def _key(rule: str, wildcards: dict) -> tuple:
    return rule, tuple(sorted(wildcards.items()))


def read_run(run: Path) -> dict:
    """A finished run: measured work (s) by (rule, wildcards) from its job logs; its cores,
    wall time (s) and mean start-up per job (s) from Snakemake's log."""
    work = {}
    for path in sorted((run / "logs").rglob("*.log")):
        text = path.read_text(errors="replace")
        rule = re.search(r"^INFO rule\.(\w+): ", text, re.M)
        wildcards = re.search(r"^INFO rule\.\w+: wildcards: (\{.*\})$", text, re.M)
        done = re.search(r"^INFO rule\.\w+: done in ([0-9.]+) s", text, re.M)
        if rule and done:
            found = ast.literal_eval(wildcards.group(1)) if wildcards else {}
            work[_key(rule.group(1), {k: str(v) for k, v in found.items()})] = float(done[1])
    logs = sorted((run / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise SystemExit(f"{run}: no Snakemake log in .snakemake/log/")
    text = logs[-1].read_text(errors="replace")
    stamp = r"\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]"
    when = [dt.datetime.strptime(m[1], "%a %b %d %H:%M:%S %Y") for m in re.finditer(stamp, text)]
    starts, walls, now = {}, [], None
    for line in text.splitlines():
        if m := re.fullmatch(stamp, line.strip()):
            now = dt.datetime.strptime(m[1], "%a %b %d %H:%M:%S %Y")
        elif m := re.match(r"(?:Job (\d+):|\s+jobid: (\d+)$)", line):
            starts.setdefault(m[1] or m[2], now)
        elif m := re.match(r"Finished jobid: (\d+)", line):
            if m[1] in starts:
                walls.append((now - starts[m[1]]).total_seconds())
    cores = int(re.search(r"^Provided cores: (\d+)", text, re.M)[1])
    elapsed = re.search(r"^Elapsed time: (\d+):(\d\d):([0-9.]+)", text, re.M)
    if elapsed:
        h, m, s = elapsed.groups()
        wall = 3600 * int(h) + 60 * int(m) + float(s)
    else:
        wall = (max(when) - min(when)).total_seconds()
    startup = max((sum(walls) - sum(work.values())) / max(len(walls), 1), 0.0)
    return {"work": work, "cores": cores, "wall": wall, "startup": startup, "jobs": len(walls)}


def durations(dag, config, run, small_seconds, startup_seconds):
    """Each job's duration (s) and where it came from ("measured", "scaled", "model")."""
    heavy = set(plan.heavy_jobs(config))
    ratio = {}
    if run is not None:
        measured, predicted = defaultdict(float), defaultdict(float)
        for (rule, items), seconds in run["work"].items():
            if rule in heavy:
                with contextlib.suppress(Exception):  # a job of an older DAG
                    predicted[rule] += plan.job_seconds(rule, dict(items), config)
                    measured[rule] += seconds
        ratio = {r: measured[r] / predicted[r] for r in measured if predicted[r] > 0}
        smalls = [s for (rule, _), s in run["work"].items() if rule not in heavy]
        small_seconds = statistics.median(smalls) if smalls else small_seconds
        startup_seconds = run["startup"]
    out, source = [], []
    for rule, wildcards, _ in dag:
        if rule == "all":  # the default target: no work, no process
            out.append(0.0)
            source.append("model")
        elif run is not None and _key(rule, wildcards) in run["work"]:
            out.append(run["work"][_key(rule, wildcards)] + startup_seconds)
            source.append("measured")
        elif rule in heavy:
            out.append(ratio.get(rule, 1.0) * plan.job_seconds(rule, wildcards, config))
            out[-1] += startup_seconds
            source.append("scaled" if rule in ratio else "model")
        else:
            out.append(small_seconds + startup_seconds)
            source.append("model")
    return out, source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", type=Path, default=[])
    parser.add_argument("--run", type=Path, help="a finished run's directory (same config)")
    parser.add_argument("--cores", nargs="*", type=int, default=[2, 4, 8, 16, 64])
    parser.add_argument("--small-seconds", type=float, default=0.5)
    parser.add_argument("--startup-seconds", type=float, default=1.5)
    args = parser.parse_args()
    cores = sorted(set(args.cores) | {2, 16})
    for line in machine("snakemake"):
        print(line)
    config = merged_config(args.configfile)
    run = read_run(args.run) if args.run else None
    names = ", ".join(str(p) for p in args.configfile) or "default"
    print(f"config: {names}; durations from {'the run ' + str(args.run) if run else 'the model'}")
    if run:
        print(
            f"run: {run['jobs']} jobs on {run['cores']} cores, wall {run['wall']:.0f} s, "
            f"mean start-up {run['startup']:.1f} s per job"
        )
        heavy = set(plan.heavy_jobs(config))
        smalls = [s for (rule, _), s in run["work"].items() if rule not in heavy]
        if smalls:
            print(f"run: small jobs' work median {statistics.median(smalls):.2f} s")
    print(
        f"{'cores':>5} {'jobs':>5} {'core-s':>8} {'longest':>8} {'crit.path':>9} "
        f"{'predicted':>9} {'bound':>7} {'any order':>9} {'measured':>8}  critical path"
    )
    walls = {}
    for n in cores:
        dag = build_dag(args.configfile, n)
        seconds, source = durations(dag, config, run, args.small_seconds, args.startup_seconds)
        predecessors = [p for _, _, p in dag]
        schedule = list_schedule(seconds, predecessors, n)
        _, path = critical_path(seconds, predecessors)
        walls[n] = schedule.makespan
        measured = f"{'-':>8}"
        if run and run["cores"] == n:
            measured = f"{run['wall']:8.0f}"
            if run["jobs"] != len(dag):
                print(
                    f"      the run had {run['jobs']} jobs, this DAG {len(dag)}: its wall time "
                    "is of another DAG (another config or code)"
                )
        graham = schedule.work / n + (1 - 1 / n) * schedule.critical_path
        chain = " -> ".join(dag[k][0] for k in path if seconds[k] > 0)
        print(
            f"{n:5d} {len(dag):5d} {schedule.work:8.0f} {max(seconds):8.1f} "
            f"{schedule.critical_path:9.1f} {schedule.makespan:9.1f} "
            f"{schedule.lower_bound:7.1f} {graham:9.1f} {measured}  {chain}"
        )
        counts = {s: source.count(s) for s in ("measured", "scaled", "model") if s in source}
        print(f"      durations: {counts}", file=sys.stderr)
    print(
        f"pipeline_scaling: predicted 16-core speed-up over 2 cores {walls[2] / walls[16]:.1f}x "
        f"({walls[2]:.0f} s -> {walls[16]:.0f} s)"
    )


if __name__ == "__main__":
    main()
