"""Part B numerical study (ours): experiments and figures on tiny sweeps."""

import math

import numpy as np
import pandas as pd
import pytest

from queue_routing.deadlines import experiments, figures, instances
from queue_routing.plotting import save_figure

BASE = {
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "arrival_rate": 3.0,
    "rejection_cost": 2.0,
    "deadline": "constant",
    "mean_deadline": 1.5,
    "uniform_spread": 0.6,
}
SWEEPS = {
    "arrival_rate": [1.0, 3.0],
    "rejection_cost": [1.5, 3.0],
    "mean_deadline": [1.0],
    "distribution": ["constant", "exponential"],
    "pure_routing": [2.0],
}
TOL = 1e-5


@pytest.fixture(scope="module")
def sweeps():
    return {
        s: experiments.cluster_sweep(BASE, SWEEPS, s, truncation=30, tol=TOL)
        for s in experiments.SWEEPS
    }


def test_optimal_cost_is_a_lower_bound(sweeps):
    for sweep, df in sweeps.items():
        assert len(df) > 0, sweep
        for p in experiments.HEURISTICS:
            assert (df[f"cost_{p}"] >= df["cost_optimal"] - 1e-4).all(), (sweep, p)
            assert (df[f"gap_{p}_pct"] >= -0.05).all(), (sweep, p)
            gap = 100 * (df[f"cost_{p}"] - df["cost_optimal"]) / df["cost_optimal"]
            np.testing.assert_allclose(df[f"gap_{p}_pct"], gap)


def test_sweep_columns_and_values(sweeps):
    df = sweeps["distribution"]
    assert list(dict.fromkeys(df["distribution"])) == ["constant", "exponential"]
    assert len(df) == 4 and set(df["parameter"]) == {"arrival_rate"}
    assert sweeps["rejection_cost"]["value"].tolist() == [1.5, 3.0]
    assert sweeps["pure_routing"]["rejection_cost"].isna().all()
    assert (sweeps["pure_routing"]["rejection_bs"] == 0).all()
    for col in ("load", "L", "cost_optimal", "truncation_io", "bound_rb", "uniform_spread"):
        assert col in df.columns
    assert list(df.columns) == experiments.SWEEP_COLUMNS  # no clusters, states, iterations
    np.testing.assert_allclose(df["load"], df["arrival_rate"] / 4.6)


def test_gap_table_marks_one_best_policy_per_sweep(sweeps):
    table = experiments.gap_table(pd.concat(sweeps.values(), ignore_index=True))
    assert set(table["policy"]) == {"BS", "IO", "PI", "RB"}
    assert (table.groupby("sweep")["best"].sum() == 1).all()
    assert (table["max_gap_pct"] >= table["mean_gap_pct"] - 1e-12).all()
    best = table[table["best"]]
    for row in best.itertuples():
        others = table[(table["sweep"] == row.sweep)]["mean_gap_pct"].dropna()
        assert row.mean_gap_pct == others.min()


def test_index_functions_start_at_the_miss_probability():
    df = experiments.index_functions(BASE, 8)
    assert len(df) == 3 * 2 * 9
    io = df[(df["policy"] == "IO") & (df["cluster"] == 1)].sort_values("x")
    assert io["index"].is_monotonic_increasing
    assert math.isclose(io["index"].iloc[0], math.exp(-1.5), rel_tol=1e-9)


def test_sweep_points_vary_one_parameter():
    varied, points = experiments.sweep_points(SWEEPS, "pure_routing")
    assert varied == "arrival_rate" and points == [{"arrival_rate": 2.0, "rejection_cost": None}]
    varied, points = experiments.sweep_points(SWEEPS, "distribution")
    assert varied == "arrival_rate" and len(points) == 4
    assert points[1] == {"deadline": "constant", "arrival_rate": 3.0}
    with pytest.raises(ValueError, match="sweep must be one of"):
        experiments.sweep_points(SWEEPS, "load")
    # a job of one sweep reads only its lists
    assert instances.sweep_values(SWEEPS, "distribution", rate="arrival_rate") == {
        "distribution": ["constant", "exponential"],
        "arrival_rate": [1.0, 3.0],
    }
    three = {"load": [0.5], "distribution": ["uniform"], "distribution_loads": [0.6, 0.9]}
    assert instances.sweep_keys(three, "distribution", rate="load") == [
        "distribution",
        "distribution_loads",
    ]
    assert instances.sweep_keys(three, "load", rate="load") == ["load"]


def test_evaluate_point_on_one_cluster_is_admission_control():
    """One cluster: the optimum is a threshold; every heuristic admits by its own index, and
    none beats the optimum (the study's path for any number of clusters up to three)."""
    inst = instances.base_instance({**BASE, "servers": [2], "service_rates": [1.0]})
    row = experiments.evaluate_point(inst, truncation=20, tol=TOL)
    assert row["states"] == row["L"] + 1 and row["iterations"] > 0
    for p in instances.HEURISTICS:
        assert row[f"cost_{p}"] >= row["cost_optimal"] - TOL, p


def test_large_system_is_relative_to_pi_and_reproducible():
    inst = instances.large_instance(
        7,
        3,
        servers_range=[1, 3],
        rate_range=[0.5, 1.5],
        load=0.9,
        rejection_cost=2.0,
        deadline={"kind": "constant", "t": 1.5},
    )
    again = instances.large_instance(
        7,
        3,
        servers_range=[1, 3],
        rate_range=[0.5, 1.5],
        load=0.9,
        rejection_cost=2.0,
        deadline={"kind": "constant", "t": 1.5},
    )
    assert inst == again and inst.n_clusters == 3
    kw = {"table_size": 30, "horizon": 100.0, "warmup": 10.0, "replications": 3, "seed": 1}
    df = experiments.large_system(inst, **kw)
    assert df["policy"].tolist() == ["BS", "IO", "PI", "RB"]
    pi = df[df["policy"] == "PI"].iloc[0]
    assert pi["ratio"] == 1.0 and pi["ratio_ci95"] == 0.0
    assert (df["ci95"] > 0).all()
    pd.testing.assert_frame_equal(df, experiments.large_system(inst, **kw))


def test_figures_render(sweeps, tmp_path):
    for sweep in ("distribution", "rejection_cost", "pure_routing"):
        fig, caption = figures.gap_figure(sweeps[sweep], sweep)
        assert "Niño-Mora" in caption and "ours" in caption
        save_figure(fig, tmp_path / sweep, caption)
    fig, caption = figures.index_figure(experiments.index_functions(BASE, 8))
    assert "R = 2" in caption
    with pytest.raises(ValueError, match="missing column"):
        figures.large_figure(pd.DataFrame({"clusters": [4]}))
    assert (tmp_path / "distribution.png").stat().st_size > 1000
