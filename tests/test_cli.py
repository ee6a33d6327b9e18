"""The `queue-routing` command: its JSON contract and its one-line error paths."""

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from queue_routing.cli import main
from queue_routing.multiskill.instances import TABLE1


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table1_file(tmp_path):
    path = tmp_path / "table1.json"
    path.write_text(json.dumps(TABLE1))
    return path


def _check_solution(obj, inst):
    mu, eta = np.array(inst["mu"]), np.array(inst["eta"])
    loads = np.array(obj["loads"])
    assert set(obj) == {"loads", "probabilities", "partition", "cost", "iterations", "converged"}
    assert len(loads) == len(mu) and np.all((loads >= 0) & (loads < 1))
    # flow conservation (7) and the probabilities' definition (1), independent of the solver
    assert mu @ loads == pytest.approx(eta.sum(), rel=1e-12)
    np.testing.assert_allclose(obj["probabilities"], mu[1:] * loads[1:] / eta, atol=1e-12)
    sets = obj["partition"]
    assert sorted(sets["dedicated"] + sets["both"] + sets["shared"]) == list(range(1, len(eta) + 1))
    cost = np.array(inst["cost"])
    assert obj["cost"] == pytest.approx(float(np.sum(cost * loads / (1 - loads))), rel=1e-12)


@pytest.mark.parametrize("method", ["exact", "fixed-point", "generic"])
def test_solve_contract(capsys, table1_file, method):
    argv = ["multiskill", "solve", str(table1_file), "--method", method]
    if method == "fixed-point":
        argv += ["--update", "single", "--init", "random", "--seed", "3"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    obj = json.loads(out)
    _check_solution(obj, TABLE1)
    assert obj["converged"] is True
    if method == "exact":
        assert obj["iterations"] is None
    else:
        assert isinstance(obj["iterations"], int)


def test_solve_reads_stdin(capsys, monkeypatch):
    code, out, _ = run(
        capsys, "multiskill", "solve", "-", stdin=json.dumps(TABLE1), monkeypatch=monkeypatch
    )
    assert code == 0
    _check_solution(json.loads(out), TABLE1)


def test_non_converged_fixed_point_is_reported(capsys, tmp_path):
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps({"mu": [1, 2], "cost": [1, 10], "eta": [1.5]}))
    code, out, _ = run(capsys, "multiskill", "solve", str(path), "--method", "fixed-point")
    assert code == 0
    assert json.loads(out)["converged"] is False


def test_compare_contract(capsys, table1_file):
    code, out, _ = run(capsys, "multiskill", "compare", str(table1_file))
    assert code == 0
    obj = json.loads(out)
    assert set(obj) == {"multiskilled", "no_sharing", "all_sharing", "all_sharing_same_costs"}
    # eta_1 = 28 < mu_1 = 34, ..., eta_5 = 24 < mu_5 = 27: no sharing is stable here
    assert obj["no_sharing"] >= obj["multiskilled"] >= obj["all_sharing_same_costs"]


def test_compare_reports_null_for_unstable_no_sharing(capsys, tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps({"mu": [10, 2, 2], "cost": [1, 1, 1], "eta": [3, 1]}))
    code, out, _ = run(capsys, "multiskill", "compare", str(path))
    assert code == 0 and json.loads(out)["no_sharing"] is None


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ('{"mu": [1, 2], "cost": [1, 1], "eta": [5]}', "class set A = {1}"),
        ('{"mu": [1, 2', "not valid JSON"),
        ('{"mu": [1, 2], "cost": [1, 1]}', "missing key(s): eta"),
        ('{"mu": [1, 2], "cost": [1, 1], "eta": [1], "x": 1}', "unknown key(s): x"),
        ('{"mu": [1, 2, 3], "cost": [1, 1], "eta": [1]}', "mu must have length 2"),
        ('{"mu": [1, NaN], "cost": [1, 1], "eta": [1]}', "mu_1 is not a finite number"),
        ('{"mu": [1, 2], "cost": [1, -1], "eta": [1]}', "cost_1 = -1 must be > 0"),
        ('{"mu": [1, 2], "cost": [1, 1], "eta": ["a"]}', "eta_1 must be a number, got 'a'"),
        ("[1, 2, 3]", "must be a JSON object"),
    ],
)
def test_bad_instances_give_one_line(capsys, monkeypatch, payload, needle):
    code, out, err = run(capsys, "multiskill", "solve", "-", stdin=payload, monkeypatch=monkeypatch)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("queue-routing: error: ")
    assert needle in err


def test_missing_file(capsys):
    code, out, err = run(capsys, "multiskill", "solve", "/nonexistent/instance.json")
    assert code == 1 and out == "" and "instance file not found" in err


def test_usage_errors_exit_2(capsys, table1_file):
    with pytest.raises(SystemExit) as info:
        main(["multiskill", "solve", str(table1_file), "--method", "magic"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice" in err
    with pytest.raises(SystemExit):
        main(["multiskill", "solve", str(table1_file), "--seed", "-1"])


def test_console_script_end_to_end(table1_file):
    proc = subprocess.run(
        [sys.executable, "-m", "queue_routing.cli", "multiskill", "solve", str(table1_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _check_solution(json.loads(proc.stdout), TABLE1)


def test_simulate_contract_and_reproducibility(capsys, table1_file):
    argv = [
        "multiskill",
        "simulate",
        str(table1_file),
        "--policy",
        "pi",
        "--horizon",
        "50",
        "--seed",
        "4",
    ]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    obj = json.loads(out)
    assert set(obj) == {"cost", "ci95", "per_server_mean_jobs"}
    assert len(obj["per_server_mean_jobs"]) == 6 and obj["ci95"] > 0
    # the cost is the holding-cost-weighted sum of the per-server means (definition)
    cost = np.array(TABLE1["cost"])
    assert obj["cost"] == pytest.approx(float(cost @ obj["per_server_mean_jobs"]), rel=1e-9)
    assert json.loads(run(capsys, *argv)[1]) == obj  # same seed, same numbers


def test_compare_policies_contract(capsys, tmp_path):
    path = tmp_path / "c1.json"
    path.write_text(json.dumps({"mu": [2.0, 1.5], "cost": [1.0, 3.0], "eta": [1.6]}))
    argv = ["multiskill", "compare-policies", str(path), "--horizon", "300", "--seed", "3"]
    code, out, err = run(capsys, *argv, "--policies", "pi,jsq,bernoulli")
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert set(obj) == {"exact_bernoulli_cost", "policies", "ranking", "best", "controls"}
    assert obj["controls"] == ["martingale"]
    assert list(obj["policies"]) == ["pi", "jsq", "bernoulli"]
    for v in obj["policies"].values():
        assert set(v) == {"cost", "ci95", "ratio", "ratio_ci95"} and v["ci95"] > 0
    # The baseline is the optimal Bernoulli cost of `multiskill solve` (another command).
    code_s, out_s, _ = run(capsys, "multiskill", "solve", str(path))
    assert code_s == 0
    assert obj["exact_bernoulli_cost"] == pytest.approx(json.loads(out_s)["cost"], rel=1e-12)
    assert obj["policies"]["bernoulli"]["ratio"] == 1.0  # its own control
    ranking = obj["ranking"]
    assert sorted(ranking) == ["bernoulli", "jsq", "pi"]
    assert [obj["policies"][p]["ratio"] for p in ranking] == sorted(
        obj["policies"][p]["ratio"] for p in ranking
    )
    assert obj["best"] in (None, ranking[0])
    assert json.loads(run(capsys, *argv, "--policies", "pi,jsq,bernoulli")[1]) == obj
    # Default policies: all five, in the library's order.
    code, out, _ = run(capsys, *argv, "--replications", "3", "--warmup", "0")
    assert code == 0 and list(json.loads(out)["policies"]) == [
        "bernoulli",
        "jsq",
        "led",
        "io",
        "pi",
    ]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--policies", "pi,power-of-two"], "argument --policies: unknown policy 'power-of-two'"),
        (["--policies", "pi,pi"], "argument --policies: a policy is repeated"),
        (["--policies", ","], "argument --policies: must name at least one policy"),
        (["--replications", "2"], "argument --replications: must be >= 3"),
        (["--horizon", "-1"], "argument --horizon: must be finite and > 0"),
        (["--warmup", "inf"], "argument --warmup: must be finite and >= 0"),
        (["--seed", "-1"], "argument --seed: must be >= 0"),
    ],
)
def test_compare_policies_bad_arguments(capsys, table1_file, extra, needle):
    with pytest.raises(SystemExit) as info:
        main(["multiskill", "compare-policies", str(table1_file), *extra])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_compare_policies_refuses_an_unstable_instance(capsys, tmp_path):
    path = tmp_path / "unstable.json"
    path.write_text(json.dumps({"mu": [1.0, 1.0], "cost": [1.0, 1.0], "eta": [5.0]}))
    code, out, err = run(capsys, "multiskill", "compare-policies", str(path))
    assert code == 1 and out == "" and err.count("\n") == 1 and "unstable" in err


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--policy", "random"], 2, "invalid choice"),
        (["--policy", "jsq", "--horizon", "0"], 2, "argument --horizon: must be finite and > 0"),
        (["--policy", "jsq", "--horizon", "nan"], 2, "argument --horizon: must be finite"),
        (["--policy", "jsq", "--replications", "1"], 2, "argument --replications: must be >= 2"),
        (["--policy", "jsq", "--seed", "-3"], 2, "argument --seed: must be >= 0"),
    ],
)
def test_simulate_bad_arguments(capsys, table1_file, extra, code, needle):
    argv = ["multiskill", "simulate", str(table1_file), *extra]
    if code == 2:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
    else:
        got, out, err = run(capsys, *argv)
        assert got == 1 and out == ""
    assert err.count("\n") == 1 and needle in err


def test_serverpools_analyze_contract(capsys, tmp_path):
    # The contract, on a one-class instance (always stable; LP solvable by hand).
    path = tmp_path / "pools.json"
    path.write_text(
        json.dumps(
            {
                "arrival_rates": [2.0],
                "pool_sizes": [1.0, 3.0],
                "activities": [
                    {"class": 1, "pool": 1, "rate": 1.0},
                    {"class": 1, "pool": 2, "rate": 2.0},
                ],
            }
        )
    )
    code, out, err = run(capsys, "serverpools", "analyze", str(path))
    assert code == 0, err
    obj = json.loads(out)
    assert set(obj) == {
        "rho",
        "flows",
        "eigenvalues_underloaded",
        "eigenvalues_critical",
        "stable_underloaded",
    }
    # one class, two pools: rho = 2 / (1 * 1 + 3 * 2) = 2/7 (total service capacity 7)
    assert obj["rho"] == pytest.approx(2.0 / 7.0, rel=1e-9)
    assert sum(f["rate"] for f in obj["flows"]) == pytest.approx(2.0, rel=1e-9)
    assert obj["stable_underloaded"] is True


def test_serverpools_analyze_rejects_bad_input(capsys, monkeypatch):
    bad = '{"arrival_rates": [1.0], "pool_sizes": [1.0], "activities": []}'
    code, out, err = run(capsys, "serverpools", "analyze", "-", stdin=bad, monkeypatch=monkeypatch)
    assert code == 1 and out == "" and err.count("\n") == 1 and "activities" in err


MM_N = {  # one class, one pool: an M/M/600 queue at r = 200 with r psi* = 300 busy servers
    "arrival_rates": [1.2],
    "pool_sizes": [3.0],
    "activities": [{"class": 1, "pool": 1, "rate": 0.8}],
}


def test_serverpools_simulate_contract(capsys, monkeypatch):
    argv = ["serverpools", "simulate", "-", "--scale", "200", "--horizon", "80"]
    code, out, err = run(
        capsys, *argv, "--seed", "3", stdin=json.dumps(MM_N), monkeypatch=monkeypatch
    )
    assert code == 0, err
    obj = json.loads(out)
    assert set(obj) == {
        "diffusion_deviation",
        "ci95",
        "fluid_deviation",
        "stationary",
        "warmup",
        "events",
    }
    assert isinstance(obj["stationary"], bool) and isinstance(obj["events"], int)
    assert obj["fluid_deviation"] == pytest.approx(obj["diffusion_deviation"] / np.sqrt(200))
    # derived warm-up: gamma = -mu = -0.8 (A_u of one class and one pool), ln(1000) / (2 mu)
    assert obj["warmup"] == pytest.approx(np.log(1000.0) / (2 * 0.8), rel=1e-12)
    # stationary law ~ Poisson(r psi*) with psi* = 1.5: |Y| ~ |N(0, 1.5)|, E|Y| = sqrt(3/pi)
    expected = np.sqrt(2 * 1.5 / np.pi)
    assert abs(obj["diffusion_deviation"] - expected) < obj["ci95"] + 0.03 * expected
    assert obj["stationary"] is True
    # about 2 r lambda events per time unit, 5 replications of warm-up + horizon
    assert obj["events"] == pytest.approx(5 * 2 * 200 * 1.2 * (80 + obj["warmup"]), rel=0.02)
    code, out, err = run(
        capsys, *argv, "--warmup", "7.5", "--replications", "2", stdin=json.dumps(MM_N),
        monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 0 and json.loads(out)["warmup"] == 7.5


@pytest.mark.parametrize(
    ("instance", "options", "status", "needle"),
    [
        (MM_N, ["--scale", "0"], 2, "--scale"),
        (MM_N, ["--scale", "100", "--replications", "1"], 2, "--replications"),
        (MM_N, ["--scale", "100", "--warmup", "-1"], 2, "--warmup"),
        (MM_N, ["--scale", "0.1"], 2, "--scale r = 0.1 gives pool 1 no server"),
        (MM_N, ["--scale", "1e9", "--horizon", "1e4"], 2, "--scale, horizon and replications"),
        ({**MM_N, "arrival_rates": [3.0]}, ["--scale", "100"], 1, "not underloaded"),
        ({**MM_N, "activities": []}, ["--scale", "100"], 1, "activities"),
        (MM_N, ["--scale", "100", "--burn-in", "5"], 2, "--burn-in was renamed: use --warmup"),
    ],
    ids=["scale", "replications", "warmup", "no-server", "too-long", "rho", "bad-json", "renamed"],
)
def test_serverpools_simulate_rejects_bad_input(
    capsys, monkeypatch, instance, options, status, needle
):
    argv = ["serverpools", "simulate", "-", *options]
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(json.dumps(instance)))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: a bad option value
        code = exc.code
    out, err = capsys.readouterr()
    assert code == status and out == "" and err.count("\n") == 1 and needle in err
    assert "Traceback" not in err


DEADLINES = {
    "arrival_rate": 3.0,
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "rejection_cost": 2.0,
    "deadline": {"kind": "constant", "t": 1.5},
}


@pytest.fixture
def deadlines_file(tmp_path):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(DEADLINES))
    return path


def test_deadlines_evaluate_contract_and_optimality(capsys, deadlines_file):
    costs = {}
    for policy in ("bs", "io", "pi", "rb", "optimal"):
        code, out, err = run(
            capsys, "deadlines", "evaluate", str(deadlines_file), "--policy", policy
        )
        assert code == 0, err
        obj = json.loads(out)
        assert set(obj) == {
            "cost", "rejection_rate", "miss_rate", "ci95",
            # the truncation's diagnostics (certified by the automatic level)
            "truncation", "truncation_error", "certified", "cost_floor", "below_floor",
        }  # fmt: skip
        assert obj["certified"] is True
        # cost = R * rejection rate + miss rate (definition of the objective)
        assert obj["cost"] == pytest.approx(
            2.0 * obj["rejection_rate"] + obj["miss_rate"], rel=1e-9
        )
        costs[policy] = obj["cost"]
    # relative value iteration (its own method) is never beaten by a heuristic's evaluation
    assert all(costs["optimal"] <= c * (1 + 1e-6) for c in costs.values())


def test_deadlines_simulation_agrees_with_exact(capsys, deadlines_file):
    exact = json.loads(
        run(capsys, "deadlines", "evaluate", str(deadlines_file), "--policy", "pi")[1]
    )
    sim = json.loads(
        run(
            capsys,
            "deadlines",
            "evaluate",
            str(deadlines_file),
            "--policy",
            "pi",
            "--method",
            "simulation",
            "--horizon",
            "4000",
        )[1]
    )
    assert abs(sim["cost"] - exact["cost"]) < 1.7 * sim["ci95"]  # 99.9%


def test_deadlines_io_index_is_the_miss_probability(capsys, deadlines_file):
    code, out, _ = run(
        capsys,
        "deadlines",
        "index",
        str(deadlines_file),
        "--policy",
        "io",
        "--cluster",
        "1",
        "--upto",
        "4",
    )
    assert code == 0
    nu = json.loads(out)["index"]
    assert len(nu) == 5
    # a job finding x < m = 3 jobs starts at once: P(S > t) = exp(-mu t)
    np.testing.assert_allclose(nu[:3], np.exp(-1.0 * 1.5), rtol=1e-12)
    assert nu[3] > nu[2] and nu[4] > nu[3]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["index", "--policy", "pi", "--cluster", "3", "--upto", "4"], "--cluster must be"),
        (["evaluate", "--policy", "optimal", "--method", "simulation"], "evaluated exactly"),
    ],
)
def test_deadlines_bad_arguments(capsys, deadlines_file, argv, needle):
    # an option that does not fit the instance is a usage error (exit 2), like a bad value
    cmd, *rest = argv
    code, out, err = run(capsys, "deadlines", cmd, str(deadlines_file), *rest)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err


@pytest.mark.parametrize(
    "argv",
    [
        ["index", "--policy", "pi", "--cluster", "0", "--upto", "4"],
        ["index", "--policy", "pi", "--cluster", "1", "--upto", "-1"],
        ["evaluate", "--policy", "pi", "--truncation", "0"],
        ["evaluate", "--policy", "pi", "--method", "simulation", "--table-size", "0"],
        ["evaluate", "--policy", "pi", "--replications", "x"],
    ],
)
def test_deadlines_bad_option_values_are_usage_errors(capsys, deadlines_file, argv):
    cmd, *rest = argv
    with pytest.raises(SystemExit) as info:
        main(["deadlines", cmd, str(deadlines_file), *rest])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "argument --" in err


def test_deadlines_overloaded_pure_routing_is_rejected(capsys, monkeypatch):
    bad = json.dumps({**DEADLINES, "arrival_rate": 9.0, "rejection_cost": None})
    code, out, err = run(
        capsys, "deadlines", "evaluate", "-", "--policy", "io", stdin=bad, monkeypatch=monkeypatch
    )
    assert code == 1 and out == "" and "deficit" in err


# -- conventions: --version, -o/--output, --help ---------------------------------------------
def test_version(capsys):
    from queue_routing import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"queue-routing {__version__}"


def test_output_file_holds_what_stdout_would(capsys, table1_file, tmp_path):
    code, out, _ = run(capsys, "multiskill", "solve", str(table1_file))
    target = tmp_path / "out" / "solution.json"
    code_o, out_o, err_o = run(capsys, "multiskill", "solve", str(table1_file), "-o", str(target))
    assert code == code_o == 0 and out_o == "" and err_o == ""
    assert target.read_text() == out


def test_output_file_not_written_on_error(capsys, monkeypatch, tmp_path):
    target = tmp_path / "solution.json"
    bad = '{"mu": [1, 2], "cost": [1, 1], "eta": [5]}'
    code, out, err = run(
        capsys,
        "multiskill",
        "solve",
        "-",
        "--output",
        str(target),
        stdin=bad,
        monkeypatch=monkeypatch,
    )
    assert code == 1 and out == "" and "class set A" in err
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind


SUBCOMMANDS = [
    ("multiskill", "solve"),
    ("multiskill", "compare"),
    ("multiskill", "simulate"),
    ("multiskill", "compare-policies"),
    ("deadlines", "evaluate"),
    ("deadlines", "compare-policies"),
    ("deadlines", "index"),
    ("serverpools", "analyze"),
    ("serverpools", "simulate"),
]


@pytest.mark.parametrize(("part", "command"), SUBCOMMANDS)
def test_help_shows_defaults_and_policy_meanings(capsys, monkeypatch, part, command):
    from queue_routing.cli import _build_parser
    from queue_routing.deadlines.policies import POLICY_DESCRIPTIONS as DEADLINE_POLICIES
    from queue_routing.multiskill.policies import POLICY_DESCRIPTIONS as MULTISKILL_POLICIES

    monkeypatch.setenv("COLUMNS", "10000")  # no wrapping (argparse also breaks at hyphens)
    with pytest.raises(SystemExit) as info:
        main([part, command, "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--output FILE" in text
    # every option with a default names it (parser introspection, not a copied list)
    parser = _build_parser()
    sub = parser._subparsers._group_actions[0].choices[part]
    sub = sub._subparsers._group_actions[0].choices[command]
    for action in sub._actions:
        if action.option_strings and action.default not in (None, argparse.SUPPRESS):
            assert f"(default: {action.default})" in text, action.option_strings
    policies = {
        "simulate": MULTISKILL_POLICIES,
        "compare-policies": MULTISKILL_POLICIES,
        "evaluate": DEADLINE_POLICIES,
    }.get(command, {})
    if command == "index":
        policies = {k: DEADLINE_POLICIES[k] for k in ("io", "pi", "rb")}
    if (part, command) == ("deadlines", "compare-policies"):
        policies = {k: DEADLINE_POLICIES[k] for k in ("bs", "io", "pi", "rb")}
    if part == "serverpools":
        policies = {}  # one policy (LQFS-LB): nothing to choose
    for name, meaning in policies.items():
        assert f"{name}: {meaning}" in text
