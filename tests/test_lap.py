"""Leaf Activity Priority (serverpools.lap), its fluid mode, the simulator's LAP and static
routing modes, the CLI contract and the study's helpers, each against an independent reference:
hand-worked trees, a direct linear solve, breadth-first search from the root, finite
differences of the fluid stepper, a pure-Python event-by-event re-simulation on the same
uniforms, the Lyapunov solution within a Monte Carlo interval, and closed forms."""

import json
import math
from collections import deque

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm, solve_continuous_lyapunov
from scipy.special import gammaln

from queue_routing.cli import main
from queue_routing.errors import ArgumentError
from queue_routing.rng import uniforms
from queue_routing.serverpools import ServerPoolSystem, solve_spp
from queue_routing.serverpools.experiments import (
    gaussian_mean_norm,
    policy_warmup,
    price_of_stability,
)
from queue_routing.serverpools.fluid import fluid_trajectory, fluid_velocity
from queue_routing.serverpools.instances import example_system, tree_instance
from queue_routing.serverpools.lap import (
    analyze_disciplines,
    analyze_lap,
    lap_equilibrium,
    lap_priorities,
    lap_roots,
)
from queue_routing.serverpools.simulation import (
    initial_state,
    replication_states,
    simulate,
)
from queue_routing.serverpools.tree import random_spanning_tree
from queue_routing.workflow import resources as cost


# -- independent references ---------------------------------------------------------------------
def root_ward_edges(edges, n_i, n_j, root):
    """Breadth-first search from the root pool: each node's edge towards the root."""
    adj = [[] for _ in range(n_i + n_j)]
    for e, (i, j) in enumerate(edges):
        adj[i].append((n_i + j, e))
        adj[n_i + j].append((i, e))
    up = {n_i + root: None}
    todo = deque([n_i + root])
    while todo:
        v = todo.popleft()
        for u, e in adj[v]:
            if u not in up:
                up[u] = e
                todo.append(u)
    return up


def direct_equilibrium(system, edges, root):
    """Solve sum_j mu_ij psi_ij = lambda_i, sum_i psi_ij = beta_j (j != root) directly."""
    n_i, n_j = system.n_classes, system.n_pools
    a = np.zeros((n_i + n_j - 1, len(edges)))
    b = np.zeros(n_i + n_j - 1)
    for e, (i, j) in enumerate(edges):
        a[i, e] = system.rates[i, j]
    b[:n_i] = system.arrival_rates
    rows = [j for j in range(n_j) if j != root]
    for k, j in enumerate(rows):
        for e, (_, jj) in enumerate(edges):
            if jj == j:
                a[n_i + k, e] = 1.0
        b[n_i + k] = system.pool_sizes[j]
    return np.linalg.solve(a, b)


def manifold_state(solution, eq, x):
    """Occupancies with class totals x, every non-root pool full, no queues (direct solve)."""
    edges = solution.basic
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    a = np.zeros((n_i + n_j - 1, len(edges)))
    b = np.zeros(n_i + n_j - 1)
    for e, (i, _) in enumerate(edges):
        a[i, e] = 1.0
    b[:n_i] = x
    rows = [j for j in range(n_j) if j != eq.root_pool]
    for k, j in enumerate(rows):
        a[n_i + k, edges[:, 1] == j] = 1.0
        b[n_i + k] = system.pool_sizes[j]
    psi = np.zeros((n_i, n_j))
    psi[edges[:, 0], edges[:, 1]] = np.linalg.solve(a, b)
    return psi


def random_tree_solution(n_i, n_j, seed):
    """A system whose SPP optimum is a random spanning tree (rates and psi* drawn on it)."""
    rng = np.random.default_rng(seed)
    edges = random_spanning_tree(n_i, n_j, rng)
    tree = [
        (int(i) + 1, int(j) + 1, float(np.exp(rng.uniform(-2, 2))), float(rng.uniform(0.1, 1)))
        for i, j in edges
    ]
    return solve_spp(ServerPoolSystem.from_dict(tree_instance(tree, 0.8)))


N_SHAPE = ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])


# -- priorities ---------------------------------------------------------------------------------
def test_priorities_of_hand_checked_trees():
    # path C1 - P1 - C2 - P2 - C3 rooted at P1: leaves C1 (edge 0) and C3 (edge 3) first
    # (lowest number first), then P2 (edge 2: P2's only edge left), then C2 (edge 1)
    path = np.array([[0, 0], [1, 0], [1, 1], [2, 1]])
    assert lap_priorities(path, 3, 2, root_pool=0).tolist() == [0, 3, 2, 1]
    # rooted at P2: C1 (0) and C3 (3), then P1 (edge 1) after C1 leaves it, then C2 (2)
    assert lap_priorities(path, 3, 2, root_pool=1).tolist() == [0, 3, 1, 2]
    # a star: one pool serving three classes, every class a leaf in turn
    star = np.array([[0, 0], [1, 0], [2, 0]])
    assert lap_priorities(star, 3, 1, root_pool=0).tolist() == [0, 1, 2]
    # one class, three pools rooted at the middle one: the two other pools are leaves
    fan = np.array([[0, 0], [0, 1], [0, 2]])
    assert lap_priorities(fan, 1, 3, root_pool=1).tolist() == [0, 2, 1]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 10**6), st.data())
def test_priorities_eliminate_leaves_and_end_at_the_root(n_i, n_j, seed, data):
    edges = random_spanning_tree(n_i, n_j, np.random.default_rng(seed))
    root = data.draw(st.integers(0, n_j - 1))
    order = lap_priorities(edges, n_i, n_j, root)
    assert sorted(order.tolist()) == list(range(len(edges)))
    # replay: each edge has an end of degree one in the remaining tree, never the root
    degree = np.zeros(n_i + n_j, dtype=int)
    for i, j in edges:
        degree[i] += 1
        degree[n_i + j] += 1
    up = root_ward_edges(edges, n_i, n_j, root)
    for e in order:
        i, j = int(edges[e, 0]), n_i + int(edges[e, 1])
        leaf = i if degree[i] == 1 else j
        assert degree[leaf] == 1 and leaf != n_i + root
        assert up[leaf] == e  # a node leaves through its edge towards the root
        degree[i] -= 1
        degree[j] -= 1


# -- equilibrium --------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 10**6), st.data())
def test_equilibrium_solves_its_linear_equations(n_i, n_j, seed, data):
    sol = random_tree_solution(n_i, n_j, seed)
    system = sol.system
    root = data.draw(st.integers(0, n_j - 1))
    eq = lap_equilibrium(sol, root)
    direct = direct_equilibrium(system, sol.basic, root)
    got = eq.occupancy[sol.basic[:, 0], sol.basic[:, 1]]
    assert np.allclose(got, direct, rtol=1e-9, atol=1e-12 * np.abs(direct).max())
    load = direct[sol.basic[:, 1] == root].sum() / system.pool_sizes[root]
    assert eq.root_load == pytest.approx(load, rel=1e-9, abs=1e-12)
    assert eq.admissible == bool(np.all(direct > 0) and load < 1)


def test_admissibility_by_hand():
    # N-shape: rooted at pool 2, class 1 (leaf) has psi_11 = 1, pool 1 full leaves psi_21 = 1,
    # class 2's remaining arrivals 2 - 2 = 0 on (2, 2): not admissible. Rooted at pool 1,
    # pool 2 full with psi_22 = 2 leaves class 2 nothing for pool 1: not admissible either.
    roots = lap_roots(N_SHAPE)
    assert [eq.admissible for eq in roots] == [False, False]
    with pytest.raises(ArgumentError, match=r"^root_pool: no pool .*pool 1: .*pool 2: "):
        analyze_lap(N_SHAPE)
    # with lambda_2 = 3 pool 2 is the admissible root: psi_22 = 3 - 2 = 1 < beta_2 = 2
    ok = analyze_lap(ServerPoolSystem([1.0, 3.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]]))
    assert ok.root_pool == 1
    assert ok.equilibrium.occupancy.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert ok.equilibrium.root_load == pytest.approx(0.5)


def test_large_cycle_lap_holds_more_customers_than_lqfs_lb():
    both = analyze_disciplines(example_system("large_cycle")).to_dict()
    # LQFS-LB's balanced point is psi* of the instance (its psi*_ij sum to 0.9989,
    # instances.py); LAP's, at root pool 4, solves its own equations
    assert both["lqfs_lb"]["customers"] == pytest.approx(0.9989, rel=1e-9)
    solution = solve_spp(example_system("large_cycle"))
    lap_total = direct_equilibrium(solution.system, solution.basic, 3).sum()
    assert both["lap"]["customers"] == pytest.approx(lap_total, rel=1e-9)
    assert both["lap"]["customers"] > 1.5 * both["lqfs_lb"]["customers"]
    assert not both["lqfs_lb"]["stable_underloaded"] and both["lap"]["stable"]


# -- linearisation ------------------------------------------------------------------------------
@pytest.mark.parametrize("example", ["stable", "unstable", "large_cycle"])
def test_eigenvalues_are_minus_the_rates_of_the_root_ward_activities(example):
    solution = solve_spp(example_system(example))
    lap = analyze_lap(solution)
    edges = solution.basic
    system = solution.system
    up = root_ward_edges(edges, system.n_classes, system.n_pools, lap.root_pool)
    expected = sorted(-system.rates[tuple(edges[up[i]])] for i in range(system.n_classes))
    assert np.allclose(np.sort(lap.eigenvalues.real), expected, rtol=1e-12)
    assert np.allclose(lap.eigenvalues.imag, 0.0)


@pytest.mark.parametrize("example", ["stable", "unstable", "large_cycle"])
def test_drift_is_the_jacobian_of_the_fluid_vector_field(example):
    solution = solve_spp(example_system(example))
    lap = analyze_lap(solution)
    eq = lap.equilibrium
    x0 = np.asarray(eq.class_totals)
    n = x0.size
    jac = np.empty((n, n))
    for k in range(n):
        step = 1e-3 * eq.occupancy[solution.basic[:, 0], solution.basic[:, 1]].min()
        dx = np.zeros(n)
        dx[k] = step
        rates = []
        for sign in (1.0, -1.0):
            psi = manifold_state(solution, eq, x0 + sign * dx)
            vel_psi, vel_q = fluid_velocity(solution, psi, policy="lap", h=1e-6)
            rates.append(vel_psi.sum(axis=1) + vel_q)  # class totals' velocity
        jac[:, k] = (rates[0] - rates[1]) / (2 * step)
    scale = np.abs(lap.drift).max()
    assert np.allclose(jac, lap.drift, atol=1e-4 * scale)
    assert np.allclose(
        np.sort(np.linalg.eigvals(jac).real), np.sort(lap.eigenvalues.real), atol=1e-4 * scale
    )


@pytest.mark.parametrize("example", ["stable", "unstable", "large_cycle"])
def test_fluid_trajectory_follows_the_linearisation_near_equilibrium(example):
    solution = solve_spp(example_system(example))
    lap = analyze_lap(solution)
    eq = lap.equilibrium
    psi = eq.occupancy[solution.basic[:, 0], solution.basic[:, 1]]
    v = -np.abs(np.random.default_rng(3).uniform(-1, 1, psi.size)) * psi
    traj = fluid_trajectory(solution, 1e-6 * v, 2.0, 5, policy="lap", max_step=1e-3)
    exact = np.stack([expm(lap.drift * t) @ traj.deviation[0] for t in traj.times])
    size = np.abs(traj.deviation[0]).max()
    assert np.abs(traj.deviation - exact).max() <= 5e-3 * size
    # the equilibrium is a fixed point of the LAP stepper
    still = fluid_trajectory(solution, np.zeros(psi.size), 2.0, 3, policy="lap")
    assert np.abs(still.deviation).max() <= 1e-12 * eq.class_totals.max()


# -- the simulator ------------------------------------------------------------------------------
def reference_run(solution, r, t_end, seed, keys, policy):
    """A pure-Python re-simulation on the same uniforms: LAP from its rules as stated, or
    static routing with random order of service in each pool's line."""
    system = solution.system
    edges = solution.basic
    n_i = system.n_classes
    lam_r = r * system.arrival_rates
    mu = system.rates[edges[:, 0], edges[:, 1]]
    if policy == "lap":
        eq = analyze_lap(solution).equilibrium
        z, q, n = initial_state(solution, r, initial_psi=eq.occupancy)
        rank = {int(e): k for k, e in enumerate(eq.priorities)}
        centre = eq.class_totals
    else:
        z, q, n = initial_state(solution, r)
        rank = {e: e for e in range(len(edges))}
        centre = solution.class_occupancy
    z, q = z.copy(), q.copy()
    qe = np.zeros(len(edges), dtype=np.int64)
    of_class = [sorted((e for e in range(len(edges)) if edges[e, 0] == i), key=rank.get)
                for i in range(n_i)]  # fmt: skip
    of_pool = [sorted((e for e in range(len(edges)) if edges[e, 1] == j), key=rank.get)
               for j in range(system.n_pools)]  # fmt: skip
    route = solution.flows[edges[:, 0], edges[:, 1]] / system.arrival_rates[edges[:, 0]]
    states = replication_states(seed, keys)
    clock, pick, tie = (iter(uniforms(s, 400_000)) for s in states)
    t, integral, events = 0.0, np.zeros(n_i), 0
    arrivals = np.zeros(n_i, dtype=int)
    departures = np.zeros(n_i, dtype=int)

    def busy(j):
        return sum(z[e] for e in of_pool[j])

    while True:
        x = q + np.bincount(edges[:, 0], weights=z, minlength=n_i)
        total = lam_r.sum() + float(mu @ z)
        t_new = min(t - math.log(1.0 - next(clock)) / total, t_end)
        integral += (t_new - t) * (x - r * centre) / math.sqrt(r)
        if t_new >= t_end:
            break
        t = t_new
        events += 1
        u = next(pick) * total
        if u < lam_r.sum():
            i = int(np.searchsorted(np.cumsum(lam_r), u, side="right"))
            i = min(i, n_i - 1)
            arrivals[i] += 1
            if policy == "lap":
                idle = [e for e in of_class[i] if busy(edges[e, 1]) < n[edges[e, 1]]]
                if idle:
                    z[idle[0]] += 1  # the highest-priority activity with an idle server
                else:
                    q[i] += 1
            else:
                v, chosen = next(tie), of_class[i][-1]
                for e in of_class[i]:
                    if v < route[e]:
                        chosen = e
                        break
                    v -= route[e]
                if busy(edges[chosen, 1]) < n[edges[chosen, 1]]:
                    z[chosen] += 1
                else:
                    qe[chosen] += 1
                    q[i] += 1
        else:
            u -= lam_r.sum()
            done = int(np.searchsorted(np.cumsum(mu * z), u, side="right"))
            done = min(done, len(edges) - 1)
            i, j = int(edges[done, 0]), int(edges[done, 1])
            departures[i] += 1
            z[done] -= 1
            if policy == "lap":
                waiting = [e for e in of_pool[j] if q[edges[e, 0]] > 0]
                if waiting:
                    z[waiting[0]] += 1
                    q[edges[waiting[0], 0]] -= 1
            else:
                line = [e for e in of_pool[j] if qe[e] > 0]
                if line:
                    ticket = int(next(tie) * sum(qe[e] for e in line))
                    for e in line:
                        if ticket < qe[e]:
                            break
                        ticket -= qe[e]
                    qe[e] -= 1
                    q[edges[e, 0]] -= 1
                    z[e] += 1
    return z, q, arrivals, departures, events, integral / t_end


@pytest.mark.parametrize("policy", ["lap", "static"])
@pytest.mark.parametrize("example", ["stable", "large_cycle"])
def test_kernel_matches_a_python_reference_event_by_event(example, policy):
    solution = solve_spp(example_system(example))
    r, t_end = (30.0, 20.0) if example == "stable" else (2000.0, 1.5)
    keys = ("test-lap", example, policy, 0)
    run = simulate(
        solution, r, horizon=t_end, record_every=t_end, seed=5, keys=keys, policy=policy,
        check=True,
    )  # fmt: skip
    z, q, arrivals, departures, events, mean = reference_run(solution, r, t_end, 5, keys, policy)
    assert run.violations == 0
    assert run.events == events
    assert run.busy[solution.basic[:, 0], solution.basic[:, 1]].tolist() == z.tolist()
    assert run.queues.tolist() == q.tolist()
    assert run.arrivals.tolist() == arrivals.tolist()
    assert run.departures.tolist() == departures.tolist()
    assert np.allclose(run.mean, mean, rtol=1e-9, atol=1e-9)
    assert run.queued > 0 or policy == "static"  # LAP's invariants were exercised with queues


def test_policies_share_the_clock_and_event_streams():
    """Common random numbers: with one seed and keys the three disciplines read the same
    uniforms, so their first holding time is the same (the same total rate at the start)."""
    solution = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))  # one pool: all agree
    runs = [
        simulate(solution, 40, horizon=5.0, record_every=1.0, seed=2, keys=("crn",), policy=p)
        for p in ("lqfs-lb", "lap", "static")
    ]
    for run in runs[1:]:  # M/M/N: every discipline is the same queue, path for path
        assert run.events == runs[0].events
        assert np.array_equal(run.arrivals, runs[0].arrivals)
        assert np.array_equal(run.busy, runs[0].busy)
        assert np.allclose(run.deviation, runs[0].deviation, rtol=0.0, atol=1e-12)


def test_lap_covariance_matches_the_lyapunov_solution_within_its_interval():
    solution = solve_spp(example_system("stable"))
    lap = analyze_lap(solution)
    lam = solution.system.arrival_rates
    sigma = solve_continuous_lyapunov(lap.drift, -2.0 * np.diag(lam))
    reps = 12
    covs = np.array(
        [
            simulate(
                solution, 2000, horizon=150.0, warmup=6.0, record_every=150.0, seed=11,
                keys=("test-lap-cov", k), policy="lap",
            ).covariance
            for k in range(reps)
        ]
    )  # fmt: skip
    mean = covs.mean(axis=0)
    se = covs.std(axis=0, ddof=1) / math.sqrt(reps)
    from scipy.stats import t as student

    half = student.ppf(1 - 0.01 / 2 / 6, reps - 1) * se  # Bonferroni over the 6 entries, 99%
    iu = np.triu_indices(3)
    assert np.all(np.abs(mean - sigma)[iu] <= half[iu])


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_analyze_lap_contract(tmp_path, capsys):
    path = tmp_path / "system.json"
    path.write_text(json.dumps(example_system("large_cycle").to_dict()))
    assert main(["serverpools", "analyze", str(path), "--policy", "lap"]) == 0
    out = json.loads(capsys.readouterr().out)
    solution = solve_spp(example_system("large_cycle"))
    assert out["root_pool"] == 4
    order = lap_priorities(solution.basic, 5, 5, 3)
    assert [[p["class"] - 1, p["pool"] - 1] for p in out["priorities"]] == solution.basic[
        order
    ].tolist()
    direct = direct_equilibrium(solution.system, solution.basic, 3)
    totals = np.bincount(solution.basic[:, 0], weights=direct, minlength=5)
    assert np.allclose(out["equilibrium"], totals, rtol=1e-12)
    assert all(len(pair) == 2 and pair[0] < 0 for pair in out["eigenvalues"])
    assert out["stable"] is True
    # the default stays LQFS-LB's object
    assert main(["serverpools", "analyze", str(path)]) == 0
    assert "stable_underloaded" in json.loads(capsys.readouterr().out)


def test_cli_reports_every_rejected_root_on_one_line(tmp_path, capsys):
    path = tmp_path / "n.json"
    path.write_text(json.dumps(N_SHAPE.to_dict()))
    assert main(["serverpools", "analyze", str(path), "--policy", "lap"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--root-pool" in err
    assert "pool 1: occupancy" in err and "pool 2: occupancy" in err
    assert main(["serverpools", "analyze", str(path), "--policy", "lap", "--root-pool", "3"]) == 2
    assert "pool 1..2" in capsys.readouterr().err
    assert main(["serverpools", "analyze", str(path), "--root-pool", "1"]) == 2


# -- the study's helpers ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_gaussian_mean_norm_is_the_chi_mean(n):
    s = 0.7
    chi = math.sqrt(2 * s) * math.exp(gammaln((n + 1) / 2) - gammaln(n / 2))
    assert gaussian_mean_norm(s * np.eye(n)) == pytest.approx(chi, rel=1e-9)


def test_gaussian_mean_norm_of_a_correlated_law_by_monte_carlo():
    sigma = np.array([[1.0, 0.6, 0.0], [0.6, 2.0, -0.3], [0.0, -0.3, 0.2]])
    y = np.random.default_rng(4).multivariate_normal(np.zeros(3), sigma, size=400_000)
    norms = np.linalg.norm(y, axis=1)
    half = 4 * norms.std() / math.sqrt(norms.size)
    assert abs(gaussian_mean_norm(sigma) - norms.mean()) <= half


def test_warmup_growth_rates_of_the_cost_model_match_the_library():
    for (example, policy), gamma in cost.SERVERPOOLS_POLICY_GROWTH_RATES.items():
        solution = solve_spp(example_system(example))
        warmup = policy_warmup(solution, policy, 1e4, margin=2.0)
        assert warmup == pytest.approx(2.0 / (2 * -gamma), rel=1e-9)


def test_price_of_stability_pairs_replications_and_applies_holm():
    solution = solve_spp(example_system("stable"))
    rows = []
    for policy, shift in (("lqfs-lb", 0.0), ("lap", 0.5), ("static", 0.01)):
        for k, noise in enumerate([0.1, -0.2, 0.05, 0.3]):
            rows.append(
                {"example": "stable", "policy": policy, "r": 100.0, "replication": k,
                 "customers": 2.55 + shift + noise + (0.01 * k if policy == "static" else 0)}
            )  # fmt: skip
    table = price_of_stability(pd.DataFrame(rows), {"stable": solution}).set_index("policy")
    assert table.loc["lap", "difference"] == pytest.approx(0.5)
    assert table.loc["lap", "difference_ci"] == pytest.approx(0.0, abs=1e-9)
    d = np.array([0.01, 0.02, 0.03, 0.04])  # static - LQFS-LB per replication
    from scipy.stats import ttest_1samp

    p = ttest_1samp(d, 0.0).pvalue
    # Holm over {lap: p = 0 (a constant difference), static: p}: static's is ranked second
    assert table.loc["static", "p_holm"] == pytest.approx(p)
    lam = solution.system.arrival_rates.sum()
    assert table.loc["lap", "sojourn_time"] == pytest.approx(table.loc["lap", "customers"] / lam)
