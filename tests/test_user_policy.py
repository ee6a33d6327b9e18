"""Index policies of one's own (queue_routing.user_policy) in Parts A and B.

References: the built-in policies (a user policy that re-implements one gives the same bits
under the same seed), a pure-Python simulation of the uniformised chain written here (same
random numbers, the routing rule and the table bound implemented again), the exact chain of
Part B, and the command line and pipeline run on the worked example of docs/your-own-policy.md.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from _stats import assert_mean_agrees
from _workflow import DEFAULT_CONFIG as DEFAULT
from _workflow import ROOT, SMOKE, merged_config, run_snakemake
from queue_routing.cli import main
from queue_routing.deadlines import Instance as BInstance
from queue_routing.deadlines import compare_policies as b_compare
from queue_routing.deadlines import evaluate
from queue_routing.deadlines.policies import TableBoundWarning as BTableBoundWarning
from queue_routing.deadlines.policies import index_table, simulate_policy
from queue_routing.errors import AccuracyError, ArgumentError, TableBoundWarning
from queue_routing.multiskill import Instance, compare_policies, simulate
from queue_routing.multiskill.instances import TABLE1, table1
from queue_routing.multiskill.policies import alias_table, policy_weights
from queue_routing.multiskill.simulation import (
    STREAMS,
    _kernel_arrays,
    _simulate_kernel,
    event_rates,
    replication_states,
    simulate_replications,
)
from queue_routing.rng import uniforms
from queue_routing.user_policy import (
    SPEC_PATTERN,
    UserPolicy,
    UserPolicyError,
    is_spec,
    load_policy,
    resolve_policies,
    resolve_policy,
)
from queue_routing.workflow.config import ConfigError, validate_config

EXAMPLE = ROOT / "docs" / "examples" / "my_policy.py"
PI_DAMPED = f"{EXAMPLE}:pi_damped"
MISS_GUESS = f"{EXAMPLE}:miss_guess"
C2 = Instance(mu=[2.0, 1.5, 1.2], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.9])
B2 = BInstance.from_dict(
    {
        "arrival_rate": 2.5,
        "servers": [3, 2],
        "service_rates": [1.0, 0.8],
        "rejection_cost": 2.0,
        "deadline": {"kind": "constant", "t": 1.5},
    }
)


def jsq_again(server, jobs, instance):
    """JSQ written as an index function: x_j + 1 (the built-in uses w = 1)."""
    return jobs + 1


def _weights_policy(inst, policy):
    if policy == "led":  # one as a plain function, the others through from_weights
        w = policy_weights(inst, policy)
        return lambda server, jobs, instance: w[server] * (jobs + 1)
    return UserPolicy.from_weights(policy + "_again", policy_weights(inst, policy))


# -- Part A: a user policy that re-implements a built-in gives the same bits ----------------
@pytest.mark.parametrize("inst", [C2, table1()], ids=["C2", "table1"])
@pytest.mark.parametrize("builtin", ["jsq", "led", "io", "pi"])
def test_part_a_reimplemented_builtin_is_byte_identical(inst, builtin):
    user = jsq_again if builtin == "jsq" else _weights_policy(inst, builtin)
    run = {"horizon": 150.0, "replications": 3, "seed": 7, "keys": ("u",), "start": "bernoulli"}
    a = simulate(inst, builtin, **run)
    b = simulate(inst, user, **run)
    assert a.replication_means.tobytes() == b.replication_means.tobytes()
    assert a.replication_costs.tobytes() == b.replication_costs.tobytes()
    assert (a.events, a.steps, b.table_bound) == (b.events, b.steps, 0)


@pytest.mark.parametrize("sizes", ["deterministic", "lognormal:4"])
@pytest.mark.parametrize("builtin", ["jsq", "pi"])
def test_part_a_general_sizes_take_user_policies_too(sizes, builtin):
    """The event-driven simulator of general job sizes routes a user policy by the same
    table rule: a re-implemented built-in gives the built-in's bits, and the table bound is
    reported there as well."""
    user = jsq_again if builtin == "jsq" else _weights_policy(C2, builtin)
    run = {"horizon": 150.0, "replications": 3, "seed": 7, "keys": ("g",), "start": "bernoulli"}
    a = simulate(C2, builtin, job_sizes=sizes, **run)
    b = simulate(C2, user, job_sizes=sizes, **run)
    assert a.replication_means.tobytes() == b.replication_means.tobytes()
    assert (a.events, b.table_bound) == (b.events, 0)
    with pytest.warns(TableBoundWarning, match="raise table_size"):
        small = simulate(table1(), jsq_again, job_sizes=sizes, table_size=1, **run)
    assert small.table_bound > 0


def test_part_a_name_is_not_a_stream_key_and_compare_pairs_user_policies():
    """Two names for one index function: the same bits (the name does not enter the
    streams); in a paired comparison the user's JSQ equals the built-in, difference 0."""
    run = {"horizon": 100.0, "replications": 3, "seed": 2}
    a = simulate(C2, UserPolicy("first", index=jsq_again), **run)
    b = simulate(C2, UserPolicy("second", index=jsq_again), **run)
    assert (a.policy, b.policy) == ("first", "second")
    assert a.replication_costs.tobytes() == b.replication_costs.tobytes()
    res = compare_policies(C2, ["jsq", jsq_again], horizon=100.0, replications=4, seed=1)
    assert list(res.policies) == ["jsq", "jsq_again"]
    d = res.differences[("jsq", "jsq_again")]
    assert d.estimate == 0.0 and d.ci95 == 0.0
    assert res.policies["jsq"].ratio == res.policies["jsq_again"].ratio


def test_part_a_table_given_directly():
    n = 50
    table = np.tile(np.arange(1.0, n + 2.0), (3, 1))  # JSQ's x + 1, jobs 0..n
    run = {"horizon": 80.0, "replications": 2, "seed": 4}
    a = simulate(C2, "jsq", **run)
    b = simulate(C2, UserPolicy.from_table("jsq_table", table), table_size=n, **run)
    assert a.replication_means.tobytes() == b.replication_means.tobytes()


# -- Part A: the kernel routes as the rule says (pure-Python reference) ---------------------
def reference_run(inst, table, n_warm, n_steps, states):
    """The uniformised chain simulated step by step in Python from an empty start, routing
    class i to server i iff T(i, x_i) <= T(0, x_0) with T = table beyond which +inf; returns
    (mean jobs per server over the measured steps, real transitions, measured arrivals that
    found server i or 0 beyond the table)."""
    n = inst.n_classes
    rates = event_rates(inst)
    threshold, alias = alias_table(rates)
    m = rates.size
    total = n_warm + n_steps
    events_u = uniforms(states[list(STREAMS).index("events")], total)
    width = table.shape[1]

    def index(j, x):
        return table[j, x] if x < width else math.inf

    x = [0] * (n + 1)
    area = [0] * (n + 1)
    events = bound = 0
    for step in range(total):
        if step >= n_warm:
            for j in range(n + 1):
                area[j] += x[j]
        u = events_u[step] * m
        k = min(int(u), m - 1)
        if u - k >= threshold[k]:
            k = int(alias[k])
        if k < n:
            i = k + 1
            if step >= n_warm and (x[i] >= width or x[0] >= width):
                bound += 1
            j = i if index(i, x[i]) <= index(0, x[0]) else 0
            x[j] += 1
            events += 1
        elif x[k - n] > 0:
            x[k - n] -= 1
            events += 1
    return np.array(area, dtype=float) / n_steps, events, bound


_TABLE_VALUES = st.floats(0.0, 10.0, allow_nan=False, allow_infinity=False)


@st.composite
def index_tables(draw):
    width = draw(st.integers(2, 6))  # table_size = width - 1 >= 1
    rows = draw(
        st.lists(st.lists(_TABLE_VALUES, min_size=width, max_size=width), min_size=3, max_size=3)
    )
    table = np.array(rows)
    if draw(st.booleans()):  # a monotone table (the usual index) or an arbitrary one
        table = np.cumsum(table, axis=1)
    return table


@settings(max_examples=40, deadline=None)
@given(table=index_tables(), replication=st.integers(0, 3))
def test_kernel_routes_as_the_rule_says(table, replication):
    states = replication_states(11, ("hypothesis",), replication)
    policy = UserPolicy.from_table("t", table)
    modes, probs, weights, widths = _kernel_arrays(C2, [policy], table.shape[1] - 1)
    assert modes.tolist() == [2] and widths.tolist() == [table.shape[1]]
    threshold, alias = alias_table(event_rates(C2))
    n_warm, n_steps = 30, 300
    means, events, bound, _ = _simulate_kernel(
        2, threshold, alias, modes, probs, weights, widths, n_warm, n_steps, states,
        np.zeros(3),
    )  # fmt: skip
    means, events, bound = means[0], events[0], bound[0]
    ref_means, ref_events, ref_bound = reference_run(C2, table, n_warm, n_steps, states)
    np.testing.assert_array_equal(means, ref_means)
    assert (int(events), int(bound)) == (ref_events, ref_bound)


@pytest.mark.parametrize("name", ["pi_damped", "zigzag"])
def test_part_a_user_policy_simulation_agrees_with_the_exact_chain(name):
    """Policies no built-in has (the worked example, and a non-monotone index): the compiled
    simulation against the stationary law of the truncated chain (a sparse linear solve)."""
    from queue_routing.multiskill.markov import stationary_cost

    inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    if name == "pi_damped":
        policy = load_policy(PI_DAMPED)
    else:  # the shared server looks cheap at even counts, dear at odd ones
        policy = UserPolicy("zigzag", index=lambda s, j, i: (j + 1) * (1.0 if s else 2.0 + (j % 2)))
    exact = stationary_cost(inst, policy)
    assert exact.boundary_mass < 1e-10 and exact.policy == policy.name
    # the budget and tolerance of the built-ins' check (test_multiskill_simulation.py)
    sim = simulate(inst, policy, horizon=5e4, replications=20, seed=2022, keys=("test", name))
    assert_mean_agrees(sim.replication_costs, exact.cost, 2, name)
    assert exact.cost != pytest.approx(stationary_cost(inst, "pi").cost, rel=1e-3)


# -- Part A: the table bound is reported, never extrapolated ----------------------------------
def test_part_a_table_bound_is_reported():
    inst = table1()
    run = {"horizon": 100.0, "replications": 2, "seed": 3, "start": "bernoulli"}
    with pytest.warns(TableBoundWarning, match="raise table_size"):
        small = simulate(inst, jsq_again, table_size=2, **run)
    assert small.table_bound > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", TableBoundWarning)
        big = simulate(inst, jsq_again, **run)  # 400 jobs: never reached on Table 1
    assert big.table_bound == 0
    block = simulate_replications(
        inst, jsq_again, [1], table_size=2, horizon=100.0, seed=3, start="bernoulli"
    )
    assert 0 < block.table_bound <= small.table_bound  # replication 1 of the two
    with pytest.raises(AccuracyError, match="raise table_size"):
        compare_policies(inst, [jsq_again], horizon=100.0, replications=3, table_size=2)
    res = compare_policies(
        inst, [jsq_again], horizon=100.0, replications=3, table_size=2, on_table_bound="report"
    )
    assert res.table_bound["jsq_again"] > 0 and res.table_bound["bernoulli"] == 0


# -- Part B ----------------------------------------------------------------------------------
@pytest.mark.parametrize("builtin", ["io", "pi", "rb"])
def test_part_b_reimplemented_builtin_is_byte_identical(builtin):
    size = 80
    tab = index_table(B2, builtin, size).table

    def again(server, jobs, instance):
        return float(tab[server, jobs])

    run = {"horizon": 400.0, "replications": 3, "seed": 5, "keys": ("u",), "table_size": size}
    a = simulate_policy(B2, builtin, **run)
    b = simulate_policy(B2, again, **run)
    assert a.replication_costs.tobytes() == b.replication_costs.tobytes()
    assert a.cluster_admission_rate.tobytes() == b.cluster_admission_rate.tobytes()
    assert a.table_bound == b.table_bound == 0
    assert evaluate(B2, again, truncation=40).cost == evaluate(B2, builtin, truncation=40).cost


def test_part_b_user_policy_simulation_agrees_with_the_exact_chain():
    """A policy no built-in has (the worked example's miss guess): the compiled simulation
    against the truncated chain solved for the same table (a generic sparse solve)."""
    policy = load_policy(MISS_GUESS)
    exact = evaluate(B2, policy)
    sim = evaluate(B2, policy, method="simulation", horizon=4000.0, replications=10, seed=3)
    assert abs(sim.cost - exact.cost) < sim.ci95 * 1.5
    assert sim.rejection_rate == 0.0  # miss_guess < 1 < R = 2: every job is admitted


def test_part_b_table_bound_is_reported():
    def always_cheap(server, jobs, instance):  # admits at any queue length
        return 0.0

    over = B2.to_dict() | {"arrival_rate": 6.0}
    inst = BInstance.from_dict(over)
    with pytest.warns(BTableBoundWarning, match="raise table_size"):
        res = simulate_policy(
            inst, always_cheap, horizon=200.0, replications=2, seed=1, table_size=5
        )
    assert res.table_bound > 0
    with pytest.raises(AccuracyError, match="table_size"):
        b_compare(inst, ["bs", always_cheap], horizon=200.0, table_size=5)


def test_part_b_compare_names_user_policies():
    res = b_compare(B2, ["bs", "pi", MISS_GUESS], horizon=500.0, replications=3, table_size=60)
    assert list(res.policies) == ["bs", "pi", MISS_GUESS]
    assert set(res.ranking) == {"bs", "pi", MISS_GUESS}


# -- loading and errors ------------------------------------------------------------------------
def _write(tmp_path, text, name="pol.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("source", "name", "needle"),
    [
        (None, "f", "not found"),
        ("x = 1\n", "f", "defines no 'f'"),
        ("f = 3\n", "f", "int object is not callable"),
        ("def f(a, b):\n    return 1.0\n", "f", "must take (server, jobs, instance)"),
        ("import no_such_module_here\n", "f", "raised ModuleNotFoundError"),
    ],
    ids=["missing-file", "missing-name", "not-callable", "signature", "import-error"],
)
def test_loader_errors(tmp_path, source, name, needle):
    path = str(tmp_path / "absent.py") if source is None else _write(tmp_path, source)
    spec = f"{path}:{name}"
    with pytest.raises(UserPolicyError) as info:
        load_policy(spec)
    msg = str(info.value)
    assert needle in msg and repr(spec) in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("return float('nan')", "returned nan; an index must be finite and >= 0"),
        ("return -1.0", "returned -1.0; an index must be finite and >= 0"),
        ("return float('inf')", "returned inf"),
        ("return 'small'", "returned 'small' (str), not a number"),
        ("return 1 / max(0, 3 - jobs)", "index(0, 3, instance) raised ZeroDivisionError"),
    ],
    ids=["nan", "negative", "inf", "str", "raises"],
)
def test_bad_values_name_the_policy_and_the_entry(tmp_path, body, needle):
    spec = _write(tmp_path, f"def f(server, jobs, instance):\n    {body}\n") + ":f"
    with pytest.raises(UserPolicyError, match="policy ") as info:
        simulate(C2, spec, horizon=10.0, replications=2)
    assert needle in str(info.value) and repr(spec) in str(info.value)
    with pytest.raises(UserPolicyError):
        simulate_policy(B2, spec, horizon=10.0, replications=2, seed=0)


def test_resolution_and_spec_form():
    assert is_spec("a/b.py:f") and not is_spec("a/b.py") and not is_spec("pi:f")
    assert not is_spec("a.py:1f")
    assert resolve_policy("pi", ("pi",)) == "pi"
    with pytest.raises(UserPolicyError, match=r"path/to/file\.py:name"):
        resolve_policy("power-of-two", ("pi",))
    with pytest.raises(UserPolicyError, match=r"not callable|got int"):
        resolve_policy(3, ("pi",))
    with pytest.raises(UserPolicyError, match="finite and >= 0"):
        UserPolicy.from_table("t", [[1.0, -2.0]])
    with pytest.raises(ValueError, match="exceeds 10000000"):
        simulate(C2, jsq_again, horizon=5.0, table_size=5_000_000)
    with pytest.raises(UserPolicyError, match="needs 3 rows"):
        simulate(C2, UserPolicy.from_table("t", np.ones((2, 5))), horizon=5.0, table_size=3)


def test_comparisons_resolve_their_policies_in_one_place():
    # resolve_policies: names of the part and user policies, in order, named as in outputs
    known = ("bernoulli", "jsq", "pi")
    got = resolve_policies(f"pi, {MISS_GUESS}", ("bs", "pi"))  # a comma-separated string
    assert list(got) == ["pi", MISS_GUESS] and isinstance(got[MISS_GUESS], UserPolicy)
    got = resolve_policies(["pi", jsq_again, "bernoulli"], known)
    assert list(got) == ["pi", "jsq_again", "bernoulli"] and got["jsq_again"].name == "jsq_again"
    # from costs (load=False): another name is a user policy's, kept as given, not loaded
    assert resolve_policies(["pi", "no/such.py:f"], known, load=False) == {
        "pi": "pi",
        "no/such.py:f": "no/such.py:f",
    }
    for bad, needle in [
        ([], "policies must name at least one policy"),
        (",", "policies must name at least one policy"),
        (["pi", "pi"], "policies must not repeat a policy"),
        (["power-of-two"], "policies must be among bernoulli, jsq, pi or path/to/file.py:name"),
        (5, "policies must be a sequence of names, got 5"),
    ]:
        with pytest.raises(ArgumentError) as info:
            resolve_policies(bad, known)
        assert str(info.value).startswith(needle) and info.value.argument == "policies"
    with pytest.raises(UserPolicyError, match="not found"):
        resolve_policies(["no/such.py:f"], known)  # loaded: a missing file is reported
    # both parts' comparisons refuse the same way, naming the argument
    for compare, inst in ((compare_policies, C2), (b_compare, B2)):
        with pytest.raises(ArgumentError, match=r"^policies must not repeat") as info:
            compare(inst, ["pi", "pi"], horizon=10.0, replications=3)
        assert info.value.argument == "policies"


def test_a_changed_file_is_reloaded(tmp_path):
    path = _write(tmp_path, "def f(server, jobs, instance):\n    return 1.0\n")
    assert load_policy(f"{path}:f").index(0, 0, None) == 1.0
    Path(path).write_text("def f(server, jobs, instance):\n    return 2.0\n")
    assert load_policy(f"{path}:f").index(0, 0, None) == 2.0


# -- the command line --------------------------------------------------------------------------
def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table1_file(tmp_path):
    path = tmp_path / "table1.json"
    path.write_text(json.dumps(TABLE1))
    return path


@pytest.fixture
def b_file(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(B2.to_dict()))
    return path


def test_cli_runs_the_worked_example_part_a(capsys, table1_file):
    argv = [
        "multiskill",
        "compare-policies",
        table1_file,
        "--horizon",
        "100",
        "--replications",
        "3",
        "--policies",
        f"bernoulli,pi,{PI_DAMPED}",
    ]
    code, out, err = _run(capsys, *argv)
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert list(obj["policies"]) == ["bernoulli", "pi", PI_DAMPED]
    assert set(obj["ranking"]) == {"bernoulli", "pi", PI_DAMPED}
    # the same policy through the library, same streams ("cli" keys): the same numbers
    lib = compare_policies(
        table1(), ["bernoulli", "pi", PI_DAMPED], horizon=100.0, replications=3, keys=("cli",)
    )
    assert obj["policies"][PI_DAMPED]["cost"] == lib.policies[PI_DAMPED].cost
    code, out, err = _run(
        capsys,
        "multiskill",
        "simulate",
        table1_file,
        "--policy",
        PI_DAMPED,
        "--horizon",
        "50",
        "--replications",
        "2",
    )
    assert code == 0 and set(json.loads(out)) == {"cost", "ci95", "per_server_mean_jobs"}


def test_cli_runs_the_worked_example_part_b(capsys, b_file):
    code, out, err = _run(capsys, "deadlines", "evaluate", b_file, "--policy", MISS_GUESS)
    assert code == 0 and err == ""
    assert json.loads(out)["cost"] == evaluate(B2, load_policy(MISS_GUESS)).cost
    argv = [
        "deadlines",
        "compare-policies",
        b_file,
        "--policies",
        f"pi,{MISS_GUESS}",
        "--horizon",
        "200",
        "--replications",
        "2",
        "--table-size",
        "60",
    ]
    code, out, err = _run(capsys, *argv)
    assert code == 0 and list(json.loads(out)["policies"]) == ["pi", MISS_GUESS]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["multiskill", "simulate", "{a}", "--policy", "nofile.py:f"], "file nofile.py not found"),
        (
            ["multiskill", "compare-policies", "{a}", "--policies", f"pi,{EXAMPLE}:nope"],
            "defines no 'nope'",
        ),
        (["multiskill", "simulate", "{a}", "--policy", "magic"], "invalid choice: 'magic'"),
        (["deadlines", "evaluate", "{b}", "--policy", "nofile.py:f"], "file nofile.py not found"),
        (
            ["deadlines", "compare-policies", "{b}", "--policies", f"pi,{EXAMPLE}:nope"],
            "defines no 'nope'",
        ),
    ],
)
def test_cli_loader_errors_are_usage_errors(capsys, table1_file, b_file, argv, needle):
    argv = [a.format(a=table1_file, b=b_file) for a in argv]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_cli_bad_values_exit_2_in_one_line(capsys, tmp_path, table1_file, b_file):
    # Part A's example on a Part B instance: the function fails there (no instance.mu).
    for argv in (
        ["deadlines", "evaluate", b_file, "--policy", PI_DAMPED],
        ["multiskill", "simulate", table1_file, "--policy", MISS_GUESS],
    ):
        code, out, err = _run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "raised AttributeError" in err and "Traceback" not in err


# -- config and pipeline -------------------------------------------------------------------
def test_config_schema_accepts_user_policies_only_in_the_file_form(monkeypatch):
    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    # a policy file is loaded and tried at validation (paths relative to the working
    # directory): the worked examples of each part
    monkeypatch.chdir(ROOT)
    part_a, part_b = "docs/examples/my_policy.py:pi_damped", "docs/examples/my_policy.py:miss_guess"
    good = merged_config({"multiskill": {"simulation": {"policies": ["pi", part_a]}}})
    validate_config(good, schema)
    for bad in ("magic", "p.py", "p.txt:f", "p.py:1f"):
        config = merged_config({"multiskill": {"simulation": {"policies": ["pi", bad]}}})
        with pytest.raises(ConfigError, match=r"policies\[1\]"):
            validate_config(config, schema)
    node = yaml.safe_load(schema.read_text())["properties"]["multiskill"]["properties"]
    items = node["simulation"]["properties"]["policies"]["items"]
    assert items["anyOf"][1]["pattern"] == SPEC_PATTERN
    good = merged_config({"deadlines": {"large": {"policies": ["bs", "pi", part_b]}}})
    validate_config(good, schema)
    bad = merged_config({"deadlines": {"large": {"policies": ["pi", "optimal"]}}})
    with pytest.raises(ConfigError, match=r"deadlines\.large\.policies\[1\]"):
        validate_config(bad, schema)
    default = yaml.safe_load(DEFAULT.read_text())
    assert not any(":" in p for p in default["multiskill"]["simulation"]["policies"])
    assert default["deadlines"]["large"]["policies"] == ["bs", "io", "pi", "rb"]


def test_pipeline_functions_carry_a_user_policy(tmp_path):
    """The chain of the pipeline's rules, in process: chunks' costs, the paired tables,
    Fig. 8 and 9 (a panel and a legend entry of its own) and the summary's keys."""
    from queue_routing.multiskill import figures
    from queue_routing.multiskill.experiments import (
        policy_comparison_from_costs,
        policy_replication_costs,
        table1_instances,
    )
    from queue_routing.workflow import summary

    policies = ["bernoulli", "jsq", "pi", PI_DAMPED]
    run = {"policies": policies, "horizon": 20.0, "warmup": 2.0, "seed": 1}
    instances, _ = table1_instances([0.8, 1.0])
    costs = pd.concat(
        [
            policy_replication_costs(
                [(k, inst)],
                replications=r,
                tag="table1-load",
                extra={"load_factor": [0.8, 1.0][k]},
                **run,
            )
            for k, inst in instances
            for r in (range(0, 2), range(2, 3))  # split in replication blocks
        ],
        ignore_index=True,
    )
    assert set(costs["policy"]) == set(policies)
    rows, diffs = [], []
    for k, inst in instances:
        r, d = policy_comparison_from_costs(
            [(k, inst)],
            costs[costs["load_factor"] == [0.8, 1.0][k]],
            tag="table1-load",
            extra={"load_factor": [0.8, 1.0][k]},
            policies=policies,
            horizon=20.0,
            warmup=2.0,
            seed=1,
        )
        rows.append(r)
        diffs.append(d)
    rows, diffs = pd.concat(rows, ignore_index=True), pd.concat(diffs, ignore_index=True)
    assert PI_DAMPED in set(rows["policy"]) and PI_DAMPED in set(diffs["policy_b"])
    fig, caption = figures.fig9_policies_vs_load(rows)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "your policy: pi_damped" in labels and PI_DAMPED in caption
    sizes = rows.assign(n_classes=5 * (rows["instance"] + 1))
    fig, caption = figures.fig8_policies_vs_size(sizes)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert any("pi_damped" in t for t in titles)
    out = summary._multiskill_load_sweep(rows)
    assert f"A.load_sweep.{PI_DAMPED}.s1.relative" in out and "A.load_sweep.pi.s1.relative" in out
    out = summary._multiskill_simulation(sizes)
    assert "A.simulation.C5.best_count.pi" in out


def test_part_b_large_systems_carry_a_user_policy():
    """Part B's large-system study with the example in its policy list: chunks reassembled
    give the unsplit rows, the figure has its legend entry, the summary its keys."""
    from queue_routing.deadlines import figures as b_figures
    from queue_routing.deadlines.experiments import (
        large_instance,
        large_system,
        large_system_from_replications,
        large_system_replications,
    )
    from queue_routing.workflow import summary

    inst = large_instance(
        1,
        4,
        servers_range=[1, 3],
        rate_range=[0.5, 1.5],
        load=0.9,
        rejection_cost=2.0,
        deadline={"kind": "constant", "t": 1.5},
    )
    run = {"table_size": 60, "horizon": 100.0, "warmup": 10.0, "seed": 2, "keys": ("k",)}
    policies = ["bs", "pi", MISS_GUESS]
    whole = large_system(inst, replications=3, policies=policies, **run)
    chunks = pd.concat(
        [
            large_system_replications(inst, replications=r, policies=policies, **run)
            for r in (range(0, 1), range(1, 3))
        ],
        ignore_index=True,
    )
    assert set(chunks["policy"]) == {"bs", "pi", MISS_GUESS}
    again = large_system_from_replications(inst, chunks, policies=policies, **run)
    pd.testing.assert_frame_equal(whole, again)
    assert list(whole["policy"]) == ["BS", "PI", MISS_GUESS]
    fig, caption = b_figures.large_figure(whole)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "yours: miss_guess" in labels and MISS_GUESS in caption
    gap = pd.DataFrame(
        {"sweep": ["arrival_rate"], "policy": ["PI"], "mean_gap_pct": [1.0], "max_gap_pct": [2.0]}
    )
    pure = pd.DataFrame({"arrival_rate": [2.0], "load": [0.4]})
    three = pd.DataFrame(
        {"sweep": ["all"], "policy": ["PI"], "mean_gap_2_pct": [1.0], "max_gap_2_pct": [2.0],
         "mean_gap_3_pct": [1.5], "max_gap_3_pct": [2.5]}
    )  # fmt: skip
    tables = {"gap": gap, "large": whole, "pure_routing": pure, "three": three}
    out = summary.deadlines_summary(tables)
    assert f"B.large.{MISS_GUESS.lower()}.ratio_min" in out


@pytest.mark.slow
def test_snakemake_runs_the_worked_example_on_the_smoke_config(tmp_path):
    """The pipeline run of docs/your-own-policy.md: the smoke config plus the examples in the
    policy lists; only the rules of Part A's policy comparisons and Part B's large systems,
    and their figures (--cores 1)."""
    extra = tmp_path / "user.yaml"
    smoke = yaml.safe_load(SMOKE.read_text())
    policies = [*smoke["multiskill"]["simulation"]["policies"], PI_DAMPED]
    b_policies = [*yaml.safe_load(DEFAULT.read_text())["deadlines"]["large"]["policies"]]
    overlay = {
        "multiskill": {"simulation": {"policies": policies}},
        "deadlines": {"large": {"policies": [*b_policies, MISS_GUESS]}},
    }
    extra.write_text(yaml.safe_dump(overlay))
    targets = [
        "results/multiskill/multiskill_simulation_table/load_sweep.csv",
        "figures/multiskill_fig8_policies_vs_size.pdf",
        "figures/multiskill_fig9_policies_vs_load.pdf",
        "results/deadlines/deadlines_large_table/large.csv",
        "figures/deadlines_large.pdf",
    ]
    run_snakemake(tmp_path, "--configfile", str(SMOKE), str(extra), "--", *targets, cores="1")
    sweep = pd.read_csv(tmp_path / targets[0])
    assert PI_DAMPED in set(sweep["policy"])
    rows = pd.read_csv(tmp_path / "results/multiskill/multiskill_simulation_table/policies.csv")
    assert PI_DAMPED in set(rows["policy"])
    assert (tmp_path / targets[2]).stat().st_size > 0
    large = pd.read_csv(tmp_path / targets[3])
    assert MISS_GUESS in set(large["policy"]) and "RB" in set(large["policy"])
    assert (tmp_path / targets[4]).stat().st_size > 0
