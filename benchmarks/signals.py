"""How fast the command ends when interrupted inside a compiled kernel.

Usage::

    python benchmarks/signals.py

The command's contract (docs/limits.md) is that SIGINT and SIGTERM end a
run with one line and exit status 130 / 143 within a second, whatever the moment: also while
the main thread is inside a compiled simulation kernel, or still loading or compiling it.
``tests/test_cli_signals.py`` and ``tests/test_edges2_signals.py`` check the status and the
line; this script measures the latency, for each long run of the former 4 s into the run and
for runs of the latter at moments of their first seconds, each signal, against that
one-second bound. The last line reads ``signals: worst latency <s> s against the 1 s bound:
ratio <r>``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_cli_signals import COMMAND, LONG_RUNS
from test_edges2_signals import RUNS

#: Runs of ``tests/test_edges2_signals.py`` and the moments of their first seconds measured.
EARLY = ("multiskill-compare", "deadlines-compare", "serverpools-simulate")
EARLY_SECONDS = (0.3, 1.5, 3.0)

BOUND_SECONDS = 1.0


def latency(argv, instance, signum, workdir: Path, seconds: float = 4.0) -> float:
    """Seconds from the signal to the end of a run started ``seconds`` before it (4 s: past
    imports and compilation, cached, inside the first replication)."""
    path = workdir / "instance.json"
    path.write_text(json.dumps(instance))
    if "{A}" in argv:
        argv = [str(path) if a == "{A}" else a for a in argv]
    else:
        argv = [*argv[:2], str(path), *argv[2:]]
    proc = subprocess.Popen(
        [*COMMAND, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(seconds)
    if proc.poll() is not None:
        raise RuntimeError(f"{argv} ended before the signal: {proc.communicate()}")
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    return time.monotonic() - sent


def main() -> None:
    for line in _common.machine():
        print(line)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for argv, instance in LONG_RUNS:
            for signum in (signal.SIGINT, signal.SIGTERM):
                seconds = latency(argv, instance, signum, Path(tmp))
                worst = max(worst, seconds)
                print(f"{' '.join(argv[:2])} {signal.Signals(signum).name}: {seconds:.3f} s")
        for name in EARLY:
            argv, instance = RUNS[name]
            for at in EARLY_SECONDS:
                for signum in (signal.SIGINT, signal.SIGTERM):
                    seconds = latency(argv, instance, signum, Path(tmp), at)
                    worst = max(worst, seconds)
                    print(
                        f"{' '.join(argv[:2])} {signal.Signals(signum).name} at {at:g} s: "
                        f"{seconds:.3f} s"
                    )
    print(
        f"signals: worst latency {worst:.3f} s against the {BOUND_SECONDS:g} s bound: "
        f"ratio {worst / BOUND_SECONDS:.2f}"
    )


if __name__ == "__main__":
    main()
