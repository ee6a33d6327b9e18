"""The smoke pipeline through the SLURM profile on a real (single-node) SLURM cluster.

Start the cluster first, as root: ``tools/slurm-single-node start`` (``.ci/run`` does). The
test submits the smoke config with ``--profile profiles/slurm`` and checks that

* every rule that is not a local rule ran as a SLURM job, and SLURM (through ``squeue``,
  no accounting database) reports each of those jobs COMPLETED;
* aggregation ran locally (no SLURM job for it);
* the tables are byte-identical to a local run of the same config.

The figures are left out (``--omit-from`` every figure rule): they are local rules, drawn
from those tables by the same code as in a local run, and would add a third of the run's
time to CI without testing anything about SLURM.

Deselected by default (marker ``cluster``): ``pytest -m cluster``. Where no SLURM node is up it
is skipped with the reason, unless ``QUEUE_ROUTING_REQUIRE_SLURM=1`` (set by ``.ci/run`` once
it has started the cluster), which turns the skip into a failure.
"""

import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from _workflow import CHUNK_FILE, ROOT, SMOKE, SMOKE_SPLIT, digests, run_snakemake

pytestmark = pytest.mark.cluster

PROFILE = ROOT / "profiles" / "slurm"


def slurm_unavailable_reason():
    """None if a SLURM node accepts jobs here, else why not."""
    for tool in ("sbatch", "squeue", "sinfo", "scancel"):
        if shutil.which(tool) is None:
            return f"the SLURM command {tool!r} is not installed (run: tools/slurm-single-node)"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[cluster]')"
    try:
        proc = subprocess.run(
            ["sinfo", "--noheader", "--format=%t"],
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return "sinfo got no answer in 20 s (is slurmctld running? run: tools/slurm-single-node)"
    states = proc.stdout.split()
    if proc.returncode != 0 or not set(states) & {"idle", "mix", "alloc", "comp"}:
        detail = (proc.stderr or proc.stdout).strip() or "no nodes"
        return f"no SLURM node is up (sinfo: {detail}; run: tools/slurm-single-node)"
    return None


@pytest.fixture(scope="session")  # session scope: checked before the local smoke run
def slurm():
    reason = slurm_unavailable_reason()
    if reason is not None:
        if os.environ.get("QUEUE_ROUTING_REQUIRE_SLURM") == "1":
            pytest.fail(f"SLURM is required here but unavailable: {reason}")
        pytest.skip(f"SLURM test cluster unavailable: {reason}")


def local_rules():
    """Rule names listed under ``localrules:`` in the workflow's files."""
    names = set()
    snakefiles = [ROOT / "Snakefile", ROOT / "workflow" / "Snakefile"]
    for path in [*snakefiles, *sorted(ROOT.glob("workflow/rules/*.smk"))]:
        for block in re.findall(r"^localrules:\n((?:    \w+,?\n)+)", path.read_text(), re.M):
            names.update(re.findall(r"\w+", block))
    return names


def job_counts(output):
    """The 'Job stats' table Snakemake prints before running: rule -> number of jobs."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return Counter(
        {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    )


def figure_rules():
    """Rule names of the figures (``<part>_fig...``) in the workflow's rule files."""
    names = set()
    for path in sorted(ROOT.glob("workflow/rules/*.smk")):
        names.update(re.findall(r"^rule (\w+_fig\w*):", path.read_text(), re.M))
    return sorted(names)


def test_smoke_pipeline_on_slurm_matches_local_run(slurm, smoke_run, tmp_path):
    start = time.perf_counter()
    omitted = figure_rules()
    assert len(omitted) > 10, omitted
    proc = run_snakemake(
        tmp_path,
        "--omit-from",
        *omitted,
        "--profile",
        str(PROFILE),
        "--slurm-no-account",
        # the profile's 10 s suits a shared cluster; on the idle test node, jobs of a few
        # seconds would wait mostly for the status check (the interval grows from this value)
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--configfile",
        str(SMOKE),
        str(SMOKE_SPLIT),
        cores=None,
        timeout=1800,
    )
    wall = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    print(f"SLURM smoke run: {wall:.0f} s wall time")

    counts = job_counts(output)
    local = local_rules()
    assert local and set(counts) - local, "expected both local and submitted rules"
    expected_submitted = sum(n for rule, n in counts.items() if rule not in local)
    submitted = re.findall(r"submitted with SLURM jobid (\d+)", output)
    assert len(submitted) == expected_submitted, output

    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    queue = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T", "--name", run_id],
        capture_output=True,
        text=True,
        check=True,
    )
    states = dict(line.split("|") for line in queue.stdout.split())
    assert sorted(states) == sorted(submitted)
    assert set(states.values()) == {"COMPLETED"}, states

    def chunks(workdir):
        results = workdir / "results"
        return {p.relative_to(results) for p in results.rglob("*") if CHUNK_FILE.fullmatch(p.name)}

    assert len(chunks(tmp_path)) > len(chunks(smoke_run)), "the SLURM run was not split"
    assert not list((tmp_path / "figures").glob("*.png")), "figures were not to be drawn"
    ours, local = digests(tmp_path, chunks=False), digests(smoke_run, chunks=False)
    assert ours and ours == local


def test_starting_the_running_cluster_again_changes_nothing(slurm):
    """tools/slurm-single-node is idempotent: on a cluster it started, a second start leaves
    the configuration and the daemons as they were."""
    conf = Path("/etc/slurm/slurm.conf")
    if os.geteuid() != 0 or "tools/slurm-single-node" not in conf.read_text(errors="replace"):
        pytest.skip("the running cluster was not started by tools/slurm-single-node as root")

    def daemons():
        pids = subprocess.run(
            ["pgrep", "-x", "-d,", "slurmctld|slurmd|munged"],
            capture_output=True,
            text=True,
            check=False,
        )
        return pids.stdout.strip()

    before = (conf.read_bytes(), conf.stat().st_mtime_ns, daemons())
    proc = subprocess.run(
        [str(ROOT / "tools" / "slurm-single-node"), "start"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stderr
    assert (conf.read_bytes(), conf.stat().st_mtime_ns, daemons()) == before
