"""A paired comparison's ``best`` is tested against the part's baseline too, asked or not.

The baseline (Part A: optimal Bernoulli routing, Part B: PI) is simulated beside every
comparison on the same random numbers; a policy is declared the best only when separated
from every other policy and from the baseline. References: the one-sided paired t test of
scipy (``ttest_rel``), which Holm's adjusted p-values can only make stricter, and the t
distribution of scipy for a ratio's test against 1.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _cli_inputs import CLUSTERS, TABLE1
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from queue_routing.cli import main
from queue_routing.paired import PairedEstimate, PolicyComparison, pairwise_differences, select_best


def _compare(capsys, tmp_path, part, instance, policies, horizon):
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(instance))
    argv = [part, "compare-policies", str(path), "--policies", policies]
    code = main([*argv, "--replications", "5", "--horizon", str(horizon)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("part", "instance", "worse", "better", "horizon"),
    [
        ("multiskill", TABLE1, "jsq", "pi", 300),  # JSQ ~1.3 x Bernoulli, PI ~0.73 x
        ("deadlines", CLUSTERS, "bs", "io", 2000),  # BS ~1.33 x PI
    ],
)
def test_one_policy_is_declared_only_if_it_beats_the_baseline(
    capsys, tmp_path, part, instance, worse, better, horizon
):
    res = _compare(capsys, tmp_path, part, instance, worse, horizon)
    ratio = res["policies"][worse]
    assert ratio["ratio"] - ratio["ratio_ci95"] > 1  # clearly worse than the baseline
    assert res["ranking"] == [worse] and res["best"] is None
    # the baseline asked beside it: the baseline is the separated best
    baseline = "bernoulli" if part == "multiskill" else "pi"
    both = _compare(capsys, tmp_path, part, instance, f"{worse},{baseline}", horizon)
    assert both["best"] == baseline
    if part == "multiskill":  # a policy that does beat the baseline alone is declared
        res = _compare(capsys, tmp_path, part, instance, better, horizon)
        ratio = res["policies"][better]
        assert ratio["ratio"] + ratio["ratio_ci95"] < 1
        assert res["best"] == better


def _samples(draw_data, k, r):
    """``k`` policies and a baseline ``"base"``, ``r`` paired replications: a common
    replication effect plus each policy's shift and noise."""
    common = np.array(draw_data[0][:r])
    out = {}
    for i, name in enumerate([*(f"p{j}" for j in range(k)), "base"]):
        shift, scale = draw_data[1][i]
        noise = np.array(draw_data[2][i * r : (i + 1) * r])
        out[name] = 10.0 + common + shift + scale * noise
    return out


samples_strategy = st.integers(1, 4).flatmap(
    lambda k: st.integers(4, 12).flatmap(
        lambda r: st.tuples(
            st.just(k),
            st.just(r),
            st.tuples(
                st.lists(st.floats(-1, 1), min_size=r, max_size=r),
                st.lists(
                    st.tuples(st.floats(-2, 2), st.floats(0.01, 1)), min_size=k + 1, max_size=k + 1
                ),
                st.lists(st.floats(-1, 1), min_size=(k + 1) * r, max_size=(k + 1) * r),
            ),
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(drawn=samples_strategy, confidence=st.sampled_from([0.9, 0.95, 0.99]))
def test_a_declared_best_is_separated_from_the_baseline_not_asked(drawn, confidence):
    k, r, data = drawn
    samples = _samples(data, k, r)
    asked = [n for n in samples if n != "base"]
    point = {n: float(samples[n].mean()) for n in asked}
    differences = pairwise_differences(samples)
    with_base = select_best(point, differences, confidence, baseline="base")
    without = select_best(point, pairwise_differences({n: samples[n] for n in asked}), confidence)
    assert with_base.ranking == without.ranking  # the baseline is not ranked ...
    assert with_base.best in (without.best, None)  # ... nor declared; it only removes
    if with_base.best is not None:
        # every one-sided paired test of the best against the others and the baseline rejects
        # at the family-wise level, already without Holm's correction (scipy's t test)
        for other in [*asked, "base"]:
            if other != with_base.best:
                diff = samples[with_base.best] - samples[other]
                if np.ptp(diff) == 0:
                    assert diff[0] < 0
                    continue
                p = stats.ttest_rel(samples[with_base.best], samples[other], alternative="less")
                assert p.pvalue <= 1 - confidence + 1e-12


@settings(max_examples=100, deadline=None)
@given(
    ratios=st.lists(
        st.tuples(st.floats(0.3, 2.0), st.floats(1e-4, 0.5), st.integers(2, 30)),
        min_size=1,
        max_size=4,
    ),
)
def test_from_samples_tests_every_policy_against_the_baseline_by_its_ratio(ratios):
    # the policies' costs are far apart (their differences separate them), so the decision
    # rests on the test of the leader's ratio against 1: declared iff the one-sided t test
    # of "ratio >= 1" rejects after Holm (at least as strict as without: scipy's t cdf)
    names = [f"p{i}" for i in range(len(ratios))]
    samples = {n: np.arange(5.0) + 10.0 * i for i, n in enumerate(names)}
    samples["base"] = np.arange(5.0) + 3.0
    estimates = {
        n: PairedEstimate(m, 1.96 * se, se, df, 5)
        for n, (m, se, df) in zip(names, ratios, strict=True)
    }
    res = PolicyComparison.from_samples(
        samples,
        estimates,
        pairwise_differences({n: samples[n] for n in names}),
        rank_by="ratio",
        baseline="base",
        horizon=1.0,
        warmup=0.0,
        seed=0,
    )
    leader = res.ranking[0]
    m, se, df = ratios[names.index(leader)]
    p_raw = stats.t.cdf((m - 1.0) / se, df)
    if res.best is not None:
        assert res.best == leader and p_raw <= 0.05
    if m >= 1.0:  # not better than the baseline: never declared
        assert res.best is None
    k = len(names)
    if leader == "p0" and p_raw * (k + 1) * k <= 0.05:  # Bonferroni's bound on Holm's
        assert res.best == "p0"
