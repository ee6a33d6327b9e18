"""`queue-routing multiskill simulate|compare-policies --job-sizes`: JSON contract and errors."""

import json

import pytest

from queue_routing.cli import main
from queue_routing.multiskill import Instance, solve_exact

INSTANCE = {"mu": [2.0, 1.5], "cost": [1.0, 3.0], "eta": [1.6]}


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors (exit 2)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def inst_file(tmp_path):
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(INSTANCE))
    return str(path)


def test_default_is_the_uniformised_simulator(capsys, inst_file):
    """No --job-sizes and --job-sizes exponential print the same bytes (today's output)."""
    argv = ["multiskill", "simulate", inst_file, "--policy", "pi", "--horizon", "100"]
    a = run(capsys, *argv)
    b = run(capsys, *argv, "--job-sizes", "exponential")
    assert a == b and a[0] == 0
    assert set(json.loads(a[1])) == {"cost", "ci95", "per_server_mean_jobs"}


@pytest.mark.parametrize(
    "spec", ["deterministic", "erlang:3", "hyperexponential:16", "lognormal:4"]
)
def test_simulate_general_sizes(capsys, inst_file, spec):
    """Bernoulli routing with any law: the product-form cost within a generous 5 CIs."""
    code, out, err = run(
        capsys, "multiskill", "simulate", inst_file, "--policy", "bernoulli",
        "--horizon", "3000", "--job-sizes", spec,
    )  # fmt: skip
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert obj["job_sizes"] == spec and len(obj["per_server_mean_jobs"]) == 2
    exact = solve_exact(Instance(**INSTANCE)).cost
    assert abs(obj["cost"] - exact) < 5 * obj["ci95"]


def test_compare_policies_general_sizes(capsys, inst_file):
    code, out, err = run(
        capsys, "multiskill", "compare-policies", inst_file, "--policies", "bernoulli,pi",
        "--horizon", "500", "--replications", "5", "--job-sizes", "lognormal:16",
    )  # fmt: skip
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert obj["policies"]["bernoulli"]["ratio"] == 1.0
    assert set(obj["policies"]) == {"bernoulli", "pi"}


@pytest.mark.parametrize("command", ["simulate", "compare-policies"])
@pytest.mark.parametrize(
    "spec, needle",
    [
        ("pareto:2", "unknown law 'pareto:2'"),
        ("erlang:x", "integer order"),
        ("hyperexponential:0.3", "SCV >= 1"),
        ("lognormal", "needs an SCV"),
    ],
)
def test_bad_job_sizes_one_line_exit_2(capsys, inst_file, command, spec, needle):
    extra = ["--policy", "pi"] if command == "simulate" else []
    code, out, err = run(capsys, "multiskill", command, inst_file, *extra, "--job-sizes", spec)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--job-sizes" in err and needle in err
