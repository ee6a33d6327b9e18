"""Paired policy comparisons on the multi-skilled system against independent references.

Method: docs/multiskill.md#paired-policy-comparisons and
docs/multiskill.md#common-random-numbers.

* common random numbers are synchronised: policies that take the same decisions give the same
  sample path bit for bit (the policy is not a stream key, and Bernoulli's coins do not shift
  the event stream);
* the paired, control-variate ratios agree with independent-stream estimates (other random
  numbers, no control) within their combined standard errors;
* for C = 1 and 2 the paired ratio is within its interval of the exact truncated-chain ratio;
* calibration: over many short seeded comparisons on a C = 2 instance the 95% ratio intervals
  cover the exact chain value in 90-99% of the runs (the estimator on the default control of
  known mean, the martingale), and the control-variate estimator is
  unbiased (its mean over the runs agrees with the chain) while its variance is smaller;
* the best is declared only when separated, and the result's contract.

Tolerances: Bonferroni t quantiles at a family-wise level of 1% per test function
(``tests/_stats.py``), with the estimators' own degrees of freedom.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from _stats import bonferroni_t
from queue_routing.multiskill import Instance, compare_policies, solve_exact
from queue_routing.multiskill.instances import table1
from queue_routing.multiskill.markov import stationary_cost
from queue_routing.multiskill.policies import (
    POLICIES,
    alias_table,
    bernoulli_probabilities,
    policy_weights,
)
from queue_routing.multiskill.simulation import (
    _simulate_kernel,
    event_rates,
    replication_states,
    simulate,
    simulate_policies,
    simulate_replications,
)
from queue_routing.rng import uniforms

SEED = 2022
REPS = 10
C1 = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6], name="c1")
C2 = Instance(mu=[3.0, 2.0, 1.5], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0], name="c2")
T1 = table1()
T1_07 = Instance(mu=T1.mu, cost=T1.cost, eta=0.7 * T1.eta, name="table1x0.7")
CASES = {"c1": (C1, 4000.0), "c2": (C2, 4000.0), "table1x0.7": (T1_07, 300.0)}


@pytest.fixture(scope="module")
def paired():
    cache = {}

    def get(name):
        if name not in cache:
            inst, horizon = CASES[name]
            cache[name] = compare_policies(
                inst, horizon=horizon, replications=REPS, seed=SEED, keys=("paired", name)
            )
        return cache[name]

    return get


@pytest.fixture(scope="module")
def chain_ratio():
    cache = {}

    def get(name, policy):
        if (name, policy) not in cache:
            inst = CASES[name][0]
            # Boundary mass < 1e-8: the truncation moves the ratio by ~1e-12, far below the
            # intervals (~1e-3).
            exact = stationary_cost(inst, policy, boundary_tol=1e-8)
            assert exact.boundary_mass < 1e-8
            cache[name, policy] = exact.cost / solve_exact(inst).cost
        return cache[name, policy]

    return get


# -- synchronisation of the common random numbers ------------------------------------------
def test_policies_with_the_same_decisions_have_the_same_path():
    """Equal speeds and costs: LED and IO route exactly as JSQ does, so on common random
    numbers the three give identical replications; on other keys they do not."""
    inst = Instance(mu=[2.0, 2.0, 2.0], cost=[1.0, 1.0, 1.0], eta=[1.5, 1.2])
    kw = dict(horizon=300.0, replications=3, seed=4, keys=("sync",), start="bernoulli")
    jsq = simulate(inst, "jsq", **kw)
    for policy in ("led", "io"):
        other = simulate(inst, policy, **kw)
        np.testing.assert_array_equal(other.replication_means, jsq.replication_means)
        assert other.events == jsq.events
    moved = simulate(inst, "led", **{**kw, "keys": ("sync", "led")})
    assert not np.array_equal(moved.replication_means, jsq.replication_means)


def test_bernoulli_coins_do_not_shift_the_event_stream():
    """Bernoulli routing with p = 1 (a coin drawn per arrival, always "dedicated") and an
    index rule that always picks the dedicated server give the same path from one set of
    stream states: the coins come from a stream of their own."""
    inst = C2
    threshold, alias = alias_table(event_rates(inst))
    states = replication_states(SEED, ("coins",), 0)
    before = states.copy()
    loads = np.full(3, 0.5)
    ones = np.ones(2)

    def run(mode, prob, weight):  # one policy (P = 1): rows of the lockstep kernel's output
        means, events, _, _ = _simulate_kernel(
            2, threshold, alias, np.array([mode]), prob[None, :], weight[None, :],
            np.ones(1, dtype=np.int64), 100, 5000, states, loads,
        )  # fmt: skip
        return means[0], events[0]

    a = run(0, ones, np.ones(3))
    b = run(1, np.zeros(2), np.array([np.inf, 1.0, 1.0]))
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    np.testing.assert_array_equal(states, before)  # the kernel does not consume the caller's
    # p = 0.5: other routes, same arrivals; the number of arrivals is the event stream's.
    half = run(0, ones / 2, ones)
    assert not np.array_equal(half[0], a[0])


def _reference_run(inst, policy, n_warm, n_steps, states, loads):
    """The uniformised chain of one policy in plain Python from the same streams (a second
    implementation of the kernel: the alias draw, the routing rule, the exact time
    average of the visited states)."""
    threshold, alias = alias_table(event_rates(inst))
    n, m = inst.n_classes, threshold.size
    total = n_warm + n_steps
    ev = uniforms(states[0], total)
    coins = iter(uniforms(states[1], total))
    start = uniforms(states[2], n + 1)
    x = [
        int(np.floor(np.log(1.0 - u) / np.log(rho))) if rho > 0 else 0
        for u, rho in zip(start, loads, strict=True)
    ]
    p = bernoulli_probabilities(inst) if policy == "bernoulli" else None
    w = None if policy == "bernoulli" else policy_weights(inst, policy)
    visits = np.zeros(n + 1, dtype=np.int64)  # sum over measured steps of x (exact integers)
    events = 0
    for step in range(total):
        if step >= n_warm:
            visits += x
        u = ev[step] * m
        k = min(int(u), m - 1)
        k = k if u - k < threshold[k] else alias[k]
        if k < n:
            i = k + 1
            if p is not None:
                j = i if next(coins) < p[k] else 0
            else:
                j = i if w[i] * (x[i] + 1) <= w[0] * (x[0] + 1) else 0
            x[j] += 1
            events += 1
        elif x[k - n] > 0:
            x[k - n] -= 1
            events += 1
    return visits / n_steps, events


def test_the_lockstep_kernel_is_each_policy_alone_and_a_python_reference():
    """simulate_policies runs the policies of a comparison in one pass over the event
    stream; each policy's replications equal its run alone and a plain-Python
    implementation of the chain on the same streams (time averages of integer counts:
    equal to rounding)."""
    inst = C2
    policies = list(POLICIES)
    kw = {"horizon": 40.0, "warmup": 4.0, "seed": SEED, "keys": ("lockstep",)}
    together = simulate_policies(inst, policies, range(3), start="bernoulli", **kw)
    assert list(together) == policies
    loads = solve_exact(inst).loads
    lam = float(inst.eta.sum() + inst.mu.sum())
    n_steps, n_warm = round(lam * 40.0), round(lam * 4.0)
    for policy in policies:
        alone = simulate_replications(inst, policy, range(3), start="bernoulli", **kw)
        np.testing.assert_array_equal(together[policy].means, alone.means)
        assert together[policy].events_per_replication == alone.events_per_replication
        for row, r in enumerate(range(3)):
            states = replication_states(SEED, ("lockstep",), r)
            means, events = _reference_run(inst, policy, n_warm, n_steps, states, loads)
            np.testing.assert_allclose(together[policy].means[row], means, rtol=1e-12)
            assert together[policy].events_per_replication[row] == events, (policy, r)
    with pytest.raises(ValueError, match="distinct"):
        simulate_policies(inst, ["pi", "pi"], range(2), **kw)


def test_replication_streams_do_not_depend_on_the_policy_or_on_R():
    a = simulate(C2, "pi", horizon=100.0, replications=4, seed=3, keys=("k",))
    b = simulate(C2, "pi", horizon=100.0, replications=2, seed=3, keys=("k",))
    np.testing.assert_array_equal(a.replication_means[:2], b.replication_means)
    np.testing.assert_array_equal(
        replication_states(3, ("k",), 1), replication_states(3, ("k",), 1)
    )
    assert not np.array_equal(replication_states(3, ("k",), 1), replication_states(3, ("k",), 2))


# -- agreement with independent references -------------------------------------------------
def test_paired_ratios_agree_with_independent_streams(paired):
    """Independent streams (the policy in the keys, no control) estimate the same ratios."""
    names = list(CASES)
    m = len(names) * (len(POLICIES) - 1)
    q = bonferroni_t(m, REPS - 2)  # the smaller of the two estimators' degrees of freedom
    for name in names:
        inst, horizon = CASES[name]
        res = paired(name)
        base = res.baseline_cost
        for policy in POLICIES[1:]:
            ind = simulate(
                inst, policy, horizon=horizon, replications=REPS, seed=SEED,
                keys=("independent", name, policy), start="bernoulli",
            )  # fmt: skip
            e = res.policies[policy]
            noise = math.hypot(e.ratio_standard_error, ind.standard_error / base)
            assert abs(e.ratio - ind.cost / base) <= q * noise, (name, policy, e, ind.cost / base)


def test_paired_ratio_matches_the_truncated_chain(paired, chain_ratio):
    pairs = [(n, p) for n in ("c1", "c2") for p in POLICIES]
    q = bonferroni_t(len(pairs), REPS - 2)
    for name, policy in pairs:
        e = paired(name).policies[policy]
        exact = chain_ratio(name, policy)
        if policy == "bernoulli":  # its own control: exactly 1, the chain's value
            assert e.ratio == 1.0 and e.ratio_ci95 == 0.0
            assert exact == pytest.approx(1.0, rel=1e-6)
            continue
        assert abs(e.ratio - exact) <= q * e.ratio_standard_error, (name, policy, e.ratio, exact)


def test_the_best_is_the_chain_best_when_separated(paired, chain_ratio):
    for name in ("c1", "c2"):
        res = paired(name)
        exact = {p: chain_ratio(name, p) for p in POLICIES}
        true_best = min(exact, key=exact.get)
        assert res.best in (None, true_best), (name, res.best, true_best)
        assert res.ranking[-1] == max(exact, key=exact.get)  # JSQ, far behind
    # One class, PI vs Bernoulli: 11% apart, separated.
    res = compare_policies(C1, ["bernoulli", "pi"], horizon=2000.0, replications=REPS, seed=SEED)
    assert res.best == "pi" and res.ranking == ("pi", "bernoulli")


# -- calibration over many seeded runs -------------------------------------------------------
CAL_POLICIES = ("bernoulli", "jsq", "pi")


def calibration(n_runs: int, horizon: float):
    """Ratios and 95% half-widths of JSQ and PI on C2 over ``n_runs`` seeded comparisons,
    with and without the control variate (the same simulations)."""
    out = {p: {"cv": [], "hw": [], "plain": [], "plain_hw": []} for p in CAL_POLICIES[1:]}
    for run in range(n_runs):
        res = compare_policies(
            C2, CAL_POLICIES, horizon=horizon, warmup=0.1 * horizon, replications=REPS,
            seed=SEED, keys=("calibration", run),
        )  # fmt: skip
        assert res.controls == ("martingale",)
        base = res.baseline_cost
        for p in CAL_POLICIES[1:]:
            e = res.policies[p]
            out[p]["cv"].append(e.ratio)
            out[p]["hw"].append(e.ratio_ci95)
            out[p]["plain"].append(e.cost / base)
            out[p]["plain_hw"].append(e.ci95 / base)
    return {p: {k: np.array(v) for k, v in d.items()} for p, d in out.items()}


def check_calibration(cal, exact, per_policy_band: bool):
    n = len(next(iter(cal.values()))["cv"])
    hits = {p: np.abs(d["cv"] - exact[p]) <= d["hw"] for p, d in cal.items()}
    pooled = np.mean(np.concatenate(list(hits.values())))
    assert 0.90 <= pooled <= 0.99, pooled
    if per_policy_band:
        for p, h in hits.items():
            assert 0.90 <= h.mean() <= 0.99, (p, h.mean())
    q = bonferroni_t(2 * len(cal), n - 1)
    for p, d in cal.items():
        # Unbiased: the mean over the runs agrees with the exact chain.
        cv = d["cv"]
        assert abs(cv.mean() - exact[p]) <= q * cv.std(ddof=1) / math.sqrt(n), p
        # The control reduces the variance (same replications, same R).
        assert cv.var() < d["plain"].var(), p


@pytest.fixture(scope="module")
def c2_exact(chain_ratio):
    return {p: chain_ratio("c2", p) for p in CAL_POLICIES}


def test_ratio_intervals_are_calibrated(c2_exact):
    """100 seeded comparisons (horizon 600 after a warm-up of 60): the 95% intervals of the
    JSQ and PI ratios cover the chain's values in 90-99% of them (pooled)."""
    check_calibration(calibration(100, 600.0), c2_exact, per_policy_band=False)


@pytest.mark.slow
def test_ratio_intervals_are_calibrated_many_runs(c2_exact):
    """1000 seeded comparisons: the band holds for each policy separately."""
    check_calibration(calibration(1000, 600.0), c2_exact, per_policy_band=True)


# -- contract and arguments ------------------------------------------------------------------
def test_result_contract(paired):
    res = paired("c2")
    d = res.to_dict()
    assert set(d) == {"exact_bernoulli_cost", "policies", "ranking", "best", "controls"}
    assert d["controls"] == ["martingale"]
    assert list(d["policies"]) == list(POLICIES)
    for v in d["policies"].values():
        assert set(v) == {"cost", "ci95", "ratio", "ratio_ci95"}
        assert all(isinstance(x, float) for x in v.values())
    assert sorted(d["ranking"]) == sorted(POLICIES)
    ratios = [res.policies[p].ratio for p in res.ranking]
    assert ratios == sorted(ratios)
    assert res.baseline_cost == solve_exact(C2).cost
    assert res.replications == REPS and res.warmup == pytest.approx(400.0)
    assert set(res.differences) == {
        (a, b) for i, a in enumerate(POLICIES) for b in POLICIES[i + 1 :]
    }
    # cost is the plain mean of the replications of the shared-stream simulation.
    sim = res.simulations["pi"]
    assert res.policies["pi"].cost == pytest.approx(sim.replication_costs.mean())
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.best = "jsq"  # type: ignore[misc]
    # Reproducible bit for bit.
    again = compare_policies(
        C2, horizon=4000.0, replications=REPS, seed=SEED, keys=("paired", "c2")
    )
    assert again.to_dict() == d
    # Without the control: ratio = cost / B.
    plain = compare_policies(C2, ["jsq"], horizon=50.0, replications=3, control_variate=False)
    e = plain.policies["jsq"]
    assert e.ratio == pytest.approx(e.cost / plain.baseline_cost)
    assert plain.controls == () and "controls" not in plain.to_dict()
    # Fewer than 8 replications: the Bernoulli cost alone is the control (R - 2 df).
    few = compare_policies(C2, ["jsq"], horizon=50.0, replications=5)
    assert few.controls == ("bernoulli_cost",) and few.differences == {}
    assert "bernoulli" in plain.simulations and plain.ranking == ("jsq",)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"policies": []}, "policies"),
        ({"policies": ["pi", "pi"]}, "repeat"),
        ({"policies": ["power-of-two"]}, "policies"),
        ({"replications": 2}, "replications"),
        ({"horizon": 0.0}, "horizon"),
        ({"confidence": 1.5}, "confidence"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs, word):
    args = {"horizon": 10.0, "replications": 3, **kwargs}
    with pytest.raises(ValueError, match=word):
        compare_policies(C1, **args)


# -- the pipeline's tables -------------------------------------------------------------------
def test_comparison_rows_are_the_comparison_and_verdicts_count_them():
    from queue_routing.multiskill.experiments import (
        NOT_SEPARATED,
        policy_comparison_rows,
        verdict_summary,
    )

    insts = [(0, Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])), (1, table1())]
    kw = {"horizon": 200.0, "warmup": 20.0, "replications": 4, "seed": 9}
    rows, diffs = policy_comparison_rows(insts, policies=["bernoulli", "jsq", "pi"], **kw)
    for index, inst in insts:
        res = compare_policies(
            inst, ["bernoulli", "jsq", "pi"], keys=("random", inst.n_classes, index), **kw
        )
        mine = rows[rows["instance"] == index].set_index("policy")
        for policy, e in res.policies.items():
            assert mine.loc[policy, "ratio"] == e.ratio
            assert mine.loc[policy, "ratio_ci95"] == e.ratio_ci95
            assert mine.loc[policy, "rank"] == res.ranking.index(policy) + 1
        assert set(mine["best"]) == {res.best or NOT_SEPARATED}
        d = diffs[diffs["instance"] == index]
        assert len(d) == 3  # every pair once
        for row in d.itertuples():
            e = res.differences[row.policy_a, row.policy_b]
            assert (row.difference, row.ci95) == (e.estimate, e.ci95)
            # a verdict only where the Holm-adjusted one-sided p-value is below 0.05
            if row.verdict != NOT_SEPARATED:
                assert min(row.p_a_lower, row.p_b_lower) <= 0.05
    v = verdict_summary(rows)
    assert int(v[["bernoulli", "jsq", "pi", NOT_SEPARATED]].to_numpy().sum()) == len(insts)
