"""The command under interruption and broken output: one line, documented status, no traceback.

Each test runs the real console entry point in a subprocess, so signals and file descriptors
behave as for a user.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from _cli_inputs import CLUSTERS, COMMAND, TABLE1


def _start(tmp_path, *argv, instance):
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(instance))
    return subprocess.Popen(
        [*COMMAND, *argv[:2], str(path), *argv[2:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


LONG_RUNS = [
    # one replication of each runs for minutes inside a compiled kernel
    (
        ("multiskill", "simulate", "--policy", "pi", "--horizon", "1e7", "--replications", "2"),
        TABLE1,
    ),
    (
        ("deadlines", "evaluate", "--policy", "pi", "--method", "simulation", "--horizon", "1e9"),
        CLUSTERS,
    ),
]


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize(("argv", "instance"), LONG_RUNS)
def test_signal_ends_a_compiled_run(tmp_path, argv, instance, signum, status):
    """The run would take minutes; the signal ends it with one line and its status. (How fast:
    ``benchmarks/signals.py`` measures it against the one-second bound; a wall-clock bound
    here would depend on the machine's load.)"""
    proc = _start(tmp_path, *argv, instance=instance)
    time.sleep(4.0)  # past imports and compilation (cached), inside the first replication
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert out == ""
    assert err == f"queue-routing: error: interrupted by {signal.Signals(signum).name}\n"


def test_broken_pipe_is_one_line(tmp_path):
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(TABLE1))
    proc = subprocess.Popen(
        [*COMMAND, "multiskill", "solve", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before anything is written (like `| head -c 0`)
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert proc.returncode == 1
    assert err == "queue-routing: error: standard output was closed before the result was written\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_is_one_line(tmp_path):
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(TABLE1))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*COMMAND, "multiskill", "solve", str(path)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert proc.returncode == 1
    assert proc.stderr == "queue-routing: error: cannot write the output: No space left on device\n"


def test_closed_stdout_is_one_line(tmp_path):
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(TABLE1))
    proc = subprocess.run(
        [*COMMAND, "multiskill", "solve", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("queue-routing: error: ")
