"""Index policies, exact evaluation, the optimal policy and the policy layer of Part B
(Niño-Mora 2012).

Independent references: a dense solve of the Poisson equation (PI), exact rational
arithmetic over thresholds (RB), the closed forms of ``splitting.py`` (BS), the compiled
simulator (index policies) and the optimal cost as a lower bound (every heuristic). The
policy layer (``policies.py``) is checked against the solvers it dispatches to.
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import mpmath as mp
import numpy as np
import pytest
from test_deadlines_precision import p_reference

from queue_routing.deadlines.indices import (
    check_indexable,
    io_index,
    pi_increments,
    pi_index,
    rb_index,
)
from queue_routing.deadlines.markov import (
    ChainResult,
    evaluate_actions,
    evaluate_index_policy,
    evaluate_split,
    optimal_policy,
    optimal_policy_converged,
)
from queue_routing.deadlines.miss import f, miss_probability
from queue_routing.deadlines.model import Cluster, Deadline, Instance
from queue_routing.deadlines.policies import (
    INDEX_POLICIES,
    POLICIES,
    PolicyError,
    check_simulation,
    evaluate,
    index_function,
    index_table,
    split_probabilities,
)
from queue_routing.deadlines.simulation import SimulationResult, simulate
from queue_routing.deadlines.splitting import optimal_split
from queue_routing.deadlines.three_cluster import evaluate_3
from queue_routing.errors import AccuracyError, ArgumentError

CONST = Deadline("constant", t=1.5)
UNIF = Deadline("uniform", low=0.5, high=2.5)
EXPO = Deadline("exponential", mean=1.5)


def _inst(lam, r_cost, deadline=CONST, clusters=((3, 1.0), (2, 0.8))):
    return Instance(lam, tuple(Cluster(m, mu) for m, mu in clusters), r_cost, deadline)


# -- PI ------------------------------------------------------------------------------------
def test_pi_spec_numbers():
    nu = pi_index(Cluster(3, 1.0), CONST, 2.4, 3)
    np.testing.assert_allclose(nu, [0.520, 0.644, 0.870, 1.329], atol=5e-4)


def test_pi_spec_unstable_case_is_finite():
    # docs/deadlines.md#pi-index: the forward recursion gives -157 instead of 1.087 at x = 20
    # (matches t = 2)
    nu = pi_index(Cluster(3, 0.6), Deadline("constant", t=2.0), 0.2, 40)
    assert nu[20] == pytest.approx(1.087, abs=5e-4)
    assert check_indexable(nu).indexable


def _poisson_increments(cluster, deadline, lam, n_states, upto):
    """``h(x+1) - h(x)`` from a dense solve of ``c - g + Q h = 0``, ``h(0) = 0``."""
    x = np.arange(n_states + 1)
    c = lam * miss_probability(x, cluster.servers, cluster.rate, deadline)
    q = np.zeros((x.size, x.size))
    up = np.full(x.size, lam)
    up[-1] = 0.0
    down = cluster.rate * np.minimum(x, cluster.servers)
    q[x[:-1], x[:-1] + 1] = up[:-1]
    q[x[1:], x[1:] - 1] = down[1:]
    q[x, x] = -(up + down)
    # unknowns (h(1..N), g): Q[:, 1:] h - g = -c
    a = np.hstack([q[:, 1:], -np.ones((x.size, 1))])
    sol = np.linalg.solve(a, -c)
    h = np.concatenate([[0.0], sol[:-1]])
    return np.diff(h)[: upto + 1]


@pytest.mark.parametrize(
    ("m", "mu", "lam", "deadline"),
    [(3, 1.0, 2.4, CONST), (3, 0.6, 0.2, Deadline("constant", t=2.0)), (2, 1.0, 1.5, UNIF),
     (1, 2.0, 1.2, EXPO), (4, 0.5, 1.9, Deadline("exponential", mean=1.0, on="waiting"))],
)  # fmt: skip
def test_pi_increments_match_dense_poisson_solve(m, mu, lam, deadline):
    c = Cluster(m, mu)
    ref = _poisson_increments(c, deadline, lam, 600, 40)
    got = pi_increments(c, deadline, lam, 40)
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)


def test_pi_zero_rate_is_io_and_unused_cluster():
    c = Cluster(2, 0.5)
    np.testing.assert_array_equal(pi_index(c, CONST, 0.0, 10), io_index(c, CONST, 10))
    # a slow cluster BS leaves unused at low load gets the IO index in the PI table
    inst = _inst(0.3, None, clusters=((4, 2.0), (1, 0.05)))
    split = optimal_split(inst)
    assert split.rates[1] == 0.0
    tab = index_table(inst, "pi", 10)
    np.testing.assert_array_equal(tab.table[1], io_index(inst.clusters[1], CONST, 10))


# -- RB ------------------------------------------------------------------------------------
def _fraction(v) -> Fraction:
    """An mpmath number as an exact rational."""
    man, exp = mp.mpf(v).man_exp
    return Fraction(man) * Fraction(2) ** exp


def _exact_fg(cluster, deadline, lam, zmax):
    """``F(z), G(z)`` of the M/M/m/z chain in exact rationals, given ``P(x)`` to 60 digits
    (the mpmath reference of ``test_deadlines_precision``: beyond capacity the definition
    amplifies the rounding of ``P`` like ``(lam/(m mu))^z``, so float ``P`` would not do)."""
    with mp.workdps(60):
        p = [
            _fraction(p_reference(x, cluster.servers, cluster.rate, deadline))
            for x in range(zmax + 1)
        ]
    lam_q = Fraction(lam)
    mu = Fraction(cluster.rate)
    w = [Fraction(1)]
    for x in range(1, zmax + 1):
        w.append(w[-1] * lam_q / (mu * min(x, cluster.servers)))
    fz, gz = [], []
    for z in range(zmax + 1):
        tot = sum(w[: z + 1])
        fz.append(lam_q * sum(w[x] * p[x] for x in range(z)) / tot)
        gz.append(lam_q * w[z] / tot)
    return fz, gz


@pytest.mark.parametrize(
    ("m", "mu", "lam", "deadline"),
    [(3, 1.0, 2.4, CONST), (3, 1.0, 6.0, CONST), (2, 0.7, 3.0, UNIF), (1, 1.0, 0.5, EXPO)],
)
def test_rb_index_vs_threshold_optimisation(m, mu, lam, deadline):
    c = Cluster(m, mu)
    zmax = 45
    nu = rb_index(c, deadline, lam, zmax - 1)
    assert check_indexable(nu).indexable
    fz, gz = _exact_fg(c, deadline, lam, zmax)
    # the index is the charge at which thresholds x and x+1 tie
    for x in range(zmax):
        tie = (fz[x + 1] - fz[x]) / (gz[x] - gz[x + 1])
        assert nu[x] == pytest.approx(float(tie), rel=1e-11)
    # for charges between distinct index values the optimal threshold is #{x: nu(x) < c}
    # (skip near-ties: beyond capacity the index converges geometrically to a limit)
    vals = np.unique(nu[: zmax - 5])
    gap = np.diff(vals) > 1e-8 * vals[1:]
    charges = np.concatenate([[vals[0] / 2], ((vals[:-1] + vals[1:]) / 2)[gap]])
    assert charges.size >= 5
    for charge in charges:
        cq = Fraction(float(charge))
        costs = [fz[z] + cq * gz[z] for z in range(zmax + 1)]
        best = min(range(zmax + 1), key=costs.__getitem__)
        assert best == int(np.sum(nu < charge))


def test_rb_no_cancellation_far_beyond_capacity():
    nu = rb_index(Cluster(3, 1.0), CONST, 6.0, 400)
    assert np.all(np.isfinite(nu)) and check_indexable(nu).indexable
    assert nu[400] == pytest.approx(nu[200], rel=1e-12)  # converged, not garbage


def test_check_indexable_reports_violations():
    chk = check_indexable(np.array([0.1, 0.3, 0.2, 0.4, 0.39]))
    assert not chk.indexable
    assert chk.violations == (1, 3)
    assert chk.max_drop == pytest.approx(0.1)


# -- exact evaluation ----------------------------------------------------------------------
@pytest.mark.parametrize("r_cost", [1.2, None])
def test_exact_split_matches_closed_form(r_cost):
    inst = _inst(4.2 if r_cost else 3.5, r_cost, UNIF)
    split = optimal_split(inst)
    if r_cost is not None:
        assert split.rejected_rate > 0
    closed = (
        sum(
            f(float(lk), c.servers, c.rate, inst.deadline)
            for lk, c in zip(split.rates, inst.clusters, strict=True)
        )
        + (r_cost or 0.0) * split.rejected_rate
    )
    ev = evaluate_split(inst, 80, split)
    assert ev.lost_rate < 1e-8
    assert ev.cost == pytest.approx(closed, abs=1e-8 + 2 * ev.lost_rate)
    assert ev.rejection_rate == pytest.approx(split.rejected_rate, abs=1e-12)


def test_exact_three_clusters_runs():
    inst = _inst(3.0, 1.5, EXPO, clusters=((2, 1.0), (1, 0.8), (2, 0.4)))
    ev = evaluate_index_policy(inst, index_table(inst, "pi", 30).table, 30)
    bs = evaluate_split(inst, 30)
    assert ev.cost < bs.cost
    assert ev.truncation_rate < 1e-6


def test_exact_index_policy_vs_simulation():
    inst = _inst(3.2, 1.5, CONST)
    level = 40
    table = index_table(inst, "pi", level - 1).table  # +inf at level L in both
    ev = evaluate_index_policy(inst, table, level)
    sim = simulate(inst, index=table, horizon=4000.0, warmup=100.0, replications=12, seed=20120101)
    assert abs(sim.cost - ev.cost) <= 1.5 * sim.ci95
    assert abs(sim.rejection_rate - ev.rejection_rate) <= 1.5 * sim.rejection_ci95 + 1e-12
    assert abs(sim.miss_rate - ev.miss_rate) <= 1.5 * sim.miss_ci95


# -- optimal policy ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("lam", "r_cost", "deadline"),
    [(3.5, 2.0, CONST), (3.5, None, CONST), (4.5, 0.8, UNIF), (3.0, None, EXPO)],
)
def test_optimal_below_every_heuristic(lam, r_cost, deadline):
    inst = _inst(lam, r_cost, deadline)
    level = 50
    opt = optimal_policy(inst, level, 1e-10)
    assert opt.converged
    own = evaluate_actions(inst, opt.actions, level)
    assert own.cost == pytest.approx(opt.cost, abs=1e-8)
    evals = {p: evaluate_index_policy(inst, index_table(inst, p, level).table, level)
             for p in ("io", "pi", "rb")}  # fmt: skip
    evals["bs"] = evaluate_split(inst, level)
    for name, ev in evals.items():
        slack = 1e-8 + max(1.0, r_cost or 1.0) * ev.lost_rate
        assert opt.cost <= ev.cost + slack, name


@pytest.mark.parametrize(("lam", "r_cost"), [(3.5, None), (4.0, 2.0)])
def test_rvi_stable_under_raising_level(lam, r_cost):
    inst = _inst(lam, r_cost, CONST)  # pure routing at load 3.5/4.6 needs L ~ 100
    res = optimal_policy_converged(inst, 20, tol=1e-6)
    assert len(res.history) >= 2
    assert abs(res.history[-1][1] - res.history[-2][1]) < 1e-6
    assert res.truncation == res.history[-1][0]
    bigger = optimal_policy(inst, int(1.5 * res.truncation), 1e-9)
    assert bigger.cost == pytest.approx(res.cost, abs=3e-6)


def test_rvi_converges_at_level_60():
    """Level 60 (3,721 states) converges to 1e-9 (its time: benchmarks/deadlines.py)."""
    inst = _inst(3.5, 2.0, CONST)
    res = optimal_policy(inst, 60, 1e-9)
    assert res.converged and res.lower <= res.cost <= res.upper and res.upper - res.lower <= 1e-9


# -- the policy layer ----------------------------------------------------------------------
def _from_dict(lam, r_cost, clusters, deadline=None):
    return Instance.from_dict(
        {
            "arrival_rate": lam,
            "servers": [m for m, _ in clusters],
            "service_rates": [mu for _, mu in clusters],
            "rejection_cost": r_cost,
            "deadline": deadline or {"kind": "constant", "t": 1.5},
        }
    )


TWO = ((3, 1.0), (2, 0.8))


def test_evaluate_exact_is_the_chain_solvers():
    inst = _from_dict(3.5, 2.0, TWO)
    level = 25
    refs = {"bs": evaluate_split(inst, level)}
    for p in INDEX_POLICIES:
        refs[p] = evaluate_index_policy(inst, index_table(inst, p, level).table, level)
    for p, ref in refs.items():
        got = evaluate(inst, p, truncation=level)
        assert isinstance(got, ChainResult) and got.truncation == level
        rates = ("cost", "rejection_rate", "miss_rate", "ci95", "truncation")
        out = got.to_dict()
        assert {k: out[k] for k in rates} == {k: ref.to_dict()[k] for k in rates}, p
        assert {k: out[k] for k in rates} == {
            "cost": ref.cost,
            "rejection_rate": ref.rejection_rate,
            "miss_rate": ref.miss_rate,
            "ci95": None,
            "truncation": level,
        }
        # the diagnostics of an explicit level: the same chain at levels 16 and 10
        lower = [lv for lv, _ in got.history]
        assert lower == [10, 16, 25] and out["certified"] is not None
    # an explicit level is evaluated as it stands, the optimal policy too
    opt = optimal_policy(inst, level)
    got = evaluate(inst, "optimal", truncation=level)
    assert got.truncation == level
    assert got.cost == evaluate_actions(inst, opt.actions, level).cost
    assert got.cost == pytest.approx(opt.cost, abs=1e-8)
    assert all(got.cost <= r.cost + 1e-8 for r in refs.values())
    # by default no truncation decides: BS in closed form, the others raised until stable
    bs = evaluate(inst, "bs")
    assert bs.truncation is None and bs.lost_rate == 0.0
    assert bs.cost == pytest.approx(optimal_split(inst).cost, rel=1e-12)
    three = _from_dict(3.0, 1.5, ((2, 1.0), (1, 0.8), (2, 0.4)))
    assert evaluate(three, "bs").truncation is None
    auto = evaluate(inst, "optimal")
    conv = optimal_policy_converged(inst, 60, 1e-6)
    assert auto.cost == pytest.approx(conv.cost, rel=1e-5)
    assert auto.history[0][0] == 60 and auto.truncation == auto.history[-1][0]


def test_evaluate_simulation_is_the_simulator_on_the_policy_tables():
    inst = _from_dict(3.5, 2.0, TWO)
    run = {"horizon": 500.0, "replications": 3, "seed": 7, "keys": ("cli", "x")}
    sim = {"warmup": 50.0, "horizon": 500.0, "replications": 3, "seed": 7, "keys": ("cli", "x")}
    for p in ("bs", *INDEX_POLICIES):
        got = evaluate(inst, p, method="simulation", table_size=40, **run)
        if p == "bs":
            ref = simulate(inst, split=split_probabilities(inst), **sim)
        else:
            ref = simulate(inst, index=index_table(inst, p, 40).table, **sim)
        assert isinstance(got, SimulationResult)
        np.testing.assert_array_equal(got.replication_costs, ref.replication_costs)
        assert got.to_dict() == ref.to_dict() and got.warmup == 50.0
        assert set(got.to_dict()) == {"cost", "rejection_rate", "miss_rate", "ci95"}


def test_split_probabilities_are_the_bs_rates():
    inst = _from_dict(4.2, 1.2, TWO)
    split = optimal_split(inst)
    p = split_probabilities(inst, split)
    assert p.shape == (3,) and p.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(p[0], split.rejected_rate / 4.2, rtol=1e-12)
    np.testing.assert_allclose(p[1:], split.rates / 4.2, rtol=1e-12)


@pytest.mark.parametrize("policy", INDEX_POLICIES)
def test_index_function_is_the_table_row(policy):
    inst = _from_dict(3.5, 2.0, TWO)
    table = index_table(inst, policy, 12).table
    for k in (1, 2):
        nu = index_function(inst, policy, k, 12)
        assert nu.shape == (13,)
        np.testing.assert_array_equal(nu, table[k - 1])
    np.testing.assert_array_equal(index_function(inst, policy, 2, 0), table[1, :1])


@pytest.mark.parametrize(
    ("call", "argument", "needle"),
    [
        (lambda i, f: evaluate(i, "ucb"), "policy", "policy must be one of"),
        (lambda i, f: evaluate(i, "io", method="mdp"), "method", "method must be one of"),
        (lambda i, f: evaluate(f, "io"), "method", "at most 3 clusters, got 4"),
        (
            lambda i, f: evaluate(i, "optimal", method="simulation"),
            "policy",
            "evaluated exactly",
        ),
        (lambda i, f: index_function(i, "io", 0, 4), "cluster", "cluster must be in 1..2"),
        (lambda i, f: index_function(i, "io", 3, 4), "cluster", "cluster must be in 1..2"),
        (lambda i, f: index_function(i, "io", 1, -1), "upto", "upto must be"),
        (lambda i, f: index_function(i, "bs", 1, 4), "policy", "policy must be one of"),
        (lambda i, f: index_table(i, "optimal", 4), "policy", "policy must be one of"),
    ],
)
def test_policy_layer_errors_name_the_argument(call, argument, needle):
    inst = _from_dict(3.5, 2.0, TWO)
    four = _from_dict(3.0, 1.5, TWO + TWO)
    with pytest.raises(PolicyError, match=needle) as info:
        call(inst, four)
    assert isinstance(info.value, ValueError) and info.value.argument == argument
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(argument)


@pytest.mark.parametrize(
    "clusters",
    [
        ((2, 1.0),),
        TWO,
        # 45 s at load 0.8 (level 35): behind `slow`; three clusters' optimum against every
        # heuristic and its level certification are in tests/test_deadlines_three_cluster.py
        pytest.param(((2, 1.0), (1, 0.8), (2, 0.4)), marks=pytest.mark.slow),
    ],
    ids=["one", "two", "three"],
)
def test_optimal_of_one_to_three_clusters_is_certified_and_never_beaten(clusters):
    """``evaluate(..., "optimal")`` raises the level until the cost is stable for one, two
    and three clusters: its cost is at most every heuristic's (one and two clusters: each at
    its own certified level; three: BS in closed form, the index policies at the optimum's
    level), it is R times the rejection rate plus the miss rate, and it is
    the optimum of relative value iteration at the final level."""
    inst = _from_dict(0.8 * sum(m * mu for m, mu in clusters), 1.5, clusters)
    opt = evaluate(inst, "optimal")
    level = opt.truncation
    assert level == opt.history[-1][0] and len(opt.history) >= 2
    assert abs(opt.history[-1][1] - opt.history[-2][1]) <= 1e-6 * opt.cost
    assert opt.cost == pytest.approx(1.5 * opt.rejection_rate + opt.miss_rate, rel=1e-12)
    for p in ("bs", "io", "pi", "rb"):
        if len(clusters) < 3 or p == "bs":
            other = evaluate(inst, p)
        else:
            table = index_table(inst, p, level).table
            other = evaluate_3(inst, "index", level, table=table, truncation_losses=True)
        assert opt.cost <= other.cost * (1 + 1e-6), (len(clusters), p)
    at_level = optimal_policy(inst, level, 1e-9, truncation_losses=True)
    assert opt.cost == pytest.approx(at_level.cost, rel=1e-6)


def test_optimal_beyond_three_clusters_and_policies_are_known():
    four = _from_dict(3.0, 1.5, TWO + TWO)
    with pytest.raises(PolicyError, match="at most 3 clusters, got 4") as info:
        evaluate(four, "optimal")
    assert isinstance(info.value, ArgumentError) and info.value.argument == "method"
    assert POLICIES == ("bs", "io", "pi", "rb", "optimal")
    assert set(INDEX_POLICIES) < set(POLICIES)


@pytest.mark.slow  # 20 s: relative value iteration up to level 61 of three clusters
def test_optimal_three_clusters_says_when_the_truncation_decides():
    """Pure routing at load 0.97 of three clusters: the slow clusters' queues grow beyond the
    largest automatic level of three clusters, so no certified cost exists there."""
    three = _from_dict(0.97 * 3.6, None, ((2, 1.0), (1, 0.8), (2, 0.4)))
    with pytest.raises(AccuracyError, match=r"^truncation: "):
        evaluate(three, "optimal")


def test_a_simulation_the_table_decided_or_of_infinite_cost_is_refused_in_words():
    # the CLI's messages: evaluate's (no policy named) and compare-policies' (one per policy)
    bound, infinite = (
        SimpleNamespace(table_bound=3, cost=1.0),
        SimpleNamespace(table_bound=0, cost=math.inf),
    )
    with pytest.raises(AccuracyError) as err:
        check_simulation(bound, 60)
    assert str(err.value) == (
        "table_size: the end of the index table (x <= 60) may have decided 3 measured "
        "arrivals (a cluster beyond it counts as full); raise table_size"
    )
    with pytest.raises(
        AccuracyError, match=r"^table_size: the end of the index table of pi \(x <= 60\) may"
    ):
        check_simulation(bound, 60, policy="pi")
    assert check_simulation(bound, 60, table_bound=False) is bound
    with pytest.raises(AccuracyError, match=r"^the simulated cost rate is not finite \(inf\)$"):
        check_simulation(infinite, 60)
    with pytest.raises(
        AccuracyError, match=r"^the simulated cost rate of rb is not finite \(inf\)$"
    ):
        check_simulation(infinite, 60, table_bound=False, policy="rb")
