"""Helpers shared by the tests that run the Snakemake pipeline in temporary directories."""

import copy
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "workflow" / "config" / "smoke.yaml"
SNAKEMAKE = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))
TABLE_SUFFIXES = {".csv", ".md", ".json"}
#: The repository's entry point: includes workflow/Snakefile; the default profile
#: profiles/default/ sits next to it, so Snakemake finds it from any working directory.
SNAKEFILE = ROOT / "Snakefile"
#: Files under results/ that are not results and are deliberately not byte-stable:
#: provenance.json records the git state, library versions and platform of the run
#: (queue_routing.workflow.provenance), which differ between otherwise identical runs elsewhere.
NOT_RESULTS = {"results/provenance.json"}
#: The per-chunk outputs of the heavy rules (``results/<part>/<rule>/.../<chunk label>[_kind]
#: .csv|.json``, queue_routing.workflow.chunks): their names and contents depend on how the work is
#: split, unlike the tables aggregated from them.
CHUNK_FILE = re.compile(r"(?:i\d+-\d+_)?r\d+-\d+(?:_[a-z]+)?\.(?:csv|json)")
#: A split of the smoke config's work different from its own (one chunk per job): every heavy
#: rule that chunks its work is cut along at least one axis.
SMOKE_SPLIT = ROOT / "tests" / "smoke_split.yaml"


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


def digests(workdir, *, figures=False, chunks=True):
    """SHA-256 of every table (CSV, Markdown, JSON) under results/, and optionally figures/.

    Excludes :data:`NOT_RESULTS` (results/provenance.json): it is the one JSON file under
    results/ that is not a table and is not byte-stable by design, so comparing it would make
    every byte-identity test depend on the git state and the machine. ``chunks=False`` also
    excludes the per-chunk outputs (:data:`CHUNK_FILE`), to compare runs split differently.
    """
    workdir = Path(workdir)
    paths = [
        p
        for p in (workdir / "results").rglob("*")
        if p.is_file()
        and p.suffix in TABLE_SUFFIXES
        and p.relative_to(workdir).as_posix() not in NOT_RESULTS
        and (chunks or not CHUNK_FILE.fullmatch(p.name))
    ]
    if figures:
        paths += [p for p in (workdir / "figures").rglob("*") if p.is_file()]
    return {
        str(p.relative_to(workdir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(paths)
    }


DEFAULT_CONFIG = ROOT / "workflow" / "config" / "default.yaml"


def merged_config(*overlays):
    """``workflow/config/default.yaml`` with ``overlays`` (dicts, or paths of YAML files)
    deep-merged over it in order, as Snakemake merges config files."""

    def merge(base, extra):
        for key, value in extra.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                merge(base[key], value)
            else:
                base[key] = value
        return base

    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    for overlay in overlays:
        extra = yaml.safe_load(Path(overlay).read_text()) if isinstance(overlay, Path) else overlay
        merge(config, copy.deepcopy(extra))
    return config
