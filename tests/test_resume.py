"""Kill a pipeline run mid-way, then resume it.

The reference is one uninterrupted smoke run (``smoke_run``). Two kinds of interruption:

* SIGTERM to Snakemake and every job it started (a cluster's or a user's kill): Snakemake
  shuts down and deletes the outputs of the jobs it had running;
* SIGKILL to all of them (power loss, OOM killer): nobody cleans up, the working directory
  stays locked and Snakemake's metadata marks the jobs that were running as incomplete.

Either way the interrupted run must leave no truncated table or figure under its final name
(every output left is byte-identical to the reference, or Snakemake marks it incomplete and
regenerates it; the scripts write to a temporary file and rename it into place), and resuming
with the README's commands must finish the run with tables and figures byte-identical to the
reference, running only the jobs that had not finished.
"""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from _workflow import SMOKE, digests, environment, run_snakemake, snakemake_command

FINISHED = re.compile(r"Finished jobid: \d+")
STARTED = re.compile(r"^Job \d+: ")  # a job starts (every rule has a message:)
STEPS = re.compile(r"(\d+) of (\d+) steps")
SIGTERM_GRACE = 60.0  # s: Snakemake ends within seconds, unless it deadlocked (below)


def interrupted_run(workdir, sig, after_finished=12, timeout=600):
    """Start the smoke run and send ``sig`` to its whole process group right after a job
    starts, once ``after_finished`` jobs have finished. Returns (return code, output)."""
    proc = subprocess.Popen(
        snakemake_command(workdir, "--configfile", str(SMOKE)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment(),
        start_new_session=True,  # its own process group: Snakemake and every job it spawns
    )
    lines, finished, killed = [], 0, threading.Event()

    def read():
        nonlocal finished
        for line in proc.stdout:
            lines.append(line)
            finished += bool(FINISHED.search(line))
            if not killed.is_set() and finished >= after_finished and STARTED.match(line):
                time.sleep(1.0)  # let the job get going, so it is killed mid-way
                os.killpg(proc.pid, sig)
                killed.set()

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if killed.wait(timeout=1.0) and sig == signal.SIGTERM:
            try:
                proc.wait(timeout=SIGTERM_GRACE)
            except subprocess.TimeoutExpired:
                # Snakemake 9's SIGTERM handler takes the scheduler's (non-reentrant) lock;
                # when the signal lands while the main thread holds it for job selection,
                # Snakemake waits for itself forever. The README's advice for that case is a
                # Ctrl-C, whose KeyboardInterrupt breaks the wait: do the same.
                lines.append(f"[test] no exit {SIGTERM_GRACE} s after SIGTERM: SIGINT\n")
                os.kill(proc.pid, signal.SIGINT)
            break
    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    reader.join(timeout=30)
    assert killed.is_set(), "the run finished before it could be interrupted:\n" + "".join(lines)
    return proc.returncode, "".join(lines)


def parts_done(reference, workdir, redo):
    """``workdir`` as a run that had finished every part but those in ``redo``: a copy of
    the finished ``reference`` (its files, times and Snakemake metadata) without their
    tables, figures and captions."""
    shutil.copytree(reference, workdir, symlinks=True, dirs_exist_ok=True)
    for sub in ("log", "locks", "incomplete"):
        shutil.rmtree(workdir / ".snakemake" / sub, ignore_errors=True)
    for part in redo:
        shutil.rmtree(workdir / "results" / part)
        figures = workdir / "figures"
        for path in [*figures.glob(f"{part}_*"), *figures.glob(f"captions/{part}_*")]:
            path.unlink()


# Between them the two runs make every job of the smoke run afresh, in another directory and
# another order than the reference, and compare all of it byte for byte: SIGTERM from a run
# that had finished Part C (Parts A and B to go, 50-odd jobs), SIGKILL from one that had
# finished Parts A and B (Part C's 20-odd jobs to go).
# The SIGTERM case (100 s on the smoke group's worker, the suite's critical path) is behind
# `slow`; in the default run, SIGKILL (no cleanup at all, the harder case) remakes Part C, and
# the SLURM test remakes every table in another directory and order.
@pytest.mark.parametrize(
    ("sig", "redo", "after_finished"),
    [
        pytest.param(
            signal.SIGTERM, ("multiskill", "deadlines"), 12, marks=pytest.mark.slow, id="SIGTERM"
        ),
        pytest.param(signal.SIGKILL, ("serverpools",), 6, id="SIGKILL"),
    ],
)
def test_kill_mid_run_then_resume_matches_uninterrupted_run(
    smoke_run, tmp_path, sig, redo, after_finished
):
    reference = digests(smoke_run, figures=True)
    parts_done(smoke_run, tmp_path, redo)
    returncode, output = interrupted_run(tmp_path, sig, after_finished=after_finished)
    assert returncode != 0, output
    left = digests(tmp_path, figures=True)
    temporaries = sorted(path for path in left if path.endswith(".tmp"))
    if sig == signal.SIGTERM:
        assert not temporaries, "SIGTERM should let the jobs remove their temporary files"
    left = {path: digest for path, digest in left.items() if path not in temporaries}
    assert set(left) < set(reference), "the interrupted run should not have finished"
    finished_before = len(FINISHED.findall(output))

    if sig == signal.SIGKILL:
        # Snakemake had no chance to release its lock: the README's step before resuming.
        locked = run_snakemake(tmp_path, "--configfile", str(SMOKE), check=False)
        assert locked.returncode != 0 and "lock" in (locked.stdout + locked.stderr).lower()
        run_snakemake(tmp_path, "--configfile", str(SMOKE), "--unlock", cores=None)

    # Nothing truncated under a final name: whatever differs from the reference is recorded
    # by Snakemake as incomplete (and so regenerated on resume).
    summary = run_snakemake(tmp_path, "--configfile", str(SMOKE), "--summary", cores=None)
    status = {
        fields[0]: fields[3]
        for fields in (line.split("\t") for line in summary.stdout.splitlines())
        if len(fields) >= 4
    }
    for path, digest in left.items():
        if digest != reference[path]:
            assert status.get(path) == "incomplete", f"{path} differs and is not incomplete"

    resumed = run_snakemake(tmp_path, "--configfile", str(SMOKE), "--rerun-incomplete")
    assert digests(tmp_path, figures=True) == reference  # stale temporaries removed too
    steps = STEPS.findall(resumed.stdout + resumed.stderr)
    total = max(int(n) for _, n in STEPS.findall(output))
    assert steps and int(steps[-1][1]) <= total - finished_before, "the resume redid work"
