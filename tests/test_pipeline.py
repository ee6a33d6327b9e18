"""The Snakemake pipeline end to end on the smoke config, in a temporary directory."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "workflow" / "config" / "smoke.yaml"
SNAKEMAKE = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))

MULTISKILL_TABLES = [
    "results/multiskill/multiskill_iteration_table/iterations.csv",
    "results/multiskill/multiskill_iteration_table/iterations.md",
    "results/multiskill/multiskill_iteration_table/iterations_by_init.csv",
    "results/multiskill/multiskill_comparison_table/comparison.csv",
    "results/multiskill/multiskill_comparison_table/summary.csv",
    "results/multiskill/multiskill_comparison_table/comparison.md",
    "results/multiskill/multiskill_table1/solutions.csv",
    "results/multiskill/multiskill_table1/solutions.md",
    "results/multiskill/multiskill_table1/trajectories.csv",
    "results/multiskill/multiskill_two_class/case_map.csv",
    "results/multiskill/multiskill_switching/costs.csv",
    "results/multiskill/multiskill_switching/switching_curve.csv",
    "results/multiskill/multiskill_equal_capacities/region.csv",
    "results/multiskill/multiskill_simulation_table/policies.csv",
    "results/multiskill/multiskill_simulation_table/summary.md",
    "results/multiskill/multiskill_simulation_table/table1.md",
]
SERVERPOOLS_TABLES = [
    "results/serverpools/serverpools_search/summary.csv",
    "results/serverpools/serverpools_search/summary.md",
    "results/serverpools/serverpools_search/search.json",
    "results/serverpools/serverpools_examples/examples.csv",
    "results/serverpools/serverpools_examples/stable.json",
    "results/serverpools/serverpools_examples/unstable.json",
    "results/serverpools/serverpools_boundary/scan.csv",
    "results/serverpools/serverpools_boundary/crossings.csv",
    "results/serverpools/serverpools_fluid/stable.csv",
    "results/serverpools/serverpools_fluid/unstable.csv",
    "results/serverpools/serverpools_stochastic_summary/traces.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.md",
    "results/serverpools/serverpools_stochastic_summary/verdicts.csv",
    "results/serverpools/serverpools_table/examples.csv",
    "results/serverpools/serverpools_table/examples.md",
    "results/serverpools/serverpools_covariance/covariance.csv",
    "results/serverpools/serverpools_covariance/covariance.md",
]
SERVERPOOLS_FIGURES = [
    "serverpools_tree_stable",
    "serverpools_tree_unstable",
    "serverpools_boundary",
    "serverpools_fluid",
    "serverpools_deviation",
    "serverpools_time_average",
]
DEADLINES_TABLES = [
    "results/deadlines/deadlines_two_cluster/arrival_rate.csv",
    "results/deadlines/deadlines_two_cluster/rejection_cost.csv",
    "results/deadlines/deadlines_two_cluster/mean_deadline.csv",
    "results/deadlines/deadlines_two_cluster/distribution.csv",
    "results/deadlines/deadlines_two_cluster/pure_routing.csv",
    "results/deadlines/deadlines_gap_table/gaps.csv",
    "results/deadlines/deadlines_gap_table/gaps.md",
    "results/deadlines/deadlines_indices/indices.csv",
    "results/deadlines/deadlines_large_table/large.csv",
    "results/deadlines/deadlines_large_table/large.md",
]
DEADLINES_FIGURES = [
    "deadlines_gap_distribution",
    "deadlines_gap_rejection_cost",
    "deadlines_gap_mean_deadline",
    "deadlines_gap_pure_routing",
    "deadlines_indices",
    "deadlines_large",
]
MULTISKILL_FIGURES = [
    "multiskill_fig1_model",
    "multiskill_fig2_case_map",
    "multiskill_fig3_loads",
    "multiskill_fig4_switching",
    "multiskill_fig5_equal_capacities",
    "multiskill_fig6_convergence_jacobi",
    "multiskill_fig6_convergence_single",
    "multiskill_fig7_iterations_jacobi",
    "multiskill_fig7_iterations_single",
    "multiskill_fig8_policies_vs_size",
    "multiskill_fig9_policies_vs_load",
]


def snakemake(workdir, *args, check=True):
    cmd = [
        SNAKEMAKE,
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
        *args,
    ]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if check and proc.returncode != 0:
        pytest.fail(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def digests(workdir):
    return {
        str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((workdir / "results").rglob("*"))
        if p.is_file() and p.suffix in {".csv", ".md", ".json"}
    }


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke")
    snakemake(workdir, "--configfile", str(SMOKE))
    return workdir


def test_smoke_run_writes_every_table_and_figure(smoke_run):
    for rel in MULTISKILL_TABLES + SERVERPOOLS_TABLES + DEADLINES_TABLES:
        path = smoke_run / rel
        assert path.is_file() and path.stat().st_size > 0, rel
    for name in MULTISKILL_FIGURES + SERVERPOOLS_FIGURES + DEADLINES_FIGURES:
        for ext in ("pdf", "png"):
            path = smoke_run / "figures" / f"{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 1000, path
    assert not list(smoke_run.rglob("*.tmp")), "temporary files left behind"


def test_rerunning_rules_reproduces_tables_exactly(smoke_run):
    before = digests(smoke_run)
    snakemake(
        smoke_run,
        "--configfile",
        str(SMOKE),
        "--forcerun",
        "multiskill_instances",
        "multiskill_table1",
        "multiskill_two_class",
        "multiskill_equal_capacities",
        "serverpools_search",
        "serverpools_examples",
        "serverpools_stochastic",
        "serverpools_covariance",
        "deadlines_two_cluster",
        "deadlines_large",
    )
    assert digests(smoke_run) == before


def test_dry_run_of_default_config_lists_every_figure(tmp_path):
    proc = snakemake(tmp_path, "-n")
    for name in MULTISKILL_FIGURES + SERVERPOOLS_FIGURES + DEADLINES_FIGURES:
        for ext in ("pdf", "png"):
            assert f"figures/{name}.{ext}" in proc.stdout, name


def test_invalid_config_fails_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("multiskill:\n  instances_per_size: 0\n")
    proc = snakemake(tmp_path, "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    assert "instances_per_size" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()
