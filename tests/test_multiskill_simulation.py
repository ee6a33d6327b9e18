"""The index-policy simulator against exact references.

Model: docs/multiskill.md#index-policy-simulations.

* optimal Bernoulli routing: simulated cost vs the product-form ``sum c_j rho_j/(1 - rho_j)``;
* every policy on C = 1 and C = 2: simulated cost vs the truncated CTMC of the same policy
  (boundary mass < 1e-10);
* the truncated chain itself: under Bernoulli routing it is a product of M/M/1/L queues;
* PI (one policy-improvement step from optimal Bernoulli routing) is never worse;
* seeds reproduce results bit for bit; bad arguments are rejected by name.

Every policy of one instance is simulated with the same seed and keys, hence on common random
numbers (docs/multiskill.md#common-random-numbers): the comparisons between policies below use
paired differences, those against exact values are unaffected (Bonferroni needs no
independence between the comparisons).

Statistical tolerance: Bonferroni t tests at a family-wise level of 1% per test function
(``tests/_stats.py``). A biased simulator fails by hundreds of SE: the standard errors here
are 0.1-0.3% of the cost.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from _stats import bonferroni_t
from queue_routing.errors import ArgumentError
from queue_routing.multiskill import Instance, solve_exact
from queue_routing.multiskill.instances import random_instance, table1
from queue_routing.multiskill.markov import generator, stationary_cost
from queue_routing.multiskill.policies import POLICIES, alias_table, arrival_rates, policy_weights
from queue_routing.multiskill.replications import SimulationResult
from queue_routing.multiskill.simulation import simulate
from queue_routing.user_policy import UserPolicyError

SEED = 2022
REPS = 20


def _instances() -> dict[str, tuple[Instance, float]]:
    """Test instances (moderate loads, so the runs are short) and their horizons (time units)."""
    t1 = table1()
    r10 = random_instance(10, SEED, 0)
    return {
        "c1": (Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6], name="c1"), 5e4),
        "c2": (Instance(mu=[3.0, 2.0, 1.5], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0], name="c2"), 5e4),
        "table1": (t1, 5e3),
        "table1x0.7": (Instance(mu=t1.mu, cost=t1.cost, eta=0.7 * t1.eta), 3e3),
        # The paper's random instance, intensities scaled by 0.6 (its optimum has rho_0 ~ 0.99).
        "random10x0.6": (Instance(mu=r10.mu, cost=r10.cost, eta=0.6 * r10.eta), 3e3),
    }


INSTANCES = _instances()
SMALL = ("c1", "c2")


def t_tolerance(m: int) -> float:
    """The Bonferroni t quantile (tests/_stats.py) for m comparisons over REPS replications."""
    return bonferroni_t(m, REPS - 1)


def se_per_server(res: SimulationResult) -> np.ndarray:
    return np.std(res.replication_means, axis=0, ddof=1) / math.sqrt(res.replications)


@pytest.fixture(scope="module")
def sims():
    """Simulation results, computed once per (instance, policy)."""
    cache: dict[tuple[str, str], SimulationResult] = {}

    def get(name: str, policy: str) -> SimulationResult:
        if (name, policy) not in cache:
            inst, horizon = INSTANCES[name]
            cache[name, policy] = simulate(
                inst, policy, horizon=horizon, replications=REPS, seed=SEED, keys=("test", name)
            )
        return cache[name, policy]

    return get


@pytest.fixture(scope="module")
def chains():
    """Truncated-chain results for C = 1, 2 (boundary mass < 1e-10), computed once."""
    cache = {}

    def get(name: str, policy: str):
        if (name, policy) not in cache:
            cache[name, policy] = stationary_cost(INSTANCES[name][0], policy, boundary_tol=1e-10)
        return cache[name, policy]

    return get


# -- (a) Bernoulli routing vs the product form -------------------------------------------------
def test_bernoulli_matches_product_form(sims):
    names = list(INSTANCES)
    n_servers = sum(INSTANCES[n][0].n_classes + 1 for n in names)
    tol = t_tolerance(len(names) + n_servers)
    for name in names:
        inst = INSTANCES[name][0]
        sol = solve_exact(inst)
        res = sims(name, "bernoulli")
        assert abs(res.cost - sol.cost) <= tol * res.standard_error, (name, res.cost, sol.cost)
        # CI half-width is the t_0.975 multiple of the standard error.
        assert res.ci95 == pytest.approx(stats.t.ppf(0.975, REPS - 1) * res.standard_error)
        rho = sol.loads
        exact_jobs = rho / (1.0 - rho)
        err = np.abs(res.per_server_mean_jobs - exact_jobs)
        # A server with no arrivals (class 4 of Table 1 has rho_4 ~ 0.001) has SE ~ 0.
        assert np.all(err <= tol * se_per_server(res) + 1e-3 * np.maximum(exact_jobs, 1e-3)), name


# -- (b) every policy vs the truncated chain, C = 1 and 2 --------------------------------------
def test_every_policy_matches_truncated_chain(sims, chains):
    pairs = [(n, p) for n in SMALL for p in POLICIES]
    n_servers = sum(INSTANCES[n][0].n_classes + 1 for n, _ in pairs)
    tol = t_tolerance(len(pairs) + n_servers)
    for name, policy in pairs:
        chain = chains(name, policy)
        assert chain.boundary_mass < 1e-10
        res = sims(name, policy)
        assert abs(res.cost - chain.cost) <= tol * res.standard_error, (name, policy)
        err = np.abs(res.per_server_mean_jobs - chain.per_server_mean_jobs)
        assert np.all(err <= tol * se_per_server(res)), (name, policy)


def test_dynamic_policies_differ_from_bernoulli_on_the_chain(chains):
    """The comparison above has power: the policies' exact costs are far apart."""
    for name in SMALL:
        costs = {p: chains(name, p).cost for p in POLICIES}
        assert costs["jsq"] > 1.1 * costs["bernoulli"]  # JSQ ignores speeds and costs
        assert costs["pi"] < 0.8 * costs["bernoulli"]


# -- (c) the truncated chain itself ------------------------------------------------------------
@pytest.mark.parametrize("name", SMALL)
def test_truncated_bernoulli_chain_is_product_of_mm1(name, chains):
    inst = INSTANCES[name][0]
    rho = arrival_rates(inst) / inst.mu
    L = 15
    res = stationary_cost(inst, "bernoulli", L, method="direct")
    product = np.ones(())
    for r in rho:
        marginal = r ** np.arange(L + 1)
        product = np.multiply.outer(product, marginal / marginal.sum())
    np.testing.assert_allclose(res.distribution, product, rtol=0, atol=1e-13)
    # With the boundary mass below 1e-10, the cost is the untruncated product form.
    full = chains(name, "bernoulli")
    assert full.cost == pytest.approx(solve_exact(inst).cost, rel=1e-8)
    np.testing.assert_allclose(full.per_server_mean_jobs, rho / (1.0 - rho), rtol=1e-8)
    # The result's JSON: a simulation's keys (ci95 None: exact) and the truncation's accuracy.
    d = json.loads(json.dumps(full.to_dict(), allow_nan=False))
    assert d == {
        "cost": full.cost,
        "ci95": None,
        "per_server_mean_jobs": full.per_server_mean_jobs.tolist(),
        "truncation": full.truncation,
        "boundary_mass": full.boundary_mass,
        "lost_rate": full.lost_rate,
    }
    assert d["cost"] == pytest.approx(solve_exact(inst).cost, rel=1e-8)


def test_chain_solvers_agree_and_ties_go_to_the_dedicated_server():
    inst = INSTANCES["c2"][0]
    for policy in POLICIES:
        a = stationary_cost(inst, policy, 12, method="direct")
        b = stationary_cost(inst, policy, 12, method="gauss-seidel")
        assert b.sweeps > 0 and a.sweeps == 0
        np.testing.assert_allclose(a.distribution, b.distribution, rtol=0, atol=1e-12)
        assert a.residual < 1e-12 and b.residual < 1e-12
    # JSQ from the empty state: both arrivals go to their dedicated servers (x_i = x_0 tie).
    q = generator(inst, "jsq", 3).toarray()
    strides = np.array([16, 4, 1])
    assert q[0, strides[1]] == inst.eta[0] and q[0, strides[2]] == inst.eta[1]
    assert q[0, strides[0]] == 0.0
    np.testing.assert_allclose(q.sum(axis=1), 0.0, atol=1e-12)


# -- (d) PI is never worse than optimal Bernoulli -----------------------------------------------
def test_pi_never_worse_than_bernoulli(sims, chains):
    for name in SMALL:  # exact, on the chain (policy-improvement theorem)
        assert chains(name, "pi").cost <= chains(name, "bernoulli").cost * (1 + 1e-9)
    names = list(INSTANCES)
    tol = t_tolerance(len(names))  # one-sided would do; two-sided is conservative
    for name in names:
        pi, bern = sims(name, "pi"), sims(name, "bernoulli")
        # Common random numbers: replication r of both is one pair; the paired difference's
        # standard error is the honest one (hypot(se_pi, se_bern) assumes independence).
        d = pi.replication_costs - bern.replication_costs
        noise = np.std(d, ddof=1) / math.sqrt(d.size)
        assert d.mean() <= tol * noise, (name, pi.cost, bern.cost)


# -- policy weights --------------------------------------------------------------------------
def test_policy_weights():
    inst = table1()
    np.testing.assert_array_equal(policy_weights(inst, "jsq"), np.ones(6))
    np.testing.assert_allclose(policy_weights(inst, "led"), 1.0 / inst.mu)
    np.testing.assert_allclose(policy_weights(inst, "io"), inst.cost / inst.mu)
    sol = solve_exact(inst)
    lam = arrival_rates(inst)
    np.testing.assert_allclose(lam, sol.loads * inst.mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(lam.sum(), inst.eta.sum())
    np.testing.assert_allclose(policy_weights(inst, "pi"), inst.cost / (inst.mu - lam))
    with pytest.raises(ValueError, match="not an index policy"):
        policy_weights(inst, "bernoulli")
    with pytest.raises(ValueError, match="policy"):
        policy_weights(inst, "power-of-two")


def test_alias_table_reproduces_the_event_probabilities():
    rates = np.array([3.0, 0.5, 7.0, 1e-3, 2.0, 2.0, 11.0])
    threshold, alias = alias_table(rates)
    m = rates.size
    prob = threshold / m
    for k in range(m):
        prob[alias[k]] += (1.0 - threshold[k]) / m
    np.testing.assert_allclose(prob, rates / rates.sum(), rtol=1e-12)


# -- (e) reproducibility ---------------------------------------------------------------------
def test_seeds_reproduce_results_exactly_and_differ_otherwise():
    inst = table1()
    kw = dict(horizon=50.0, replications=3)
    a = simulate(inst, "pi", seed=7, keys=("k", 1), **kw)
    b = simulate(inst, "pi", seed=7, keys=("k", 1), **kw)
    np.testing.assert_array_equal(a.replication_means, b.replication_means)
    assert a.cost == b.cost and a.ci95 == b.ci95 and a.events == b.events
    assert a.to_dict() == b.to_dict()
    for other in (
        simulate(inst, "pi", seed=8, keys=("k", 1), **kw),
        simulate(inst, "pi", seed=7, keys=("k", 2), **kw),
    ):
        assert not np.array_equal(a.replication_means, other.replication_means)
    # Replications are distinct streams; replication r does not depend on R.
    assert len(set(a.replication_costs.tolist())) == 3
    c = simulate(inst, "pi", seed=7, keys=("k", 1), horizon=50.0, replications=2)
    np.testing.assert_array_equal(c.replication_means, a.replication_means[:2])


def test_result_contract_and_bookkeeping():
    inst = INSTANCES["c2"][0]
    res = simulate(inst, "jsq", horizon=100.0, warmup=10.0, replications=2, seed=1)
    assert set(res.to_dict()) == {"cost", "ci95", "per_server_mean_jobs"}
    d = res.to_dict()
    assert isinstance(d["cost"], float) and isinstance(d["ci95"], float)
    assert len(d["per_server_mean_jobs"]) == 3
    assert res.cost == pytest.approx(float(res.per_server_mean_jobs @ inst.cost))
    lam = inst.eta.sum() + inst.mu.sum()
    assert res.steps == 2 * (round(lam * 100.0) + round(lam * 10.0))
    assert 0 < res.events <= res.steps
    assert res.warmup == 10.0
    assert simulate(inst, "jsq", horizon=100.0, replications=2).warmup == pytest.approx(10.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.cost = 0.0  # type: ignore[misc]


# -- (f) bad arguments -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "exc", "word"),
    [
        ({"policy": "power-of-two"}, UserPolicyError, "policy"),
        ({"horizon": 0.0}, ArgumentError, "horizon"),
        ({"horizon": -5.0}, ArgumentError, "horizon"),
        ({"horizon": math.inf}, ArgumentError, "horizon"),
        ({"horizon": "10"}, ArgumentError, "horizon"),
        ({"warmup": -1.0}, ArgumentError, "warmup"),
        ({"replications": 1}, ArgumentError, "replications"),
        ({"replications": 2.5}, ArgumentError, "replications"),
        ({"seed": -1}, ArgumentError, "seed"),
        ({"start": "full"}, ArgumentError, "start"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs, exc, word):
    # every one a ValueError whose message starts with the argument's name
    args = {"policy": "jsq", "horizon": 10.0, "replications": 2}
    args.update(kwargs)
    policy = args.pop("policy")
    with pytest.raises(exc, match=f"^{word}") as info:
        simulate(table1(), policy, **args)
    assert isinstance(info.value, ValueError)
    if exc is ArgumentError:
        assert info.value.argument == word


def test_bad_chain_arguments():
    inst = INSTANCES["c1"][0]
    with pytest.raises(ValueError, match="policy"):
        stationary_cost(inst, "power-of-two", 5)
    with pytest.raises(ValueError, match="truncation"):
        stationary_cost(inst, "jsq", 0)
    with pytest.raises(ValueError, match="method"):
        stationary_cost(inst, "jsq", 5, method="qr")
    with pytest.raises(ValueError, match="truncation"):
        stationary_cost(table1(), "jsq", 20)  # 21^6 states


def test_bernoulli_start_removes_initialisation_bias():
    """Started from the product-form stationary law, optimal Bernoulli routing needs no
    warm-up: a short run without warm-up matches sum c rho/(1 - rho) on a heavily loaded
    instance (loads 0.95-0.97), where starting empty is biased low."""
    inst = Instance(mu=[10.0, 6.0, 8.0], cost=[1.0, 2.0, 3.0], eta=[11.0, 12.0])
    exact = solve_exact(inst)
    assert exact.loads.min() > 0.94
    res = simulate(
        inst, "bernoulli", horizon=50.0, warmup=0.0, replications=400, seed=3, start="bernoulli"
    )
    assert abs(res.cost - exact.cost) < 3.3 * res.ci95 / 1.96  # 99.9% two-sided
    empty = simulate(
        inst, "bernoulli", horizon=50.0, warmup=0.0, replications=400, seed=3, start="empty"
    )
    assert empty.cost + empty.ci95 < exact.cost  # the bias the option removes
