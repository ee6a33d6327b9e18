"""Part C's consumers check what the config determines of the tables they read.

Hand-built tables of the shape a small config determines (written here from the config by
hand, not from the checks) pass :func:`read_serverpools_table`; the same tables with a row
lost, a row repeated, a key value changed, a NaN, or a column dropped are refused with a
one-line :class:`TableError`. No pipeline run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from queue_routing.serverpools.instances import EXAMPLES
from queue_routing.workflow.tables import (
    TableError,
    read_serverpools_example,
    read_serverpools_search_chunk,
    read_serverpools_table,
    read_serverpools_tables,
    serverpools_checks,
)

CONFIG = {
    "serverpools": {
        "search": {"max_classes": 2, "max_pools": 2, "samples_per_size": 10},
        "boundary": {"points": 4},
        "fluid": {"stable": {"points": 3}},
        "stochastic": {"examples": ["stable", "large_cycle"], "r": [100, 1000], "replications": 2},
        "fluid_limit": {"r": [100, 1000], "replications": 3},
        "covariance": {"r": 500, "replications": 2},
        "lap": {
            "r": {"large_cycle": [1000, 10000], "unstable": [1000, 10000]},
            "static_r_max": 1000,
            "replications": 2,
        },
    }
}

RUN = ["t_end", "warmup", "events", "mean_norm", "rms_norm"]


def _runs(keys: list[tuple], names: list[str]) -> pd.DataFrame:
    rows = [
        {**dict(zip(names, k, strict=True)), **{c: 1.0 + i for c in RUN}}
        for i, k in enumerate(keys)
    ]
    return pd.DataFrame(rows)


def stochastic_chunk() -> tuple[str, pd.DataFrame]:
    # example stable, r = 100, chunk r0-1: replications 0 and 1
    return (
        "serverpools_stochastic/stable_r100/r0-1_summary.csv",
        _runs([("stable", 100.0, 0), ("stable", 100.0, 1)], ["example", "r", "replication"]),
    )


def lap_run() -> tuple[str, pd.DataFrame]:
    table = _runs(
        [("large_cycle", "lap", 1000.0, 0), ("large_cycle", "lap", 1000.0, 1)],
        ["example", "policy", "r", "replication"],
    )
    table["customers"] = [1.5, 1.6]
    return "serverpools_lap/large_cycle_lap_r1000.csv", table


def fluid_limit_run() -> tuple[str, pd.DataFrame]:
    rows = [
        {
            "example": "stable",
            "r": 1000.0,
            "replication": k,
            "t_end": 2.0,
            "sup_distance": 0.1,
            "scaled_distance": 3.0,
        }
        for k in range(3)
    ]
    return "serverpools_fluid_limit/stable_r1000.csv", pd.DataFrame(rows)


def time_averages() -> tuple[str, pd.DataFrame]:
    rows = [
        {
            "example": e,
            "r": float(r),
            "replications": 2,
            "t_end": 20.0,
            "warmup": 3.0,
            "mean_norm": 1.0,
            "mean_norm_ci": 0.1,
            "stationary": True,
        }
        for e in ("stable", "large_cycle")
        for r in (100, 1000)
    ]
    return "serverpools_stochastic_summary/time_averages.csv", pd.DataFrame(rows)


def covariance_chunk() -> tuple[str, pd.DataFrame]:
    # the stable example has 3 classes: 3 x 3 entries per replication
    rows = [
        {
            "example": "stable",
            "r": 500.0,
            "replication": rep,
            "class_i": i,
            "class_k": k,
            "covariance": 0.5,
        }
        for rep in (0, 1)
        for i in (1, 2, 3)
        for k in (1, 2, 3)
    ]
    return "serverpools_covariance/r0-1.csv", pd.DataFrame(rows)


def lap_time_averages() -> tuple[str, pd.DataFrame]:
    # LQFS-LB and LAP at every r (2 examples x 2 r), static routing only at r = 1000
    cells = [
        (e, p, r)
        for e in ("large_cycle", "unstable")
        for r in (1000, 10000)
        for p in ("lqfs-lb", "lap", "static")
        if p != "static" or r == 1000
    ]
    assert len(cells) == 10
    rows = [
        {
            "example": e,
            "policy": p,
            "r": float(r),
            "replications": 2,
            "t_end": 10.0,
            "warmup": 0.5,
            "mean_norm": 1.0,
            "mean_norm_ci": 0.2,
            "stationary": True,
        }
        for e, p, r in cells
    ]
    return "serverpools_lap_summary/time_averages.csv", pd.DataFrame(rows)


TABLES = {
    f.__name__: f
    for f in (
        stochastic_chunk,
        lap_run,
        fluid_limit_run,
        time_averages,
        covariance_chunk,
        lap_time_averages,
    )
}


def _write(tmp_path: Path, name: str, table: pd.DataFrame) -> Path:
    path = tmp_path / "results" / "serverpools" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("kind", TABLES)
def test_right_shape_passes(tmp_path, kind):
    name, table = TABLES[kind]()
    path = _write(tmp_path, name, table)
    assert len(read_serverpools_table(CONFIG, path)) == len(table)


def _refused(path: Path) -> str:
    with pytest.raises(TableError) as info:
        read_serverpools_table(CONFIG, path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize("kind", TABLES)
def test_missing_row_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    path = _write(tmp_path, name, table.iloc[:-1])
    assert f"has {len(table) - 1} rows, the config determines {len(table)}" in _refused(path)


@pytest.mark.parametrize("kind", TABLES)
def test_extra_row_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    path = _write(tmp_path, name, pd.concat([table, table.iloc[[0]]], ignore_index=True))
    assert f"has {len(table) + 1} rows" in _refused(path)


@pytest.mark.parametrize("kind", TABLES)
def test_repeated_key_refused(tmp_path, kind):
    # the right number of rows, but the last row repeats the first one's key
    name, table = TABLES[kind]()
    damaged = pd.concat([table.iloc[:-1], table.iloc[[0]]], ignore_index=True)
    message = _refused(_write(tmp_path, name, damaged))
    assert "repeats the key" in message or "lacks [" in message


@pytest.mark.parametrize("kind", TABLES)
def test_wrong_key_value_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    damaged = table.copy()
    damaged.loc[0, "example"] = "no_such_example"
    assert "column example" in _refused(_write(tmp_path, name, damaged))


@pytest.mark.parametrize("kind", TABLES)
def test_wrong_scale_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    damaged = table.copy()
    damaged["r"] = damaged["r"] * 10  # every row at another scale than the config's
    assert "column r" in _refused(_write(tmp_path, name, damaged))


#: a column of each table that may hold no NaN (the number the consumer computes with)
MEASURED = {
    "stochastic_chunk": "mean_norm",
    "lap_run": "customers",
    "fluid_limit_run": "sup_distance",
    "time_averages": "mean_norm",
    "covariance_chunk": "covariance",
    "lap_time_averages": "mean_norm",
}


@pytest.mark.parametrize("kind", TABLES)
def test_nan_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    column = MEASURED[kind]
    damaged = table.copy()
    damaged.loc[1, column] = np.nan
    message = _refused(_write(tmp_path, name, damaged))
    assert f"NaN (or an empty cell) in column {column}, row 2" in message


@pytest.mark.parametrize("kind", TABLES)
def test_missing_column_refused(tmp_path, kind):
    name, table = TABLES[kind]()
    column = MEASURED[kind]
    message = _refused(_write(tmp_path, name, table.drop(columns=column)))
    assert f"lacks the column(s) {column}" in message


def test_several_files_concatenated_in_order(tmp_path):
    name, table = stochastic_chunk()
    first = _write(tmp_path, name, table)
    lap_name, lap_table = lap_run()
    second = _write(tmp_path, lap_name, lap_table)
    both = read_serverpools_tables(CONFIG, [first, second])
    assert list(both["example"]) == ["stable", "stable", "large_cycle", "large_cycle"]


def test_lap_file_name_of_a_two_word_example():
    # large_cycle_static_r1000: example large_cycle, policy static, r 1000
    checks = serverpools_checks(
        CONFIG, "results/serverpools/serverpools_lap/large_cycle_static_r1000.csv"
    )
    assert checks["keys"]["example"] == ["large_cycle"]
    assert checks["keys"]["policy"] == ["static"]
    assert checks["keys"]["r"] == [1000]


def test_unknown_table_is_an_error():
    with pytest.raises(ValueError, match="no checks known"):
        serverpools_checks(CONFIG, "results/serverpools/serverpools_table/examples.csv")


# -- the instability search's chunks (JSON) ---------------------------------------------------
# max_classes = max_pools = 2: sizes (1, 1), (1, 2), (2, 1), (2, 2) in the order of the search
# (by I + J, then I); the chunk i1-2_r0-4 holds sizes 1 and 2, samples 0..4.
def _search_chunk(tmp_path: Path, entries: list[dict]) -> Path:
    path = tmp_path / "results" / "serverpools" / "serverpools_search" / "i1-2_r0-4.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))
    return path


def _entries() -> list[dict]:
    return [
        {"n_classes": 1, "n_pools": 2, "samples": 5, "first_sample": 0},
        {"n_classes": 2, "n_pools": 1, "samples": 5, "first_sample": 0},
    ]


def test_search_chunk_right_shape_passes(tmp_path):
    assert read_serverpools_search_chunk(CONFIG, _search_chunk(tmp_path, _entries())) == _entries()


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (lambda e: e[:1], "has 1 sizes, the config determines 2"),
        (lambda e: [e[1], e[0]], "entry 1 is size"),
        (lambda e: [e[0], {**e[1], "samples": 4}], "entry 2 has 4 samples"),
        (lambda e: [e[0], {**e[1], "first_sample": 5}], "entry 2 starts at sample 5"),
    ],
)
def test_search_chunk_damage_refused(tmp_path, damage, what):
    path = _search_chunk(tmp_path, damage(_entries()))
    with pytest.raises(TableError, match=what):
        read_serverpools_search_chunk(CONFIG, path)


# -- the example instances the tree figures draw (JSON) ---------------------------------------
def _instance(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / "results" / "serverpools" / "serverpools_examples" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_example_instance_as_defined_passes(tmp_path):
    data = json.loads(json.dumps(EXAMPLES["unstable"]))
    assert read_serverpools_example(_instance(tmp_path, "unstable", data)) == data


def test_example_instance_changed_refused(tmp_path):
    data = json.loads(json.dumps(EXAMPLES["unstable"]))
    data["arrival_rates"][0] *= 1.5
    with pytest.raises(TableError, match="differs from the unstable example in arrival_rates"):
        read_serverpools_example(_instance(tmp_path, "unstable", data))


def test_example_instance_of_another_name_refused(tmp_path):
    data = json.loads(json.dumps(EXAMPLES["stable"]))
    with pytest.raises(TableError, match="differs from the unstable example"):
        read_serverpools_example(_instance(tmp_path, "unstable", data))
