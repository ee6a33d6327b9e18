"""A local run's split follows its cores, and any such split gives the same tables.

Through Snakemake: a dry run schedules, for every heavy rule, the jobs the plan lists for the
run's ``--cores`` (``queue_routing.workflow.plan.heavy_jobs``); and the smoke config's Part B
large systems and Part C stationary and covariance runs, cut for 200 cores (the larger ones
down to single replications), give the tables of a run cut for one core byte for byte. The
library-level checks of every split are in tests/test_chunks.py, the bound on each job in
tests/test_plan.py.
"""

import re

import pytest
import yaml

from _workflow import CHUNK_FILE, SMOKE, merged_config, run_snakemake
from queue_routing.workflow import plan

#: The aggregated tables compared (their chunks differ by design).
TABLES = [
    "results/deadlines/deadlines_large_table/large.csv",
    "results/deadlines/deadlines_large_table/large.md",
    "results/serverpools/serverpools_stochastic_summary/traces.csv",
    "results/serverpools/serverpools_stochastic_summary/runs.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.md",
    "results/serverpools/serverpools_stochastic_summary/verdicts.csv",
    "results/serverpools/serverpools_covariance_table/covariance.csv",
    "results/serverpools/serverpools_covariance_table/covariance.md",
]
#: A split for one core (every study one chunk) and one for 200 cores with no floor (the
#: smoke run's work is a few seconds: 200 cores cut its larger studies to single replications).
ONE_CORE = {"scaling": {"cores": 1}}
MANY_CORES = {"scaling": {"cores": 200, "min_job_seconds": 0.001}}


def _job_stats(text):
    """Snakemake's "Job stats" table: jobs per rule."""
    table = text.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.mark.parametrize(
    "overlays,cores", [((SMOKE,), 1), ((), 2), ((), 16)], ids=["smoke-1", "default-2", "default-16"]
)
def test_a_dry_run_schedules_the_plans_jobs_for_its_cores(tmp_path, overlays, cores):
    args = [a for overlay in overlays for a in ("--configfile", str(overlay))]
    proc = run_snakemake(tmp_path, "-n", *args, cores=str(cores))
    scheduled = _job_stats(proc.stdout + proc.stderr)
    config = merged_config(*overlays)
    for rule, jobs in plan.heavy_jobs(config, cores).items():
        assert scheduled.get(rule, 0) == len(jobs), rule


def _run(tmp_path, name, overlay):
    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump(overlay))
    workdir = tmp_path / name
    run_snakemake(workdir, *TABLES, "--configfile", str(SMOKE), str(config), cores="1")
    chunks = sorted(
        p.relative_to(workdir / "results").as_posix()
        for p in (workdir / "results").rglob("*")
        if CHUNK_FILE.fullmatch(p.name)
    )
    return workdir, chunks


def test_a_split_for_many_cores_gives_the_one_core_tables(tmp_path):
    one, one_chunks = _run(tmp_path, "one", ONE_CORE)
    many, many_chunks = _run(tmp_path, "many", MANY_CORES)
    planned = plan.plan(merged_config(SMOKE, MANY_CORES))
    top = [j["chunk"] for j in planned["serverpools_stochastic"] if j["r"] == "10000"]
    assert "r0-0" in top and "r1-1" in top  # the largest stationary runs: one job a replication
    assert len(planned["serverpools_covariance"]) > 1 and len(planned["deadlines_large"]) > 2
    assert len(many_chunks) > len(one_chunks)
    for rel in TABLES:
        assert (many / rel).read_bytes() == (one / rel).read_bytes(), rel
