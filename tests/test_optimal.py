"""Part A's optimal dynamic routing on the truncated chain (multiskill.optimal), each check
against an independent reference: exhaustive search over every deterministic policy of a
tiny chain (dense linear solves in numpy), the generator and solvers of multiskill.markov,
the numpy value iteration, the compiled simulator within its interval, and the policy
improvement theorem."""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_routing.cli import main
from queue_routing.errors import AccuracyError, ArgumentError
from queue_routing.multiskill import Instance, simulate
from queue_routing.multiskill.markov import stationary_cost
from queue_routing.multiskill.optimal import (
    CHAIN_POLICIES,
    bernoulli_chain,
    chain_bytes,
    compare_with_optimum,
    evaluate_policy,
    largest_level,
    optimal_policy,
    optimal_values_vectorised,
    pi2_table,
    policy_relative_values,
)

C2 = Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.6])


# -- the optimum of a tiny chain by exhaustive search ------------------------------------------
def _brute_force_optimum(inst: Instance, L: int) -> float:
    """The least stationary cost over every deterministic policy of the C = 1 chain truncated
    at ``L`` (2^((L+1)^2) policies; each a dense solve of pi Q = 0, sum pi = 1)."""
    eta, (mu0, mu1), (c0, c1) = inst.eta[0], inst.mu, inst.cost
    states = [(a, b) for a in range(L + 1) for b in range(L + 1)]
    idx = {s: k for k, s in enumerate(states)}
    n = len(states)
    base = np.zeros((n, n))
    arr_ded = np.zeros((n, n))  # the arrival's transition if routed to server 1
    arr_sh = np.zeros((n, n))  # ... to server 0
    for (a, b), k in idx.items():
        if a > 0:
            base[k, idx[a - 1, b]] += mu0
        if b > 0:
            base[k, idx[a, b - 1]] += mu1
        if b < L:
            arr_ded[k, idx[a, b + 1]] += eta
        if a < L:
            arr_sh[k, idx[a + 1, b]] += eta
    cost = np.array([c0 * a + c1 * b for a, b in states])
    best = math.inf
    choices = np.array(list(itertools.product((0, 1), repeat=n)), dtype=float)  # 1: dedicated
    for chunk in np.array_split(choices, max(1, len(choices) // 4096)):
        off = (
            base[None] + chunk[:, :, None] * arr_ded[None] + (1 - chunk)[:, :, None] * arr_sh[None]
        )
        q = off - np.einsum("pij->pi", off)[:, :, None] * np.eye(n)[None]
        a = np.transpose(q, (0, 2, 1)).copy()
        a[:, -1, :] = 1.0  # replace one balance equation by the normalisation
        rhs = np.zeros(n)
        rhs[-1] = 1.0
        pi = np.linalg.solve(a, np.broadcast_to(rhs, (len(chunk), n))[..., None])[..., 0]
        best = min(best, float((pi @ cost).min()))
    return best


def test_c1_optimum_is_the_best_of_every_deterministic_policy():
    inst = Instance(mu=[1.0, 0.8], cost=[1.0, 2.5], eta=[1.2])
    L = 3  # 16 states, 65 536 policies
    opt = optimal_policy(inst, L, rtol=1e-10)
    ref = _brute_force_optimum(inst, L)
    assert opt.converged and not opt.certified
    assert opt.lower - 1e-12 <= ref <= opt.upper + 1e-12
    assert opt.cost == pytest.approx(ref, rel=1e-8)


def test_c1_optimal_table_is_a_switching_curve_inside_the_box():
    """Away from the truncation the C = 1 optimum routes to the dedicated server below a
    nondecreasing switching curve x_1 <= f(x_0) (a threshold in x_1 for each x_0)."""
    inst = Instance(mu=[1.0, 0.8], cost=[1.0, 2.5], eta=[1.2])
    opt = optimal_policy(inst, rtol=1e-7)
    d = opt.decision_table()[..., 0]
    inner = opt.truncation // 2
    thresholds = []
    for x0 in range(inner):
        col = d[x0, :inner]
        k = int(np.argmin(col)) if not col.all() else inner
        assert col[:k].all() and not col[k:].any()  # a threshold in x_1
        thresholds.append(k)
    assert thresholds == sorted(thresholds)


# -- the optimum against every policy ----------------------------------------------------------
@st.composite
def small_instances(draw, max_classes=2):
    c = draw(st.integers(1, max_classes))
    mu = [draw(st.floats(0.3, 3.0)) for _ in range(c + 1)]
    cost = [draw(st.floats(0.2, 5.0)) for _ in range(c + 1)]
    load = draw(st.floats(0.2, 0.6))
    w = np.array([draw(st.floats(0.2, 1.0)) for _ in range(c)])
    eta = w / w.sum() * load * sum(mu)
    try:
        return Instance(mu=mu, cost=cost, eta=eta)
    except ValueError:  # an unstable draw
        return Instance(mu=[1.0] * (c + 1), cost=cost, eta=[0.5 * load] * c)


@settings(max_examples=12, deadline=None)
@given(small_instances())
def test_optimum_below_every_policy_on_the_same_chain(inst):
    L = 8
    opt = optimal_policy(inst, L, rtol=1e-9)
    for policy in CHAIN_POLICIES:
        ev = evaluate_policy(inst, policy, L, certify=False)
        assert opt.lower <= ev.cost * (1 + 1e-9), policy


@settings(max_examples=10, deadline=None)
@given(small_instances())
def test_pi2_improves_on_pi(inst):
    """The policy improvement theorem on the chain: greedy for PI's values is no worse."""
    L = 8
    pi = evaluate_policy(inst, "pi", L, certify=False).cost
    pi2 = evaluate_policy(inst, pi2_table(inst, L, rtol=1e-10), L, certify=False).cost
    assert pi2 <= pi * (1 + 1e-8)


def test_optimal_table_cost_within_the_value_iteration_bounds():
    opt = optimal_policy(C2, 15, rtol=1e-9)
    # the Gauss-Seidel solve of the greedy table, a second computation of the same number
    assert opt.lower - 1e-9 <= opt.table_cost <= opt.upper + 1e-9


def test_compiled_value_iteration_matches_numpy():
    L = 12
    h, it, lower, upper, ok = optimal_values_vectorised(C2, L, 1e-9)
    opt = optimal_policy(C2, L, rtol=1e-8)  # value iteration to rtol / 10 = 1e-9
    assert ok and opt.iterations == it
    assert opt.lower == pytest.approx(lower, rel=1e-11)
    assert opt.upper == pytest.approx(upper, rel=1e-11)
    np.testing.assert_allclose(opt.relative_values, h, rtol=1e-9, atol=1e-9)


# -- policy evaluation against multiskill.markov and the closed form ---------------------------
@pytest.mark.parametrize("policy", ["jsq", "led", "io", "pi"])
def test_index_policy_cost_matches_markov(policy):
    L = 14
    ours = evaluate_policy(C2, policy, L, certify=False)
    ref = stationary_cost(C2, policy, L, method="direct")  # sparse LU of the generator
    assert ours.cost == pytest.approx(ref.cost, rel=1e-9)
    assert ours.boundary_mass == pytest.approx(ref.boundary_mass, rel=1e-6, abs=1e-15)
    assert ours.lost_rate == pytest.approx(ref.lost_rate, rel=1e-6, abs=1e-15)
    np.testing.assert_allclose(ours.per_server_mean_jobs, ref.per_server_mean_jobs, rtol=1e-9)


def test_bernoulli_chain_matches_markov_and_the_product_form():
    L = 14
    assert bernoulli_chain(C2, L)[0] == pytest.approx(
        stationary_cost(C2, "bernoulli", L, method="direct").cost, rel=1e-10
    )
    from queue_routing.multiskill import solve

    assert evaluate_policy(C2, "bernoulli", rtol=1e-9).cost == pytest.approx(
        solve(C2).cost, rel=1e-8
    )


def test_policy_value_iteration_bounds_contain_the_stationary_cost():
    h, lower, upper = policy_relative_values(C2, "led", 14, rtol=1e-9)
    ev = evaluate_policy(C2, "led", 14, certify=False, rtol=1e-9)
    assert lower - 1e-9 <= ev.cost <= upper + 1e-9
    assert h.shape == (15, 15, 15) and h[0, 0, 0] == 0.0


def test_chain_cost_within_the_simulators_interval():
    inst = Instance(mu=[1.5, 1.0, 0.8], cost=[1.0, 2.0, 3.0], eta=[0.9, 0.7])
    exact = evaluate_policy(inst, "led", rtol=1e-7)
    assert exact.certified
    sim = simulate(inst, "led", horizon=4000.0, replications=10, seed=11, keys=("optimal",))
    assert abs(sim.cost - exact.cost) <= sim.ci95


# -- truncation ------------------------------------------------------------------------------
def test_certified_cost_unchanged_when_the_level_grows():
    rtol = 1e-5
    opt = optimal_policy(C2, rtol=rtol)
    assert opt.converged and opt.certified
    bigger = optimal_policy(C2, 2 * opt.truncation, rtol=rtol / 10)
    assert abs(bigger.cost - opt.cost) <= rtol * opt.cost
    assert opt.boundary_mass < 1e-6


def test_uncertified_level_is_reported_or_raised():
    inst = Instance(mu=[1.0, 1.0, 1.0], cost=[1.0, 1.0, 1.0], eta=[1.35, 1.35])  # load 0.9
    with pytest.raises(AccuracyError, match="not stable"):
        optimal_policy(inst, max_level=15)
    res = optimal_policy(inst, max_level=15, strict=False)
    assert not res.converged and not res.certified and res.truncation == 15


def test_memory_of_a_large_chain_is_named():
    assert chain_bytes(2, 99) == 40 * 100**3
    assert chain_bytes(3, largest_level(3)) <= 8 * 2**30 < chain_bytes(3, largest_level(3) + 1)
    inst = Instance(mu=[1.0] * 9, cost=[1.0] * 9, eta=[0.5] * 8)
    with pytest.raises(ArgumentError, match=r"truncation: .* GiB of memory") as info:
        optimal_policy(inst)
    assert info.value.argument == "truncation"


def test_decision_accessors_agree():
    opt = optimal_policy(C2, 10, rtol=1e-8)
    table = opt.decision_table()
    assert table.shape == (11, 11, 11, 2)
    for x in [(0, 0, 0), (3, 1, 4), (10, 2, 7), (5, 10, 0)]:
        for i in (1, 2):
            assert opt.route(x, i) == (i if table[(*x, i - 1)] else 0)


def test_comparison_gaps():
    cmp = compare_with_optimum(C2, ["bernoulli", "pi", "pi2"], rtol=1e-5)
    d = cmp.to_dict()
    for name, row in d["policies"].items():
        assert row["gap_pct"] == pytest.approx(100 * (row["cost"] / d["cost"] - 1), rel=1e-12)
        assert row["gap_pct"] > -1e-3, name


# -- the command line --------------------------------------------------------------------------
def test_cli_optimal_contract(capsys, tmp_path):
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(C2.to_dict()))
    code = main(["multiskill", "optimal", str(path), "--rtol", "1e-5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    obj = json.loads(out)
    assert {"cost", "bounds", "truncation", "converged", "certified", "policies"} <= set(obj)
    assert obj["bounds"][0] <= obj["cost"] <= obj["bounds"][1] and obj["converged"] is True
    assert list(obj["policies"]) == list(CHAIN_POLICIES)
    for row in obj["policies"].values():
        assert {"cost", "gap_pct"} <= set(row)


def test_cli_explicit_low_level_is_reported_uncertified(capsys, tmp_path):
    # at level 3 the truncation decides the cost (it differs from the certified optimum by
    # far more than the tolerance): the JSON says certified false and stderr says why
    path = tmp_path / "inst.json"
    path.write_text(json.dumps({"mu": [10.0, 10.0], "cost": [1.0, 1.0], "eta": [5.0]}))
    assert main(["multiskill", "optimal", str(path), "--policies", "pi"]) == 0
    certified = json.loads(capsys.readouterr().out)
    assert certified["certified"] is True
    assert main(["multiskill", "optimal", str(path), "--policies", "pi", "--truncation", "3"]) == 0
    out, err = capsys.readouterr()
    low = json.loads(out)
    assert abs(low["cost"] - certified["cost"]) > 1e-3 * certified["cost"]
    assert low["certified"] is False and low["policies"]["pi"]["certified"] is False
    assert "not certified" in err and "--truncation 3" in err


def test_cli_optimal_too_many_classes(capsys, tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"mu": [1.0] * 11, "cost": [1.0] * 11, "eta": [0.5] * 10}))
    code = main(["multiskill", "optimal", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "GiB" in err and "--truncation" in err


# -- the study's tables and figures ------------------------------------------------------------
def test_study_tables_and_figures():
    from queue_routing.multiskill.figures_optimal import fig_optimal_gaps, fig_optimal_switching
    from queue_routing.multiskill.optimal_study import (
        gap_summary,
        gaps_markdown,
        gaps_wide,
        optimal_gap_rows,
        scaled_instance,
        switching_rows,
    )

    rows = optimal_gap_rows([("symmetric-2", 0.5), ("table1-2", 0.5)], ["jsq", "pi"], rtol=1e-3)
    wide = gaps_wide(rows)
    # the symmetric instance: JSQ and PI route alike (equal weights), a tie
    assert wide.loc[0, "best_index"] == "jsq+pi"
    assert gap_summary(rows).set_index("policy").loc["pi", "best_index"] == 2
    assert "| symmetric-2 | 2 | 0.5 |" in gaps_markdown(wide)
    sw = switching_rows("costs-2", 0.5, others=[0, 2], rtol=1e-3)
    inst = scaled_instance("costs-2", 0.5)
    opt = optimal_policy(inst, int(sw["truncation"].iloc[0]), rtol=1e-4)
    r = sw.iloc[5]  # x_other = 0, x0 = 5: the largest x1 routed to server 1 is on the curve
    if r["optimal"] >= 0:
        assert opt.route((5, int(r["optimal"]), 0), 1) == 1
    assert opt.route((5, int(r["optimal"]) + 1, 0), 1) == 0
    for fig, caption in (fig_optimal_gaps(rows), fig_optimal_switching(sw, "costs-2")):
        assert fig.axes and "ours" in caption


# -- decision tables in the simulator ----------------------------------------------------------
def test_table_simulation_is_the_simulator_for_an_index_policy():
    """PI written as a decision table runs, bit for bit, as the simulator runs PI: the table
    kernel uses the simulator's streams (common random numbers)."""
    from queue_routing.multiskill.optimal_kernels import index_mask
    from queue_routing.multiskill.policies import policy_weights
    from queue_routing.multiskill.simulation import simulate_replications
    from queue_routing.multiskill.table_simulation import simulate_table_replications

    L = 30
    w = policy_weights(C2, "pi")
    mask = index_mask(np.ascontiguousarray(w[:, None] * (np.arange(L + 1) + 1.0)), L)
    run = {"horizon": 300.0, "seed": 4, "keys": ("table",), "start": "bernoulli"}
    ours = simulate_table_replications(C2, mask, L, range(3), **run)
    ref = simulate_replications(C2, "pi", range(3), **run)
    assert np.array_equal(ours.means, ref.means)
    assert ours.events_per_replication == ref.events_per_replication


def test_pi2_simulated_within_its_interval_of_the_chain():
    from queue_routing.multiskill.table_simulation import simulate_table

    L = 30
    exact = evaluate_policy(C2, "pi2", L, certify=False)
    assert exact.boundary_mass < 1e-9
    sim = simulate_table(C2, pi2_table(C2, L), L, horizon=3000.0, replications=10, seed=2)
    assert sim.table_bound == 0
    assert abs(sim.cost - exact.cost) <= sim.ci95


def test_user_policy_on_the_chain_is_its_index():
    """A user policy whose index is PI's (a callable index(server, jobs, instance)) has PI's
    chain cost, and the CLI's policy list takes it by name."""
    from queue_routing.multiskill.policies import policy_weights

    w = policy_weights(C2, "pi")

    def pi_index(server, jobs, instance):
        return float(w[server] * (jobs + 1))

    ours = evaluate_policy(C2, pi_index, 14, certify=False)
    assert ours.policy == "pi_index"
    assert ours.cost == evaluate_policy(C2, "pi", 14, certify=False).cost


@pytest.mark.slow
def test_certification_at_a_heavier_load():
    """At total load 0.75 (the chain mixes slowly, the level needed is several times larger)
    the certified optimum is unchanged at a level a quarter larger, and below every policy
    certified on the chain."""
    inst = Instance(mu=[1.0, 1.0, 1.0], cost=[1.0, 2.0, 4.0], eta=[1.125, 1.125])
    rtol = 1e-4
    cmp = compare_with_optimum(inst, ["io", "pi", "pi2"], rtol=rtol)
    opt = cmp.optimal
    assert opt.converged and opt.certified
    bigger = optimal_policy(inst, math.ceil(1.25 * opt.truncation), rtol=rtol / 10)
    assert abs(bigger.cost - opt.cost) <= rtol * opt.cost
    for name, ev in cmp.evaluations.items():
        assert ev.certified and ev.cost >= opt.lower * (1 - rtol), name


# -- policy iteration and the two-level solves ---------------------------------------------------
def _table_generator(inst: Instance, mask: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """The dense generator ``Q`` of a decision table (bit ``i - 1``: class ``i`` to server
    ``i``; a job sent to a full server is lost) and the holding cost of each state, written
    from the model's definition state by state (C order)."""
    n_srv = inst.n_classes + 1
    shape = (L + 1,) * n_srv
    n = (L + 1) ** n_srv
    q = np.zeros((n, n))
    for s, x in enumerate(itertools.product(range(L + 1), repeat=n_srv)):
        for j in range(n_srv):
            if x[j] > 0:
                y = list(x)
                y[j] -= 1
                q[s, np.ravel_multi_index(y, shape)] += inst.mu[j]
        for i in range(1, n_srv):
            dest = i if (int(mask[s]) >> (i - 1)) & 1 else 0
            if x[dest] < L:
                y = list(x)
                y[dest] += 1
                q[s, np.ravel_multi_index(y, shape)] += inst.eta[i - 1]
    q -= np.diag(q.sum(axis=1))
    hold = np.array(
        [float(np.dot(inst.cost, x)) for x in itertools.product(range(L + 1), repeat=n_srv)]
    )
    return q, hold


def _poisson_reference(q: np.ndarray, hold: np.ndarray) -> tuple[float, np.ndarray]:
    """``(g, h)`` of ``hold - g + Q h = 0``, ``h(0) = 0``, by one dense solve (column 0 of
    ``Q`` replaced by the coefficient -1 of ``g``)."""
    a = q.copy()
    a[:, 0] = -1.0
    sol = np.linalg.solve(a, -hold)
    h = sol.copy()
    h[0] = 0.0
    return float(sol[0]), h


def test_two_level_poisson_solve_matches_a_dense_solve():
    from queue_routing.multiskill.optimal_kernels import index_mask

    inst = Instance(mu=[1.5, 1.0, 0.8], cost=[1.0, 2.0, 3.0], eta=[1.2, 0.9])  # load 0.7
    L = 7
    # LED's decision table, its index (x_j + 1) / mu_j written out
    w = 1.0 / np.asarray(inst.mu)
    mask = index_mask(np.ascontiguousarray(w[:, None] * (np.arange(L + 1) + 1.0)), L)
    g_ref, h_ref = _poisson_reference(*_table_generator(inst, mask, L))
    h, lower, upper = policy_relative_values(inst, mask, L, rtol=1e-12, method="policy")
    assert lower - 1e-9 <= g_ref <= upper + 1e-9
    assert 0.5 * (lower + upper) == pytest.approx(g_ref, rel=1e-10)
    np.testing.assert_allclose(h.reshape(-1), h_ref, rtol=1e-8, atol=1e-8 * np.abs(h_ref).max())
    ev = evaluate_policy(inst, "led", L, certify=False, rtol=1e-9)  # the simulator's LED
    assert ev.cost == pytest.approx(g_ref, rel=1e-8)


def test_two_level_stationary_law_matches_markov_and_plain_gauss_seidel():
    inst = Instance(mu=[1.5, 1.0, 0.8], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0])  # load 0.76
    L = 14
    ours = evaluate_policy(inst, "io", L, certify=False, rtol=1e-9, method="policy")
    ref = stationary_cost(inst, "io", L, method="direct")  # sparse LU of the generator
    assert ours.cost == pytest.approx(ref.cost, rel=1e-8)
    assert ours.boundary_mass == pytest.approx(ref.boundary_mass, rel=1e-5, abs=1e-14)
    gs = evaluate_policy(inst, "io", L, certify=False, rtol=1e-9, method="value")
    assert ours.cost == pytest.approx(gs.cost, rel=1e-8)


def test_policy_iteration_matches_value_iteration():
    """Two implementations of the optimum at one level: bounds that overlap, the same table
    where the values are not tied."""
    inst = Instance(mu=[1.5, 1.0, 0.8], cost=[1.0, 2.0, 3.0], eta=[1.2, 0.9])
    vi = optimal_policy(inst, 16, rtol=1e-8, method="value")
    pi = optimal_policy(inst, 16, rtol=1e-8, method="policy")
    assert pi.method == "policy" and vi.method == "value" and pi.converged
    assert max(vi.lower, pi.lower) <= min(vi.upper, pi.upper) + 1e-12
    assert pi.cost == pytest.approx(vi.cost, rel=1e-8)
    assert pi.table_cost == pytest.approx(vi.table_cost, rel=1e-7)
    assert np.mean(pi.mask == vi.mask) > 0.99


def test_policy_iteration_is_the_best_of_every_deterministic_policy_for_c1():
    inst = Instance(mu=[1.0, 0.8], cost=[1.0, 2.5], eta=[1.2])
    L = 3
    opt = optimal_policy(inst, L, rtol=1e-10, method="policy")
    ref = _brute_force_optimum(inst, L)
    assert opt.lower - 1e-10 <= ref <= opt.upper + 1e-10


def test_policy_iteration_certifies_by_raising_the_level():
    inst = Instance(mu=[1.0, 1.0, 1.0], cost=[1.0, 2.0, 4.0], eta=[0.9, 0.9])  # load 0.6
    opt = optimal_policy(inst, rtol=1e-4, method="policy")
    assert opt.method == "policy" and opt.certified and opt.converged
    bigger = optimal_policy(inst, _next_level_of(opt.truncation), rtol=1e-6, method="value")
    assert abs(bigger.cost - opt.cost) <= 1e-4 * opt.cost


def _next_level_of(L: int) -> int:
    return max(L + 1, math.ceil(1.5 * L))


@settings(max_examples=10, deadline=None)
@given(small_instances())
def test_policy_iteration_optimum_below_every_policy(inst):
    L = 7
    opt = optimal_policy(inst, L, rtol=1e-9, method="policy")
    for policy in CHAIN_POLICIES:
        ev = evaluate_policy(inst, policy, L, certify=False, method="policy")
        assert opt.lower <= ev.cost * (1 + 1e-8), policy
