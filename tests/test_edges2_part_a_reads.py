"""Part A's checked reads: what the config determines of each intermediate table.

The check functions of :mod:`queue_routing.workflow.tables` (``multiskill_*_checks``,
``read_multiskill_instances``) against tables built here by hand from a small config (the
expected shape written out, not computed by the code under test): the right table passes;
a missing row, an extra row, a wrong key value, a NaN and a missing column are each refused
with a :class:`TableError`. Last, the chunked simulations' expectations, summed over the
chunks that the plan gives the smoke and default configs, are exactly the whole study.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest

from _workflow import SMOKE, merged_config
from queue_routing.workflow import plan
from queue_routing.workflow.tables import (
    TableError,
    multiskill_compare_checks,
    multiskill_figure_checks,
    multiskill_job_sizes_checks,
    multiskill_job_sizes_summary_checks,
    multiskill_simulate_checks,
    multiskill_simulate_table1_checks,
    multiskill_solve_checks,
    read_multiskill_instances,
    read_table,
)

#: A small hand-written Part A config (only the keys the checks read).
CONFIG = {
    "multiskill": {
        "sizes": {"first": 10, "last": 20, "step": 10},
        "instances_per_size": 2,
        "fixed_point": {
            "update_rules": ["jacobi", "single"],
            "initial_partitions": ["dedicated", "random"],
            "random_initial_partitions": 2,
        },
        "two_class": {"eta_max": [1.0, 2.0], "grid_points": 4, "line_eta1": 0.5, "line_points": 4},
        "switching": {"eta_max": [2.0, 2.0], "grid_points": 2, "line_eta1": 0.2, "line_points": 3},
        "equal_capacities": {
            "eta_max": [2.0, 2.0],
            "grid_points": 2,
            "line_eta1": 0.2,
            "line_points": 3,
        },
        # 100 times Table 1's intensities is far beyond its total capacity: unstable
        "simulation": {"policies": ["bernoulli", "jsq"], "table1_load_factors": [0.5, 100.0]},
        "job_sizes": {
            "laws": ["exponential", "lognormal:4"],
            "policies": ["bernoulli", "jsq", "pi"],
            "random_instances": 2,
        },
    }
}


def _refused(tmp_path, table, checks, name="t.csv"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    with pytest.raises(TableError) as info:
        read_table(path, **checks)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def _passes(tmp_path, table, checks, name="t.csv"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return read_table(path, **checks)


def _damages(table, key, value_column):
    """The five damages of a good ``table``: a row lost, a row repeated, a key value
    changed, a NaN in ``value_column``, ``value_column`` dropped."""
    wrong = table.copy()
    wrong[key] = wrong[key].astype(object)
    wrong.loc[0, key] = "no-such-key" if table[key].dtype == object else 999
    nan = table.copy()
    nan[value_column] = nan[value_column].astype(float)
    nan.loc[len(nan) - 1, value_column] = float("nan")
    return {
        "missing row": table.iloc[1:],
        "extra row": pd.concat([table, table.iloc[[0]]], ignore_index=True),
        "wrong key": wrong,
        "NaN": nan,
        "missing column": table.drop(columns=[value_column]),
    }


def _check_all(tmp_path, table, checks, key, value_column, name):
    assert len(_passes(tmp_path, table, checks, name)) == len(table)
    for what, bad in _damages(table, key, value_column).items():
        _refused(tmp_path, bad, checks, name=f"{what.replace(' ', '_')}/{name}")


def test_solve_runs(tmp_path):
    labels = ["dedicated", "random-0", "random-1"]
    table = pd.DataFrame(
        [
            {"n_classes": 20, "instance": k, "update": u, "init": i, "iterations": 3}
            | {"converged": True}
            for k in (0, 1)
            for u in ("jacobi", "single")
            for i in labels
        ]
    )
    assert len(table) == 12
    path = tmp_path / "C20.csv"
    checks = multiskill_solve_checks(CONFIG, path)
    _check_all(tmp_path, table, checks, "init", "iterations", "C20.csv")
    # the C of another file: its n_classes key is refused
    _refused(tmp_path, table, multiskill_solve_checks(CONFIG, tmp_path / "C10.csv"))


def test_compare_costs(tmp_path):
    table = pd.DataFrame(
        {
            "n_classes": [10, 10],
            "instance": [0, 1],
            "multiskilled": [1.0, 2.0],
            "no_sharing": [float("nan"), 3.0],  # unstable without sharing: allowed
            "all_sharing": [0.5, 1.0],
            "all_sharing_same_costs": [0.6, 1.1],
        }
    )
    checks = multiskill_compare_checks(CONFIG, tmp_path / "C10.csv")
    _check_all(tmp_path, table, checks, "instance", "multiskilled", "C10.csv")


def test_simulate_chunk(tmp_path):
    rows = itertools.product([1, 2], ["bernoulli", "jsq"], [3, 4])
    table = pd.DataFrame(
        [
            {"n_classes": 20, "instance": k, "policy": p, "replication": r, "cost": 1.5}
            | {"events": 10, "martingale": 0.25, "initial_state": -0.5}
            for k, p, r in rows
        ]
    )
    assert len(table) == 8
    checks = multiskill_simulate_checks(CONFIG, tmp_path / "C20" / "i1-2_r3-4.csv")
    _check_all(tmp_path, table, checks, "policy", "cost", "C20/i1-2_r3-4.csv")
    _check_all(tmp_path, table, checks, "replication", "events", "C20/i1-2_r3-4.csv")


def test_simulate_table1_chunk_skips_the_unstable_factor(tmp_path):
    columns = ["load_factor", "n_classes", "instance", "policy", "replication", "cost", "events"]
    columns += ["martingale", "initial_state"]  # the controls of known mean, per replication
    table = pd.DataFrame(
        [[0.5, 5, 0, p, r, 2.0, 7, 0.25, -0.5] for p in ("bernoulli", "jsq") for r in (0, 1)],
        columns=columns,
    )
    checks = multiskill_simulate_table1_checks(CONFIG, tmp_path / "i0-1_r0-1.csv")
    assert checks["rows"] == 4
    _check_all(tmp_path, table, checks, "load_factor", "cost", "i0-1_r0-1.csv")
    # a chunk of the unstable factor only: an empty table, and a row there is refused
    only = multiskill_simulate_table1_checks(CONFIG, tmp_path / "i1-1_r0-1.csv")
    assert _passes(tmp_path, pd.DataFrame(columns=columns), only).empty
    _refused(tmp_path, table.iloc[:1], only)


def test_job_sizes_tables(tmp_path):
    laws = ["exponential", "lognormal:4"]
    rows = pd.DataFrame(
        [
            {"sample": "random", "job_sizes": j, "law": j.split(":")[0], "instance": k}
            | {"policy": p, "cost": 1.0}
            for j in laws
            for k in (0, 1)
            for p in ("bernoulli", "jsq", "pi")
        ]
    )
    path = tmp_path / "random" / "policies.csv"
    _check_all(tmp_path, rows, multiskill_job_sizes_checks(CONFIG, path), "policy", "cost", "p.csv")
    pairs = [("bernoulli", "jsq"), ("bernoulli", "pi"), ("jsq", "pi")]
    diffs = pd.DataFrame(
        [
            {"sample": "table1", "job_sizes": j, "instance": 0, "policy_a": a, "policy_b": b}
            | {"difference": 0.1}
            for j in laws
            for a, b in pairs
        ]
    )
    checks = multiskill_job_sizes_checks(CONFIG, tmp_path / "table1" / "x.csv", differences=True)
    _check_all(tmp_path, diffs, checks, "job_sizes", "difference", "d.csv")
    summary = pd.DataFrame(
        [
            {"sample": s, "job_sizes": j, "law": j, "scv": 1.0, "policy": p, "instances": 1}
            | {"gain": 0.1, "gain_ci95": 0.01, "gain_min": 0.0, "gain_max": 0.2}
            for s in ("table1", "random")
            for j in laws
            for p in ("jsq", "pi")
        ]
    )
    checks = multiskill_job_sizes_summary_checks(CONFIG)
    _check_all(tmp_path, summary, checks, "policy", "gain", "s.csv")
    assert multiskill_figure_checks(CONFIG, "multiskill_fig_job_sizes", "summary") == checks


def test_case_map_and_region_grids(tmp_path):
    # grid_points = 4 over (0, 1] x (0, 2]
    grid = [(a, b) for a in (0.25, 0.5, 0.75, 1.0) for b in (0.5, 1.0, 1.5, 2.0)]
    case_map = pd.DataFrame([{"eta1": a, "eta2": b, "case": 4} for a, b in grid])
    checks = multiskill_figure_checks(CONFIG, "multiskill_fig2", "case_map")
    _check_all(tmp_path, case_map, checks, "eta2", "case", "case_map.csv")
    # Fig. 4 reads the switching section's grid: (0, 2] x (0, 2] in 2 points
    region = pd.DataFrame(
        [
            {"eta1": a, "eta2": b, "multiskilled": 1.0, "all_sharing": 2.0, "difference": 1.0}
            for a in (1.0, 2.0)
            for b in (1.0, 2.0)
        ]
    )
    checks = multiskill_figure_checks(CONFIG, "multiskill_fig4", "region")
    assert len(_passes(tmp_path, region, checks)) == 4
    _refused(tmp_path, region.iloc[1:], checks)
    _refused(tmp_path, region.drop(columns=["difference"]), checks)
    _refused(tmp_path, case_map, multiskill_figure_checks(CONFIG, "multiskill_fig2", "region"))


def test_iteration_stats_and_policy_rows(tmp_path):
    stats = pd.DataFrame(
        [
            {"n_classes": n, "update": u, "runs": 6, "min": 1, "median": 2, "max": 3}
            | {"not_converged": 0}
            for n in (10, 20)
            for u in ("jacobi", "single")
        ]
    )
    checks = multiskill_figure_checks(CONFIG, "multiskill_fig7", "stats")
    _check_all(tmp_path, stats, checks, "n_classes", "runs", "stats.csv")
    rows = pd.DataFrame(
        [
            {"n_classes": n, "instance": k, "policy": p, "ratio": 1.0, "ratio_ci95": 0.1}
            | {"best": "jsq"}
            for n in (10, 20)
            for k in (0, 1)
            for p in ("bernoulli", "jsq")
        ]
    )
    checks = multiskill_figure_checks(CONFIG, "multiskill_fig8", "rows")
    _check_all(tmp_path, rows, checks, "policy", "ratio", "rows.csv")
    sweep = pd.DataFrame(
        [
            {"load_factor": 0.5, "policy": p, "ratio": 1.0, "ratio_ci95": 0.1, "best": "jsq"}
            for p in ("bernoulli", "jsq")
        ]
    )
    checks = multiskill_figure_checks(CONFIG, "multiskill_fig9", "rows")
    _check_all(tmp_path, sweep, checks, "load_factor", "ratio", "sweep.csv")


def test_instances_file(tmp_path):
    inst = {"mu": [1.0] * 11, "cost": [1.0] * 11, "eta": [0.1] * 10, "name": "x"}
    good = {"instances": [inst, inst], "n_classes": 10, "seed": 1}
    path = tmp_path / "C10.json"
    path.write_text(json.dumps(good))
    assert len(read_multiskill_instances(CONFIG, path)["instances"]) == 2
    bad = [
        {**good, "instances": [inst]},
        {**good, "instances": [inst, inst, inst]},
        {**good, "n_classes": 20},
        {**good, "instances": [inst, {**inst, "eta": [0.1] * 9}]},
    ]
    for data in bad:
        path.write_text(json.dumps(data))
        with pytest.raises(TableError):
            read_multiskill_instances(CONFIG, path)


@pytest.mark.parametrize("overlays", [(SMOKE,), ()], ids=["smoke", "default"])
def test_simulation_chunks_cover_the_study_once(overlays, tmp_path):
    """Over the chunks the plan gives (the file names Snakemake's DAG asks for), the chunk
    expectations add up to every (instance, policy, replication) exactly once."""
    config = merged_config(*overlays)
    ms = config["multiskill"]
    sim = ms["simulation"]
    sizes = range(ms["sizes"]["first"], ms["sizes"]["last"] + 1, ms["sizes"]["step"])
    for n in sizes:
        seen = []
        for label in plan.chunk_labels("multiskill_simulate", {"n_classes": n}, config):
            checks = multiskill_simulate_checks(config, tmp_path / f"C{n}" / f"{label}.csv")
            keys = checks["keys"]
            assert keys["n_classes"] == [n] and keys["policy"] == list(sim["policies"])
            block = list(itertools.product(keys["instance"], keys["replication"]))
            assert checks["rows"] == len(block) * len(sim["policies"])
            seen += block
        whole = itertools.product(range(ms["instances_per_size"]), range(sim["replications"]))
        assert sorted(seen) == sorted(whole)
    factors, seen = sim["table1_load_factors"], []
    for label in plan.chunk_labels("multiskill_simulate_table1", {}, config):
        checks = multiskill_simulate_table1_checks(config, tmp_path / f"{label}.csv")
        if checks["rows"]:
            keys = checks["keys"]
            assert [factors[k] for k in keys["instance"]] == keys["load_factor"]
            seen += list(itertools.product(keys["instance"], keys["replication"]))
    assert {k for k, _ in seen} <= set(range(len(factors)))
    assert len(seen) == len(set(seen))
    for k in {k for k, _ in seen}:  # a stable factor: all its replications
        assert sorted(r for j, r in seen if j == k) == list(range(sim["replications"]))
