"""Part A's optimal dynamic routing on the truncated chain (multiskill.optimal), each check
against an independent reference: exhaustive search over every deterministic policy of a
tiny chain (dense linear solves in numpy), the generator and solvers of multiskill.markov,
the numpy value iteration, the compiled simulator within its interval, and the policy
improvement theorem."""

import itertools
import json
import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_routing.cli import main
from queue_routing.errors import AccuracyError, ArgumentError
from queue_routing.multiskill import Instance, optimal, simulate
from queue_routing.multiskill.markov import stationary_cost
from queue_routing.multiskill.optimal import (
    BYTES_PER_STATE,
    CHAIN_POLICIES,
    OptimalSearch,
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
from queue_routing.multiskill.optimal_kernels import chain_box
from queue_routing.multiskill.optimal_study import (
    finish_case_rows,
    load_case_round,
    optimal_case_round,
    optimal_gap_rows,
    save_case_round,
    scaled_instance,
)
from queue_routing.workflow import resources

C2 = Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.6])
#: The policies that see the state, and so share the optimum's chain (redirection at the
#: faces). Optimal Bernoulli routing ignores the state and loses a job sent to a full server;
#: it is compared with the optimum on certified costs.
STATE_POLICIES = [p for p in CHAIN_POLICIES if p != "bernoulli"]


# -- the optimum of a tiny chain by exhaustive search ------------------------------------------
def _brute_force_optimum(inst: Instance, L: int, L1: int | None = None) -> float:
    """The least stationary cost over every deterministic policy of the C = 1 chain truncated
    at ``L`` (or to the box ``x_0 <= L``, ``x_1 <= L1``), written from the chain's definition:
    where both servers have room the policy chooses, where one is full the job goes to the
    other, where both are it is lost. 2^(free states) policies, each a dense solve of
    pi Q = 0, sum pi = 1."""
    eta, (mu0, mu1), (c0, c1) = inst.eta[0], inst.mu, inst.cost
    L0, L1 = L, L if L1 is None else L1
    states = [(a, b) for a in range(L0 + 1) for b in range(L1 + 1)]
    idx = {s: k for k, s in enumerate(states)}
    n = len(states)
    base = np.zeros((n, n))
    arr_ded = np.zeros((n, n))  # the arrival's transition if the policy chooses server 1
    arr_sh = np.zeros((n, n))  # ... server 0
    free = np.zeros(n, dtype=bool)
    for (a, b), k in idx.items():
        if a > 0:
            base[k, idx[a - 1, b]] += mu0
        if b > 0:
            base[k, idx[a, b - 1]] += mu1
        free[k] = a < L0 and b < L1
        if b < L1 and a < L0:
            arr_ded[k, idx[a, b + 1]] += eta
            arr_sh[k, idx[a + 1, b]] += eta
        elif b < L1:  # server 0 full: to server 1, whatever the choice
            base[k, idx[a, b + 1]] += eta
        elif a < L0:  # server 1 full: to server 0
            base[k, idx[a + 1, b]] += eta
    cost = np.array([c0 * a + c1 * b for a, b in states])
    best = math.inf
    picks = np.array(list(itertools.product((0, 1), repeat=int(free.sum()))), dtype=float)
    choices = np.zeros((len(picks), n))
    choices[:, free] = picks  # 1: dedicated (only the free states' choices matter)
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
    L = 3  # 16 states, 9 free (both servers with room): 512 policies
    opt = optimal_policy(inst, L, rtol=1e-10)
    ref = _brute_force_optimum(inst, L)
    assert opt.converged and not opt.certified
    assert opt.lower - 1e-12 <= ref <= opt.upper + 1e-12
    assert opt.cost == pytest.approx(ref, rel=1e-8)


def test_c1_optimum_on_a_box_is_the_best_of_every_deterministic_policy():
    inst = Instance(mu=[1.0, 0.8], cost=[1.0, 2.5], eta=[1.2])
    opt = optimal_policy(inst, (5, 3), rtol=1e-10)  # 24 states, 15 free: 32 768 policies
    ref = _brute_force_optimum(inst, 5, 3)
    assert opt.levels == (5, 3) and opt.relative_values.shape == (6, 4)
    assert opt.lower - 1e-12 <= ref <= opt.upper + 1e-12
    assert opt.cost == pytest.approx(ref, rel=1e-8)


def test_c1_optimal_table_is_a_switching_curve_inside_the_box():
    """Away from the truncation the C = 1 optimum routes to the dedicated server below a
    nondecreasing switching curve x_1 <= f(x_0) (a threshold in x_1 for each x_0)."""
    inst = Instance(mu=[1.0, 0.8], cost=[1.0, 2.5], eta=[1.2])
    opt = optimal_policy(inst, rtol=1e-7)
    d = opt.decision_table()[..., 0]
    inner0, inner1 = opt.levels[0] // 2, opt.levels[1] // 2
    thresholds = []
    for x0 in range(inner0):
        col = d[x0, :inner1]
        k = int(np.argmin(col)) if not col.all() else inner1
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
    for policy in STATE_POLICIES:
        ev = evaluate_policy(inst, policy, L, certify=False)
        assert opt.lower <= ev.cost * (1 + 1e-9), policy


@settings(max_examples=5, deadline=None)
@given(small_instances())
def test_certified_optimum_below_optimal_bernoulli_routing(inst):
    """Against the exact solver's cost of optimal Bernoulli routing (independent M/M/1
    queues, no truncation at all)."""
    from queue_routing.multiskill import solve

    opt = optimal_policy(inst, rtol=1e-5)
    assert opt.certified and opt.cost <= solve(inst).cost * (1 + 1e-4)


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
    """multiskill.markov's chain loses a job sent to a full server where ours redirects it:
    at a level whose boundary holds no mass in double precision they are the same system,
    and their costs agree to the solves' accuracy (the boundary itself: the box tests)."""
    light = Instance(mu=C2.mu, cost=C2.cost, eta=[0.6, 0.3])  # C2 at half its load
    L = 22
    ours = evaluate_policy(light, policy, L, certify=False, rtol=1e-9)  # residual 1e-13 Lambda
    ref = stationary_cost(light, policy, L, method="direct")  # sparse LU of the generator
    assert ref.boundary_mass < 1e-14 and ours.boundary_mass < 1e-14
    assert ours.cost == pytest.approx(ref.cost, rel=1e-9)
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
    mask = index_mask(np.ascontiguousarray(w[:, None] * (np.arange(L + 1) + 1.0)), chain_box(2, L))
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
def _table_generator(inst: Instance, mask: np.ndarray, L) -> tuple[np.ndarray, np.ndarray]:
    """The dense generator ``Q`` of a decision table (bit ``i - 1``: class ``i`` to server
    ``i``; a job whose chosen server is full goes to the other, and is lost if both are full)
    and the holding cost of each state, written from the chain's definition state by state
    (C order), on the cube of level ``L`` or the box of levels ``L = (L_0, ..., L_C)``."""
    n_srv = inst.n_classes + 1
    top = [L] * n_srv if isinstance(L, int) else list(L)
    shape = tuple(t + 1 for t in top)
    n = int(np.prod(shape))
    states = list(itertools.product(*(range(t + 1) for t in top)))
    q = np.zeros((n, n))
    for s, x in enumerate(states):
        for j in range(n_srv):
            if x[j] > 0:
                y = list(x)
                y[j] -= 1
                q[s, np.ravel_multi_index(y, shape)] += inst.mu[j]
        for i in range(1, n_srv):
            dest = i if (int(mask[s]) >> (i - 1)) & 1 else 0
            if x[dest] == top[dest]:
                dest = 0 if dest == i else i
            if x[dest] < top[dest]:
                y = list(x)
                y[dest] += 1
                q[s, np.ravel_multi_index(y, shape)] += inst.eta[i - 1]
    q -= np.diag(q.sum(axis=1))
    hold = np.array([float(np.dot(inst.cost, x)) for x in states])
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
    mask = index_mask(np.ascontiguousarray(w[:, None] * (np.arange(L + 1) + 1.0)), chain_box(2, L))
    g_ref, h_ref = _poisson_reference(*_table_generator(inst, mask, L))
    h, lower, upper = policy_relative_values(inst, mask, L, rtol=1e-12, method="policy")
    assert lower - 1e-9 <= g_ref <= upper + 1e-9
    assert 0.5 * (lower + upper) == pytest.approx(g_ref, rel=1e-10)
    np.testing.assert_allclose(h.reshape(-1), h_ref, rtol=1e-8, atol=1e-8 * np.abs(h_ref).max())
    ev = evaluate_policy(inst, "led", L, certify=False, rtol=1e-9)  # the simulator's LED
    assert ev.cost == pytest.approx(g_ref, rel=1e-8)


def test_two_level_stationary_law_matches_a_dense_solve_and_plain_gauss_seidel():
    inst = Instance(mu=[1.5, 1.0, 0.8], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0])  # load 0.76
    L = 12
    ours = evaluate_policy(inst, "io", L, certify=False, rtol=1e-9, method="policy")
    q, hold = _table_generator(inst, _index_table_reference(inst, "io", (L,) * 3), L)
    cost, pi = _stationary_reference(q, hold)
    states = np.array(list(itertools.product(range(L + 1), repeat=3)))
    assert ours.cost == pytest.approx(cost, rel=1e-8)
    assert ours.boundary_mass == pytest.approx(float(pi[(states == L).any(axis=1)].sum()), rel=1e-5)
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
    for policy in STATE_POLICIES:
        ev = evaluate_policy(inst, policy, L, certify=False, method="policy")
        assert opt.lower <= ev.cost * (1 + 1e-8), policy


# -- boxes: a level per server -------------------------------------------------------------------
BOX = (6, 3, 4)


def _index_table_reference(inst: Instance, policy: str, top) -> np.ndarray:
    """An index policy's decision table on a box, state by state from its definition: class
    ``i`` to server ``i`` iff ``w_i (x_i + 1) <= w_0 (x_0 + 1)``."""
    from queue_routing.multiskill.policies import policy_weights

    w = policy_weights(inst, policy)
    out = []
    for x in itertools.product(*(range(t + 1) for t in top)):
        m = 0
        for i in range(1, inst.n_classes + 1):
            if w[i] * (x[i] + 1) <= w[0] * (x[0] + 1):
                m |= 1 << (i - 1)
        out.append(m)
    return np.array(out, dtype=np.uint32)


def _stationary_reference(q: np.ndarray, hold: np.ndarray) -> tuple[float, np.ndarray]:
    """``(cost, pi)`` of ``pi Q = 0``, ``sum pi = 1``, by one dense solve."""
    a = q.T.copy()
    a[-1, :] = 1.0
    rhs = np.zeros(q.shape[0])
    rhs[-1] = 1.0
    pi = np.linalg.solve(a, rhs)
    return float(pi @ hold), pi


@pytest.mark.parametrize("method", ["value", "policy"])
@pytest.mark.parametrize("policy", ["jsq", "led", "io", "pi"])
def test_index_policy_on_a_box_matches_a_dense_solve(policy, method):
    ev = evaluate_policy(C2, policy, BOX, certify=False, rtol=1e-10, method=method)
    mask = _index_table_reference(C2, policy, BOX)
    q, hold = _table_generator(C2, mask, BOX)
    cost, pi = _stationary_reference(q, hold)
    states = np.array(list(itertools.product(*(range(t + 1) for t in BOX))))
    edge = (states == np.array(BOX)).any(axis=1)
    assert ev.levels == BOX and ev.truncation == max(BOX)
    assert ev.cost == pytest.approx(cost, rel=1e-8)
    assert ev.boundary_mass == pytest.approx(float(pi[edge].sum()), rel=1e-6)
    np.testing.assert_allclose(ev.per_server_mean_jobs, pi @ states, rtol=1e-8)
    g_ref, h_ref = _poisson_reference(q, hold)
    h, lower, upper = policy_relative_values(C2, mask, BOX, rtol=1e-12, method=method)
    assert h.shape == tuple(t + 1 for t in BOX)
    assert lower - 1e-9 <= g_ref <= upper + 1e-9
    np.testing.assert_allclose(h.reshape(-1), h_ref, rtol=1e-7, atol=1e-7 * np.abs(h_ref).max())


def test_bernoulli_on_a_box_is_a_product_of_finite_queues():
    from queue_routing.multiskill.policies import arrival_rates

    rho = arrival_rates(C2) / np.asarray(C2.mu)
    means = []
    for r, t in zip(rho, BOX, strict=True):
        p = r ** np.arange(t + 1)
        means.append(float(np.arange(t + 1) @ p / p.sum()))
    assert bernoulli_chain(C2, BOX)[0] == pytest.approx(float(np.dot(C2.cost, means)), rel=1e-12)


def test_optimum_on_a_box_is_howards_policy_iteration_with_dense_solves():
    """Policy iteration written out with dense solves of each table's Poisson equation (the
    reference) ends at the optimum of value iteration on the same box."""
    top = (5, 3, 4)
    states = list(itertools.product(*(range(t + 1) for t in top)))
    index = {x: k for k, x in enumerate(states)}
    mask = _index_table_reference(C2, "pi", top)
    for _ in range(50):
        g, h = _poisson_reference(*_table_generator(C2, mask, top))
        new = mask.copy()
        for k, x in enumerate(states):
            up0 = h[index[(x[0] + 1, *x[1:])]] if x[0] < top[0] else h[k]
            for i in (1, 2):
                y = list(x)
                y[i] += 1
                upi = h[index[tuple(y)]] if x[i] < top[i] else h[k]
                bit = 1 << (i - 1)
                if (mask[k] & bit) and up0 < upi - 1e-9:
                    new[k] &= ~np.uint32(bit)
                elif not (mask[k] & bit) and upi < up0 - 1e-9:
                    new[k] |= np.uint32(bit)
        if np.array_equal(new, mask):
            break
        mask = new
    opt = optimal_policy(C2, top, rtol=1e-10)
    assert opt.lower - 1e-9 <= g <= opt.upper + 1e-9


@settings(max_examples=10, deadline=None)
@given(small_instances(), st.data())
def test_optimum_below_every_policy_on_a_random_box(inst, data):
    top = tuple(data.draw(st.integers(2, 7)) for _ in range(inst.n_classes + 1))
    opt = optimal_policy(inst, top, rtol=1e-9)
    assert opt.levels == top
    for policy in STATE_POLICIES:
        ev = evaluate_policy(inst, policy, top, certify=False)
        assert opt.lower <= ev.cost * (1 + 1e-9), policy


def test_box_and_cube_certify_the_same_optimum():
    """The automatic box (levels raised by their faces) and the cube reach the same
    certified optimum, the box with fewer states, and each policy's certified cost too."""
    from queue_routing.multiskill.optimal import n_states

    inst = Instance(mu=[1.0, 1.0, 1.0], cost=[1.0, 2.0, 4.0], eta=[0.9, 0.9])  # load 0.6
    rtol = 1e-5
    box = compare_with_optimum(inst, ["pi", "jsq"], rtol=rtol)
    cube = compare_with_optimum(inst, ["pi", "jsq"], rtol=rtol, shape="cube")
    assert box.optimal.certified and cube.optimal.certified
    assert abs(box.optimal.cost - cube.optimal.cost) <= 2 * rtol * cube.optimal.cost
    assert n_states(2, box.optimal.levels) < n_states(2, cube.optimal.levels)
    for name in ("pi", "jsq"):
        assert box.evaluations[name].certified
        ref = cube.evaluations[name].cost
        assert box.evaluations[name].cost == pytest.approx(ref, rel=2 * rtol)
    assert all(
        b >= o for b, o in zip(box.evaluations["pi"].levels, box.optimal.levels, strict=True)
    )


@pytest.mark.parametrize("bad", [0, (5, 5), (5, 0, 5), "5", 2.5, (5, 5, 5.5)])
def test_a_bad_truncation_is_named(bad):
    with pytest.raises(ArgumentError, match="truncation") as info:
        optimal_policy(C2, bad)
    assert info.value.argument == "truncation"


def test_table_simulation_on_a_box_is_the_simulator_away_from_its_faces():
    from queue_routing.multiskill.simulation import simulate_replications
    from queue_routing.multiskill.table_simulation import simulate_table_replications

    top = (40, 25, 20)
    mask = _index_table_reference(C2, "pi", top)
    run = {"horizon": 300.0, "seed": 4, "keys": ("table",), "start": "bernoulli"}
    ours = simulate_table_replications(C2, mask, top, range(3), **run)
    ref = simulate_replications(C2, "pi", range(3), **run)
    assert sum(ours.table_bound_per_replication) == 0  # no count beyond the box
    assert np.array_equal(ours.means, ref.means)


def test_pi2_extended_is_pi2_on_its_box_and_pi_beyond_it():
    from queue_routing.multiskill.optimal import pi2_extended

    F = (8, 5, 6)
    h, _, _ = policy_relative_values(C2, "pi", F, rtol=1e-10)
    on_f = pi2_table(C2, F, rtol=1e-10)
    assert np.array_equal(pi2_extended(C2, h, F), on_f)
    top = (14, 9, 10)
    big = pi2_extended(C2, h, top).reshape(15, 10, 11)
    pi = _index_table_reference(C2, "pi", top).reshape(15, 10, 11)
    assert np.array_equal(big[:8, :5, :6], on_f.reshape(9, 6, 7)[:8, :5, :6])  # inside F
    assert np.array_equal(big[9:14, 6:9, 7:10], pi[9:14, 6:9, 7:10])  # beyond F, off the faces


def test_certified_pi2_is_no_worse_than_certified_pi():
    cmp = compare_with_optimum(C2, ["pi", "pi2"], rtol=1e-6)
    pi, pi2 = cmp.evaluations["pi"], cmp.evaluations["pi2"]
    assert pi.certified and pi2.certified
    assert cmp.optimal.lower * (1 - 1e-6) <= pi2.cost <= pi.cost * (1 + 2e-6)


# -- the search in rounds: the same arithmetic as one uninterrupted search -------------------
def _same_result(a, b):
    """Every number of two results equal to the bit (wall time apart)."""
    assert (a.cost, a.lower, a.upper, a.levels, a.history) == (
        b.cost,
        b.lower,
        b.upper,
        b.levels,
        b.history,
    )
    assert (a.iterations, a.converged, a.certified) == (b.iterations, b.converged, b.certified)
    assert (a.boundary_mass, a.lost_rate, a.table_cost) == (
        b.boundary_mass,
        b.lost_rate,
        b.table_cost,
    )
    for x, y in [
        (a.mask, b.mask),
        (a.relative_values, b.relative_values),
        (a.face_mass, b.face_mass),
    ]:
        assert x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize(
    "inst, kwargs",
    [
        (Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[2.8]), {"rtol": 1e-4}),  # load 0.8
        (Instance(mu=[1.0, 1.0, 1.0], cost=[1.0, 2.0, 4.0], eta=[1.05, 1.05]), {"rtol": 1e-4}),
        (C2, {"rtol": 1e-4, "shape": "cube"}),
        (C2, {"rtol": 1e-4, "truncation": 12}),
        (
            Instance(mu=[1.0, 0.8, 0.6, 0.5], cost=[1.0, 2.0, 1.5, 3.0], eta=[0.5, 0.5, 0.4]),
            {"rtol": 1e-3},
        ),
    ],
    ids=["C1-load0.8", "C2-load0.7", "C2-cube", "C2-explicit", "C3"],
)
def test_a_search_resumed_block_by_block_from_its_files_is_the_uninterrupted_one(
    inst, kwargs, tmp_path
):
    """Advanced a block (or a box's end) at a time, saved and loaded between the rounds, the
    search gives the uninterrupted :func:`optimal_policy`'s result to the bit."""
    whole = optimal_policy(inst, strict=False, **kwargs)
    truncation = kwargs.pop("truncation", None)
    search = OptimalSearch.start(inst, truncation, **kwargs)
    rounds = 1
    while not search.advance(seconds=0.0):
        search.save(tmp_path / "search.npz")
        search = OptimalSearch.load(tmp_path / "search.npz", inst)
        rounds += 1
    assert rounds >= len(whole.history)  # a round a box at least
    _same_result(search.result(strict=False), whole)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here")
@pytest.mark.parametrize(
    "inst, kwargs",
    [
        (C2, {"rtol": 1e-5}),
        (C2, {"rtol": 1e-5, "policy": "pi"}),  # PI's values on a box (PI²'s first step)
        (
            Instance(mu=[1.0, 0.8, 0.6, 0.5], cost=[1.0, 2.0, 1.5, 3.0], eta=[0.5, 0.5, 0.4]),
            {"rtol": 1e-3},
        ),
    ],
    ids=["C2", "C2-pi-values", "C3"],
)
def test_value_iteration_on_threads_is_the_one_threads_to_the_bit(inst, kwargs, monkeypatch):
    """The compiled kernels of C = 2 and 3 run a step's rows on numba's threads: any number
    of threads gives the values and bounds of one thread, bit for bit (every box on the
    threads here, however small)."""
    monkeypatch.setattr(optimal, "PARALLEL_MIN_STATES", 0)
    truncation = (14, 9, 9) if "policy" in kwargs else None  # a policy's values: on a box

    def run(threads):
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            search = OptimalSearch.start(inst, truncation, **kwargs)
            search.advance()
            if "policy" in kwargs:
                return search.policy_values()
            return search.result(strict=False)
        finally:
            numba.set_num_threads(before)

    one, many = run(1), run(min(4, numba.config.NUMBA_NUM_THREADS))
    if "policy" in kwargs:
        assert all(np.array_equal(a, b) for a, b in zip(one, many, strict=True))
    else:
        _same_result(one, many)


def test_a_saved_search_is_for_its_own_instance_and_read_when_done(tmp_path):
    search = OptimalSearch.start(C2, rtol=1e-3)
    with pytest.raises(ArgumentError, match="not done yet"):
        search.result()
    search.advance(seconds=0.0)
    search.save(tmp_path / "s.npz")
    other = Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.7])
    with pytest.raises(ArgumentError, match="another instance"):
        OptimalSearch.load(tmp_path / "s.npz", other)


def test_a_case_in_rounds_gives_the_rows_of_the_case_in_one_job(tmp_path):
    """The study's case cut into rounds of no time at all (a block, a box or a policy each;
    PI²'s values of PI a block at a time), saved and loaded between them, and finished from
    a round in the middle of PI²: its rows equal those of the uninterrupted case, every
    column to the bit."""
    kind, load, policies = "capacities-2", 0.7, ["bernoulli", "jsq", "pi", "pi2"]
    whole = optimal_gap_rows([(kind, load)], policies, rtol=1e-4)
    files = tmp_path / "s.npz", tmp_path / "e.json"
    progress, rounds, pi2_rounds = None, 0, 0
    while progress is None or progress.values is None or pi2_rounds < 2:
        progress = optimal_case_round(kind, load, policies, rtol=1e-4, seconds=0.0,
                                      progress=progress)  # fmt: skip
        assert not save_case_round(progress, policies, *files)
        progress = load_case_round(kind, load, *files)
        rounds += 1
        pi2_rounds += progress.values is not None
    assert rounds > 4 and list(progress.evaluations) == ["bernoulli", "jsq", "pi"]
    assert progress.values.box_iterations > 0 and not progress.values.done  # PI² under way
    rows = finish_case_rows(kind, load, policies, rtol=1e-4, progress=progress)
    assert rows.to_csv(index=False) == whole.to_csv(index=False)
    assert list(rows["policy"]) == policies


def test_the_memory_requested_for_a_case_bounds_its_chain():
    """The cost model's bytes a state are the solver's, and its prediction for a case holds
    the boxes the search ends on (the optimum's and each policy's)."""
    assert resources.MULTISKILL_OPTIMAL_BYTES_PER_STATE == BYTES_PER_STATE
    for kind, load in [("table1-2", 0.7), ("costs-2", 0.7)]:
        inst = scaled_instance(kind, load)
        cmp = compare_with_optimum(inst, ["jsq", "pi"], rtol=1e-4)
        bound = resources.multiskill_optimal_mb(inst.n_classes, load, 1e-4) * 2**20
        for levels in [cmp.optimal.levels, *(ev.levels for ev in cmp.evaluations.values())]:
            assert chain_bytes(inst.n_classes, levels) <= bound, (kind, load, levels)
