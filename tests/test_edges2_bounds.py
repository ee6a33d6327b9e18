"""Runs that cannot end, or cannot fit in memory, are refused up front with one line naming
the option (status 2), in every part; what is refused is decided by arithmetic the test
redoes: Part A's uniformisation rate ``sum(eta) + sum(mu)`` times ``warmup + horizon`` against
``MAX_EVENTS_PER_REPLICATION`` (Part B's bound on arrivals per replication), and the
replications times ``REPLICATION_BYTES`` against half the memory ``os.sysconf`` reports.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from _cli_inputs import CLUSTERS, COMMAND, TABLE1
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_routing.checks import MAX_EVENTS_PER_REPLICATION, REPLICATION_BYTES
from queue_routing.errors import ArgumentError
from queue_routing.multiskill import Instance, compare_policies, simulate
from queue_routing.serverpools.instances import LARGE_CYCLE

MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@settings(max_examples=60, deadline=None)
@given(
    mu=st.lists(st.floats(0.5, 1e4), min_size=2, max_size=5),
    load=st.floats(0.1, 0.9),
    horizon=st.floats(1.0, 1e15),
    warmup=st.one_of(st.none(), st.floats(0.0, 1e15)),
    general=st.booleans(),
    compare=st.booleans(),
)
def test_part_a_refuses_a_replication_longer_than_the_bound(
    mu, load, horizon, warmup, general, compare
):
    eta = [load * m for m in mu[1:]]
    inst = Instance(mu=mu, cost=[1.0] * len(mu), eta=eta)
    w = 0.1 * horizon if warmup is None else warmup
    steps = (sum(eta) + sum(mu)) * (w + horizon)
    run = {"horizon": horizon, "warmup": warmup, "replications": 3}
    if general:
        run["job_sizes"] = "deterministic"
    if steps > MAX_EVENTS_PER_REPLICATION:
        with pytest.raises(ArgumentError) as info:
            if compare:
                compare_policies(inst, ["jsq"], **run)
            else:
                simulate(inst, "jsq", **run)
        name = "warmup" if w > horizon else "horizon"
        assert info.value.argument == name
        assert str(info.value).startswith(f"{name}: ") and "per replication exceeds 1e+10" in (
            str(info.value)
        )
    elif steps < 2e4:  # cheap enough to run: accepted
        res = simulate(inst, "jsq", **run)
        assert res.replications == 3


COMMANDS = [
    (["multiskill", "simulate", "--policy", "pi"], TABLE1),
    (["multiskill", "compare-policies"], TABLE1),
    (["multiskill", "simulate", "--policy", "pi", "--job-sizes", "erlang:2"], TABLE1),
    (["deadlines", "evaluate", "--policy", "pi", "--method", "simulation"], CLUSTERS),
    (["deadlines", "compare-policies"], CLUSTERS),
    (["serverpools", "simulate", "--scale", "30", "--horizon", "1e-6"], LARGE_CYCLE),
]


@pytest.mark.parametrize(("argv", "instance"), COMMANDS)
@pytest.mark.parametrize("factor", [1.01, 1e4])
def test_replications_beyond_memory_are_one_line(tmp_path, argv, instance, factor):
    """A count whose results need more than half the machine's memory: refused at once, in
    a real process (the old behaviour was a MemoryError, or a run that never ended)."""
    replications = int(factor * MEMORY / 2 / REPLICATION_BYTES) + 1
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(instance))
    proc = subprocess.run(
        [*COMMAND, *argv[:2], str(path), *argv[2:], "--replications", str(replications)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith(f"queue-routing: error: --replications = {replications} need ")
    assert proc.stderr.count("\n") == 1 and "of memory" in proc.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("--horizon", "1e13"), ("--warmup", "1e15")],
)
def test_part_a_command_refuses_an_endless_run(tmp_path, capsys, option, value):
    from queue_routing.cli import main

    path = tmp_path / "t1.json"
    path.write_text(json.dumps(TABLE1))
    code = main(["multiskill", "compare-policies", str(path), option, value])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"queue-routing: error: {option}: ") and err.count("\n") == 1


def test_a_memory_error_is_one_line_not_an_internal_error(tmp_path, capsys, monkeypatch):
    """Whatever the up-front estimate misses: a MemoryError is the machine's limit, status 1."""
    from queue_routing import multiskill
    from queue_routing.cli import main

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(multiskill, "compare", no_memory)
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(TABLE1))
    code = main(["multiskill", "compare", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err == "queue-routing: error: not enough memory for this run: ask for a smaller one\n"
