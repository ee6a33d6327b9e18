"""The Snakemake pipeline end to end on the smoke config, in a temporary directory."""

import html
import json
import re
import subprocess

import numpy as np
import pytest
import yaml
from snakemake.utils import update_config

import queue_routing
from _workflow import ROOT, SMOKE, digests, run_snakemake
from queue_routing.workflow.provenance import config_digest, git_state

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
    "results/multiskill/multiskill_simulation_table/load_sweep.csv",
    "results/multiskill/multiskill_simulation_table/table1.md",
    "results/multiskill/multiskill_job_sizes_table/policies.csv",
    "results/multiskill/multiskill_job_sizes_table/differences.csv",
    "results/multiskill/multiskill_job_sizes_table/summary.csv",
    "results/multiskill/multiskill_job_sizes_table/summary.md",
]
SERVERPOOLS_TABLES = [
    "results/serverpools/serverpools_search_summary/summary.csv",
    "results/serverpools/serverpools_search_summary/summary.md",
    "results/serverpools/serverpools_search_summary/search.json",
    "results/serverpools/serverpools_examples/examples.csv",
    "results/serverpools/serverpools_examples/stable.json",
    "results/serverpools/serverpools_examples/unstable.json",
    "results/serverpools/serverpools_examples/large_cycle.json",
    "results/serverpools/serverpools_boundary/scan.csv",
    "results/serverpools/serverpools_boundary/crossings.csv",
    "results/serverpools/serverpools_fluid/stable.csv",
    "results/serverpools/serverpools_fluid/unstable.csv",
    "results/serverpools/serverpools_fluid/large_cycle.csv",
    "results/serverpools/serverpools_stochastic_summary/traces.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.md",
    "results/serverpools/serverpools_stochastic_summary/verdicts.csv",
    "results/serverpools/serverpools_fluid_limit_summary/runs.csv",
    "results/serverpools/serverpools_fluid_limit_summary/distances.csv",
    "results/serverpools/serverpools_fluid_limit_summary/distances.md",
    "results/serverpools/serverpools_fluid_limit_summary/slopes.csv",
    "results/serverpools/serverpools_table/examples.csv",
    "results/serverpools/serverpools_table/examples.md",
    "results/serverpools/serverpools_covariance_table/covariance.csv",
    "results/serverpools/serverpools_covariance_table/covariance.md",
]
SERVERPOOLS_FIGURES = [
    "serverpools_tree_stable",
    "serverpools_tree_unstable",
    "serverpools_tree_large_cycle",
    "serverpools_boundary",
    "serverpools_fluid",
    "serverpools_deviation",
    "serverpools_time_average",
    "serverpools_fluid_limit",
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
    "results/deadlines/deadlines_three_cluster_table/gaps.csv",
    "results/deadlines/deadlines_three_cluster_table/gaps.md",
]
DEADLINES_FIGURES = [
    "deadlines_gap_distribution",
    "deadlines_gap_rejection_cost",
    "deadlines_gap_mean_deadline",
    "deadlines_gap_pure_routing",
    "deadlines_indices",
    "deadlines_large",
    "deadlines_three_cluster",
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
    "multiskill_job_sizes",
]


def test_smoke_run_writes_every_table_and_figure(smoke_run):
    for rel in MULTISKILL_TABLES + SERVERPOOLS_TABLES + DEADLINES_TABLES:
        path = smoke_run / rel
        assert path.is_file() and path.stat().st_size > 0, rel
    for name in MULTISKILL_FIGURES + SERVERPOOLS_FIGURES + DEADLINES_FIGURES:
        for ext in ("pdf", "png"):
            path = smoke_run / "figures" / f"{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 1000, path
        assert (smoke_run / "figures" / "captions" / f"{name}.rst").stat().st_size > 100, name
    assert not list(smoke_run.rglob("*.tmp")), "temporary files left behind"


#: Chunks of the smoke run (one per former job: C = 20's two instances with their three
#: replications, ...).
ALONE = [
    "results/multiskill/multiskill_simulate/C20/i0-1_r0-2.csv",
    "results/serverpools/serverpools_stochastic/large_cycle_r1000/r0-1_summary.csv",
    "results/serverpools/serverpools_stochastic/large_cycle_r1000/r0-1_trace.csv",
    "results/serverpools/serverpools_fluid_limit/large_cycle_r1000.csv",
    "results/deadlines/deadlines_large/n8/r0-2.csv",
]


def test_one_job_alone_gives_the_same_result_as_in_the_full_run(smoke_run, tmp_path):
    """Random streams come from the root seed and the job's wildcards, never from the order
    or company in which jobs run: asking for single outputs in a fresh directory reproduces
    them byte for byte."""
    run_snakemake(tmp_path, *ALONE, "--configfile", str(SMOKE))
    for rel in ALONE:
        assert (tmp_path / rel).read_bytes() == (smoke_run / rel).read_bytes(), rel


def test_dry_run_of_default_config_lists_every_figure(tmp_path):
    proc = run_snakemake(tmp_path, "-n")
    for name in MULTISKILL_FIGURES + SERVERPOOLS_FIGURES + DEADLINES_FIGURES:
        for ext in ("pdf", "png"):
            assert f"figures/{name}.{ext}" in proc.stdout, name


@pytest.mark.slow  # 3 minutes; the default run checks Part C's remade jobs (resume test)
def test_two_clean_runs_are_byte_identical(smoke_run, tmp_path):
    """A second clean run, in another directory and on one core (so jobs run in another
    order), reproduces every table and every figure (PDF and PNG) byte for byte.

    Behind ``slow``: in the default run, tests/test_resume.py's SIGKILL run remakes Part C's
    jobs afresh in another directory and compares every table and figure with this reference
    byte for byte (its SIGTERM run, which remakes Parts A and B, is behind ``slow`` too); in
    CI the SLURM test compares every table of a whole run made through SLURM with it."""
    run_snakemake(tmp_path, "--configfile", str(SMOKE), cores=1)
    first, second = digests(smoke_run, figures=True), digests(tmp_path, figures=True)
    assert sorted(first) == sorted(second)
    assert [path for path in first if first[path] != second[path]] == []


REPORT_TABLES = [
    "solutions.csv",
    "summary.csv",
    "iterations.csv",
    "summary.csv",
    "gaps.csv",
    "large.csv",
    "examples.csv",
    "time_averages.csv",
    "covariance.csv",
    "summary.csv",  # the job-size study's
    "gaps.csv",  # the three-cluster study's
    "distances.csv",  # the fluid limit's
    "gaps.csv",  # Part A's optimal-routing study
    "time_averages.csv",  # Part C's LQFS-LB / LAP / static study
    "ou.csv",
    "price.csv",
]
ALL_FIGURES = MULTISKILL_FIGURES + SERVERPOOLS_FIGURES + DEADLINES_FIGURES
PAPERS = {
    "multiskill": "Miguelez, Doncel & Prabhu (2022)",
    "deadlines": "Niño-Mora (2012",
    "serverpools": "Stolyar & Yudovina (2013)",
}


@pytest.mark.parametrize("name", ALL_FIGURES)
def test_every_figure_caption_names_its_paper_and_figure(smoke_run, name):
    caption = (smoke_run / "figures" / "captions" / f"{name}.rst").read_text()
    assert PAPERS[name.split("_", 1)[0]] in caption
    # which figure of the paper it reproduces, or that the figure is ours / beyond the paper
    assert re.search(r"Fig\. \d|^Ours\\?:|^Beyond ", caption), caption[:120]


def test_report_is_self_contained_with_every_figure_and_its_caption(smoke_run, tmp_path):
    report = tmp_path / "report.html"
    proc = run_snakemake(smoke_run, "--configfile", str(SMOKE), "--report", str(report))
    assert "WARNING" not in proc.stderr, proc.stderr
    text = report.read_text()
    assert "System Message" not in text  # a docutils error in a caption
    # self-contained: no script, style sheet or image fetched from elsewhere
    assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)=\"(https?:)?//", text)
    for name in ALL_FIGURES:
        assert f"filename={name}.png;base64," in text, name
        # the caption drawn under the figure is in the report (JSON-encoded HTML there)
        caption = re.sub(
            r"\\(.)", r"\1", (smoke_run / "figures/captions" / f"{name}.rst").read_text()
        )
        assert json.dumps(html.escape(caption[:80], quote=False))[1:-1] in text, name
    # the key tables, one report entry each (two of them are called summary.csv)
    tables = re.findall(r"filename=([\w.]+\.csv);", text)
    assert sorted(tables) == sorted(REPORT_TABLES)
    default = yaml.safe_load((SMOKE.parent / "default.yaml").read_text())
    seed = yaml.safe_load(SMOKE.read_text()).get("seed", default["seed"])
    assert f"Root seed {seed}" in text  # the workflow description renders the config
    # the provenance record is a report item, and its caption shows the record itself
    assert "filename=provenance.json;" in text
    record = json.loads((smoke_run / "results" / "provenance.json").read_text())
    assert record["config_sha256"] in text


def test_pipeline_figures_carry_no_timestamps(smoke_run):
    for pdf in sorted((smoke_run / "figures").glob("*.pdf")):
        data = pdf.read_bytes()
        assert b"/CreationDate" not in data and b"/ModDate" not in data, pdf.name
    for png in sorted((smoke_run / "figures").glob("*.png")):
        data = png.read_bytes()
        assert b"tIME" not in data, png.name  # the PNG time chunk
        assert b"Creation Time" not in data and b"date:" not in data, png.name


def smoke_config():
    """The merged config of the smoke run, merged as Snakemake merges config files."""
    config = yaml.safe_load((SMOKE.parent / "default.yaml").read_text())
    update_config(config, yaml.safe_load(SMOKE.read_text()))
    return config


def test_provenance_records_the_run(smoke_run):
    """results/provenance.json: code, environment and config of the run (not byte-stable,
    hence excluded from ``digests``)."""
    record = json.loads((smoke_run / "results" / "provenance.json").read_text())
    assert record["config_sha256"] == config_digest(smoke_config())
    # the checkout the workflow ran from (HEAD may have moved on since: allow descendants)
    now = git_state(ROOT)
    if now["commit"] == "unknown":
        assert record["git"] == now
    else:
        assert re.fullmatch(r"[0-9a-f]{40}", record["git"]["commit"])
        assert isinstance(record["git"]["dirty"], bool)
        ancestor = subprocess.run(
            ["git", "merge-base", "--is-ancestor", record["git"]["commit"], "HEAD"],
            cwd=ROOT,
            check=False,
        )
        assert ancestor.returncode == 0, record["git"]
    assert record["package"] == {"name": "queue-routing", "version": queue_routing.__version__}
    assert record["libraries"]["numpy"] == np.__version__
    assert set(record["libraries"]) == {
        "numpy", "scipy", "numba", "pandas", "matplotlib", "snakemake"
    }  # fmt: skip
    assert record["python"] and record["platform"]["system"]
    assert "results/provenance.json" not in digests(smoke_run)


def test_provenance_is_rewritten_when_and_only_when_its_record_changes(smoke_run):
    """The rule's param is the expected record: an unchanged setting leaves nothing to do,
    another config (here another seed) makes Snakemake rewrite the file."""
    target = "results/provenance.json"
    # bring the record up to date first: a commit made since the smoke run changes it
    run_snakemake(smoke_run, target, "--configfile", str(SMOKE), cores=1)
    same = run_snakemake(smoke_run, target, "-n", "--configfile", str(SMOKE), cores=None)
    assert "Nothing to be done" in same.stdout + same.stderr
    seed = smoke_config()["seed"] + 1
    other = run_snakemake(
        smoke_run, target, "-n", "--configfile", str(SMOKE), "--config", f"seed={seed}",
        cores=None,
    )  # fmt: skip
    output = other.stdout + other.stderr
    assert "params have changed since last execution" in output
    assert re.search(r"^provenance\s+1$", output, re.M), output[-2000:]
