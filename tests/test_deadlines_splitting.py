"""Optimal Bernoulli splitting (Part B, ``docs/deadlines.md#bernoulli-splitting``): KKT search vs a
generic solver, KKT conditions, saturated / unused clusters, pure routing."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from queue_routing.deadlines import (
    Cluster,
    ConvexityWarning,
    Deadline,
    Instance,
    f,
    f_prime,
    optimal_split,
)
from queue_routing.seeding import rng_for

SEED = 2012


def cost_of(inst, rates):
    lam0 = inst.arrival_rate - float(np.sum(rates))
    c = sum(
        f(float(np.clip(r, 0, cl.capacity)), cl.servers, cl.rate, inst.deadline)
        for r, cl in zip(rates, inst.clusters, strict=True)
    )
    return c + (0.0 if inst.rejection_cost is None else inst.rejection_cost * lam0)


def generic(inst, x0):
    caps = np.array([c.capacity for c in inst.clusters])
    lam = inst.arrival_rate
    if inst.rejection_cost is None:
        cons = [{"type": "eq", "fun": lambda x: lam - x.sum(), "jac": lambda x: -np.ones_like(x)}]
    else:
        cons = [{"type": "ineq", "fun": lambda x: lam - x.sum(), "jac": lambda x: -np.ones_like(x)}]

    def jac(x):
        g = np.array(
            [
                f_prime(float(np.clip(r, 0, c.capacity)), c.servers, c.rate, inst.deadline)
                for r, c in zip(x, inst.clusters, strict=True)
            ]
        )
        return g - (0.0 if inst.rejection_cost is None else inst.rejection_cost)

    res = minimize(
        lambda x: cost_of(inst, x),
        x0,
        jac=jac,
        method="SLSQP",
        bounds=list(zip(0 * caps, caps, strict=True)),
        constraints=cons,
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return cost_of(inst, np.clip(res.x, 0, caps))


def random_instance(rng, kind, pure):
    n = int(rng.integers(2, 5))
    m = rng.integers(1, 6, n)
    mu = rng.uniform(0.3, 2.0, n)
    cap = float(np.sum(m * mu))
    dl = {
        "constant": {"kind": "constant", "t": float(rng.uniform(0.5, 3))},
        "uniform": {
            "kind": "uniform",
            "low": float(rng.uniform(0, 1)),
            "high": float(rng.uniform(1.5, 4)),
        },
        "exponential": {"kind": "exponential", "mean": float(rng.uniform(0.5, 3))},
    }[kind]
    dl["on"] = str(rng.choice(["response", "waiting"]))
    return Instance.from_dict(
        {
            "arrival_rate": float(rng.uniform(0.5, 0.97 if pure else 1.3) * cap),
            "servers": m.tolist(),
            "service_rates": mu.tolist(),
            "rejection_cost": None if pure else float(rng.uniform(0.2, 2.5)),
            "deadline": dl,
        }
    )


def assert_kkt(sol):
    inst = sol.instance
    rates, alpha = sol.rates, sol.alpha
    assert np.all(rates >= 0)
    assert rates.sum() + sol.rejected_rate == pytest.approx(inst.arrival_rate, rel=1e-12)
    for r, c in zip(rates, inst.clusters, strict=True):
        d = f_prime(float(r), c.servers, c.rate, inst.deadline)
        if r <= 0:
            assert d >= alpha - 1e-9
        elif r >= c.capacity * (1 - 1e-12):
            assert d <= alpha + 1e-9
        else:
            assert d == pytest.approx(alpha, rel=1e-7, abs=1e-9)
    if sol.rejected_rate > 1e-12:
        assert alpha == inst.rejection_cost
    if inst.rejection_cost is not None:
        assert alpha <= inst.rejection_cost + 1e-12


@pytest.mark.parametrize("kind", ["constant", "uniform", "exponential"])
@pytest.mark.parametrize("pure", [False, True])
def test_bs_matches_generic_solver(kind, pure):
    rng = rng_for(SEED, "bs-vs-slsqp", kind, int(pure))
    for _ in range(4):
        inst = random_instance(rng, kind, pure)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvexityWarning)
            sol = optimal_split(inst)
        assert sol.nonconvex == ()
        assert_kkt(sol)
        assert sol.cost == pytest.approx(cost_of(inst, sol.rates), rel=1e-13)
        caps = np.array([c.capacity for c in inst.clusters])
        starts = [sol.rates, caps / caps.sum() * inst.arrival_rate * (0.999 if pure else 0.5)]
        if pure:  # a perturbed start that still routes everything
            p = np.clip(sol.rates + rng.uniform(-0.02, 0.02, caps.size) * caps, 0, caps)
            starts.append(p * inst.arrival_rate / p.sum())
        costs = [generic(inst, np.clip(x0, 0, caps)) for x0 in starts]
        scale = max(1.0, abs(sol.cost))
        assert min(costs) == pytest.approx(sol.cost, rel=1e-7, abs=1e-7 * scale)
        assert min(costs) >= sol.cost - 1e-9 * scale  # the generic solver never wins


def test_unused_and_all_rejected():
    dl = Deadline("constant", t=1.0)
    slow, fast = Cluster(1, 0.1), Cluster(2, 2.0)
    # R = 0.5 < f'_slow(0) = e^{-0.1}: the slow cluster is never used.
    sol = optimal_split(Instance(1.0, (slow, fast), 0.5, dl))
    assert sol.unused.tolist() == [True, False]
    assert sol.rejected_rate == 0 and sol.rates[1] == pytest.approx(1.0, rel=1e-12)
    assert_kkt(sol)
    # R below every f'(0): reject everything, alpha = R.
    sol = optimal_split(Instance(1.0, (slow, fast), 0.1, dl))
    assert sol.rejected_rate == 1.0 and sol.alpha == 0.1 and sol.cost == pytest.approx(0.1)
    assert sol.rejection_probability == 1.0 and np.all(sol.probabilities == 0)


def test_saturated_cluster():
    dl = Deadline("constant", t=1.0)
    # f'_slow(m mu-) = 1.1 < R = 1.5: the slow cluster is fed at capacity, the rest rejected.
    sol = optimal_split(Instance(8.0, (Cluster(1, 0.1), Cluster(2, 2.0)), 1.5, dl))
    assert sol.saturated.tolist() == [True, False]
    assert sol.rates[0] == 0.1 and sol.rejected_rate > 0 and sol.alpha == 1.5
    assert_kkt(sol)
    # Pure routing near capacity: the slow cluster saturates (f'(cap-) = 1.01 < alpha).
    inst = Instance(10.005, (Cluster(10, 1.0), Cluster(1, 0.01)), None, dl)
    sol = optimal_split(inst)
    assert sol.saturated.tolist() == [False, True]
    assert sol.rates.sum() == pytest.approx(10.005, rel=1e-14)
    assert sol.probabilities.sum() == pytest.approx(1.0, rel=1e-14)
    assert_kkt(sol)
    assert generic(inst, sol.rates) >= sol.cost - 1e-9


def test_identical_clusters_split_evenly():
    dl = Deadline("uniform", low=0.5, high=2.0)
    inst = Instance(3.0, (Cluster(2, 1.0), Cluster(2, 1.0)), None, dl)
    sol = optimal_split(inst)
    np.testing.assert_allclose(sol.rates, [1.5, 1.5], rtol=1e-10)


def test_level_search_reaches_astronomically_small_marginal_costs():
    """Deadlines of 1000 and 800 mean service times (300 jobs per unit time on clusters of
    3 x 100 and 2 x 80, t = 10): splitting 221 / 79 leaves
    both clusters ~80 jobs per unit time below capacity, a miss rate near 300 e^{-790}
    (mpmath, from the sojourn tail's closed form); the level search must get below 1e-290
    too (an absolute tolerance on the level stopped at a split with cost 1.2e-16)."""
    import mpmath as mp

    from queue_routing.deadlines import Instance

    inst = Instance.from_dict(
        {
            "arrival_rate": 300,
            "servers": [3, 2],
            "service_rates": [100, 80],
            "rejection_cost": 2,
            "deadline": {"kind": "constant", "t": 10},
        }
    )

    def f_mp(lam, m, mu, t):  # lam P(T > t), T the M/M/m FCFS response time
        lam, mu, t = mp.mpf(lam), mp.mpf(mu), mp.mpf(t)
        a = lam / mu
        b = a**m / mp.factorial(m) / (1 - a / m)
        c = b / (sum(a**k / mp.factorial(k) for k in range(m)) + b)  # Erlang C
        d = (m - 1) * mu - lam
        return lam * (
            mp.exp(-mu * t) + c * mu / d * (mp.exp(-mu * t) - mp.exp(-(m * mu - lam) * t))
        )

    with mp.workdps(50):
        near_opt = f_mp(221, 3, 100, 10) + f_mp(79, 2, 80, 10)
    assert near_opt < mp.mpf("1e-330")
    split = optimal_split(inst)
    assert split.rejected_rate == 0.0 and split.rates.sum() == pytest.approx(300.0, rel=1e-15)
    assert 0.0 <= split.cost <= 1e-290


@pytest.mark.parametrize(
    ("t", "rate", "lam"),
    [(8.022262617851204, 14.12537544622754, 0.0058), (6.0, 20.0, 0.01), (12.0, 9.0, 1e-3)],
)
def test_a_cluster_whose_marginal_cost_is_flat_from_zero_takes_a_small_load(t, rate, lam):
    """A fast cluster (5 x ``rate``) with a long deadline has f' constant to 16 digits from 0
    to half its capacity (e^{-rate t}); 24 slow clusters (1 x 1) have f'(0) = e^{-t}, far
    above. A small load all goes to the fast cluster: the split's cost is no more than that
    single-cluster allocation's (f directly), and every other allocation of the load to one
    cluster costs more. (The level search used to stop on its bracket: exp(log(lo)) is an ulp
    above lo, where the flat f' already routes more than the load.)"""
    clusters = (Cluster(1, 1.0), Cluster(5, rate), *(Cluster(1, 1.0),) * 23)
    inst = Instance(lam, clusters, None, Deadline("constant", t=t))
    sol = optimal_split(inst)
    assert np.sum(sol.rates) == pytest.approx(lam, rel=1e-12)
    single = [f(lam, c.servers, c.rate, inst.deadline) for c in clusters]
    assert sol.cost <= min(single) * (1 + 1e-9)
    assert sol.cost == pytest.approx(cost_of(inst, sol.rates), rel=1e-12)
    assert int(np.argmin(single)) == 1 and sol.rates[1] == pytest.approx(lam, rel=1e-9)
