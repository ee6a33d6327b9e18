"""Small edges of the command: a pipe closed mid-output (buffered or not), a zero deficit
printed as "-0", and advice on the scale r that fails the same way.

References: what the reader of the pipe received against the output's length; IEEE zero
(``-0.0 == 0`` but prints "-0"); ``numpy.rint`` (a half rounds to the even 0), which decides
the pools' server counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import numpy as np
import pytest
from _cli_inputs import CLUSTERS, COMMAND
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_routing.errors import ArgumentError
from queue_routing.serverpools import ServerPoolSystem, solve_spp, time_average
from queue_routing.serverpools.instances import EXAMPLES


@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize("read", [0, 100, 70_000])
def test_a_pipe_closed_before_the_end_is_one_line(tmp_path, unbuffered, read):
    """The index of 20001 values is 380 kB, more than a pipe holds: the reader takes
    ``read`` bytes and goes; the command must say so, buffered or not."""
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(CLUSTERS))
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    argv = ["deadlines", "index", str(path), "--policy", "pi", "--cluster", "1", "--upto", "20000"]
    proc = subprocess.Popen(
        [*COMMAND, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    got = proc.stdout.read(read) if read else b""
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert len(got) == read
    assert proc.returncode == 1, err
    assert err == "queue-routing: error: standard output was closed before the result was written\n"


def test_a_slow_reader_gets_every_byte_unbuffered(tmp_path):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(CLUSTERS))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    argv = ["deadlines", "index", str(path), "--policy", "pi", "--cluster", "1", "--upto", "20000"]
    proc = subprocess.run([*COMMAND, *argv], capture_output=True, env=env, check=False)
    assert proc.returncode == 0
    assert len(json.loads(proc.stdout)["index"]) == 20001


@settings(max_examples=40, deadline=None)
@given(
    mu0=st.integers(1, 50),
    parts=st.lists(st.integers(0, 50), min_size=1, max_size=4),
    mus=st.lists(st.integers(1, 50), min_size=4, max_size=4),
)
def test_a_zero_deficit_is_printed_0(mu0, parts, mus):
    """Part A on the stability boundary: ``sum_A (eta_i - mu_i) = mu_0`` exactly (integers),
    so the deficit is 0; the message shows 0, not -0 (Part B's likewise)."""
    from queue_routing.deadlines import Instance as BInstance
    from queue_routing.multiskill import Instance

    excess = np.array(parts, dtype=float)
    if excess.sum() == 0:
        excess[0] = 1.0
    excess = excess / excess.sum() * mu0  # sums to mu0 up to rounding: use exact integers
    k = len(parts)
    ints = [int(v) for v in np.floor(excess)]
    ints[0] += mu0 - sum(ints)
    mu = [float(mu0), *map(float, mus[:k])]
    eta = [m + d for m, d in zip(mu[1:], ints, strict=True)]
    with pytest.raises(ValueError) as info:
        Instance(mu=mu, cost=[1.0] * (k + 1), eta=eta)
    message = str(info.value)
    assert "deficit -" not in message
    assert re.search(r"deficit 0\b", message), message
    servers = mus[:2]
    capacity = float(sum(servers))  # service rates 1: capacity is an integer
    with pytest.raises(ValueError) as info:
        BInstance.from_dict(
            {**CLUSTERS, "arrival_rate": capacity, "servers": servers, "rejection_cost": None}
            | {"service_rates": [1.0, 1.0]}
        )
    assert "the deficit is 0 jobs" in str(info.value)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(EXAMPLES)), fraction=st.floats(0.01, 0.99))
def test_the_advised_scale_gives_every_pool_a_server(name, fraction):
    """Below the scale that gives every pool a server the run is refused with advice; the
    advised r works (numpy's rint gives every pool a server) and is not far above the bound
    r > 1 / (2 min beta)."""
    system = ServerPoolSystem.from_dict(EXAMPLES[name])
    bound = 0.5 / float(np.min(system.pool_sizes))
    solution = solve_spp(system)
    with pytest.raises(ArgumentError) as info:
        time_average(solution, fraction * bound, horizon=1e-3, warmup=0.0, replications=2)
    advised = float(re.search(r"use r >= (\S+)$", str(info.value)).group(1))
    assert np.all(np.rint(advised * system.pool_sizes) >= 1)
    assert bound < advised <= bound * 1.01
    res = time_average(solution, advised, horizon=1e-3, warmup=0.0, replications=2)
    assert res.replications == 2


@pytest.mark.parametrize("beta", [0.02, 0.016, 0.0625, 0.5])
def test_advice_at_a_bound_that_is_a_round_number(beta):
    """r = 1 / (2 min beta) is a round number here (25, 31.25, 8, 1): r beta = 1/2 rounds to
    0, so the advice must be above it. (The unstable example, with every arrival rate and
    pool size scaled by one factor, so that its smallest pool is ``beta``.)"""
    example = EXAMPLES["unstable"]
    factor = beta / min(example["pool_sizes"])
    system = ServerPoolSystem.from_dict(
        {
            **example,
            "arrival_rates": [factor * v for v in example["arrival_rates"]],
            "pool_sizes": [factor * v for v in example["pool_sizes"]],
        }
    )
    bound = 0.5 / float(np.min(system.pool_sizes))
    assert bound == pytest.approx(0.5 / beta, rel=1e-12)
    r = 0.5 / beta
    with pytest.raises(ArgumentError) as info:
        time_average(solve_spp(system), r, horizon=1e-3, warmup=1.0, replications=2)
    advised = float(re.search(r"use r >= (\S+)$", str(info.value)).group(1))
    assert np.all(np.rint(advised * system.pool_sizes) >= 1) and advised > bound
