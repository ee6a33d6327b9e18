"""Multiple control variates with known means (Part A's paired comparisons).

Method: docs/multiskill.md#control-variates-with-known-means.

* ``regression_estimate`` against an independent computation: the intercept of
  ``numpy.linalg.lstsq`` of ``y`` on ``[1, x - means]`` and its textbook standard error
  ``s^2 (Z'Z)^-1 [0, 0]``; one control is ``control_variate_estimate``; the jackknife against
  a brute-force leave-one-out loop of ``lstsq`` fits; an exact linear relation gives the exact
  mean with no error (hypothesis over classes of inputs);
* calibration on synthetic data with known means (Monte Carlo): the regression interval with
  ``R - 1 - q`` degrees of freedom covers the true mean at its level;
* the kernel's control sums against a plain-Python run of the chain on the same streams;
* every control has mean 0 (Monte Carlo over many replications, t test at 1% family-wise).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _stats import bonferroni_t
from queue_routing.errors import ArgumentError
from queue_routing.multiskill import Instance, solve_exact
from queue_routing.multiskill.policies import alias_table, bernoulli_probabilities, policy_weights
from queue_routing.multiskill.policy_comparison import known_mean_controls
from queue_routing.multiskill.simulation import (
    event_rates,
    replication_states,
    simulate_policies,
)
from queue_routing.paired import control_variate_estimate, regression_estimate
from queue_routing.rng import uniforms
from queue_routing.seeding import rng_for
from queue_routing.stats import t_quantile

C2 = Instance(mu=[3.0, 2.0, 1.5], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0], name="c2")


def _lstsq_reference(y, x, means):
    """Intercept and its standard error of the regression of y on [1, x - means]."""
    r, q = x.shape
    z = np.column_stack([np.ones(r), x - means])
    coef, *_ = np.linalg.lstsq(z, y, rcond=None)
    resid = y - z @ coef
    s2 = float(resid @ resid) / (r - 1 - q)
    return coef[0], math.sqrt(s2 * np.linalg.inv(z.T @ z)[0, 0])


@settings(max_examples=40, deadline=None)
@given(r=st.integers(6, 40), q=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_regression_is_the_intercept_of_least_squares(r, q, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(r, q)) * rng.uniform(0.1, 10.0, q)
    y = 2.0 + x @ rng.normal(size=q) + rng.normal(size=r)
    means = rng.normal(size=q)
    e = regression_estimate(y, x, means)
    theta, se = _lstsq_reference(y, x, means)
    assert e.estimate == pytest.approx(theta, rel=1e-9, abs=1e-9)
    assert e.standard_error == pytest.approx(se, rel=1e-7)
    assert e.df == r - 1 - q and e.replications == r
    assert e.ci95 == pytest.approx(t_quantile(0.975, r - 1 - q) * se, rel=1e-7)


def test_one_control_is_the_single_control_estimator():
    rng = rng_for(1, "test-control-variates-one")
    x = rng.normal(1.0, 2.0, 15)
    y = 3.0 - 0.7 * x + rng.normal(0.0, 0.3, 15)
    a = regression_estimate(y, x, [1.2])
    b = control_variate_estimate(y, x, 1.2)
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12)
    assert a.standard_error == pytest.approx(b.standard_error, rel=1e-10)
    assert a.df == b.df


@settings(max_examples=20, deadline=None)
@given(r=st.integers(6, 25), q=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_jackknife_matches_a_brute_force_leave_one_out(r, q, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(r, q))
    y = x @ rng.normal(size=q) + rng.exponential(size=r)  # skewed noise
    means = rng.normal(size=q) * 0.1
    full = _lstsq_reference(y, x, means)[0]
    loo = np.array(
        [_lstsq_reference(np.delete(y, k), np.delete(x, k, 0), means)[0] for k in range(r)]
    )
    theta = r * full - (r - 1) * loo.mean()
    se = math.sqrt((r - 1) / r * np.sum((loo - loo.mean()) ** 2))
    e = regression_estimate(y, x, means, method="jackknife")
    assert e.estimate == pytest.approx(theta, rel=1e-8, abs=1e-8)
    assert e.standard_error == pytest.approx(se, rel=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    r=st.integers(5, 30),
    b=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=3),
    c=st.floats(-100.0, 100.0),
    seed=st.integers(0, 10**6),
)
def test_an_exact_linear_relation_gives_the_exact_mean(r, b, c, seed):
    """y = c + x b with no noise: E[y] = c + means b whatever the sample, with no error."""
    rng = np.random.default_rng(seed)
    q = len(b)
    x = rng.normal(size=(r, q))
    means = rng.normal(size=q)
    y = c + x @ np.array(b)
    for method in ("regression", "jackknife"):
        e = regression_estimate(y, x, means, method=method)
        assert e.estimate == pytest.approx(c + means @ np.array(b), abs=1e-8 * (1 + abs(c)))
        assert e.standard_error <= 1e-8 * (1 + abs(c) + np.abs(b).sum())


def test_regression_interval_covers_the_known_mean_at_its_level():
    """Monte Carlo: 4000 samples of R = 12 replications of y and three correlated controls
    with known means (multivariate normal); the interval with R - 1 - 3 = 8 degrees of
    freedom covers E[y] in 95% of them (binomial 99.9% band), the estimator is unbiased, and
    the jackknife's interval covers in 90-99%."""
    rng = rng_for(5, "test-control-variates-coverage")
    n, r, q = 4000, 12, 3
    means = np.array([1.0, -2.0, 0.5])
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.5], [0.0, 0.5, 1.5]])
    chol = np.linalg.cholesky(cov)
    x = means + rng.normal(size=(n, r, q)) @ chol.T
    y = 4.0 + (x - means) @ np.array([1.0, -0.5, 2.0]) + rng.normal(0.0, 0.7, (n, r))
    est = [regression_estimate(y[k], x[k], means) for k in range(n)]
    cover = np.mean([abs(e.estimate - 4.0) <= e.ci95 for e in est])
    assert abs(cover - 0.95) <= 3.29 * math.sqrt(0.95 * 0.05 / n), cover
    theta = np.array([e.estimate for e in est])
    assert abs(theta.mean() - 4.0) <= 3.29 * theta.std(ddof=1) / math.sqrt(n)
    jack = [regression_estimate(y[k], x[k], means, method="jackknife") for k in range(1000)]
    assert 0.90 <= np.mean([abs(e.estimate - 4.0) <= e.ci95 for e in jack]) <= 0.99


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"controls": np.zeros((4, 3))}, "controls"),  # R < q + 2
        ({"controls": np.zeros((5, 1)), "means": [0.0, 1.0]}, "means"),
        ({"controls": np.zeros((6, 1)), "method": "bootstrap"}, "method"),
        ({"controls": np.full((5, 1), np.nan)}, "controls"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs, word):
    samples = np.arange(float(len(kwargs["controls"])))
    with pytest.raises(ArgumentError, match=word):
        regression_estimate(samples, **kwargs)


# -- the kernel's control sums ---------------------------------------------------------------
def _reference_sums(inst, policy, n_warm, n_steps, states, loads):
    """The control sums of one policy from a plain-Python run of the uniformised chain on
    the same streams (a second implementation: the alias draw, the routing, the sums)."""
    threshold, alias = alias_table(event_rates(inst))
    n, m = inst.n_classes, threshold.size
    ev = uniforms(states[0], n_warm + n_steps)
    coins = iter(uniforms(states[1], n_warm + n_steps))
    start = uniforms(states[2], n + 1)
    x = [int(np.floor(np.log(1 - u) / np.log(rho))) for u, rho in zip(start, loads, strict=True)]
    init = list(x)
    p = bernoulli_probabilities(inst) if policy == "bernoulli" else None
    w = None if policy == "bernoulli" else policy_weights(inst, policy)
    dep_jobs, own, shared = [0] * (n + 1), [0] * n, [0] * n
    routed, arrivals, departures = [0] * (n + 1), [0] * n, [0] * (n + 1)
    for step in range(n_warm + n_steps):
        u = ev[step] * m
        k = min(int(u), m - 1)
        k = k if u - k < threshold[k] else alias[k]
        measured = step >= n_warm
        if k < n:
            i = k + 1
            if p is not None:
                j = i if next(coins) < p[k] else 0
            else:
                j = i if w[i] * (x[i] + 1) <= w[0] * (x[0] + 1) else 0
            if measured:
                own[k] += x[i]
                shared[k] += x[0]
                routed[j] += 1
                arrivals[k] += 1
            x[j] += 1
        else:
            j = k - n
            if measured:
                dep_jobs[j] += x[j]
                departures[j] += 1
            x[j] = max(x[j] - 1, 0)
    return np.array(dep_jobs + own + shared + routed + arrivals + departures + init, dtype=float)


def test_control_sums_match_a_python_reference():
    kw = {"horizon": 60.0, "warmup": 6.0, "seed": 9, "keys": ("cv-sums",), "start": "bernoulli"}
    blocks = simulate_policies(C2, ["bernoulli", "jsq", "pi"], range(2), **kw)
    lam = float(C2.eta.sum() + C2.mu.sum())
    n_steps, n_warm = round(lam * 60.0), round(lam * 6.0)
    loads = solve_exact(C2).loads
    for policy, block in blocks.items():
        assert block.measured_steps == n_steps
        for row, r in enumerate(block.indices):
            states = replication_states(9, ("cv-sums",), r)
            ref = _reference_sums(C2, policy, n_warm, n_steps, states, loads)
            np.testing.assert_array_equal(block.control_sums[row], ref, err_msg=policy)


def test_every_control_has_mean_zero():
    """400 short replications from Bernoulli's stationary law: under every policy each
    control's mean is within its t interval of 0 (Bonferroni over the controls tested;
    ``routed`` has a known mean only under Bernoulli's coins)."""
    reps = 400
    blocks = simulate_policies(
        C2, ["bernoulli", "jsq", "pi"], range(reps), horizon=20.0, seed=4, keys=("cv-mean",),
        start="bernoulli",
    )  # fmt: skip
    exact = solve_exact(C2)
    checks = []
    for policy, block in blocks.items():
        controls = known_mean_controls(C2, block, exact)
        for name, values in controls.items():
            if name == "routed" and policy != "bernoulli":
                continue
            checks.append((policy, name, values))
    q = bonferroni_t(len(checks), reps - 1)
    for policy, name, v in checks:
        se = v.std(ddof=1) / math.sqrt(reps)
        assert se > 0, (policy, name)
        assert abs(v.mean()) <= q * se, (policy, name, v.mean(), se)


def test_a_split_study_with_controls_gives_the_unsplit_tables():
    """The pipeline's chunks write each replication's controls; the comparison reassembled
    from chunks of replications (written and read back as CSV) is the unsplit one, bit for
    bit, and uses the controls (R = 9 >= 8)."""
    import io

    import pandas as pd

    from queue_routing.multiskill.experiments import (
        policy_comparison_from_costs,
        policy_comparison_rows,
        policy_replication_costs,
    )
    from queue_routing.multiskill.instances import random_instance

    def round_trip(df):
        buffer = io.StringIO()
        df.to_csv(buffer, index=False, lineterminator="\n")
        buffer.seek(0)
        return pd.read_csv(buffer)

    def csv(df):
        return df.to_csv(index=False, lineterminator="\n")

    instances = [(k, random_instance(10, 7, k)) for k in range(2)]
    run = {"policies": ["jsq", "pi"], "horizon": 30.0, "warmup": 3.0, "seed": 7}
    rows, diffs = policy_comparison_rows(instances, replications=9, **run)
    parts = [
        round_trip(policy_replication_costs(instances, replications=block, **run))
        for block in (range(0, 4), range(4, 9))
    ]
    rows2, diffs2 = policy_comparison_from_costs(instances, pd.concat(parts[::-1]), **run)
    assert csv(rows2) == csv(rows) and csv(diffs2) == csv(diffs)
    plain = policy_comparison_from_costs(
        instances, pd.concat(parts).drop(columns=["martingale"]).assign(martingale=0.0), **run
    )[0]
    # a zero martingale column is a control that does not vary: other ratios than with it
    assert not np.array_equal(plain["ratio"].to_numpy(), rows["ratio"].to_numpy())


@pytest.mark.parametrize(
    "controls",
    [None, ("martingale", "bernoulli_cost"), ("initial_state", "martingale", "bernoulli_cost")],
)
def test_a_comparison_regresses_on_the_controls_asked(controls):
    """paired_comparison on a chosen control set: each ratio is the intercept of numpy's
    least squares of the policy's costs on those controls (in that order) divided by B, a
    difference on the difference of the martingales and the shared controls; the default
    is the martingale alone; unknown or repeated names are refused."""
    from queue_routing.multiskill.policy_comparison import paired_comparison

    policies = ["bernoulli", "jsq", "pi"]
    kw = {"horizon": 40.0, "warmup": 4.0, "seed": 5, "keys": ("cv-sets",), "start": "bernoulli"}
    blocks = simulate_policies(C2, policies, range(9), **kw)
    exact = solve_exact(C2)
    b = float(exact.cost)
    ctl = {p: known_mean_controls(C2, block, exact) for p, block in blocks.items()}
    costs = {p: np.asarray(block.costs, dtype=float) for p, block in blocks.items()}
    res = paired_comparison(
        b, costs, policies, horizon=40.0, warmup=4.0, seed=5, controls=controls,
        martingales={p: c["martingale"] for p, c in ctl.items()},
        initial_state=ctl["bernoulli"]["initial_state"],
    )  # fmt: skip
    names = ("martingale",) if controls is None else controls
    assert res.controls == names

    def columns(mart):
        shared = {
            "initial_state": ctl["bernoulli"]["initial_state"],
            "bernoulli_cost": costs["bernoulli"] - b,
        }
        return np.column_stack([mart if c == "martingale" else shared[c] for c in names])

    for p in ("jsq", "pi"):
        theta, se = _lstsq_reference(costs[p], columns(ctl[p]["martingale"]), 0.0)
        assert res.policies[p].ratio == pytest.approx(theta / b, rel=1e-9)
        t = t_quantile(0.975, 9 - 1 - len(names))
        assert res.policies[p].ratio_ci95 == pytest.approx(t * se / b, rel=1e-7)
    d = res.differences[("jsq", "pi")]
    mart = ctl["jsq"]["martingale"] - ctl["pi"]["martingale"]
    theta, _ = _lstsq_reference(costs["jsq"] - costs["pi"], columns(mart), 0.0)
    assert d.estimate == pytest.approx(theta, rel=1e-9, abs=1e-12)
    for bad in (["martingale", "martingale"], ["arrivals"], []):
        with pytest.raises(ArgumentError, match=r"^controls"):
            paired_comparison(
                b, costs, policies, horizon=40.0, warmup=4.0, seed=5, controls=bad,
                martingales={p: c["martingale"] for p, c in ctl.items()},
            )  # fmt: skip


@pytest.mark.parametrize("eta", [0.5, 1.2, 1.9])
def test_relaxation_time_is_the_slowest_queues_inverse_spectral_gap(eta):
    """relaxation_time against the spectral gap of each server's M/M/1 queue (arrival rate
    mu_j rho_j from the exact solution), computed as the second-smallest eigenvalue of the
    symmetrised birth-death generator truncated far out (numpy; the gap of the truncation
    converges to that of the infinite queue); default_controls adds the initial state exactly
    when that time exceeds the warm-up."""
    from queue_routing.multiskill.policy_comparison import (
        CONTROLS,
        SLOW_CONTROLS,
        default_controls,
        relaxation_time,
    )

    inst = Instance(mu=[2.0, 1.0], cost=[1.0, 2.0], eta=[eta])
    exact = solve_exact(inst)
    gaps = []
    for mu, rho in zip(inst.mu, exact.loads, strict=True):
        lam, n = mu * rho, 3000
        if lam == 0.0:  # an idle queue: its only job-free mode decays at rate mu
            gaps.append(mu)
            continue
        off = np.full(n - 1, math.sqrt(lam * mu))  # similarity transform of the tridiagonal
        diag = -np.r_[lam, np.full(n - 2, lam + mu), mu]
        eig = np.linalg.eigvalsh(np.diag(diag) + np.diag(off, 1) + np.diag(off, -1))
        gaps.append(-np.sort(eig)[-2])
    tau = 1.0 / min(gaps)
    assert relaxation_time(inst, exact) == pytest.approx(tau, rel=2e-3)
    assert default_controls(inst, 0.9 * tau) == SLOW_CONTROLS
    assert default_controls(inst, 1.1 * tau) == CONTROLS


def test_ratio_intervals_are_calibrated_with_more_shorter_replications():
    """100 seeded comparisons on a C = 2 instance with R = 20 replications of 270 time units
    after 60 (the other budget shape considered in the docs): the 95% ratio intervals of JSQ
    and PI on the controls of known mean cover the exact chain value in 90-99% of them
    (pooled), and the mean ratio agrees with the chain."""
    from queue_routing.multiskill import compare_policies
    from queue_routing.multiskill.markov import stationary_cost

    base = solve_exact(C2).cost
    exact = {p: stationary_cost(C2, p, boundary_tol=1e-8).cost / base for p in ("jsq", "pi")}
    ratios = {p: [] for p in exact}
    hits = []
    for run in range(100):
        res = compare_policies(
            C2, ["bernoulli", "jsq", "pi"], horizon=270.0, warmup=60.0, replications=20,
            seed=2022, keys=("calibration-budget", run),
        )  # fmt: skip
        assert res.controls == ("martingale",)
        for p, value in exact.items():
            e = res.policies[p]
            ratios[p].append(e.ratio)
            hits.append(abs(e.ratio - value) <= e.ratio_ci95)
    assert 0.90 <= np.mean(hits) <= 0.99, np.mean(hits)
    q = bonferroni_t(2, 99)
    for p, value in exact.items():
        v = np.array(ratios[p])
        assert abs(v.mean() - value) <= q * v.std(ddof=1) / math.sqrt(v.size), p
