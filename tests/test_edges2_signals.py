"""SIGINT / SIGTERM at any moment of a simulation's first seconds: imports, loading a user
policy, loading or compiling the kernels (a cold numba cache), the kernel call, a kernel.

Whatever the moment, the command ends with exactly the documented line and status 130 / 143,
no traceback and nothing on stdout (docs/limits.md). The reference is
that contract, per run, over times spread across the first seconds; ``-m slow`` runs the
whole grid (every simulation entry point of every part, both signals, warm and cold caches).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from _cli_inputs import CLUSTERS, COMMAND, TABLE1

from queue_routing.serverpools.instances import LARGE_CYCLE

SLOW_IMPORT = "import time\ntime.sleep(30)\n\ndef index(server, jobs, instance):\n    return jobs\n"
SLOW_INDEX = (
    "import time\n\ndef index(server, jobs, instance):\n    time.sleep(30)\n    return jobs\n"
)

#: Every simulation entry point, each long enough to be running at 4 s.
RUNS = {
    "multiskill-compare": (
        ["multiskill", "compare-policies", "{A}", "--horizon", "300000", "--replications", "5"],
        TABLE1,
    ),
    "multiskill-simulate": (
        ["multiskill", "simulate", "{A}", "--policy", "pi", "--horizon", "1e7"],
        TABLE1,
    ),
    "multiskill-simulate-general": (
        "multiskill simulate {A} --policy jsq --horizon 1e6 --job-sizes deterministic".split(),
        TABLE1,
    ),
    "multiskill-user-policy-import": (
        ["multiskill", "simulate", "{A}", "--policy", "{P}:index", "--horizon", "1e5"],
        TABLE1,
    ),
    "deadlines-compare": (
        ["deadlines", "compare-policies", "{A}", "--horizon", "3000000", "--replications", "3"],
        CLUSTERS,
    ),
    "deadlines-simulate": (
        "deadlines evaluate {A} --policy pi --method simulation --horizon 1e9".split(),
        CLUSTERS,
    ),
    "deadlines-user-policy-index": (
        ["deadlines", "evaluate", "{A}", "--policy", "{Q}:index", "--method", "simulation"],
        CLUSTERS,
    ),
    "serverpools-simulate": (
        ["serverpools", "simulate", "{A}", "--scale", "1000000", "--horizon", "60"],
        LARGE_CYCLE,
    ),
}


def _interrupt(tmp_path, run: str, seconds: float, signum: int, *, cold: bool):
    """Start ``run``, send ``signum`` after ``seconds``; (status, stdout, stderr)."""
    argv, instance = RUNS[run]
    (tmp_path / "instance.json").write_text(json.dumps(instance))
    (tmp_path / "slow_import.py").write_text(SLOW_IMPORT)
    (tmp_path / "slow_index.py").write_text(SLOW_INDEX)
    names = {
        "{A}": str(tmp_path / "instance.json"),
        "{P}": str(tmp_path / "slow_import.py"),
        "{Q}": str(tmp_path / "slow_index.py"),
    }
    for key, value in names.items():
        argv = [a.replace(key, value) for a in argv]
    env = dict(os.environ)
    if cold:  # nothing compiled yet: the signal may land in numba's compiler
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    proc = subprocess.Popen(
        [*COMMAND, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    time.sleep(seconds)
    assert proc.poll() is None, (run, seconds, proc.communicate())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _check(result, signum, when=None):
    status, out, err = result
    assert (status, err) == (
        128 + signum,
        f"queue-routing: error: interrupted by {signal.Signals(signum).name}\n",
    ), when
    assert out == "", when


@pytest.mark.parametrize(
    ("run", "seconds", "signum", "cold"),
    [
        ("multiskill-compare", 0.3, signal.SIGTERM, False),  # imports and parsing
        ("multiskill-compare", 2.5, signal.SIGINT, True),  # compiling the kernels
        ("deadlines-compare", 1.5, signal.SIGTERM, False),  # loading the kernels, first calls
        ("serverpools-simulate", 0.8, signal.SIGINT, False),
        ("multiskill-user-policy-import", 1.0, signal.SIGINT, False),  # the user's import
        ("deadlines-user-policy-index", 1.5, signal.SIGTERM, False),  # the user's function
    ],
)
def test_signal_in_the_first_seconds(tmp_path, run, seconds, signum, cold):
    _check(_interrupt(tmp_path, run, seconds, signum, cold=cold), signum)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("cold", [False, True])
@pytest.mark.parametrize("run", list(RUNS))
def test_signal_at_times_spread_over_the_first_seconds(tmp_path, run, cold, signum):
    # from 0.2 s: before the interpreter has imported the command's first module (30 ms on an
    # idle machine, beyond 100 ms on a loaded one) a signal gets Python's default handling,
    # which no program can change
    for seconds in (0.2, 0.3, 0.45, 0.6, 0.8, 1.0, 1.3, 1.7, 2.2, 2.8, 3.4, 4.0):
        where = tmp_path / f"{seconds}"
        where.mkdir()
        _check(_interrupt(where, run, seconds, signum, cold=cold), signum, f"at {seconds} s")


def test_the_handler_never_raises_where_the_signal_lands():
    """The class behind the crashes: an exception raised by the handler wherever the main
    thread is (numba's dispatcher, compiler, cache loader) breaks it. The signal is only
    recorded, and raised once, at a safe point (``checkpoint``, each ``Progress`` step)."""
    from queue_routing.progress import Progress
    from queue_routing.signals import Interrupted, SignalExit, checkpoint

    forced = []
    with SignalExit(forced.append, grace=60.0) as guard:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(200):  # bytecodes and sleeps: where a raising handler would raise
            time.sleep(0.001)
        assert guard.signum == signal.SIGTERM
        with pytest.raises(Interrupted) as info:
            checkpoint()
        assert info.value.signum == signal.SIGTERM
        checkpoint()  # raised once: the unwinding is not interrupted again
        assert guard.claim() and not guard.claim()
        guard.done.set()
    with SignalExit(forced.append, grace=60.0) as guard:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        with pytest.raises(Interrupted):
            Progress(3, "demo")()
        guard.done.set()
    checkpoint()  # outside a SignalExit: nothing
    assert forced == []
