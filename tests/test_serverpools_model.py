"""Part C model: validation, JSON contract, the SPP against hand solutions and LP duality, CRP."""

import json

import numpy as np
import pytest
from scipy.optimize import linprog

from queue_routing.seeding import rng_for
from queue_routing.serverpools import (
    CRPError,
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    ServerPoolError,
    ServerPoolSystem,
    check_crp,
    random_tree_system,
    solve_spp,
    tree_spp,
)

# The N-shaped 2x2 tree: activities (1,1), (2,1), (2,2); classes and pools numbered from 1.
# lambda = (1, 2), beta = (2, 2), mu_11 = 1, mu_21 = 2, mu_22 = 1. By hand, all pools binding:
#   class 1 is a leaf:  lambda_11 = lambda_1 = 1;
#   pool 2 is a leaf:   lambda_22 = mu_22 rho beta_2 = 2 rho;
#   class 2:            lambda_21 = lambda_2 - lambda_22 = 2 - 2 rho;
#   pool 1:             lambda_11/mu_11 + lambda_21/mu_21 = rho beta_1
#                       1 + (1 - rho) = 2 rho  =>  rho = 2/3,
# so lambda_11 = 1, lambda_21 = 2/3, lambda_22 = 4/3.
# Duals from complementary slackness nu_i mu_ij = alpha_j on the tree:
#   nu_1 = alpha_1, 2 nu_2 = alpha_1, nu_2 = alpha_2, and sum_j alpha_j beta_j = 1:
#   2 alpha_1 + 2 alpha_1 / 2 = 1  =>  alpha = (1/3, 1/6), nu = (1/3, 1/6);
#   strong duality: sum_i nu_i lambda_i = 1/3 + 2/6 = 2/3 = rho.
N_SHAPE = {
    "arrival_rates": [1.0, 2.0],
    "pool_sizes": [2.0, 2.0],
    "activities": [
        {"class": 1, "pool": 1, "rate": 1.0},
        {"class": 2, "pool": 1, "rate": 2.0},
        {"class": 2, "pool": 2, "rate": 1.0},
    ],
}


def n_shape(extra_rate=None):
    rates = np.array([[1.0, 0.0], [2.0, 1.0]])
    if extra_rate is not None:
        rates[0, 1] = extra_rate
    return ServerPoolSystem([1.0, 2.0], [2.0, 2.0], rates)


def test_n_shape_by_hand():
    sol = solve_spp(n_shape())
    assert sol.rho == pytest.approx(2 / 3, rel=1e-12)
    np.testing.assert_allclose(sol.flows, [[1.0, 0.0], [2 / 3, 4 / 3]], rtol=1e-12)
    np.testing.assert_allclose(sol.occupancy, [[1.0, 0.0], [1 / 3, 4 / 3]], rtol=1e-12)
    np.testing.assert_allclose(sol.class_duals, [1 / 3, 1 / 6], rtol=1e-12)
    np.testing.assert_allclose(sol.pool_duals, [1 / 3, 1 / 6], rtol=1e-12)
    assert sol.basic.tolist() == [[0, 0], [1, 0], [1, 1]]
    assert sol.underloaded and not sol.critical
    assert sol.to_dict()["flows"][1] == {"class": 2, "pool": 1, "rate": pytest.approx(2 / 3)}


def test_non_basic_activity_with_positive_reduced_cost_is_unused():
    # mu_12 = 0.1: reduced cost alpha_2/mu_12 - nu_1 = (1/6)/0.1 - 1/3 = 4/3 > 0, so the
    # hand solution stays optimal and unique.
    sol = solve_spp(n_shape(extra_rate=0.1))
    assert sol.rho == pytest.approx(2 / 3, rel=1e-12)
    assert sol.basic.tolist() == [[0, 0], [1, 0], [1, 1]]
    rc = dict(zip(map(tuple, sol.system.activities.tolist()), sol.reduced_costs, strict=True))
    assert rc[0, 1] == pytest.approx(4 / 3)
    assert all(abs(rc[e]) < 1e-12 for e in [(0, 0), (1, 0), (1, 1)])


def test_critical_flag():
    # Halve the pools of the N-shape: rho doubles to 4/3; scale lambda by 3/4 to get rho = 1.
    sol = solve_spp(ServerPoolSystem([0.75, 1.5], [1.0, 1.0], [[1.0, 0.0], [2.0, 1.0]]))
    assert sol.rho == pytest.approx(1.0, abs=1e-12)
    assert sol.critical and not sol.underloaded


def independent_lp(system):
    """The SPP written out again, returning (rho, flows (I, J), nu, alpha) from HiGHS."""
    n_i, n_j = system.rates.shape
    pairs = [(i, j) for i in range(n_i) for j in range(n_j) if system.rates[i, j] > 0]
    c = np.r_[np.zeros(len(pairs)), 1.0]
    a_eq = np.array([[1.0 * (p[0] == i) for p in pairs] + [0.0] for i in range(n_i)])
    a_ub = np.array(
        [
            [(p[1] == j) / system.rates[p] for p in pairs] + [-system.pool_sizes[j]]
            for j in range(n_j)
        ]
    )
    res = linprog(
        c,
        A_ub=a_ub,
        b_ub=np.zeros(n_j),
        A_eq=a_eq,
        b_eq=system.arrival_rates,
        bounds=[(0, None)] * len(pairs) + [(None, None)],
        method="highs",
    )
    flows = np.zeros((n_i, n_j))
    for k, p in enumerate(pairs):
        flows[p] = res.x[k]
    return res.x[-1], flows, res.eqlin.marginals, -res.ineqlin.marginals


def dense_system(n_i, n_j, k):
    """All I*J activities with random rates: CRP holds generically (Sec. 2)."""
    rng = rng_for(7, "test-serverpools-dense", n_i, n_j, k)
    return ServerPoolSystem(
        rng.uniform(0.5, 2.0, n_i), rng.uniform(0.5, 2.0, n_j), rng.uniform(0.2, 5.0, (n_i, n_j))
    )


@pytest.mark.parametrize(("n_i", "n_j"), [(1, 3), (3, 1), (2, 3), (4, 4), (5, 3)])
def test_duality_on_dense_random_systems(n_i, n_j):
    for k in range(6):
        system = dense_system(n_i, n_j, k)
        sol = solve_spp(system)
        mu = system.rates
        # primal feasibility, all pools binding
        np.testing.assert_allclose(sol.flows.sum(axis=1), system.arrival_rates, rtol=1e-10)
        np.testing.assert_allclose(
            (sol.flows / mu).sum(axis=0), sol.rho * system.pool_sizes, rtol=1e-10
        )
        assert np.all(sol.flows >= 0)
        # CRP: basic activities form a spanning tree
        assert len(sol.basic) == n_i + n_j - 1
        # dual feasibility and complementary slackness: nu_i mu_ij <= alpha_j, = on basic
        slack = sol.pool_duals[None, :] - sol.class_duals[:, None] * mu
        assert np.all(slack >= -1e-12)
        np.testing.assert_allclose(slack[sol.basic[:, 0], sol.basic[:, 1]], 0, atol=1e-12)
        assert np.all(sol.class_duals > 0) and np.all(sol.pool_duals > 0)
        # normalisation and strong duality
        assert sol.pool_duals @ system.pool_sizes == pytest.approx(1.0, rel=1e-12)
        assert sol.class_duals @ system.arrival_rates == pytest.approx(sol.rho, rel=1e-12)
        # the same numbers from an independently written LP
        rho, flows, nu, alpha = independent_lp(system)
        assert rho == pytest.approx(sol.rho, rel=1e-8)
        np.testing.assert_allclose(flows, sol.flows, atol=1e-8)
        np.testing.assert_allclose(nu, sol.class_duals, rtol=1e-7)
        np.testing.assert_allclose(alpha, sol.pool_duals, rtol=1e-7)


def test_tree_spp_matches_lp_on_random_trees():
    for n_i, n_j in [(1, 1), (1, 4), (4, 1), (3, 3), (5, 6)]:
        for k in range(5):
            rng = rng_for(3, "test-serverpools-tree", n_i, n_j, k)
            system = random_tree_system(n_i, n_j, rng, mu_range=(0.05, 20.0), rho=0.8)
            fast, lp = tree_spp(system), solve_spp(system)
            assert fast.rho == pytest.approx(0.8, rel=1e-12)
            assert lp.rho == pytest.approx(0.8, rel=1e-9)
            np.testing.assert_allclose(fast.flows, lp.flows, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(fast.class_duals, lp.class_duals, rtol=1e-9)
            np.testing.assert_allclose(fast.pool_duals, lp.pool_duals, rtol=1e-9)
            assert fast.basic.tolist() == lp.basic.tolist() == system.activities.tolist()


# -- CRP failures ---------------------------------------------------------------------------
def test_cycle_complete_graph_equal_rates():
    # 2x2 complete graph, all rates 1, lambda = beta = 1: any lambda_11 = lambda_22 = a,
    # lambda_12 = lambda_21 = 1 - a with a in [0, 1] is optimal (rho = 1).
    system = ServerPoolSystem([1.0, 1.0], [1.0, 1.0], np.ones((2, 2)))
    with pytest.raises(NotATreeError, match="cycle") as info:
        solve_spp(system)
    assert isinstance(info.value, NonUniqueOptimumError)
    assert info.value.classes == (1, 2) and info.value.pools == (1, 2)
    assert "class 1" in str(info.value) and "pool 2" in str(info.value)
    sol = solve_spp(system, require_crp=False)  # the LP itself is fine
    assert sol.rho == pytest.approx(1.0)


def test_zero_reduced_cost_makes_a_cycle():
    # N-shape plus (1,2) with mu_12 = alpha_2/nu_1 = 1/2: zero reduced cost, so flow can be
    # moved around the cycle class 1 - pool 1 - class 2 - pool 2 at no cost.
    with pytest.raises(NotATreeError, match="not unique"):
        solve_spp(n_shape(extra_rate=0.5))


def test_disconnected():
    # Two separate classes/pools with equal loads 1/2: unique optimum, no tree.
    system = ServerPoolSystem([1.0, 2.0], [2.0, 4.0], [[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(DisconnectedError, match=r"\{class 1, pool 1\}; \{class 2, pool 2\}"):
        solve_spp(system)
    # with a third activity (1,2) that carries no flow at the unique optimum (all mu = 1):
    # loads 1 - a and 1 + a on pools 1, 2, so a = 0.
    system = ServerPoolSystem([1.0, 1.0], [1.0, 1.0], [[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(DisconnectedError):
        solve_spp(system)


def test_non_binding_pool():
    # N-shape with a huge pool 2: class 1 alone loads pool 1 to rho = 1 and class 2 fits in
    # pool 2 at load 1/10, so constraint (4) of pool 2 is slack.
    system = ServerPoolSystem([1.0, 1.0], [1.0, 10.0], [[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(NonBindingPoolError, match="pool 2") as info:
        solve_spp(system)
    assert info.value.pools == (2,)
    assert isinstance(info.value, CRPError) and isinstance(info.value, ServerPoolError)


def test_check_crp_accepts_crp_solution():
    check_crp(solve_spp(n_shape(), require_crp=False))


# -- validation and JSON ----------------------------------------------------------------------
def test_json_round_trip():
    system = ServerPoolSystem.from_dict(N_SHAPE)
    assert system.to_dict() == N_SHAPE
    assert ServerPoolSystem.from_dict(json.loads(json.dumps(system.to_dict()))) == system
    assert system.n_classes == 2 and system.n_pools == 2
    assert system.activities.tolist() == [[0, 0], [1, 0], [1, 1]]
    # activities listed in any order give the same system
    shuffled = dict(N_SHAPE, activities=N_SHAPE["activities"][::-1])
    assert ServerPoolSystem.from_dict(shuffled) == system


def bad(**changes):
    data = json.loads(json.dumps(N_SHAPE))
    data.update(changes)
    return data


def act(**kw):
    base = {"class": 1, "pool": 1, "rate": 1.0}
    base.update(kw)
    return base


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "JSON object"),
        ({"arrival_rates": [1], "pool_sizes": [1]}, "missing key.*activities"),
        (bad(name="x"), "unknown key.*name"),
        (bad(arrival_rates=[1, -2]), r"arrival_rates: -2 for class 2 is out of range"),
        (bad(pool_sizes=[1, float("nan")]), r"pool_sizes: nan for pool 2 is out of range"),
        (bad(pool_sizes="abc"), "pool_sizes"),
        (bad(activities=[]), "non-empty list"),
        (bad(activities=[act(), act()]), r"activities\[1\] duplicates activities\[0\]"),
        (bad(activities=[act(), act(**{"class": 3})]), r"activities\[1\]\.class = 3 .* 1\.\.2"),
        (bad(activities=[act(pool=0)]), r"activities\[0\]\.pool = 0 is not in 1\.\.2"),
        (bad(activities=[act(pool=1.0)]), r"activities\[0\]\.pool must be an integer in 1\.\.2"),
        (bad(activities=[act(pool=True)]), r"pool must be an integer"),
        (bad(activities=[act(rate=0)]), r"activities\[0\]\.rate: 0 for class 1, pool 1 is out of"),
        (bad(activities=[act(rate="1")]), r"rate: \"1\" \(a string\) for class 1, pool 1 is not a"),
        (bad(activities=[{"class": 1, "pool": 1}]), r"activities\[0\] is missing key.*rate"),
        (bad(activities=[act(speed=2)]), r"activities\[0\] has unknown key.*speed"),
        (bad(activities=[3]), r"activities\[0\] must be an object"),
        (bad(activities=[act(), act(pool=2)]), r"class 2 has no activity"),
        (bad(activities=[act(), act(**{"class": 2})]), r"pool 2 has no activity"),
    ],
)
def test_bad_json(data, message):
    with pytest.raises(ServerPoolError, match=message):
        ServerPoolSystem.from_dict(data)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([1.0], [1.0], [[1.0, 1.0]]), r"shape \(I, J\) = \(1, 1\)"),
        (([1.0], [1.0], [1.0]), "2-dimensional"),
        (([1.0], [1.0], [[-1.0]]), r"rates: -1 for class 1, pool 1 is out of range"),
        (([1.0], [1.0], [[np.inf]]), r"rates: inf for class 1, pool 1 is out of range"),
        (([1.0, 1.0], [1.0], [[1.0], [0.0]]), r"rates: class 2 has no activity"),
        (([1.0], [1.0, 1.0], [[1.0, 0.0]]), r"rates: pool 2 has no activity"),
        (([], [1.0], np.zeros((0, 1))), "arrival_rates must not be empty"),
        (([0.0], [1.0], [[1.0]]), r"arrival_rates: 0 for class 1 is out of range"),
    ],
)
def test_bad_construction(args, message):
    with pytest.raises(ServerPoolError, match=message):
        ServerPoolSystem(*args)


def test_system_is_frozen():
    system = n_shape()
    with pytest.raises(ValueError, match="read-only"):
        system.rates[0, 0] = 5.0
    with pytest.raises(AttributeError):
        system.rates = np.ones((2, 2))


def test_crp_with_tiny_dual_is_accepted():
    # Sample 1499 of size (3, 4) in the wide search (mu and flows in 1e-3..1e3): pool 3 hangs
    # off class 1 with mu_13/mu_11 ~ 1.6e-5, so alpha_3 / max(alpha) ~ 1e-9. CRP holds (the
    # tree certificate is exact); the solver's relative dual accuracy is not enough for it.
    from queue_routing.serverpools import sample_system

    system = sample_system(2013, 3, 4, 1499, mu_range=(1e-3, 1e3), flow_range=(1e-3, 1e3))
    lp, tree = solve_spp(system), tree_spp(system)
    assert lp.pool_duals.min() / lp.pool_duals.max() < 1e-8
    np.testing.assert_allclose(lp.flows, tree.flows, rtol=1e-12, atol=0)
    np.testing.assert_allclose(lp.pool_duals, tree.pool_duals, rtol=1e-10)
