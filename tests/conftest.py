"""Fixtures shared across test modules."""

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import numba
import pytest
from hypothesis import settings

from _workflow import ROOT, SMOKE, run_snakemake

# Property tests draw the same examples on every run (CI must not depend on luck); set
# HYPOTHESIS_PROFILE=explore to draw new ones locally.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# One numba thread per test process (pytest-xdist runs a worker per core; Part A's parallel
# value iteration would otherwise put two threads per core); a test of the threads sets them.
numba.set_num_threads(1)


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


#: Tests that need the smoke run (its fixture) run in two groups, each on one pytest-xdist
#: worker. The first worker to reach the fixture makes the run (``snakemake --cores 2``, both
#: cores), the other waits on its lock meanwhile, so the run is made once; then the two groups'
#: further pipeline runs (the resume, rerun and damage tests) share the workers. Every other
#: module is a group of its own (its module-scoped fixtures are computed once). The group is
#: decided from the test's id in the controller (:func:`pytest_xdist_make_scheduler`), which
#: sees no fixtures: the modules below, and tests named ``test_smoke_run_*`` elsewhere (in the
#: second group); collection checks that every test using the smoke run is in one of them.
SMOKE_GROUPS = {
    "smoke-pipeline-1": {
        "test_cluster.py",  # the SLURM run; restarting the cluster must not overlap with it
        "test_pipeline.py",
        "test_progress.py",
        "test_resume.py",
    },
    "smoke-pipeline-2": {
        "test_pipeline_rerun.py",
        "test_split_pipeline.py",
    },
}
SMOKE_NAMED_GROUP = "smoke-pipeline-2"  # tests named test_smoke_run_* in other modules

#: Modules scheduled right after the smoke groups (the longest of the others: they must not
#: be the last to start, or one worker finishes them alone).
EARLY_MODULES = ("test_chunks_cores.py", "test_config.py", "test_resources.py")


def test_group(nodeid: str) -> str:
    """The scheduling group of a test id: one of :data:`SMOKE_GROUPS` or the test's module."""
    module, _, rest = nodeid.partition("::")
    for group, modules in SMOKE_GROUPS.items():
        if Path(module).name in modules:
            return group
    if rest.startswith("test_smoke_run"):
        return SMOKE_NAMED_GROUP
    return module


test_group.__test__ = False  # a helper, not a test


def _schedule_rank(nodeid: str) -> int:
    """Where a test's group starts: the smoke groups, then :data:`EARLY_MODULES`, then the
    rest in collection order."""
    group = test_group(nodeid)
    if group in SMOKE_GROUPS:
        return list(SMOKE_GROUPS).index(group)
    name = Path(group).name
    return len(SMOKE_GROUPS) + (EARLY_MODULES.index(name) if name in EARLY_MODULES else 99)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist (``-n auto`` in pyproject.toml's ``addopts``): whole groups of
    :func:`test_group` to one worker, in the order of collection (xdist's own ``loadgroup``
    marks do not reach the scheduler with pytest 9, whose test ids are no longer
    assignable; its default order, the largest group first, counts tests, not time)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return test_group(nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Order the groups by :func:`_schedule_rank` (the smoke groups first: the longest, the
    other modules fill the workers once the run is made), and refuse a test that uses the
    smoke run outside the smoke groups (it could start a second run's wait on a worker
    outside them)."""
    items.sort(key=lambda item: _schedule_rank(item.nodeid))  # stable
    stray = [
        item.nodeid
        for item in items
        if "smoke_run" in getattr(item, "fixturenames", ())
        and test_group(item.nodeid) not in SMOKE_GROUPS
    ]
    if stray:
        raise pytest.UsageError(
            "tests using smoke_run outside the smoke groups (tests/conftest.py SMOKE_GROUPS): "
            + ", ".join(stray)
        )


@contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` (created if missing), held for the ``with`` block: makes
    concurrent pytest-xdist workers (or sessions) wait for one another's smoke run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One uninterrupted local run of the smoke config, the reference of the pipeline tests.

    With ``QUEUE_ROUTING_SMOKE_DIR`` set, the run is made in that directory and reused by a
    later session while the pipeline code (:data:`PIPELINE_PATHS`) is unchanged. Otherwise it
    is made once per session, in the temporary directory the session's pytest-xdist workers
    share."""
    kept, state = os.environ.get(SMOKE_DIR_VARIABLE), _code_state()
    if kept:
        workdir = Path(kept)
    else:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        workdir = shared / "smoke-run"
        state = f"{state}:{os.environ.get('PYTEST_XDIST_TESTRUNUID', 'serial')}"
    stamp = workdir / ".smoke-run-of"
    with _locked(workdir.with_name(workdir.name + ".lock")):
        if state is not None and stamp.is_file() and stamp.read_text() == state:
            print(f"local smoke run: reusing {workdir} (same code)")
            return workdir
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        start = time.perf_counter()
        run_snakemake(workdir, "--configfile", str(SMOKE))
        print(f"local smoke run: {time.perf_counter() - start:.0f} s wall time (2 cores)")
        if state is not None:
            stamp.write_text(state)
    return workdir
