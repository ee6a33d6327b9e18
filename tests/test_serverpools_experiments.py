"""Part C experiments (ours): instances, search, boundary, fluid, stochastic and covariance tables.

Small and fast: every simulation here runs a few thousand events.
"""

import json

import numpy as np
import pandas as pd
import pytest

from queue_routing.serverpools import (
    ServerPoolSystem,
    a_underloaded,
    analyze,
    solve_spp,
    stability_verdict,
)
from queue_routing.serverpools.diffusion import stationary_covariance
from queue_routing.serverpools.experiments import (
    boundary_crossings,
    boundary_scan,
    covariance_table,
    example_rows,
    fluid_limit_level,
    fluid_limit_runs,
    fluid_limit_slopes,
    fluid_limit_start,
    fluid_limit_table,
    fluid_rows,
    growing_examples,
    instance_table,
    scaling_verdicts,
    search_sizes,
    search_tables,
    stochastic_runs,
    stochastic_warmup,
    summarise_examples,
    time_average_table,
)
from queue_routing.serverpools.instances import (
    EXAMPLES,
    STABLE,
    UNSTABLE,
    example_system,
    heterogeneity_family,
    tree_instance,
)

SEED = 2022


@pytest.fixture(scope="module")
def stable():
    return solve_spp(example_system("stable"))


@pytest.fixture(scope="module")
def unstable():
    return solve_spp(example_system("unstable"))


# -- instances ------------------------------------------------------------------------------
def test_examples_have_the_spectra_of_the_dynamics_tests(stable, unstable):
    """The same numbers as tests/test_serverpools_dynamics.py (path_system(0.7), unstable)."""
    eig_s = np.sort(np.linalg.eigvals(a_underloaded(stable)).real)
    np.testing.assert_allclose(eig_s, [-1.672455, -1.102055, -1.0], atol=1e-6)
    eig_u = np.linalg.eigvals(a_underloaded(unstable))
    assert eig_u.real.max() == pytest.approx(0.2357, abs=1e-3)
    assert np.abs(eig_u.imag).max() == pytest.approx(3.078, abs=1e-2)
    assert stable.rho == pytest.approx(0.7) and unstable.rho == pytest.approx(0.9)
    assert len(stable.basic) == 5 and len(unstable.basic) == 6  # spanning trees, CRP holds


def test_example_instances_follow_the_json_contract():
    for name, instance in EXAMPLES.items():
        text = json.dumps(instance)  # plain JSON types only
        out = analyze(json.loads(text)).to_dict()
        assert set(out) == {
            "rho",
            "flows",
            "eigenvalues_underloaded",
            "eigenvalues_critical",
            "stable_underloaded",
        }
        assert out["stable_underloaded"] == (name == "stable")
        assert min(a["class"] for a in instance["activities"]) == 1
    assert STABLE["arrival_rates"] == pytest.approx([1.0, 0.9, 0.8])
    assert UNSTABLE["pool_sizes"] == pytest.approx([0.02, 1.0, 0.06, 0.016])


def test_tree_instance_balances_every_pool():
    inst = tree_instance([(1, 1, 2.0, 0.3), (1, 2, 1.0, 0.2), (2, 2, 4.0, 0.1)], 0.8)
    sol = solve_spp(ServerPoolSystem.from_dict(inst))
    np.testing.assert_allclose(sol.occupancy.sum(axis=0) / sol.system.pool_sizes, 0.8)
    with pytest.raises(ValueError, match="rho"):
        tree_instance([(1, 1, 1.0, 1.0)], 1.5)


def test_heterogeneity_family_ends():
    homogeneous = solve_spp(heterogeneity_family(0.0))
    a = a_underloaded(homogeneous)
    mu = homogeneous.system.rates[homogeneous.system.rates > 0]
    np.testing.assert_allclose(mu, mu[0])
    np.testing.assert_allclose(a, -mu[0] * np.eye(3), atol=1e-12)  # mu depends only on i
    same = heterogeneity_family(1.0)  # the unstable example, up to rounding
    np.testing.assert_allclose(same.rates, example_system("unstable").rates, rtol=1e-12)
    np.testing.assert_allclose(same.pool_sizes, UNSTABLE["pool_sizes"], rtol=1e-12)
    with pytest.raises(ValueError, match="theta"):
        heterogeneity_family(-0.1)


# -- search ---------------------------------------------------------------------------------
def test_search_sizes_are_ordered_by_tree_size():
    sizes = search_sizes(3, 2)
    assert sizes == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]
    with pytest.raises(ValueError):
        search_sizes(0, 2)


def test_search_tables_do_not_depend_on_workers():
    sizes = [(1, 3), (2, 2), (3, 3)]
    kwargs = {"mu_range": (1e-2, 1e2), "flow_range": (1e-2, 1.0)}
    one, rec_one = search_tables(SEED, sizes, 30, workers=1, **kwargs)
    two, rec_two = search_tables(SEED, sizes, 30, workers=2, **kwargs)
    pd.testing.assert_frame_equal(one, two)
    assert rec_one == rec_two
    assert list(one.columns) == [
        "n_classes",
        "n_pools",
        "samples",
        "unstable_underloaded",
        "unstable_critical",
        "fraction_unstable_underloaded",
        "max_real_underloaded",
        "max_real_critical",
    ]
    # One class: A_c has only its structural zero (NaN); stable everywhere on these sizes.
    assert np.isnan(one.loc[0, "max_real_critical"])
    assert (one["unstable_underloaded"] == 0).all()
    assert rec_one["smallest_unstable_underloaded"] is None
    assert rec_one["sizes_searched"] == [list(s) for s in sizes]
    assert rec_one["samples_total"] == 90
    assert rec_one["root_seed"] == SEED  # search.json keeps its key (frozen output name)
    json.dumps(rec_one, allow_nan=False)


# -- examples table -------------------------------------------------------------------------
def test_example_rows_hold_a_consistent_spp_solution():
    rows = example_rows("stable", example_system("stable"))
    q = rows.set_index("quantity")
    assert q.loc["rho", "value"] == pytest.approx(0.7)
    flows = rows[rows["quantity"] == "flow"]
    lam = rows[rows["quantity"] == "arrival_rate"].set_index("class")["value"]
    np.testing.assert_allclose(flows.groupby("class")["value"].sum(), lam)
    nu = rows[rows["quantity"] == "class_dual"].set_index("class")["value"]
    alpha = rows[rows["quantity"] == "pool_dual"].set_index("pool")["value"]
    mu = rows[rows["quantity"] == "service_rate"].set_index(["class", "pool"])["value"]
    for c, p in flows[["class", "pool"]].itertuples(index=False):
        assert nu[c] * mu[c, p] == pytest.approx(alpha[p])  # complementary slackness
    eig = rows[rows["quantity"] == "eigenvalue_critical"]
    assert len(eig) == 3 and (eig["value"] == 0.0).sum() == 1  # structural zero
    assert q.loc["stable_underloaded", "value"] == 1.0


def test_instance_table_joins_the_verdicts():
    rows = summarise_examples({n: example_system(n) for n in EXAMPLES})
    verdicts = pd.DataFrame(
        {
            "example": ["stable", "large_cycle"],
            "slope": [0.0, 0.5],
            "slope_low": [-0.02, 0.46],
            "slope_high": [0.02, 0.54],
            "verdict": ["tight", "escaping"],
        }
    )
    table = instance_table(rows, verdicts).set_index("example")
    assert list(table.index) == ["stable", "unstable", "large_cycle"]
    assert list(table["fluid equilibrium (rho < 1)"]) == ["stable", "unstable", "unstable"]
    assert table.loc["stable", "simulation verdict"] == "tight"
    assert table.loc["large_cycle", "simulation verdict"] == "escaping"
    assert table.loc["large_cycle", "slope interval"] == "[0.46, 0.54]"
    assert pd.isna(table.loc["unstable", "simulation verdict"])  # not simulated
    assert "0.2357 ± 3.078i" in table.loc["unstable", "eigenvalues A_u"]
    assert table.loc["unstable", "pools"] == 4


# -- stability boundary -----------------------------------------------------------------------
def test_boundary_crossing_is_a_zero_of_the_spectrum():
    scan = boundary_scan(np.linspace(0.0, 1.5, 16))
    assert scan["max_real_underloaded"].iloc[0] < 0 < scan["max_real_underloaded"].iloc[-1]
    crossings = boundary_crossings(scan, xtol=1e-12)
    u = crossings[crossings["matrix"] == "A_u"].iloc[0]
    assert u["found"] and u["direction"] == "stable->unstable"
    assert 0.85 < u["theta_crossing"] < 0.95
    at = stability_verdict(solve_spp(heterogeneity_family(u["theta_crossing"])))
    assert abs(at.max_real_underloaded) < 1e-9
    assert u["frequency"] > 1.0  # a complex pair crosses (oscillatory instability)
    c = crossings[crossings["matrix"] == "A_c"].iloc[0]
    assert not c["found"] and np.isnan(c["theta_crossing"])  # A_c stays stable


# -- fluid ----------------------------------------------------------------------------------
def test_fluid_rows_decay_for_the_stable_example(stable):
    rows = fluid_rows("stable", stable, perturbation=0.05, t_end=8.0, points=81, seed=SEED)
    again = fluid_rows("stable", stable, perturbation=0.05, t_end=8.0, points=81, seed=SEED)
    pd.testing.assert_frame_equal(rows, again)
    assert rows["norm_fluid"].iloc[-1] < 1e-2 * rows["norm_fluid"].iloc[0]
    assert rows["load_spread"].iloc[-1] < 1e-10 and (rows["queue_total"] == 0).all()
    assert {"fluid_class_3", "linear_class_3"} <= set(rows.columns)
    level = fluid_limit_level(rows, 0.5)
    assert level["stable"] < rows["norm_fluid"].iloc[0]


def test_fluid_rows_grow_for_the_unstable_example(unstable):
    rows = fluid_rows("unstable", unstable, perturbation=1e-4, t_end=12.0, points=121, seed=SEED)
    assert rows["norm_fluid"].iloc[-1] > 5 * rows["norm_fluid"].iloc[0]
    # Still in the linear regime: fluid and linearisation agree.
    gap = np.abs(rows["norm_fluid"] - rows["norm_linear"]).max()
    assert gap < 0.05 * rows["norm_linear"].max()
    with pytest.raises(ValueError):
        fluid_limit_level(rows, 0.0)


# -- stochastic -----------------------------------------------------------------------------
def test_stochastic_runs_are_seeded_and_tidy(stable):
    kwargs = {"horizon": 5.0, "warmup": 1.0, "record_every": 0.5, "replications": 2}
    trace, summary = stochastic_runs("stable", stable, 40, seed=SEED, batches=4, **kwargs)
    trace2, summary2 = stochastic_runs("stable", stable, 40, seed=SEED, batches=4, **kwargs)
    pd.testing.assert_frame_equal(trace, trace2)
    pd.testing.assert_frame_equal(summary, summary2)
    assert len(trace) == 2 * 13 and set(trace["replication"]) == {0, 1}
    a, b = (trace[trace["replication"] == k]["norm"].to_numpy() for k in (0, 1))
    assert not np.array_equal(a, b)  # independent replications
    assert {"mean_norm", "rms_norm", "rms_class_3", "events", "queued_fraction"} <= set(
        summary.columns
    )
    assert (summary["events"] > 0).all() and (summary["mean_norm"] > 0).all()
    # the run covers [0, t_end] = [0, warmup + horizon]
    assert (summary["t_end"] == 6.0).all() and (summary["warmup"] == 1.0).all()
    cols = [f"deviation_class_{i}" for i in (1, 2, 3)]
    np.testing.assert_allclose(np.linalg.norm(trace[cols].to_numpy(), axis=1), trace["norm"])
    # batch means: four equal batches of [1, 6] whose mean is the window's time average
    batches = summary[[f"batch_{b}" for b in (1, 2, 3, 4)]].to_numpy()
    np.testing.assert_allclose(batches.mean(axis=1), summary["mean_norm"], rtol=1e-12)


def test_stochastic_warmup_follows_the_leading_eigenvalue(stable):
    """m / (2 |gamma|) for the stable example (gamma = -1 by hand, the test instance's
    spectrum), independent of r; (ln(r)/2 + m) / gamma for an unstable one."""
    for r in (1e2, 1e6):
        assert stochastic_warmup(stable, r, margin=3.0) == pytest.approx(1.5, rel=1e-9)
    unstable = solve_spp(example_system("unstable"))
    gamma = np.linalg.eigvals(a_underloaded(unstable)).real.max()
    assert stochastic_warmup(unstable, 1e4, margin=3.0) == pytest.approx(
        (np.log(1e4) / 2 + 3.0) / gamma, rel=1e-9
    )


def _synthetic_summary(slopes, rs=(100.0, 1000.0, 10000.0), reps=3, batches=4, step=None):
    """Replication k's time average 2 r^b (1 + 0.01 k); batch means around it (+-1%, or a
    trend of ``step`` per batch at the scales listed in ``step``)."""
    rows = []
    for name, slope in slopes.items():
        for rep in range(reps):
            for r in rs:
                level = 2.0 * r**slope * (1 + 0.01 * rep)
                wiggle = level * 0.01 * np.array([1, -1, -1, 1, 1, -1, 1, -1])[:batches]
                trend = (step or {}).get((name, r), 0.0) * level * (np.arange(batches) - 1.5)
                row = {
                    "example": name,
                    "r": r,
                    "replication": rep,
                    "t_end": 10.0,
                    "warmup": 1.0,
                    "events": 100,
                    "mean_norm": level,
                    "rms_norm": 1.25 * level,
                }
                for b, value in enumerate(level + wiggle + trend):
                    row[f"batch_{b + 1}"] = value
                rows.append(row)
    return pd.DataFrame(rows)


def test_time_averages_and_verdicts_on_power_laws():
    summary = _synthetic_summary({"flat": 0.0, "growing": 0.5}, rs=(1e3, 1e4, 1e5))
    averages = time_average_table(summary)
    assert len(averages) == 6 and (averages["replications"] == 3).all()
    assert averages["stationary"].all()
    flat = averages[averages["example"] == "flat"]
    np.testing.assert_allclose(flat["mean_norm"], 2.0 * 1.01)
    assert (flat["mean_norm_se"] > 0).all()
    # t interval with 2 degrees of freedom: 4.3027 standard errors
    np.testing.assert_allclose(flat["mean_norm_ci"], 4.302653 * flat["mean_norm_se"], rtol=1e-5)
    verdicts = scaling_verdicts(summary, averages, decades=1.0).set_index("example")
    assert verdicts.loc["flat", "slope"] == pytest.approx(0.0, abs=1e-12)
    assert verdicts.loc["growing", "slope"] == pytest.approx(0.5, abs=1e-12)
    assert verdicts.loc["flat", "verdict"] == "tight"
    assert verdicts.loc["growing", "verdict"] == "escaping"
    assert verdicts.loc["growing", "r_min"] == 1e4 and verdicts.loc["growing", "n_r"] == 2
    assert verdicts.loc["growing", "slope_all"] == pytest.approx(0.5, abs=1e-12)
    assert verdicts.loc["flat", "excluded"] == ""


def test_flagged_windows_are_reported_and_left_out_of_the_fit():
    """A window whose batch means climb (a transient) is flagged; the fit drops that r."""
    summary = _synthetic_summary({"x": 0.5}, rs=(1e3, 1e4, 1e5), step={("x", 1e5): 0.2})
    averages = time_average_table(summary).set_index("r")
    assert not averages.loc[1e5, "stationary"] and averages.loc[1e4, "stationary"]
    assert averages.loc[1e5, "stationarity_p"] < 0.01
    verdict = scaling_verdicts(summary, averages.reset_index(), decades=1.0).iloc[0]
    assert verdict["excluded"] == "100000"
    assert verdict["n_r"] == 1 and verdict["verdict"] == "undetermined"  # one scale left
    assert verdict["slope_all"] == pytest.approx(0.5, abs=1e-12)  # from 1e3 and 1e4
    with pytest.raises(ValueError, match="batch"):
        time_average_table(summary.drop(columns=["batch_1", "batch_2", "batch_3", "batch_4"]))


# -- fluid limit ----------------------------------------------------------------------------
def test_fluid_limit_distance_shrinks_with_r(stable):
    """From psi* + 30% the sup-distance between X^r/r and the fluid ODE falls ~ r^(-1/2)."""
    psi0, q0 = fluid_limit_start("stable", stable, perturbation=0.3, settle=0.0, seed=SEED)
    edges = stable.basic
    ii, jj = edges[:, 0], edges[:, 1]
    relative = psi0[ii, jj] / stable.occupancy[ii, jj] - 1.0
    assert np.abs(relative).max() == pytest.approx(0.3, rel=1e-12) and np.all(q0 == 0)
    rows = pd.concat(
        [
            fluid_limit_runs(
                "stable", stable, r, psi0=psi0, queues0=q0, t_end=2.0, record_every=0.05,
                replications=4, seed=SEED, max_step=0.002,
            )
            for r in (200, 2000, 20000)
        ]
    )  # fmt: skip
    assert (rows["fluid_error"] < 1e-5).all()  # the fluid solution is accurate to 1e-5
    table = fluid_limit_table(rows).set_index("r")
    assert table.loc[200, "sup_distance"] > table.loc[2000, "sup_distance"]
    assert table.loc[2000, "sup_distance"] > table.loc[20000, "sup_distance"]
    slope = fluid_limit_slopes(rows).iloc[0]
    assert slope["slope_low"] <= -0.5 <= slope["slope_high"] and slope["contains_minus_half"]
    assert slope["slope_high"] < 0


# -- covariance -----------------------------------------------------------------------------
def test_covariance_table_compares_with_lyapunov(stable):
    table = covariance_table(
        "stable", stable, r=100, horizon=55.0, warmup=5.0, replications=3, seed=SEED
    )
    assert len(table) == 6  # upper triangle of a 3 x 3 matrix
    sigma = stationary_covariance(stable)
    for row in table.itertuples():
        assert row.lyapunov == pytest.approx(sigma[row.class_i - 1, row.class_k - 1])
    assert (table["se"] > 0).all() and np.isfinite(table["z"]).all()
    diag = table[table["class_i"] == table["class_k"]]
    assert (diag["simulated"] > 0).all()
    assert (np.abs(table["relative_difference"]) < 0.6).all()  # right order of magnitude
    with pytest.raises(ValueError, match="replications"):
        covariance_table(
            "stable", stable, r=100, horizon=4.0, warmup=1.0, replications=1, seed=SEED
        )


def test_growing_examples_read_the_fluid_norm_in_time_order():
    fluid = pd.DataFrame(
        {
            "example": ["a", "a", "a", "b", "b", "b"],
            "time": [2.0, 0.0, 1.0, 0.0, 1.0, 2.0],  # a's rows out of time order
            "norm_fluid": [0.5, 0.1, 0.3, 0.2, 0.1, 0.05],
        }
    )
    assert growing_examples(fluid) == {"a"}
