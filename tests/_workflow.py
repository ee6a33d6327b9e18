"""Helpers shared by the tests that run the Snakemake pipeline in temporary directories."""

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
TABLE_SUFFIXES = {".csv", ".md", ".json"}
#: The repository's entry point: includes workflow/Snakefile; the default profile
#: profiles/default/ sits next to it, so Snakemake finds it from any working directory.
SNAKEFILE = ROOT / "Snakefile"
#: Files under results/ that are not results and are deliberately not byte-stable:
#: provenance.json records the git state, library versions and platform of the run
#: (queue_routing.provenance), which differ between otherwise identical runs elsewhere.
NOT_RESULTS = {"results/provenance.json"}


def snakemake_command(workdir, *args, cores="2"):
    """The argument list of a Snakemake run of this repository's workflow in ``workdir``."""
    command = [SNAKEMAKE, "-s", str(SNAKEFILE), "--directory", str(workdir)]
    if cores is not None:
        command += ["--cores", str(cores)]
    return [*command, *args]


def environment():
    """The tests' environment for Snakemake runs: headless matplotlib, no terminal colours."""
    return {**os.environ, "MPLBACKEND": "Agg", "NO_COLOR": "1"}


def run_snakemake(workdir, *args, check=True, cores="2", timeout=1800):
    """Run the workflow in ``workdir``; fail the test with Snakemake's output if it fails."""
    proc = subprocess.run(
        snakemake_command(workdir, *args, cores=cores),
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        pytest.fail(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def digests(workdir, *, figures=False):
    """SHA-256 of every table (CSV, Markdown, JSON) under results/, and optionally figures/.

    Excludes :data:`NOT_RESULTS` (results/provenance.json): it is the one JSON file under
    results/ that is not a table and is not byte-stable by design, so comparing it would make
    every byte-identity test depend on the git state and the machine.
    """
    workdir = Path(workdir)
    paths = [
        p
        for p in (workdir / "results").rglob("*")
        if p.is_file()
        and p.suffix in TABLE_SUFFIXES
        and p.relative_to(workdir).as_posix() not in NOT_RESULTS
    ]
    if figures:
        paths += [p for p in (workdir / "figures").rglob("*") if p.is_file()]
    return {
        str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(paths)
    }
