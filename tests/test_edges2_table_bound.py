"""Part A's ``simulate`` refuses a user policy whose index table was overrun, as
``compare-policies`` does: one line naming the policy and ``table_size``, no JSON.

Reference: on Table 1 (loads 0.5-0.9) a queue of 1 to 3 jobs is reached within the first time
units, so a table that small is always overrun, for any index and job-size law; a queue of
400 jobs is out of reach (the stationary probability of even 100 jobs at a load of 0.9 is
below 1e-4 per server, and the run is short), so the default table is never overrun.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.cli import main
from queue_routing.errors import AccuracyError
from queue_routing.multiskill import Instance, simulate

TABLE1 = {
    "mu": [25, 34, 38, 39, 13, 27],
    "cost": [5, 10, 11, 6, 86, 14],
    "eta": [28, 33, 20, 12, 24],
}
POLICIES = """
def jsq(server, jobs, instance):
    return jobs + 1.0

def weighted(server, jobs, instance):
    return instance.cost[server] / instance.mu[server] * (jobs + 1)

def flat(server, jobs, instance):
    return 1.0
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "t1.json").write_text(json.dumps(TABLE1))
    (tmp_path / "mine.py").write_text(POLICIES)
    return tmp_path


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["jsq", "weighted", "flat"]),
    size=st.integers(1, 3),
    sizes=st.sampled_from(["exponential", "deterministic", "erlang:2"]),
)
def test_simulate_refuses_an_overrun_table(capsys, files, name, size, sizes):
    policy = f"{files / 'mine.py'}:{name}"
    argv = ["multiskill", "simulate", str(files / "t1.json"), "--policy", policy]
    argv += ["--table-size", str(size), "--job-sizes", sizes, "--horizon", "20"]
    code = main([*argv, "--replications", "2"])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith("queue-routing: error: table_size: ")
    assert f"under {policy} found a server beyond the index table (x > {size})" in err
    assert err.endswith("; raise table_size\n")


def test_simulate_keeps_a_table_that_is_not_overrun(capsys, files):
    policy = f"{files / 'mine.py'}:jsq"
    argv = ["multiskill", "simulate", str(files / "t1.json"), "--policy", policy]
    code = main([*argv, "--horizon", "20", "--replications", "2"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert json.loads(out)["cost"] > 0


def test_the_library_refuses_when_asked_and_reports_by_default(files):
    inst = Instance.from_dict(TABLE1)
    policy = f"{files / 'mine.py'}:jsq"
    run = {"horizon": 20.0, "replications": 2, "table_size": 1}
    with pytest.raises(AccuracyError, match=r"^table_size: \d+ measured arrivals under "):
        simulate(inst, policy, on_table_bound="raise", **run)
    with pytest.warns(UserWarning, match="raise table_size"):
        res = simulate(inst, policy, **run)
    assert res.table_bound > 0
