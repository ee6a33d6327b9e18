"""queue_routing.workflow.scripts.run_script and queue_routing.io.atomic_path under interruption.

Each case runs a rule script's ``main`` through ``run_script`` in a child process (signal
handlers belong to a process's main thread) with a stand-in for Snakemake's ``snakemake``
object, and checks what is left on disk.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from types import SimpleNamespace
    from queue_routing.io import atomic_path
    from queue_routing.workflow.scripts import run_script

    out, log, case = sys.argv[1], sys.argv[2], sys.argv[3]
    snakemake = SimpleNamespace(
        output=[out], log=[log], rule="demo", wildcards={}, threads=1,
    )

    def main(snakemake):
        if case == "double-sigterm":
            # a second SIGTERM lands inside atomic_path's clean-up, as when Snakemake
            # forwards its own SIGTERM to a job that was already sent one
            real_exists = os.path.exists

            def exists(path):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                return real_exists(path)

            os.path.exists = exists
        if case in ("compile-sigterm", "compile-sigint"):
            # the signal lands while numba compiles a kernel (no cache: NUMBA_CACHE_DIR is
            # empty and the function is new), where raising from a handler crashes numba
            import threading
            from numba import njit

            sig = signal.SIGTERM if case == "compile-sigterm" else signal.SIGINT
            threading.Timer(0.05, os.kill, (os.getpid(), sig)).start()
            with atomic_path(out) as tmp:
                tmp.write_text("partial")
                for k in range(40):  # a new specialisation each time: compiling throughout
                    njit(lambda x, k=k: x + k)(float(k))
                tmp.write_text("complete")
            return
        with atomic_path(out) as tmp:
            tmp.write_text("partial")
            if case == "sigterm-before-commit":
                # received, recorded by the handler, and no safe point before the commit
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
            elif case != "complete":
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            tmp.write_text("complete")

    run_script(snakemake, main)
    """
)


def run_child(tmp_path, case):
    out, log = tmp_path / "out.csv", tmp_path / "job.log"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(out), str(log), case],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc, out, log


def leftovers(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize(
    "mode",
    [
        "sigterm",
        # the output is complete, but the job was told to stop before it committed it: no
        # output (Snakemake counts the job as failed and would delete it anyway), as when the
        # signal lands while numba compiles on a loaded machine and the compile ends first
        "sigterm-before-commit",
    ],
)
def test_sigterm_stops_the_job_without_output_or_temporary_file(tmp_path, mode):
    proc, out, log = run_child(tmp_path, mode)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert not out.exists()
    assert leftovers(tmp_path) == []
    assert "terminated by SIGTERM" in log.read_text()


def test_a_second_sigterm_does_not_interrupt_the_clean_up(tmp_path):
    proc, out, _ = run_child(tmp_path, "double-sigterm")
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert not out.exists()
    assert leftovers(tmp_path) == []


def test_a_rerun_removes_stale_temporaries_of_a_killed_job(tmp_path):
    stale = tmp_path / ".out.csv.abc123.tmp"
    stale.write_text("left by a SIGKILLed run")
    unrelated = tmp_path / ".other.csv.abc123.tmp"
    unrelated.write_text("another job's")
    proc, out, log = run_child(tmp_path, "complete")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "complete"
    assert not stale.exists() and unrelated.exists()
    assert "removed stale temporary file" in log.read_text()


@pytest.mark.parametrize("case", ["compile-sigterm", "compile-sigint"])
def test_a_signal_while_numba_compiles_ends_the_job_in_order(tmp_path, case):
    proc, out, log = run_child(tmp_path, case)
    sig = signal.SIGTERM if case == "compile-sigterm" else signal.SIGINT
    assert proc.returncode == 128 + sig, proc.stderr
    assert "Traceback" not in proc.stderr and "SystemError" not in log.read_text()
    assert not out.exists()
    assert leftovers(tmp_path) == []
    assert f"terminated by {sig.name}" in log.read_text()


def test_a_job_gives_numba_its_threads():
    """``use_threads``: a job's ``threads`` reach numba's parallel kernels, at most numba's
    count where numba is loaded, through ``NUMBA_NUM_THREADS`` where it is not yet."""
    import numba

    from queue_routing.workflow.scripts import use_threads

    before = numba.get_num_threads()
    try:
        assert use_threads(1) == 1 and numba.get_num_threads() == 1
        top = numba.config.NUMBA_NUM_THREADS
        assert use_threads(10**6) == top and numba.get_num_threads() == top
    finally:
        numba.set_num_threads(before)
    child = (
        "import sys; from queue_routing.workflow.scripts import use_threads; "
        "assert 'numba' not in sys.modules; use_threads(3); import numba; "
        "print(numba.config.NUMBA_NUM_THREADS)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=True, timeout=120
    )
    assert proc.stdout.split() == ["3"]
