"""Paired policy comparisons of Part B against independent references.

Method: docs/deadlines.md#paired-policy-comparisons and docs/deadlines.md#common-random-numbers.

* the paired ratios and costs agree with estimates from independent streams (the policy in
  the keys) within their combined standard errors, on two-, three- and ten-cluster instances;
* for two clusters each policy's paired ratio to PI is within its interval of the ratio of
  the exact truncated-chain costs (``evaluate(..., method="exact")``);
* calibration: over many short seeded comparisons on a small two-cluster instance the 95%
  ratio intervals cover the exact-chain ratio in 90-99% of the runs, and the estimator's mean
  over the runs agrees with it;
* the best is declared only when separated (and is then the chain's best); the result's
  contract; the CLI.

Tolerances: Bonferroni t quantiles at a family-wise level of 1% per test function
(``tests/_stats.py``), with the estimators' own degrees of freedom. Seeds are fixed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from _stats import bonferroni_t
from queue_routing.cli import main
from queue_routing.deadlines import (
    IndexabilityWarning,
    Instance,
    compare_policies,
    evaluate,
    simulate_policy,
)
from queue_routing.deadlines.experiments import large_instance
from queue_routing.deadlines.policies import index_table
from queue_routing.deadlines.policy_comparison import COMPARED_POLICIES
from queue_routing.errors import AccuracyError, ArgumentError
from queue_routing.paired import ratio_of_means

SEED = 2012
REPS = 10
OTHERS = ("bs", "io", "rb")  # the policies with a ratio to estimate (PI's is 1)


def _instance(lam, m, mu, deadline, rejection_cost=2.0) -> Instance:
    return Instance.from_dict(
        {
            "arrival_rate": lam,
            "servers": list(m),
            "service_rates": list(mu),
            "rejection_cost": rejection_cost,
            "deadline": deadline,
        }
    )


#: The two-cluster instance of docs/guide-deadlines.md (clusters.json).
README = _instance(3.0, [3, 2], [1.0, 0.8], {"kind": "constant", "t": 1.5})
#: Uniform deadlines on the waiting time, heavier load.
UNIFORM = _instance(3.6, [3, 2], [1.0, 0.8], {"kind": "uniform", "low": 0.2, "high": 1.0,
                                                "on": "waiting"})  # fmt: skip
#: Pure routing (no rejection), exponential deadlines.
PURE = _instance(2.4, [2, 2], [1.0, 0.6], {"kind": "exponential", "mean": 2.0}, None)
#: Three clusters (no exact value needed here).
THREE = _instance(3.2, [2, 1, 2], [1.0, 1.2, 0.7], {"kind": "constant", "t": 1.0}, 1.5)
#: Ten random clusters at load 0.9, as the pipeline's large systems are built.
LARGE = large_instance(
    2022, 10, servers_range=[1, 4], rate_range=[0.5, 1.5], load=0.9, rejection_cost=2.0,
    deadline={"kind": "constant", "t": 1.5},
)  # fmt: skip
CASES = {
    "readme": (README, 4000.0, 60),
    "uniform": (UNIFORM, 4000.0, 60),
    "pure": (PURE, 4000.0, 100),
    "three": (THREE, 3000.0, 60),
    "large": (LARGE, 1000.0, 60),
}
TWO_CLUSTERS = ("readme", "uniform", "pure")


@pytest.fixture(scope="module")
def paired():
    cache = {}

    def get(name):
        if name not in cache:
            inst, horizon, table = CASES[name]
            cache[name] = compare_policies(
                inst, horizon=horizon, replications=REPS, seed=SEED, keys=("paired", name),
                table_size=table,
            )  # fmt: skip
        return cache[name]

    return get


def _exact_costs(inst: Instance) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexabilityWarning)
        return {p: evaluate(inst, p, method="exact").cost for p in COMPARED_POLICIES}


@pytest.fixture(scope="module")
def exact_ratio():
    cache = {}

    def get(name):
        if name not in cache:
            cost = _exact_costs(CASES[name][0])
            cache[name] = {p: cost[p] / cost["pi"] for p in cost}
        return cache[name]

    return get


# -- agreement with independent references -------------------------------------------------
def test_paired_estimates_agree_with_independent_streams(paired):
    """Independent streams (the policy in the keys) estimate the same costs and ratios: the
    paired ratio against ``ybar / xbar`` of independent runs, whose standard error is the
    delta method's for independent samples, ``sqrt(s_y^2 + ratio^2 s_x^2) / (sqrt(R) xbar)``."""
    names = list(CASES)
    m = len(names) * (len(OTHERS) + len(COMPARED_POLICIES))
    q = bonferroni_t(m, REPS - 1)
    for name in names:
        inst, horizon, table = CASES[name]
        res = paired(name)
        ind = {
            p: simulate_policy(
                inst, p, horizon=horizon, replications=REPS, seed=SEED,
                keys=("independent", name, p), table_size=table,
            ).replication_costs
            for p in COMPARED_POLICIES
        }  # fmt: skip
        x = ind["pi"]
        for p in COMPARED_POLICIES:
            e = res.policies[p]
            y = ind[p]
            se = y.std(ddof=1) / math.sqrt(REPS)
            assert abs(e.cost - y.mean()) <= q * math.hypot(e.standard_error, se), (name, p)
        for p in OTHERS:
            e, y = res.policies[p], ind[p]
            r = y.mean() / x.mean()
            se = math.sqrt(y.var(ddof=1) + r * r * x.var(ddof=1)) / (math.sqrt(REPS) * x.mean())
            noise = math.hypot(e.ratio_standard_error, se)
            assert abs(e.ratio - r) <= q * noise, (name, p, e.ratio, r, noise)
            # Common random numbers: the paired ratio is the more precise one.
            assert e.ratio_standard_error < se, (name, p)


def test_paired_ratio_matches_the_exact_chain(paired, exact_ratio):
    pairs = [(n, p) for n in TWO_CLUSTERS for p in OTHERS]
    q = bonferroni_t(len(pairs), REPS - 1)
    for name, policy in pairs:
        e = paired(name).policies[policy]
        exact = exact_ratio(name)[policy]
        assert abs(e.ratio - exact) <= q * e.ratio_standard_error, (name, policy, e.ratio, exact)
    for name in TWO_CLUSTERS:
        pi = paired(name).policies["pi"]
        assert pi.ratio == 1.0 and pi.ratio_ci95 == 0.0


def test_the_best_is_the_chain_best_when_separated(paired, exact_ratio):
    for name in TWO_CLUSTERS:
        res = paired(name)
        exact = exact_ratio(name)
        assert res.best in (None, min(exact, key=exact.get)), (name, res.best, exact)
        assert res.ranking[-1] == max(exact, key=exact.get) == "bs"
    # PI against BS on the README instance: 32% apart, separated.
    res = compare_policies(README, ["bs", "pi"], horizon=2000.0, seed=SEED, table_size=60)
    assert res.best == "pi" and res.ranking == ("pi", "bs")
    # One cluster, no rejection: every policy admits every job to it, so on common random
    # numbers all four have the same path; nothing is separated and every ratio is 1.
    one = _instance(0.5, [2], [1.0], {"kind": "exponential", "mean": 1.0}, None)
    same = compare_policies(one, horizon=500.0, seed=SEED, table_size=200)
    assert same.best is None
    assert all(e.ratio == 1.0 and e.ratio_ci95 == 0.0 for e in same.policies.values())
    assert all(d.estimate == 0.0 for d in same.differences.values())


# -- calibration over many seeded runs -------------------------------------------------------
SMALL = _instance(2.0, [2, 1], [1.0, 0.8], {"kind": "constant", "t": 1.0})


def calibration(n_runs: int, horizon: float) -> dict[str, dict[str, np.ndarray]]:
    """Ratios and 95% half-widths of BS, IO and RB to PI on SMALL over ``n_runs`` seeded
    comparisons (independent keys), each replication after a warm-up equal to ``horizon``.

    The warm-up is long because the runs are short: PI never rejects on SMALL (its indices
    stay below R) and relaxes slowly from the empty start; with the default warm-up of 10%
    PI's cost is biased low and the ratios high (+0.007 for RB, 6 standard errors over 300
    runs), a start-up bias of the simulation, not of the estimator."""
    out = {p: {"ratio": [], "hw": []} for p in OTHERS}
    for run in range(n_runs):
        res = compare_policies(
            SMALL, horizon=horizon, warmup=horizon, replications=REPS, seed=SEED,
            keys=("calibration", run), table_size=100,
        )  # fmt: skip
        for p in OTHERS:
            out[p]["ratio"].append(res.policies[p].ratio)
            out[p]["hw"].append(res.policies[p].ratio_ci95)
    return {p: {k: np.array(v) for k, v in d.items()} for p, d in out.items()}


def check_calibration(cal, exact, per_policy_band: bool):
    hits = {p: np.abs(d["ratio"] - exact[p]) <= d["hw"] for p, d in cal.items()}
    pooled = float(np.mean(np.concatenate(list(hits.values()))))
    assert 0.90 <= pooled <= 0.99, pooled
    if per_policy_band:
        for p, h in hits.items():
            assert 0.90 <= h.mean() <= 0.99, (p, h.mean())
    n = len(next(iter(cal.values()))["ratio"])
    q = bonferroni_t(len(cal), n - 1)
    for p, d in cal.items():  # the estimator's mean over the runs agrees with the chain
        r = d["ratio"]
        assert abs(r.mean() - exact[p]) <= q * r.std(ddof=1) / math.sqrt(n), (p, r.mean())


@pytest.fixture(scope="module")
def small_exact():
    cost = _exact_costs(SMALL)
    return {p: cost[p] / cost["pi"] for p in cost}


def test_ratio_intervals_are_calibrated(small_exact):
    """100 seeded comparisons (horizon 150 after a warm-up of 150): the 95% intervals of the
    BS, IO and RB ratios cover the chain's ratios in 90-99% of them (pooled)."""
    check_calibration(calibration(100, 150.0), small_exact, per_policy_band=False)


@pytest.mark.slow
def test_ratio_intervals_are_calibrated_many_runs(small_exact):
    """1000 seeded comparisons: the band holds for each policy separately."""
    check_calibration(calibration(1000, 150.0), small_exact, per_policy_band=True)


# -- contract and arguments ------------------------------------------------------------------
def test_result_contract(paired):
    res = paired("readme")
    d = res.to_dict()
    assert set(d) == {"baseline", "policies", "ranking", "best"} and d["baseline"] == "pi"
    assert list(d["policies"]) == list(COMPARED_POLICIES)
    for v in d["policies"].values():
        assert set(v) == {"cost", "ci95", "ratio", "ratio_ci95"}
        assert all(isinstance(x, float) for x in v.values())
    ratios = [res.policies[p].ratio for p in res.ranking]
    assert ratios == sorted(ratios) and sorted(res.ranking) == sorted(COMPARED_POLICIES)
    costs = {p: res.policies[p].cost for p in COMPARED_POLICIES}
    assert res.ranking == tuple(sorted(costs, key=costs.get))
    assert res.replications == REPS and res.warmup == pytest.approx(400.0)
    assert res.horizon == 4000.0 and res.seed == SEED and res.keys == ("paired", "readme")
    assert set(res.differences) == {
        (a, b) for i, a in enumerate(COMPARED_POLICIES) for b in COMPARED_POLICIES[i + 1 :]
    }
    # The ratio is the ratio of the mean costs; the difference the difference of the means.
    bs, pi = res.simulations["bs"].replication_costs, res.simulations["pi"].replication_costs
    assert res.policies["bs"].ratio == pytest.approx(bs.mean() / pi.mean(), rel=1e-12)
    assert res.differences["bs", "pi"].estimate == pytest.approx(bs.mean() - pi.mean())
    # Common random numbers: a policy's cost is that of its own simulation with the same keys.
    alone = simulate_policy(README, "rb", horizon=4000.0, replications=REPS, seed=SEED,
                            keys=("paired", "readme"), table_size=60)  # fmt: skip
    np.testing.assert_array_equal(alone.replication_costs, res.simulations["rb"].replication_costs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.best = "bs"  # type: ignore[misc]
    # PI is simulated as the baseline even when not asked.
    part = compare_policies(README, "rb,bs", horizon=200.0, replications=3, table_size=60)
    assert list(part.policies) == ["rb", "bs"] and "pi" in part.simulations
    assert part.ranking in (("rb", "bs"), ("bs", "rb"))


def test_ratio_of_means_is_the_delta_method():
    """Against the first-order variance of ybar/xbar written out from the sample moments:
    ``(s_y^2 - 2 r s_xy + r^2 s_x^2) / (R xbar^2)``."""
    rng = np.random.default_rng(1)
    x = rng.gamma(5.0, 1.0, 12)
    y = 1.3 * x + rng.normal(0, 0.4, 12)
    e = ratio_of_means(y, x)
    r = y.mean() / x.mean()
    cov = np.cov(y, x)
    var = (cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (12 * x.mean() ** 2)
    assert e.estimate == pytest.approx(r, rel=1e-14) and e.df == 11
    assert e.standard_error == pytest.approx(math.sqrt(var), rel=1e-12)
    assert math.isnan(ratio_of_means([1.0, 2.0], [0.0, 0.0]).estimate)
    with pytest.raises(ValueError, match="paired"):
        ratio_of_means([1.0, 2.0], [1.0])


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"policies": []}, "policies"),
        ({"policies": ["pi", "pi"]}, "policies"),
        ({"policies": ["optimal"]}, "policies"),
        ({"replications": 1}, "replications"),
        ({"horizon": 0.0}, "horizon"),
        ({"warmup": -1.0}, "warmup"),
        ({"seed": -1}, "seed"),
        ({"table_size": 0}, "table_size"),
        ({"confidence": 1.5}, "confidence"),
        ({"keys": "x"}, "keys"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs, argument):
    args = {"horizon": 10.0, "replications": 3, "table_size": 20, **kwargs}
    with pytest.raises(ArgumentError, match=f"^{argument}") as info:
        compare_policies(README, **args)
    assert info.value.argument == argument


def test_a_deciding_table_end_is_refused():
    with pytest.raises(AccuracyError, match="table_size"):
        compare_policies(README, ["pi"], horizon=200.0, replications=2, table_size=3)


def test_a_truncated_table_is_reported_when_asked_and_is_the_capped_policy():
    # on_table_bound="report" keeps the run and counts the arrivals; the numbers are those of
    # the policy capped at the table's end, i.e. the same run as simulating with that table
    kw = {"horizon": 200.0, "replications": 2, "table_size": 3, "seed": 5}
    res = compare_policies(README, ["bs", "pi"], on_table_bound="report", **kw)
    assert res.table_bound["pi"] > 0 and res.table_bound["bs"] == 0
    table = index_table(README, "pi", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = simulate_policy(README, "pi", table=table, **kw)
    assert np.array_equal(alone.replication_costs, res.simulations["pi"].replication_costs)
    assert alone.table_bound == res.table_bound["pi"]
    with pytest.raises(ArgumentError, match=r"^on_table_bound"):
        compare_policies(README, ["pi"], on_table_bound="ignore", **kw)


def test_large_system_rows_are_the_comparison():
    from queue_routing.deadlines.experiments import large_system

    kw = {"horizon": 300.0, "warmup": 30.0, "replications": 4, "seed": 3, "keys": ("t",)}
    df = large_system(LARGE, table_size=60, **kw)
    res = compare_policies(LARGE, ["bs", "io", "pi", "rb"], table_size=60,
                           on_table_bound="report", **kw)  # fmt: skip
    for row in df.itertuples():
        e = res.policies[row.policy.lower()]
        assert (row.cost, row.ratio, row.ratio_ci95) == (e.cost, e.ratio, e.ratio_ci95)
        assert row.table_bound == res.table_bound[row.policy.lower()]
    assert set(df["best"]) == {res.best.upper() if res.best else "not separated"}
    assert sorted(df["rank"]) == [1, 2, 3, 4]


# -- command line ----------------------------------------------------------------------------
def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_contract(capsys, tmp_path):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(README.to_dict()))
    argv = ["deadlines", "compare-policies", str(path), "--horizon", "1000", "--table-size", "60"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert set(obj) == {"baseline", "policies", "ranking", "best"} and obj["baseline"] == "pi"
    assert list(obj["policies"]) == ["bs", "io", "pi", "rb"]
    for v in obj["policies"].values():
        assert set(v) == {"cost", "ci95", "ratio", "ratio_ci95"} and v["ci95"] > 0
    assert obj["policies"]["pi"]["ratio"] == 1.0 and obj["best"] in (None, obj["ranking"][0])
    assert json.loads(run(capsys, *argv)[1]) == obj  # reproducible
    # `evaluate --method simulation` runs on the same streams: the same cost.
    code, out, _ = run(
        capsys, "deadlines", "evaluate", str(path), "--policy", "rb", "--method",
        "simulation", "--horizon", "1000", "--table-size", "60",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["cost"] == obj["policies"]["rb"]["cost"]
    code, out, _ = run(capsys, *argv, "--policies", "rb,bs", "--replications", "3",
                       "--warmup", "0", "--seed", "4")  # fmt: skip
    assert code == 0 and list(json.loads(out)["policies"]) == ["rb", "bs"]


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--policies", "pi,optimal"], 2, "argument --policies: unknown policy 'optimal'"),
        (["--policies", "pi,pi"], 2, "argument --policies: a policy is repeated"),
        (["--replications", "1"], 2, "argument --replications: must be >= 2"),
        (["--horizon", "0"], 2, "argument --horizon: must be finite and > 0"),
        (["--warmup", "-1"], 2, "argument --warmup: must be finite and >= 0"),
        (["--table-size", "0"], 2, "argument --table-size: must be >= 1"),
        (["--table-size", "3", "--horizon", "100"], 1, "table_size: the end of the index"),
    ],
)
def test_cli_errors(capsys, tmp_path, extra, code, needle):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(README.to_dict()))
    try:
        got = main(["deadlines", "compare-policies", str(path), *extra])
    except SystemExit as exc:
        got = exc.code
    out, err = capsys.readouterr()
    assert got == code and out == "" and err.count("\n") == 1 and needle in err, err
