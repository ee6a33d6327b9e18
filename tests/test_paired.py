"""The shared paired statistics against independent references.

* ``mean_estimate`` and paired differences against ``scipy.stats.ttest_rel``;
* ``control_variate_estimate`` against ``scipy.stats.linregress`` of ``y`` on ``x - mu``
  (the intercept and its standard error are the estimator and its standard error), and the
  coverage of its interval on bivariate normal data with a known mean (Monte Carlo);
* ``holm`` against the step-down procedure written out by hand; ``select_best``: a clear
  winner is declared, two equal policies are not separated (Monte Carlo of the error rate);
* ``PolicyComparison``: one result for both parts, whose JSON starts with the part's
  baseline (the CLI contract of ``compare-policies``); ``from_samples``, what both parts'
  comparisons share: the plain means against scipy, the part's ratios as given, the run
  recorded as Python numbers.

Docs: docs/README.md#paired-comparisons.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from queue_routing.paired import (
    PairedEstimate,
    PolicyComparison,
    PolicyEstimate,
    control_variate_estimate,
    holm,
    mean_estimate,
    pairwise_differences,
    select_best,
)
from queue_routing.seeding import rng_for


def test_mean_and_paired_differences_match_scipy():
    rng = rng_for(1, "test-paired")
    a = rng.normal(3.0, 1.0, 12)
    b = a - 0.4 + rng.normal(0.0, 0.2, 12)
    e = mean_estimate(a)
    assert e.estimate == pytest.approx(a.mean())
    assert e.standard_error == pytest.approx(stats.sem(a))
    lo, hi = stats.t.interval(0.95, 11, loc=a.mean(), scale=stats.sem(a))
    assert e.ci95 == pytest.approx((hi - lo) / 2)
    d = pairwise_differences({"a": a, "b": b})["a", "b"]
    ref = stats.ttest_rel(a, b)
    assert d.estimate / d.standard_error == pytest.approx(ref.statistic)
    assert d.p_value() == pytest.approx(ref.pvalue)
    assert d.df == 11


def test_control_variate_is_the_regression_prediction_at_the_known_mean():
    rng = rng_for(2, "test-paired")
    mu = 5.0
    x = rng.normal(mu, 1.0, 15)
    y = 2.0 + 0.8 * x + rng.normal(0.0, 0.3, 15)
    e = control_variate_estimate(y, x, mu)
    fit = stats.linregress(x - mu, y)  # an independent least-squares implementation
    assert e.estimate == pytest.approx(fit.intercept, rel=1e-12)
    assert e.standard_error == pytest.approx(fit.intercept_stderr, rel=1e-10)
    assert e.df == 13
    assert e.ci95 == pytest.approx(stats.t.ppf(0.975, 13) * fit.intercept_stderr)
    # y = x exactly: the estimate is the known mean with no error.
    same = control_variate_estimate(x, x, mu)
    assert same.estimate == pytest.approx(mu, abs=1e-12) and same.standard_error < 1e-12
    # Differences with the control equal the difference of the two estimates.
    d = pairwise_differences({"y": y, "z": 0.5 * y + x}, x, mu)["y", "z"]
    z = control_variate_estimate(0.5 * y + x, x, mu)
    assert d.estimate == pytest.approx(e.estimate - z.estimate, rel=1e-12)


def test_control_variate_interval_covers_the_true_mean_at_its_level():
    """Monte Carlo: 4000 bivariate normal samples of R = 8 pairs; the exact-t interval covers
    the true mean E[y] = 3 in 95% of them (binomial 99.9% band 93.9-96.1%) and is unbiased."""
    rng = rng_for(3, "test-paired-coverage")
    n, r, mu_x, mu_y = 4000, 8, 1.0, 3.0
    x = rng.normal(mu_x, 1.0, (n, r))
    y = mu_y + 1.5 * (x - mu_x) + rng.normal(0.0, 0.5, (n, r))
    est = [control_variate_estimate(y[k], x[k], mu_x) for k in range(n)]
    cover = np.mean([abs(e.estimate - mu_y) <= e.ci95 for e in est])
    band = 3.29 * np.sqrt(0.95 * 0.05 / n)
    assert abs(cover - 0.95) <= band, cover
    theta = np.array([e.estimate for e in est])
    assert abs(theta.mean() - mu_y) <= 3.29 * theta.std(ddof=1) / np.sqrt(n)
    # The variance reduction is the theory's (1 - rho^2)(R - 2)/(R - 3) with rho^2 = 0.9:
    plain = y.mean(axis=1)
    factor = theta.var() / plain.var()
    assert 0.1 * 6 / 5 * 0.85 < factor < 0.1 * 6 / 5 * 1.15


def test_holm_matches_the_step_down_procedure():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2])
    m = p.size
    order = np.argsort(p)
    by_hand = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        by_hand[idx] = running
    np.testing.assert_allclose(holm(p), by_hand)
    # Reject iff adjusted <= alpha is the sequential rule p_(k) <= alpha/(m - k + 1).
    alpha = 0.05
    sequential = np.zeros(m, dtype=bool)
    for rank, idx in enumerate(order):
        if p[idx] > alpha / (m - rank):
            break
        sequential[idx] = True
    np.testing.assert_array_equal(holm(p) <= alpha, sequential)
    with pytest.raises(ValueError, match="p_values"):
        holm([0.5, 1.5])


def test_select_best_declares_a_clear_winner_and_not_a_tie():
    rng = rng_for(4, "test-select")
    common = rng.normal(10.0, 2.0, 10)  # the shared randomness of the paired replications
    samples = {
        "slow": common + 1.0 + rng.normal(0, 0.05, 10),
        "fast": common - 1.0 + rng.normal(0, 0.05, 10),
        "mid": common + rng.normal(0, 0.05, 10),
    }
    d = pairwise_differences(samples)
    point = {k: float(v.mean()) for k, v in samples.items()}
    s = select_best(point, d)
    assert s.ranking == ("fast", "mid", "slow") and s.best == "fast"
    assert s.adjusted_p_values["fast", "mid"] <= 0.05
    assert s.adjusted_p_values["mid", "fast"] > 0.5
    # Without pairing the common term swamps the differences: not separated.
    unpaired = {k: v if k == "fast" else rng.permutation(v) for k, v in samples.items()}
    s2 = select_best(point, pairwise_differences(unpaired))
    assert s2.best is None and s2.ranking == s.ranking


def test_select_best_rarely_separates_equal_policies():
    """Three policies with equal means: a best is declared in at most alpha = 5% of 2000
    simulated comparisons (plus a 99.9% binomial margin)."""
    rng = rng_for(5, "test-select-null")
    n = 2000
    declared = 0
    for _ in range(n):
        common = rng.normal(0.0, 1.0, 6)
        samples = {k: common + rng.normal(0.0, 0.3, 6) for k in ("a", "b", "c")}
        point = {k: float(v.mean()) for k, v in samples.items()}
        declared += select_best(point, pairwise_differences(samples)).best is not None
    assert declared / n <= 0.05 + 3.09 * np.sqrt(0.05 * 0.95 / n)


def _estimate(policy, cost, ratio):
    return PolicyEstimate(policy, cost, 0.1, 0.05, ratio, 0.01, 0.005)


@pytest.mark.parametrize(
    ("attributes", "head"),
    [
        # Part A: the exact cost of the baseline divides the ratios
        ({"baseline": "bernoulli", "baseline_cost": 2.5, "control_variate": True},
         {"exact_bernoulli_cost": 2.5}),
        # Part B: the baseline's cost is simulated
        ({"baseline": "pi", "table_size": 60}, {"baseline": "pi"}),
    ],
)  # fmt: skip
def test_policy_comparison_ranks_selects_and_writes_the_cli_json(attributes, head):
    rng = rng_for(3, "test-paired-comparison")
    a = rng.normal(1.0, 0.1, 8)
    samples = {"a": a, "b": a + 1.0 + rng.normal(0.0, 0.01, 8)}  # a clearly better
    # the baseline, not asked, takes part in the tests (a is clearly better than it too)
    samples[attributes["baseline"]] = a + 0.5 + rng.normal(0.0, 0.01, 8)
    differences = pairwise_differences(samples)
    estimates = {"b": _estimate("b", 2.0, 0.8), "a": _estimate("a", 1.0, 0.4)}
    run = {"horizon": 10.0, "warmup": 1.0, "replications": 8, "seed": 0, "keys": ()}
    res = PolicyComparison.from_estimates(
        estimates, differences, {"b": 0.8, "a": 0.4}, confidence=0.99, **attributes, **run
    )
    assert res.ranking == ("a", "b") and res.best == "a"
    assert res.selection == select_best(
        {"b": 0.8, "a": 0.4}, differences, confidence=0.99, baseline=attributes["baseline"]
    )
    d = res.to_dict()
    assert list(d) == [*head, "policies", "ranking", "best"]
    assert {k: d[k] for k in head} == head
    assert list(d["policies"]) == ["b", "a"]  # in the order asked
    assert d["policies"]["a"] == {"cost": 1.0, "ci95": 0.1, "ratio": 0.4, "ratio_ci95": 0.01}
    assert d["ranking"] == ["a", "b"] and d["best"] == "a"


@pytest.mark.parametrize(("rank_by", "ranking"), [("cost", ("a", "b")), ("ratio", ("b", "a"))])
def test_policy_comparison_from_samples_is_the_plain_mean_and_the_parts_ratio(rank_by, ranking):
    # what both parts share: each policy's cost is the plain mean of its samples with the
    # t interval (scipy), its ratio the part's own estimate as given; the ranking follows
    # rank_by; the run is recorded as Python numbers
    rng = rng_for(4, "test-paired-from-samples")
    a = rng.normal(1.0, 0.1, 6)
    samples = {"a": a, "b": a + 1.0}
    ratios = {
        "b": PairedEstimate(0.5, 0.01, 0.004, 5, 6),
        "a": PairedEstimate(0.9, 0.02, 0.008, 5, 6),
    }
    res = PolicyComparison.from_samples(
        samples, ratios, pairwise_differences(samples), rank_by=rank_by, baseline="a",
        horizon=10, warmup=1, seed=np.int64(3), keys=["x", 1], table_bound={"a": np.int64(2)},
    )  # fmt: skip
    assert list(res.policies) == ["b", "a"]
    for p, e in res.policies.items():
        assert e.cost == pytest.approx(samples[p].mean())
        assert e.standard_error == pytest.approx(stats.sem(samples[p]))
        ratio = (e.ratio, e.ratio_ci95, e.ratio_standard_error)
        assert ratio == (ratios[p].estimate, ratios[p].ci95, ratios[p].standard_error)
    assert res.ranking == ranking
    recorded = (res.horizon, res.warmup, res.seed, res.keys, res.replications, res.table_bound)
    assert recorded == (10.0, 1.0, 3, ("x", 1), 6, {"a": 2})
    assert [type(v) for v in (res.horizon, res.seed, res.table_bound["a"])] == [float, int, int]
    assert res.simulations == {} and res.table_size is None and res.baseline_cost is None


def test_divided_by_scales_the_estimate_and_its_interval():
    e = PairedEstimate(3.0, 0.6, 0.25, 4, 5).divided_by(4.0)
    assert e == PairedEstimate(0.75, 0.15, 0.0625, 4, 5)


def test_simulated_run_records_the_baselines_window_and_every_table_bound():
    from types import SimpleNamespace

    from queue_routing.paired import simulated_run

    run = {"horizon": 10.0, "warmup": 1.0, "seed": 2, "keys": ("k",)}
    sims = {p: SimpleNamespace(table_bound=n, **run) for p, n in (("pi", 0), ("io", 3))}
    expected = {**run, "table_bound": {"pi": 0, "io": 3}, "simulations": sims}
    assert simulated_run(sims, "pi") == expected


def test_on_table_bound_is_raise_or_report():
    from queue_routing.errors import ArgumentError
    from queue_routing.paired import on_table_bound_choice

    assert [on_table_bound_choice(v) for v in ("raise", "report")] == ["raise", "report"]
    with pytest.raises(ArgumentError, match=r"^on_table_bound must be 'raise' or 'report'") as info:
        on_table_bound_choice("ignore")
    assert info.value.argument == "on_table_bound"
