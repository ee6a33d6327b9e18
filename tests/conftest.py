"""Fixtures shared across test modules."""

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import settings

from _workflow import ROOT, SMOKE, run_snakemake

# Property tests draw the same examples on every run (CI must not depend on luck); set
# HYPOTHESIS_PROFILE=explore to draw new ones locally.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


#: A directory in which a finished smoke run may be kept and reused by a later pytest session
#: of the same code (``.ci/run`` sets it, so the cluster test compares SLURM's run with the
#: default session's local run instead of running it again).
SMOKE_DIR_VARIABLE = "QUEUE_ROUTING_SMOKE_DIR"


#: What a smoke run's outputs depend on (the tests do not).
PIPELINE_PATHS = ("Snakefile", "workflow", "src", "pyproject.toml", "constraints.txt")


def _code_state() -> str | None:
    """A digest of the pipeline's code as checked out: the committed trees of
    :data:`PIPELINE_PATHS` and any uncommitted change to them (None: not a git checkout, so
    a kept run can't be matched to its code)."""
    try:
        trees = subprocess.run(
            ["git", "ls-tree", "HEAD", "--", *PIPELINE_PATHS],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        diff = subprocess.run(
            ["git", "diff", "HEAD", "--", *PIPELINE_PATHS],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        untracked = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "-z", "--", *PIPELINE_PATHS],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split("\0")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    digest = hashlib.sha256((trees + diff).encode())
    for name in sorted(filter(None, untracked)):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One uninterrupted local run of the smoke config, the reference of the pipeline tests.

    With ``QUEUE_ROUTING_SMOKE_DIR`` set, the run is made in that directory and reused by a
    later session while the pipeline code (:data:`PIPELINE_PATHS`) is unchanged."""
    kept, state = os.environ.get(SMOKE_DIR_VARIABLE), _code_state()
    stamp = Path(kept) / ".smoke-run-of" if kept else None
    if stamp is not None and state is not None and stamp.is_file():
        if stamp.read_text() == state:
            print(f"local smoke run: reusing {kept} (same code)")
            return Path(kept)
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        workdir = Path(kept)
        workdir.mkdir(parents=True)
    else:
        workdir = tmp_path_factory.mktemp("smoke")
    start = time.perf_counter()
    run_snakemake(workdir, "--configfile", str(SMOKE))
    print(f"local smoke run: {time.perf_counter() - start:.0f} s wall time (2 cores)")
    if stamp is not None and state is not None:
        stamp.write_text(state)
    return workdir
