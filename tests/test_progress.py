"""Progress reports: log lines in the pipeline's logs, a status line only on a terminal."""

import io
import json
import logging
import re
import sys

import pytest

from queue_routing.cli import main
from queue_routing.multiskill import Instance, simulate
from queue_routing.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_status_line_on_a_terminal_and_cleared_at_the_end():
    stream = _Terminal()
    p = Progress(4, "demo", stream=stream, draw_every=0.0)
    for _ in range(4):
        p.advance()
    text = stream.getvalue()
    assert "demo: replication 1 of 4" in text and "replication 4 of 4" in text
    assert "[" + "#" * 24 + "]" in text  # the full bar at the end
    assert text.endswith("\r\033[K")  # the line is cleared, the JSON output follows cleanly


def test_silent_when_not_a_terminal():
    stream = io.StringIO()
    p = Progress(3, "demo", stream=stream)
    for _ in range(3):
        p.advance()
    assert stream.getvalue() == ""


def test_log_lines_count_elapsed_and_estimate(caplog):
    log = logging.getLogger("test.progress")
    with caplog.at_level(logging.INFO, logger="test.progress"):
        p = Progress(3, "work", logger=log)
        for _ in range(3):
            p.advance()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert re.fullmatch(
        r"work: replication 1 of 3, elapsed \d+\.\d s, about \d+\.\d s left", lines[0]
    )
    assert re.fullmatch(r"work: replication 3 of 3, elapsed \d+\.\d s", lines[2])


def test_simulator_calls_progress_once_per_replication():
    calls = []
    inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    simulate(inst, "jsq", horizon=50.0, replications=4, seed=0, progress=lambda: calls.append(1))
    assert len(calls) == 4


def test_cli_prints_nothing_on_stderr_when_not_a_terminal(capsys, tmp_path):
    path = tmp_path / "inst.json"
    path.write_text(json.dumps({"mu": [2.0, 1.5], "cost": [1.0, 3.0], "eta": [1.6]}))
    assert not sys.stderr.isatty()
    code = main(["multiskill", "simulate", str(path), "--policy", "pi", "--horizon", "50"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and json.loads(out)["ci95"] > 0


@pytest.mark.parametrize(
    ("log", "needle"),
    [
        (
            "logs/multiskill/multiskill_simulate/C10/i0-1_r0-2.log",
            "random instances: replication 1 of",
        ),
        ("logs/deadlines/deadlines_large/n4/r0-2.log", "n=4 clusters: replication 1 of"),
        ("logs/deadlines/deadlines_two_cluster/arrival_rate.log", "arrival_rate sweep: point 1 of"),
        (
            "logs/serverpools/serverpools_stochastic/stable_r100/r0-1.log",
            "stable r=100: replication 1 of",
        ),
    ],
)
def test_long_rules_log_their_progress(smoke_run, log, needle):
    text = (smoke_run / log).read_text()
    assert needle in text and "elapsed" in text and "s left" in text
