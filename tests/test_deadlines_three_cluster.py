"""Three clusters of Part B: the compiled optimum (``deadlines/markov.py``, every number of
clusters), the evaluation and the simulation of ``deadlines/three_cluster.py``, and the
n-cluster study of ``deadlines/experiments.py``, against independent references.

References: brute-force enumeration of every deterministic stationary policy on a tiny
truncation, each evaluated by a dense generic linear solve of its stationary law written
here; policy iteration with a sparse generic solve of the Poisson equation (exact, another
algorithm); the vectorised value iteration and the sparse direct stationary solve of
``markov.py`` (second implementations); the two-cluster optimum of ``markov.py`` with a
useless third cluster; and a simulation of the queueing system itself under the optimal
decision table (each job's own FCFS response time against its own deadline).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import spsolve

from _stats import assert_mean_agrees
from queue_routing.deadlines import experiments, instances, markov, policies
from queue_routing.deadlines.indices import IndexabilityWarning
from queue_routing.deadlines.markov import (
    LOST,
    REJECT,
    optimal_policy,
    optimal_policy_converged,
)
from queue_routing.deadlines.miss import miss_probability
from queue_routing.deadlines.model import Cluster, Deadline, Instance
from queue_routing.deadlines.three_cluster import (
    evaluate_3,
    product_form_3,
    simulate_actions,
    stationary_3,
)
from queue_routing.errors import AccuracyError

CONST = Deadline("constant", t=1.5)
THREE = ((3, 1.0), (2, 0.8), (1, 0.6))


def _inst(lam, r_cost, clusters=THREE, deadline=CONST):
    return Instance(lam, tuple(Cluster(m, mu) for m, mu in clusters), r_cost, deadline)


# -- independent references ------------------------------------------------------------------
def _states(n, L):
    return list(itertools.product(range(L + 1), repeat=n))


def _policy_cost(inst, L, actions):
    """Average cost of the deterministic policy ``actions`` (state -> cluster / REJECT /
    LOST) by a dense solve of ``pi Q = 0, sum pi = 1`` (least squares on the stacked
    system), with the miss probabilities from ``miss.py``."""
    n = inst.n_clusters
    states = _states(n, L)
    where = {x: i for i, x in enumerate(states)}
    q = np.zeros((len(states), len(states)))
    cost = np.zeros(len(states))
    lam = inst.arrival_rate
    for x in states:
        i = where[x]
        a = actions[x]
        if a >= 0:
            y = list(x)
            y[a] += 1
            q[i, where[tuple(y)]] += lam
            c = inst.clusters[a]
            pm = miss_probability(np.array([x[a]]), c.servers, c.rate, inst.deadline)
            cost[i] = lam * float(pm[0])
        elif a == REJECT:
            cost[i] = lam * inst.rejection_cost
        for k, c in enumerate(inst.clusters):
            if x[k] > 0:
                y = list(x)
                y[k] -= 1
                q[i, where[tuple(y)]] += c.rate * min(x[k], c.servers)
    q -= np.diag(q.sum(axis=1))
    a_mat = np.vstack([q.T, np.ones(len(states))])
    b = np.zeros(len(states) + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a_mat, b, rcond=None)[0]
    return float(pi @ cost)


def _all_policies(inst, L):
    """Every deterministic stationary policy of the truncated MDP: in each state a cluster
    below ``L``, or reject (finite R); lost only when pure routing finds every cluster full;
    with finite R a full system must reject (the chain's default semantics)."""
    n = inst.n_clusters
    states = _states(n, L)
    choices = []
    for x in states:
        opts = [k for k in range(n) if x[k] < L]
        if inst.rejection_cost is not None:
            opts.append(REJECT)
        choices.append(opts or [LOST])
    for combo in itertools.product(*choices):
        yield dict(zip(states, combo, strict=True))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    load=st.floats(0.1, 1.5),
    mus=st.tuples(*(st.floats(0.2, 2.0) for _ in range(3))),
    servers=st.tuples(*(st.integers(1, 3) for _ in range(3))),
    r_cost=st.one_of(st.none(), st.floats(0.1, 3.0)),
    t=st.floats(0.2, 3.0),
)
def test_optimum_is_the_best_deterministic_policy_by_enumeration(load, mus, servers, r_cost, t):
    """L = 1: 4 * 3^3 * 2^3 = 864 policies with rejection (24 in pure routing), each solved
    densely; the compiled value iteration's optimum is the smallest of their costs."""
    clusters = tuple(zip(servers, mus, strict=True))
    load = load if r_cost is not None else min(load, 0.95)  # pure routing needs load < 1
    lam = load * sum(m * mu for m, mu in clusters)
    inst = _inst(lam, r_cost, clusters, Deadline("constant", t=t))
    best = min(_policy_cost(inst, 1, a) for a in _all_policies(inst, 1))
    opt = optimal_policy(inst, 1, 1e-12)
    assert opt.converged
    assert abs(opt.cost - best) <= 1e-9 * max(1.0, best)
    table = {x: int(opt.actions[x]) for x in _states(3, 1)}
    assert abs(_policy_cost(inst, 1, table) - best) <= 1e-9 * max(1.0, best)


def _policy_iteration(inst, L):
    """Exact optimal average cost by policy iteration: each policy's gain and relative
    values from a sparse solve of ``g + h(x) = c(x) + sum_y q(x, y) (h(y) - h(x))`` with
    ``h(0) = 0``, improvement by the greedy choice (kept on ties)."""
    n = inst.n_clusters
    states = _states(n, L)
    size = len(states)
    where = {x: i for i, x in enumerate(states)}
    lam = inst.arrival_rate
    pm = [miss_probability(np.arange(L + 1), c.servers, c.rate, inst.deadline)
          for c in inst.clusters]  # fmt: skip
    up = [[where[tuple(x[j] + (j == k) for j in range(n))] if x[k] < L else -1 for x in states]
          for k in range(n)]  # fmt: skip
    down = [[where[tuple(x[j] - (j == k) for j in range(n))] if x[k] > 0 else -1 for x in states]
            for k in range(n)]  # fmt: skip
    act = np.array([0 if states[i][0] < L else REJECT for i in range(size)])
    if inst.rejection_cost is None:
        act = np.array([next((k for k in range(n) if x[k] < L), LOST) for x in states])
    for _ in range(100):
        rows, cols, vals = [], [], []
        cost = np.zeros(size)
        for i, x in enumerate(states):
            a = act[i]
            if a >= 0:
                rows += [i, i]
                cols += [up[a][i], i]
                vals += [lam, -lam]
                cost[i] = lam * pm[a][x[a]]
            elif a == REJECT:
                cost[i] = lam * inst.rejection_cost
            for k, c in enumerate(inst.clusters):
                if x[k] > 0:
                    rate = c.rate * min(x[k], c.servers)
                    rows += [i, i]
                    cols += [down[k][i], i]
                    vals += [rate, -rate]
        q = sp.coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsc()
        # unknowns (g, h(1..N-1)): g - (Q h)(x) = c(x)
        a_mat = sp.hstack([sp.csc_matrix(np.ones((size, 1))), -q[:, 1:]]).tocsc()
        sol = spsolve(a_mat, cost)
        g, h = sol[0], np.concatenate([[0.0], sol[1:]])
        new = act.copy()
        for i, x in enumerate(states):
            opts = [(pm[k][x[k]] + h[up[k][i]], k) for k in range(n) if x[k] < L]
            if inst.rejection_cost is not None:
                opts.append((inst.rejection_cost + h[i], REJECT))
            if not opts:
                continue
            val, k = min(opts, key=lambda o: o[0])
            cur = next((v for v, kk in opts if kk == act[i]), math.inf)
            if val < cur - 1e-12:
                new[i] = k
        if np.array_equal(new, act):
            return float(g)
        act = new
    raise AssertionError("policy iteration did not stop")


@pytest.mark.parametrize("r_cost", [0.8, 2.0, None])
def test_optimum_equals_policy_iteration(r_cost):
    inst = _inst(2.6, r_cost)
    opt = optimal_policy(inst, 5, 1e-11)
    assert opt.converged
    assert abs(opt.cost - _policy_iteration(inst, 5)) < 1e-9


# -- second implementations ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("clusters", "level", "r_cost", "losses"),
    [(THREE[:2], 20, 2.0, False), (THREE, 10, 2.0, True), (THREE, 10, None, False)],
)
def test_kernel_is_the_vectorised_value_iteration_bit_for_bit(clusters, level, r_cost, losses):
    inst = _inst(0.85 * sum(m * mu for m, mu in clusters), r_cost, clusters)
    a = markov.optimal_policy_vectorised(inst, level, 1e-8, truncation_losses=losses)
    b = optimal_policy(inst, level, 1e-8, truncation_losses=losses)
    assert (a.cost, a.lower, a.upper, a.iterations) == (b.cost, b.lower, b.upper, b.iterations)
    assert np.array_equal(a.actions, b.actions)
    assert np.array_equal(a.relative_values, b.relative_values)


def test_iterative_evaluation_matches_the_sparse_direct_solve():
    inst = _inst(4.4, 1.25)
    level = 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexabilityWarning)
        for p in ("io", "pi", "rb"):
            keys = policies.decision_table(inst, policies.index_table(inst, p, level))
            direct = markov.evaluate_index_policy(inst, keys, level)
            ours = evaluate_3(inst, "index", level, table=keys, tol=1e-10)
            assert abs(ours.cost - direct.cost) < 1e-9
            assert abs(ours.truncation_rate - direct.truncation_rate) < 1e-8
    bs_direct = markov.evaluate_split(inst, level)
    bs = evaluate_3(inst, "bs", level)
    assert abs(bs.cost - bs_direct.cost) < 1e-11
    assert np.allclose(bs.cluster_admission_rate, bs_direct.cluster_admission_rate, atol=1e-11)


def test_product_form_refuses_a_state_dependent_routing():
    inst = _inst(2.0, None)
    x = markov.state_grid(3, 4)
    route = np.zeros((len(x), 3))
    route[np.arange(len(x)), np.argmin(x, axis=1)] = 1.0  # join the shortest queue
    with pytest.raises(ValueError, match="route: cluster 1 is not fed by a Bernoulli split"):
        product_form_3(inst, 4, route, np.zeros(len(x)))


def test_stationary_3_reports_non_convergence():
    inst = _inst(4.4, None)
    x = markov.state_grid(3, 12)
    route = np.where(x < 12, 1.0 / 3.0, 0.0)
    with pytest.raises(ValueError, match="truncation: the stationary law at level 12 did not"):
        stationary_3(inst, 12, route, np.zeros(len(x)), max_iter=5)


# -- the optimum against the heuristics and the two-cluster optimum ---------------------------
@pytest.mark.parametrize(("load", "r_cost"), [(0.6, 1.25), (0.95, 0.75), (0.5, None)])
def test_optimum_no_worse_than_every_heuristic(load, r_cost):
    """Every heuristic evaluated by the sparse direct solve of ``markov.py`` at the optimum's
    level, charged as the optimum is (rejections the level forces cost R)."""
    inst = _inst(load * 5.2, r_cost)
    opt = optimal_policy(inst, 12, 1e-9)
    assert opt.converged
    for p in ("bs", "io", "pi", "rb"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IndexabilityWarning)
            res = policies.evaluate(inst, p, truncation=12)
        assert opt.cost <= res.cost + 1e-9, p


def test_useless_third_cluster_gives_the_two_cluster_optimum():
    """A third cluster of rate 1e-6: a job sent there misses with probability ~1 > R = 0.9,
    so the optimum never uses it and equals the two-cluster optimum of ``markov.py``."""
    two = _inst(3.5, 0.9, THREE[:2])
    three = _inst(3.5, 0.9, (*THREE[:2], (1, 1e-6)))
    ref = markov.optimal_policy(two, 20, 1e-10)
    opt = optimal_policy(three, 20, 1e-10)
    assert ref.converged and opt.converged
    assert abs(opt.cost - ref.cost) < 1e-8
    assert not (opt.actions == 2).any()
    assert np.array_equal(opt.actions[:, :, 0], ref.actions)


def test_truncation_check_raises_the_level_until_stable():
    inst = _inst(0.8 * 5.2, 1.0)
    opt = optimal_policy_converged(inst, 6, 1e-6)
    levels = [lv for lv, _ in opt.history]
    assert levels[0] == 6 and opt.truncation == levels[-1] and len(levels) >= 2
    assert abs(opt.history[-1][1] - opt.history[-2][1]) < 1e-6
    bigger = optimal_policy(inst, math.ceil(1.5 * opt.truncation), 1e-9)
    assert abs(bigger.cost - opt.cost) < 1e-5
    # the levels' value iterations one by one, each warm-started from the last: the final
    # level's policy bit for bit, and the iterations summed over the levels
    runs, h0 = [], None
    for level in levels:
        runs.append(optimal_policy(inst, level, 1e-8, h0=h0))
        h0 = runs[-1].relative_values
    assert [r.cost for r in runs] == [c for _, c in opt.history]
    assert (runs[-1].cost, runs[-1].lower, runs[-1].upper) == (opt.cost, opt.lower, opt.upper)
    assert np.array_equal(runs[-1].actions, opt.actions)
    assert opt.iterations == sum(r.iterations for r in runs)


def test_truncation_check_stops_at_the_level_limit_of_three_clusters():
    """Pure routing at load 0.95: the slow clusters' queues grow, the cost is not stable
    below level 20 (given), nor by default below level 120 (three clusters)."""
    inst = _inst(0.95 * 5.2, None)
    with pytest.raises(AccuracyError, match=r"^truncation: optimal cost not stable .* level 20"):
        optimal_policy_converged(inst, 8, 1e-9, max_level=20)
    assert markov.DEFAULT_MAX_LEVEL == {1: 400, 2: 400, 3: 120}


# -- simulation of the optimal decision table -------------------------------------------------
@pytest.mark.parametrize(("lam", "r_cost"), [(4.0, 1.25), (2.6, None)])
def test_simulated_optimal_table_agrees_with_its_exact_cost(lam, r_cost):
    """The FCFS system under the optimal table of level 10 (it never exceeds 10 jobs per
    cluster, so the chain is exact for it): 20 replications, Bonferroni t tolerance at
    family-wise level 1% over the two instances."""
    inst = _inst(lam, r_cost)
    opt = optimal_policy(inst, 10, 1e-10)
    exact = markov.evaluate_actions(inst, opt.actions, 10)
    sim = simulate_actions(
        inst, opt.actions, horizon=1500.0, warmup=100.0, replications=20, seed=14,
        keys=("three-cluster-test", int(r_cost is None)),
    )  # fmt: skip
    assert_mean_agrees(sim.replication_costs, exact.cost, 2, "optimal table")
    assert sim.lost_rate <= 0.05 * lam


def test_results_have_their_json_objects():
    """``to_dict()`` of the optimum and of a simulated table: plain JSON, the cost under
    ``cost``, the simulation's standard error the replications' sample sd over sqrt(R)."""
    import json

    inst = _inst(4.0, 1.25)
    opt = optimal_policy_converged(inst, 4, 1e-6)
    d = opt.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert (d["cost"], d["truncation"]) == (opt.cost, opt.truncation)
    assert (d["iterations"], d["converged"]) == (opt.iterations, True)
    assert d["history"] == [[level, cost] for level, cost in opt.history]
    sim = simulate_actions(inst, opt.actions, horizon=200.0, warmup=10.0, replications=4, seed=1)
    d = sim.to_dict()
    assert json.loads(json.dumps(d)) == d
    costs = sim.replication_costs
    assert (d["cost"], d["ci95"], d["replications"]) == (sim.cost, sim.ci95, 4)
    assert d["standard_error"] == pytest.approx(np.std(costs, ddof=1) / 2.0, rel=1e-12)
    assert d["cost"] == pytest.approx(1.25 * d["rejection_rate"] + d["miss_rate"], rel=1e-12)


def test_simulate_actions_refuses_bad_tables():
    inst = _inst(2.0, 1.0)
    with pytest.raises(ValueError, match=r"actions must have shape \(L\+1,\)\*3"):
        simulate_actions(inst, np.zeros((3, 3)), horizon=1.0, warmup=0.0, replications=2, seed=0)
    table = np.zeros((3, 3, 3), dtype=int)
    with pytest.raises(ValueError, match="actions route to a cluster at level L"):
        simulate_actions(inst, table, horizon=1.0, warmup=0.0, replications=2, seed=0)
    pure = _inst(2.0, None)
    with pytest.raises(ValueError, match="actions reject, but the instance has no rejection"):
        simulate_actions(pure, np.full((2, 2, 2), REJECT), horizon=1.0, warmup=0.0,
                         replications=2, seed=0)  # fmt: skip


# -- the study ---------------------------------------------------------------------------------
def test_matched_instances_share_load_cost_and_deadline():
    block = {"servers": [3, 2, 1], "service_rates": [1.0, 0.8, 0.6], "load": 0.9,
             "rejection_cost": 1.25, "deadline": "uniform", "mean_deadline": 1.5,
             "uniform_spread": 0.6}  # fmt: skip
    two = instances.three_cluster_instance(block, 2)
    three = instances.three_cluster_instance(block, 3)
    assert two.servers.tolist() == [3, 2] and three.servers.tolist() == [3, 2, 1]
    assert math.isclose(two.arrival_rate / two.capacity, 0.9)
    assert math.isclose(three.arrival_rate / three.capacity, 0.9)
    assert two.deadline == three.deadline and two.rejection_cost == three.rejection_cost


def test_gap_table_pairs_points_and_drops_bound_ones():
    base = {"sweep": "load", "value": 0.5, "distribution": "constant", "load": 0.5,
            "rejection_cost": 1.0}  # fmt: skip
    rows = []
    for v, (g2, g3, b3) in zip((0.5, 0.9), [(1.0, 2.0, False), (3.0, 10.0, True)], strict=True):
        for n, g, b in ((2, g2, False), (3, g3, b3)):
            row = {**base, "value": v, "load": v, "clusters": n}
            for p in instances.HEURISTICS:
                row[f"gap_{p}_pct"] = g
                row[f"bound_{p}"] = b
            rows.append(row)
    table = experiments.gap_table(pd.DataFrame(rows), clusters=(2, 3), overall=True)
    pi = table[(table["sweep"] == "load") & (table["policy"] == "PI")].iloc[0]
    assert (pi.mean_gap_2_pct, pi.mean_gap_3_pct, pi.n_points, pi.n_bound) == (1.0, 2.0, 1, 1)
    assert set(table["sweep"]) == {"load", "all"}


def test_tiny_sweep_table_and_figure():
    """The study end to end on a tiny block: matched rows, gaps recomputed from the costs,
    BS in closed form, the optimum no worse than any heuristic, and the figure says "ours"."""
    from queue_routing.deadlines.figures import three_cluster_figure

    block = {"servers": [2, 1, 1], "service_rates": [1.0, 0.8, 0.6], "load": 0.7,
             "rejection_cost": 0.8, "deadline": "constant", "mean_deadline": 1.0,
             "uniform_spread": 0.5, "truncation": 6, "tol": 1e-4,
             "sweeps": {"load": [0.7], "rejection_cost": [1.2], "distribution": ["exponential"],
                        "distribution_loads": [0.6], "pure_routing": [0.5]}}  # fmt: skip
    family = {k: v for k, v in block.items() if k not in ("truncation", "tol", "sweeps")}
    df = pd.concat(
        [
            experiments.cluster_sweep(
                family, block["sweeps"], s, truncation=6, tol=1e-4, clusters=(2, 3)
            )
            for s in experiments.THREE_CLUSTER_SWEEPS
        ],
        ignore_index=True,
    )
    assert list(df["clusters"]) == [2, 3] * 4
    for row in df.itertuples():
        inst = instances.three_cluster_instance(
            block, row.clusters, load=row.load, deadline=row.distribution,
            rejection_cost=None if math.isnan(row.rejection_cost) else row.rejection_cost,
        )  # fmt: skip
        assert math.isclose(row.cost_bs, policies.evaluate(inst, "bs").cost, rel_tol=1e-12)
        for p in instances.HEURISTICS:
            cost = getattr(row, f"cost_{p}")
            assert math.isclose(
                getattr(row, f"gap_{p}_pct"), 100 * (cost - row.cost_optimal) / row.cost_optimal
            )
            assert cost >= row.cost_optimal - 1e-4
    assert df["iterations"].isna().tolist() == [True, False] * 4  # counted for three only
    assert (df["states"] == (df["L"] + 1) ** df["clusters"]).all()
    table = experiments.gap_table(df, clusters=(2, 3), overall=True)
    assert set(table["sweep"]) == {*experiments.THREE_CLUSTER_SWEEPS, "all"}
    fig, caption = three_cluster_figure(df)
    assert len(fig.axes) == 4
    assert caption.startswith("Ours") and "m = (2, 1, 1)" in caption


@pytest.mark.slow
def test_enumeration_on_many_seeded_instances():
    """The enumeration test on 150 seeded random instances (L = 1), rejection and pure
    routing alternating."""
    rng = np.random.default_rng(14)
    for i in range(150):
        servers = rng.integers(1, 4, 3)
        mus = rng.uniform(0.2, 2.0, 3)
        r_cost = None if i % 2 else float(rng.uniform(0.1, 3.0))
        clusters = tuple(zip(servers.tolist(), mus.tolist(), strict=True))
        load = rng.uniform(0.1, 0.95 if r_cost is None else 1.5)
        deadline = Deadline("constant", t=float(rng.uniform(0.2, 3.0)))
        inst = _inst(load * float(servers @ mus), r_cost, clusters, deadline)
        best = min(_policy_cost(inst, 1, a) for a in _all_policies(inst, 1))
        opt = optimal_policy(inst, 1, 1e-12)
        assert opt.converged
        assert abs(opt.cost - best) <= 1e-9 * max(1.0, best), i


def test_kernel_in_blocks_with_progress_and_warm_start_is_the_vectorised_iteration(monkeypatch):
    # optimal_policy runs the kernel in blocks between progress reports and warm-starts from
    # a smaller level's values: neither may change a bit of the result.
    inst = _inst(0.9 * sum(m * mu for m, mu in THREE[:2]), 2.0, THREE[:2])
    monkeypatch.setattr(markov, "_KERNEL_BLOCK", 100)
    calls = []
    start = markov.optimal_policy_vectorised(inst, 8, 1e-6).relative_values
    a = markov.optimal_policy_vectorised(inst, 14, 1e-10, h0=start)
    b = markov.optimal_policy(inst, 14, 1e-10, h0=start, progress=lambda n, **kw: calls.append(n))
    assert (a.cost, a.lower, a.upper, a.iterations) == (b.cost, b.lower, b.upper, b.iterations)
    assert np.array_equal(a.relative_values, b.relative_values)
    assert np.array_equal(a.actions, b.actions)
    assert sum(calls) == b.iterations and len(calls) >= 2
