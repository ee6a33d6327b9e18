"""Checked reads of the pipeline's intermediate tables (the one reader of every consumer).

A rule's script that reads a table another rule wrote checks that the table is what the
config determines before using it: the file exists and parses, has the columns the consumer
needs, the number of rows and the key values the config determines, and no NaN where none
may be. Anything else (a file cut short, a column dropped, a value lost, a file deleted
under a finished run) stops the job with one line naming the file and what is wrong, and
the command that rebuilds the file and everything computed from it::

    results/deadlines/deadlines_two_cluster/distribution.csv: has 4 rows, the config
    determines 6 (damaged intermediate table; rebuild it and what depends on it:
    snakemake --cores all --forcerun results/deadlines/deadlines_two_cluster/distribution.csv)

(printed on one line). Two layers of checks:

* every read (:func:`read_table`) compares the file with Snakemake's own record of the job
  that wrote it (``.snakemake/metadata``: the file's modification time when that job
  finished): a file changed since, in any way (cut short, edited, replaced), is refused
  whatever its contents, in every part and for every consumer;
* the consumer states what the config determines of the table (its columns, rows, key
  values, the columns that may hold no NaN): this also catches a table written wrong by its
  own job, or read outside Snakemake (no record).

``--forcerun FILE`` reruns the job that writes ``FILE`` and, because
its new output is newer than what was computed from it, every job downstream; a file that
is missing is rebuilt the same way (Snakemake alone would not: with the results computed
from it present, it reports "Nothing to be done"). Why a check in the consumer rather than
Snakemake's triggers: a damaged file is newer than its own inputs, so no trigger reruns its
producer, and its consumers would be rerun on it by the modification-time trigger.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "METADATA",
    "TableError",
    "deadlines_sweep_checks",
    "multiskill_compare_checks",
    "multiskill_figure_checks",
    "multiskill_job_sizes_checks",
    "multiskill_job_sizes_summary_checks",
    "multiskill_simulate_checks",
    "multiskill_simulate_table1_checks",
    "multiskill_solve_checks",
    "producer_problem",
    "read_checked_json",
    "read_multiskill_instances",
    "read_serverpools_example",
    "read_serverpools_search_chunk",
    "read_serverpools_table",
    "read_serverpools_tables",
    "read_table",
    "read_tables",
    "rebuild_command",
    "serverpools_checks",
]


class TableError(ValueError):
    """An intermediate table that is not what the config determines (one-line message that
    names the file, what is wrong and the command that rebuilds it)."""


def rebuild_command(path: str | Path) -> str:
    """The command that rebuilds ``path`` and everything computed from it."""
    return f"snakemake --cores all --forcerun {path}"


def _fail(path: str | Path, what: str) -> TableError:
    return TableError(
        f"{path}: {what} (damaged intermediate table; rebuild it and what depends on it: "
        f"{rebuild_command(path)})"
    )


#: Where Snakemake keeps its record of each output (relative to the working directory).
METADATA = Path(".snakemake") / "metadata"


def producer_problem(path: str | Path, metadata: str | Path = METADATA) -> str | None:
    """What is wrong with ``path`` according to Snakemake's record of the job that wrote it:
    ``None`` if the file is as that job left it (its modification time is the one recorded
    when the job finished) or if there is no record (not written by a Snakemake job here);
    otherwise one phrase."""
    key = base64.urlsafe_b64encode(str(path).encode()).decode()
    record_path = Path(metadata) / key
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None
    end = record.get("endtime") if isinstance(record, dict) else None
    if record.get("incomplete"):
        return f"left incomplete by its job (rule {record.get('rule')})"
    if not isinstance(end, int | float):
        return None
    mtime = Path(path).stat().st_mtime
    if abs(mtime - float(end)) > 1e-6:
        return (
            f"changed after the job that wrote it (rule {record.get('rule')}) finished "
            "(its modification time is not the one Snakemake recorded)"
        )
    return None


def _same(value: Any, expected: Any) -> bool:
    """Two key values equal as numbers (to 1e-12 relative: a CSV round trip) or as text."""
    try:
        a, b = float(value), float(expected)
    except (TypeError, ValueError):
        return str(value) == str(expected)
    if math.isnan(a) or math.isnan(b):
        return False
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _show(values: Iterable[Any], limit: int = 6) -> str:
    items = list(values)
    text = ", ".join(str(v) for v in items[:limit])
    return f"[{text}{', ...' if len(items) > limit else ''}]"


def read_table(
    path: str | Path,
    *,
    columns: Sequence[str] = (),
    rows: int | None = None,
    keys: Mapping[str, Sequence[Any]] | None = None,
    unique: Sequence[str] = (),
    no_nan: Sequence[str] | bool = (),
    min_rows: int = 0,
) -> pd.DataFrame:
    """The CSV table at ``path``, checked; a :class:`TableError` (one line) otherwise.

    Parameters
    ----------
    path:
        An intermediate table of the pipeline (CSV with a header row).
    columns:
        Columns the consumer needs (the table may have more).
    rows:
        The number of rows the config determines (``None``: at least ``min_rows``).
    keys:
        ``{column: values}``: the column's values, as a set, are exactly ``values`` (numbers
        compared as numbers, anything else as text); each column is also checked for NaN.
    unique:
        Columns whose combination identifies a row: no two rows share it.
    no_nan:
        Columns that may hold no NaN (an empty CSV cell reads as NaN); ``True``: all of
        ``columns``.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("value,cost\\n1,0.5\\n2,0.25\\n")
    >>> read_table(p, columns=["value", "cost"], keys={"value": [1, 2]}, no_nan=True).shape
    (2, 2)
    >>> try:
    ...     read_table(p, rows=3)
    ... except TableError as e:
    ...     print(str(e).split(" (")[0].endswith("has 2 rows, the config determines 3"))
    True
    """
    if not Path(path).is_file():
        raise _fail(path, "missing")
    changed = producer_problem(path)
    if changed is not None:
        raise _fail(path, changed)
    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(path, f"not a readable CSV table ({reason})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise _fail(path, f"lacks the column(s) {', '.join(missing)}")
    if rows is not None and len(table) != rows:
        raise _fail(path, f"has {len(table)} rows, the config determines {rows}")
    if rows is None and len(table) < min_rows:
        raise _fail(path, f"has {len(table)} rows, at least {min_rows} expected")
    checked = list(columns) if no_nan is True else list(no_nan or ())
    for column in [*checked, *(keys or {}), *unique]:
        if column not in table.columns:
            raise _fail(path, f"lacks the column {column}")
        bad = table[column].isna().to_numpy()
        if bad.any():
            row = int(bad.argmax())
            raise _fail(path, f"NaN (or an empty cell) in column {column}, row {row + 1}")
    for column, expected in (keys or {}).items():
        found = list(dict.fromkeys(table[column].tolist()))
        want = list(dict.fromkeys(expected))
        extra = [v for v in found if not any(_same(v, w) for w in want)]
        lost = [w for w in want if not any(_same(v, w) for v in found)]
        if extra or lost:
            what = []
            if lost:
                what.append(f"lacks {_show(lost)}")
            if extra:
                what.append(f"has unexpected {_show(extra)}")
            raise _fail(
                path, f"column {column} {' and '.join(what)} (the config determines {_show(want)})"
            )
    if unique and table.duplicated(subset=list(unique)).any():
        row = int(table.duplicated(subset=list(unique)).to_numpy().argmax())
        raise _fail(path, f"row {row + 1} repeats the key ({', '.join(unique)}) of an earlier row")
    return table


def read_checked_json(path: str | Path) -> Any:
    """The JSON document at ``path`` (an intermediate file of the pipeline, e.g. drawn
    instances), after the checks of :func:`read_table` that do not depend on a table's
    shape: present, as its job wrote it, and parseable; a :class:`TableError` otherwise."""
    if not Path(path).is_file():
        raise _fail(path, "missing")
    changed = producer_problem(path)
    if changed is not None:
        raise _fail(path, changed)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise _fail(path, f"not valid JSON ({str(exc).splitlines()[0]})") from None


def read_tables(
    paths: str | Path | Iterable[str | Path],
    *,
    rows: Mapping[str, int] | int | None = None,
    keys: Mapping[str, Mapping[str, Sequence[Any]]] | Mapping[str, Sequence[Any]] | None = None,
    per_file: bool = False,
    **checks: Any,
) -> pd.DataFrame:
    """The tables at ``paths``, each checked by :func:`read_table` with ``checks``,
    concatenated (index reset). ``rows`` (and ``keys`` with ``per_file=True``) may map a
    path (as given) to that file's expectation; otherwise they apply to every file."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    frames = []
    for p in items:
        n = rows.get(str(p)) if isinstance(rows, Mapping) else rows
        k = keys.get(str(p)) if per_file and isinstance(keys, Mapping) else keys
        frames.append(read_table(p, rows=n, keys=k, **checks))
    return pd.concat(frames, ignore_index=True)


# -- what the config determines, per kind of table (used by the rules' scripts) -------------
def deadlines_sweep_checks(config: Mapping[str, Any], path: str | Path, *, three: bool = False):
    """:func:`read_table` keywords of one Part B sweep table ``.../{sweep}.csv`` (two-cluster
    ``deadlines_two_cluster`` or, with ``three``, ``deadlines_three_cluster``, two systems per
    point): its rows (one per point of the sweep, :func:`~queue_routing.deadlines.instances.
    sweep_points`), its ``sweep`` key, its columns, and no NaN in the point's costs."""
    from ..deadlines.experiments import SWEEP_COLUMNS, THREE_CLUSTER_SWEEP_COLUMNS
    from ..deadlines.instances import HEURISTICS, sweep_points

    sweep = Path(path).stem
    part = config["deadlines"]
    sweeps = part["three_cluster"]["sweeps"] if three else part["sweeps"]
    _, points = sweep_points(sweeps, sweep, rate="load" if three else "arrival_rate")
    costs = ["cost_optimal", *(f"cost_{p}" for p in HEURISTICS)]
    return {
        "columns": THREE_CLUSTER_SWEEP_COLUMNS if three else SWEEP_COLUMNS,
        "rows": len(points) * (2 if three else 1),
        "keys": {"sweep": [sweep]},
        "no_nan": ["parameter", "value", "L", *costs],
    }


# -- Part A (multiskill): what the config determines of each intermediate table ----------------
def _ms_sizes(config: Mapping[str, Any]) -> list[int]:
    s = config["multiskill"]["sizes"]
    return list(range(s["first"], s["last"] + 1, s["step"]))


def _ms_size_of(path: str | Path) -> int:
    """``C`` of a per-size file ``.../C{n}.csv`` or ``.../C{n}/{chunk}.csv``."""
    p = Path(path)
    name = p.stem if p.stem.startswith("C") and p.stem[1:].isdigit() else p.parent.name
    return int(name[1:])


def read_multiskill_instances(config: Mapping[str, Any], path: str | Path) -> Any:
    """The drawn instances ``.../multiskill_instances/C{n}.json``, checked by
    :func:`read_checked_json` and against the config: ``n_classes`` is the file's ``C`` and
    it holds ``multiskill.instances_per_size`` instances of ``C`` classes each."""
    data = read_checked_json(path)
    n = _ms_size_of(path)
    want = config["multiskill"]["instances_per_size"]
    if not isinstance(data, dict) or not isinstance(data.get("instances"), list):
        raise _fail(path, "has no list of instances")
    if data.get("n_classes") != n:
        raise _fail(path, f"n_classes is {data.get('n_classes')}, the file name says {n}")
    if len(data["instances"]) != want:
        raise _fail(path, f"has {len(data['instances'])} instances, the config determines {want}")
    for k, d in enumerate(data["instances"]):
        eta = d.get("eta") if isinstance(d, dict) else None
        if eta is None or len(eta) != n:
            raise _fail(path, f"instance {k} does not have {n} classes")
    return data


def multiskill_solve_checks(config: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """:func:`read_table` keywords of ``multiskill_solve/C{n}.csv``: one run of Algorithm 1
    per (instance, update rule, initial partition)."""
    ms = config["multiskill"]
    fp = ms["fixed_point"]
    n, per = _ms_size_of(path), ms["instances_per_size"]
    from ..multiskill.experiments import init_labels

    labels = init_labels(fp["initial_partitions"], fp["random_initial_partitions"])
    return {
        "columns": ["n_classes", "instance", "update", "init", "iterations", "converged"],
        "rows": per * len(fp["update_rules"]) * len(labels),
        "keys": {
            "n_classes": [n],
            "instance": list(range(per)),
            "update": list(fp["update_rules"]),
            "init": labels,
        },
        "unique": ["instance", "update", "init"],
        "no_nan": ["iterations", "converged"],
    }


def multiskill_compare_checks(config: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """:func:`read_table` keywords of ``multiskill_compare/C{n}.csv``: one row of the three
    systems' costs per instance (the instances are stable, so the multi-skilled cost is a
    number)."""
    n, per = _ms_size_of(path), config["multiskill"]["instances_per_size"]
    costs = ["multiskilled", "no_sharing", "all_sharing", "all_sharing_same_costs"]
    return {
        "columns": ["n_classes", "instance", *costs],
        "rows": per,
        "keys": {"n_classes": [n], "instance": list(range(per))},
        "unique": ["instance"],
        "no_nan": ["multiskilled"],  # the others are NaN where their system is unstable
    }


def _ms_replication_checks(rows: int, keys: dict[str, Any], extra: Sequence[str] = ()):
    from ..multiskill.experiments import REPLICATION_COLUMNS

    return {
        "columns": [*extra, *REPLICATION_COLUMNS],
        "rows": rows,
        "keys": keys if rows else {},
        "unique": ["instance", "policy", "replication"],
        "no_nan": ["cost", "events"],
    }


def multiskill_simulate_checks(config: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """:func:`read_table` keywords of one chunk ``multiskill_simulate/C{n}/{chunk}.csv``: the
    cost of every (instance, policy, replication) of the chunk."""
    from .chunks import parse_chunk

    chunk = parse_chunk(Path(path).stem)
    policies = list(config["multiskill"]["simulation"]["policies"])
    return _ms_replication_checks(
        chunk.n_items * len(chunk.replications) * len(policies),
        {
            "n_classes": [_ms_size_of(path)],
            "instance": list(chunk.items),
            "policy": policies,
            "replication": list(chunk.replications),
        },
    )


def multiskill_simulate_table1_checks(
    config: Mapping[str, Any], path: str | Path
) -> dict[str, Any]:
    """:func:`read_table` keywords of one chunk ``multiskill_simulate_table1/{chunk}.csv``:
    every (stable load factor, policy, replication) of the chunk (the factors that make
    Table 1 unstable have no rows; a chunk of only those is an empty table)."""
    from ..multiskill.experiments import table1_instances
    from .chunks import parse_chunk

    chunk = parse_chunk(Path(path).stem)
    sim = config["multiskill"]["simulation"]
    factors = [sim["table1_load_factors"][k] for k in chunk.items]
    stable, _ = table1_instances(factors, indices=chunk.items)
    kept = [k for k, _ in stable]
    by_index = dict(zip(chunk.items, factors, strict=True))
    policies = list(sim["policies"])
    return _ms_replication_checks(
        len(kept) * len(chunk.replications) * len(policies),
        {
            "instance": kept,
            "load_factor": [by_index[k] for k in kept],
            "policy": policies,
            "replication": list(chunk.replications),
        },
        extra=["load_factor"],
    )


def multiskill_job_sizes_checks(
    config: Mapping[str, Any], path: str | Path, *, differences: bool = False
) -> dict[str, Any]:
    """:func:`read_table` keywords of ``multiskill_job_sizes/{sample}/policies.csv`` (or,
    with ``differences``, ``differences.csv``): one row per (law, instance, policy) (the
    differences: per law, instance and pair of policies)."""
    js = config["multiskill"]["job_sizes"]
    sample = Path(path).parent.name
    instances = [0] if sample == "table1" else list(range(js["random_instances"]))
    policies = list(js["policies"])
    laws = len(js["laws"]) * len(instances)
    if differences:
        pairs = len(policies) * (len(policies) - 1) // 2
        return {
            "columns": ["sample", "job_sizes", "instance", "policy_a", "policy_b", "difference"],
            "rows": laws * pairs,
            "keys": {"sample": [sample], "job_sizes": list(js["laws"]), "instance": instances},
            "unique": ["job_sizes", "instance", "policy_a", "policy_b"],
            "no_nan": ["difference"],
        }
    return {
        "columns": ["sample", "job_sizes", "law", "instance", "policy", "cost"],
        "rows": laws * len(policies),
        "keys": {
            "sample": [sample],
            "job_sizes": list(js["laws"]),
            "instance": instances,
            "policy": policies,
        },
        "unique": ["job_sizes", "instance", "policy"],
        "no_nan": ["cost"],
    }


def _ms_plane(eta_max: Sequence[float], points: int) -> tuple[list[float], list[float]]:
    """The (eta_1, eta_2) grid of the C = 2 maps: ``points`` values in (0, eta_max[i]]."""
    import numpy as np

    return tuple(np.linspace(0.0, m, points + 1)[1:].tolist() for m in eta_max[:2])


def _ms_grid_checks(section: Mapping[str, Any], values: Sequence[str]) -> dict[str, Any]:
    e1, e2 = _ms_plane(section["eta_max"], section["grid_points"])
    return {
        "columns": ["eta1", "eta2", *values],
        "rows": len(e1) * len(e2),
        "keys": {"eta1": e1, "eta2": e2},
        "unique": ["eta1", "eta2"],
    }


def multiskill_figure_checks(config: Mapping[str, Any], rule: str, name: str) -> dict[str, Any]:
    """:func:`read_table` keywords of the input ``name`` of the Part A figure rule ``rule``
    (``multiskill_fig2`` ... ``multiskill_fig9``, ``multiskill_fig_job_sizes``): the columns
    the figure draws and, where the config determines them, its rows and key values."""
    ms = config["multiskill"]
    updates = list(ms["fixed_point"]["update_rules"])
    sim = ms["simulation"]
    section = {"multiskill_fig4": "switching", "multiskill_fig5": "equal_capacities"}
    part = ms[section.get(rule, "two_class")]
    if name == "case_map":
        return {**_ms_grid_checks(part, ["case"]), "no_nan": ["case"]}
    if name == "region":
        return _ms_grid_checks(part, ["multiskilled", "all_sharing", "difference"])
    if name == "boundaries":
        return {"columns": ["boundary", "eta1", "eta2"]}
    if name == "loads":
        return {
            "columns": ["eta2", "source", "rho0", "rho1", "rho2", "case"],
            "min_rows": 1,
            "keys": {"source": ["closed-form", "exact"]},
            "unique": ["eta2", "source"],
            "no_nan": ["eta2", "rho0", "rho1", "rho2"],
        }
    if name == "costs":
        eta2 = _ms_plane([part["line_eta1"], part["eta_max"][1]], part["line_points"])[1]
        return {
            "columns": ["eta2", "multiskilled", "no_sharing", "all_sharing"],
            "rows": len(eta2),
            "keys": {"eta2": eta2},
            "unique": ["eta2"],
        }
    if name == "switching_points":
        return {"columns": ["eta1", "eta2"], "no_nan": True}
    if name == "switching_curve":
        return {"columns": ["eta1", "eta2", "branch"], "no_nan": ["eta1", "branch"]}
    if name == "trajectories":
        return {
            "columns": ["init", "update", "paper_rounding", "iteration", "server", "load"],
            "min_rows": 1,
            "no_nan": True,
        }
    if name == "runs":
        return {
            "columns": ["init", "update", "paper_rounding", "status"],
            "min_rows": 1,
            "keys": {"update": updates},
            "unique": ["init", "update", "paper_rounding"],
            "no_nan": True,
        }
    if name == "stats":
        return {
            "columns": ["n_classes", "update", "runs", "min", "median", "max", "not_converged"],
            "rows": len(_ms_sizes(config)) * len(updates),
            "keys": {"n_classes": _ms_sizes(config), "update": updates},
            "unique": ["n_classes", "update"],
            "no_nan": ["runs", "not_converged"],
        }
    if name == "rows" and rule == "multiskill_fig8":
        per, policies = ms["instances_per_size"], list(sim["policies"])
        return {
            "columns": ["n_classes", "instance", "policy", "ratio", "ratio_ci95", "best"],
            "rows": len(_ms_sizes(config)) * per * len(policies),
            "keys": {
                "n_classes": _ms_sizes(config),
                "instance": list(range(per)),
                "policy": policies,
            },
            "unique": ["n_classes", "instance", "policy"],
            "no_nan": ["ratio", "ratio_ci95", "best"],
        }
    if name == "rows" and rule == "multiskill_fig9":
        from ..multiskill.experiments import table1_instances

        factors = list(sim["table1_load_factors"])
        kept = [factors[k] for k, _ in table1_instances(factors)[0]]
        return {
            "columns": ["load_factor", "policy", "ratio", "ratio_ci95", "best"],
            "rows": len(kept) * len(sim["policies"]),
            "keys": {"load_factor": kept, "policy": list(sim["policies"])} if kept else {},
            "unique": ["load_factor", "policy"],
            "no_nan": ["ratio", "ratio_ci95", "best"],
        }
    if name == "summary" and rule == "multiskill_fig_job_sizes":
        return multiskill_job_sizes_summary_checks(config)
    raise KeyError(f"no checks for input {name!r} of rule {rule!r}")


def multiskill_job_sizes_summary_checks(config: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`read_table` keywords of ``multiskill_job_sizes_table/summary.csv``: one row
    per (sample, law, policy other than ``bernoulli``)."""
    js = config["multiskill"]["job_sizes"]
    samples = ["table1"] + (["random"] if js["random_instances"] > 0 else [])
    policies = [p for p in js["policies"] if p != "bernoulli"]
    gains = ["gain", "gain_ci95", "gain_min", "gain_max"]
    return {
        "columns": ["sample", "job_sizes", "law", "scv", "policy", "instances", *gains],
        "rows": len(samples) * len(js["laws"]) * len(policies),
        "keys": {"sample": samples, "job_sizes": list(js["laws"]), "policy": policies},
        "unique": ["sample", "job_sizes", "policy"],
        "no_nan": ["scv", "instances", *gains],
    }


# -- Part C (serverpools): what the config determines of each intermediate table ------------
def _sp_labels(path: str | Path) -> tuple[str, list[str]]:
    """The producing rule of a Part C table (its directory under ``results/serverpools``) and
    the labels of the file's path below it (directories and stem)."""
    parts = Path(path).with_suffix("").parts
    for k in range(len(parts) - 1, -1, -1):
        if parts[k].startswith("serverpools_"):
            return parts[k], list(parts[k + 1 :])
    raise ValueError(f"path {path} is not under a serverpools_<rule> directory")


def _sp_classes(example: str) -> int:
    from ..serverpools.instances import example_system

    return len(example_system(example).arrival_rates)


def _sp_lap_triples(lap: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """The (example, policy, r) cells of the what-to-do-instead study (LQFS-LB and LAP at every
    r of ``lap["r"]``, static routing up to ``lap["static_r_max"]``)."""
    from ..serverpools.experiments import LAP_POLICIES

    return [
        (example, policy, int(r))
        for example, scales in lap["r"].items()
        for r in scales
        for policy in LAP_POLICIES
        if policy != "static" or int(r) <= lap["static_r_max"]
    ]


_SP_RUN = ["example", "r", "replication", "t_end", "warmup", "events", "mean_norm", "rms_norm"]
_SP_AVERAGE = ["example", "r", "replications", "t_end", "warmup", "mean_norm", "stationary"]


def serverpools_checks(config: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """:func:`read_table` keywords of the Part C table at ``path``, from the config
    (``config["serverpools"]``) and the path's own labels (example, r, policy, chunk, as the
    rules name them): the columns its consumers use, its rows (examples x scales x
    replications of the study), the key columns' values, the row key and the columns that may
    hold no NaN (a slope fitted from fewer than two scales is NaN by design, so not checked).

    >>> cfg = {"stochastic": {"examples": ["stable"], "r": [100, 1000], "replications": 4}}
    >>> path = "results/serverpools/serverpools_stochastic/stable_r1000/r2-3_summary.csv"
    >>> c = serverpools_checks({"serverpools": cfg}, path)
    >>> c["rows"], c["keys"]["r"], c["keys"]["replication"]
    (2, [1000], [2, 3])
    """
    from ..serverpools.instances import EXAMPLES
    from .chunks import parse_chunk

    sp = config["serverpools"]
    rule, labels = _sp_labels(path)
    name = labels[-1] if labels else ""
    if rule == "serverpools_examples":
        return {
            "columns": ["example", "quantity", "class", "pool", "value"],
            "keys": {"example": list(EXAMPLES)},
            "no_nan": ["example", "quantity"],
        }
    if rule == "serverpools_boundary" and name == "scan":
        return {
            "columns": ["theta", "mu_spread", "beta_spread", "max_real_underloaded"],
            "rows": int(sp["boundary"]["points"]),
            "unique": ["theta"],
            "no_nan": ["theta", "mu_spread", "beta_spread", "max_real_underloaded"],
        }
    if rule == "serverpools_boundary" and name == "crossings":
        return {
            "columns": ["matrix", "found", "theta_crossing", "direction"],
            "keys": {"matrix": ["A_u", "A_c"]},
            "no_nan": ["matrix", "found"],
        }
    if rule == "serverpools_fluid":
        columns = ["example", "time", "norm_fluid", "norm_linear"]
        return {
            "columns": columns,
            "rows": int(sp["fluid"][name]["points"]),
            "keys": {"example": [name]},
            "unique": ["time"],
            "no_nan": columns,
        }
    stochastic = sp["stochastic"]
    examples = list(stochastic["examples"])
    scales = [int(r) for r in stochastic["r"]]
    replications = list(range(int(stochastic["replications"])))
    if rule == "serverpools_stochastic":
        example, r = labels[0].rsplit("_r", 1)
        chunk, kind = name.rsplit("_", 1)
        reps = list(parse_chunk(chunk).replications)
        keys = {"example": [example], "r": [int(r)], "replication": reps}
        if kind == "trace":
            trace = ["example", "r", "replication", "time", "norm"]
            return {
                "columns": trace,
                "min_rows": len(reps),
                "keys": keys,
                "unique": ["replication", "time"],
                "no_nan": trace,
            }
        return {
            "columns": _SP_RUN,
            "rows": len(reps),
            "keys": keys,
            "unique": ["replication"],
            "no_nan": _SP_RUN,
        }
    grid = {"example": examples, "r": scales}
    if rule == "serverpools_stochastic_summary":
        if name == "traces":
            trace = ["example", "r", "replication", "time", "norm"]
            return {
                "columns": trace,
                "min_rows": len(examples) * len(scales) * len(replications),
                "keys": {**grid, "replication": replications},
                "unique": ["example", "r", "replication", "time"],
                "no_nan": trace,
            }
        if name == "runs":
            return {
                "columns": _SP_RUN,
                "rows": len(examples) * len(scales) * len(replications),
                "keys": {**grid, "replication": replications},
                "unique": ["example", "r", "replication"],
                "no_nan": _SP_RUN,
            }
        if name == "time_averages":
            return {
                "columns": [*_SP_AVERAGE, "mean_norm_ci"],
                "rows": len(examples) * len(scales),
                "keys": grid,
                "unique": ["example", "r"],
                "no_nan": _SP_AVERAGE,
            }
        if name == "verdicts":
            return {
                "columns": ["example", "slope", "slope_low", "slope_high", "verdict"],
                "rows": len(examples),
                "keys": {"example": examples},
                "unique": ["example"],
                "no_nan": ["example", "verdict"],
            }
    fluid_limit = sp["fluid_limit"]
    fl_scales = [int(r) for r in fluid_limit["r"]]
    fl_reps = list(range(int(fluid_limit["replications"])))
    fl_runs = ["example", "r", "replication", "t_end", "sup_distance", "scaled_distance"]
    if rule == "serverpools_fluid_limit":
        example, r = name.rsplit("_r", 1)
        return {
            "columns": fl_runs,
            "rows": len(fl_reps),
            "keys": {"example": [example], "r": [int(r)], "replication": fl_reps},
            "unique": ["replication"],
            "no_nan": fl_runs,
        }
    if rule == "serverpools_fluid_limit_summary":
        if name == "distances":
            columns = ["example", "r", "sup_distance", "sup_distance_ci", "scaled_distance"]
            return {
                "columns": columns,
                "rows": len(examples) * len(fl_scales),
                "keys": {"example": examples, "r": fl_scales},
                "unique": ["example", "r"],
                "no_nan": ["example", "r", "sup_distance", "scaled_distance"],
            }
        if name == "slopes":
            return {
                "columns": ["example", "slope", "slope_low", "slope_high"],
                "rows": len(examples),
                "keys": {"example": examples},
                "unique": ["example"],
                "no_nan": ["example"],
            }
    if rule == "serverpools_covariance":
        reps = list(parse_chunk(name).replications)
        n = _sp_classes("stable")
        columns = ["example", "r", "replication", "class_i", "class_k", "covariance"]
        classes = list(range(1, n + 1))
        return {
            "columns": columns,
            "rows": len(reps) * n * n,
            "keys": {
                "example": ["stable"],
                "r": [sp["covariance"]["r"]],
                "replication": reps,
                "class_i": classes,
                "class_k": classes,
            },
            "unique": ["replication", "class_i", "class_k"],
            "no_nan": columns,
        }
    lap = sp["lap"]
    triples = _sp_lap_triples(lap)
    lap_keys = {
        "example": list(dict.fromkeys(e for e, _, _ in triples)),
        "policy": list(dict.fromkeys(p for _, p, _ in triples)),
        "r": list(dict.fromkeys(r for _, _, r in triples)),
    }
    if rule == "serverpools_lap":
        example = max((e for e in EXAMPLES if name.startswith(f"{e}_")), key=len)
        policy, r = name[len(example) + 1 :].rsplit("_r", 1)
        columns = ["example", "policy", *_SP_RUN[1:], "customers"]
        return {
            "columns": columns,
            "rows": int(lap["replications"]),
            "keys": {
                "example": [example],
                "policy": [policy],
                "r": [int(r)],
                "replication": list(range(int(lap["replications"]))),
            },
            "unique": ["replication"],
            "no_nan": columns,
        }
    if rule == "serverpools_lap_summary":
        if name == "time_averages":
            return {
                "columns": ["policy", *_SP_AVERAGE, "mean_norm_ci"],
                "rows": len(triples),
                "keys": lap_keys,
                "unique": ["example", "policy", "r"],
                "no_nan": ["policy", *_SP_AVERAGE],
            }
        if name == "verdicts":
            pairs = list(dict.fromkeys((e, p) for e, p, _ in triples))
            return {
                "columns": ["example", "policy", "slope", "slope_low", "slope_high", "verdict"],
                "rows": len(pairs),
                "keys": {k: lap_keys[k] for k in ("example", "policy")},
                "unique": ["example", "policy"],
                "no_nan": ["example", "policy", "verdict"],
            }
        if name == "ou":
            cells = [(e, r) for e, p, r in triples if p == "lap"]
            # per cell: E|Y|, sqrt(E|Y|^2) and the covariances of the upper triangle
            rows = sum(2 + _sp_classes(e) * (_sp_classes(e) + 1) // 2 for e, _ in cells)
            columns = ["example", "r", "quantity", "simulated", "ci", "predicted"]
            return {
                "columns": columns,
                "rows": rows,
                "keys": {"example": lap_keys["example"], "r": lap_keys["r"]},
                "unique": ["example", "r", "quantity"],
                "no_nan": ["example", "r", "quantity", "simulated", "predicted"],
            }
        if name == "price":
            # per example, every discipline at the largest r all of them were run at
            rows = 0
            for example in lap_keys["example"]:
                by_policy: dict[str, set[int]] = {}
                for e, p, r in triples:
                    if e == example:
                        by_policy.setdefault(p, set()).add(r)
                common = max(set.intersection(*by_policy.values()))
                rows += sum(common in scales for scales in by_policy.values())
            columns = ["example", "policy", "r", "customers", "customers_ci", "sojourn_time"]
            return {
                "columns": columns,
                "rows": rows,
                "keys": {k: lap_keys[k] for k in ("example", "policy")},
                "unique": ["example", "policy"],
                "no_nan": ["example", "policy", "r", "customers", "sojourn_time"],
            }
    raise ValueError(f"no checks known for the Part C table {path}")


def read_serverpools_table(config: Mapping[str, Any], path: str | Path) -> pd.DataFrame:
    """The Part C table at ``path``, read by :func:`read_table` with
    :func:`serverpools_checks` (what the config determines of it)."""
    return read_table(path, **serverpools_checks(config, path))


def read_serverpools_tables(config: Mapping[str, Any], paths: Iterable[str | Path]) -> pd.DataFrame:
    """The Part C tables at ``paths``, each read by :func:`read_serverpools_table`, in order,
    concatenated (index reset)."""
    return pd.concat([read_serverpools_table(config, p) for p in paths], ignore_index=True)


def read_serverpools_example(path: str | Path) -> Any:
    """The example instance ``.../serverpools_examples/{example}.json``, checked by
    :func:`read_checked_json` and against the instance the code defines under that name
    (:data:`~queue_routing.serverpools.instances.EXAMPLES`): the same classes, pools and
    activities with the same rates (the figure draws what the study simulated)."""
    from ..serverpools.instances import EXAMPLES

    data = read_checked_json(path)
    name = Path(path).stem
    if name not in EXAMPLES:
        raise _fail(path, f"names the example {name}, not one of {_show(EXAMPLES)}")
    want = json.loads(json.dumps(EXAMPLES[name]))
    if data != want:
        keys = sorted(set(want) | set(data if isinstance(data, dict) else {}))
        differ = [k for k in keys if not isinstance(data, dict) or data.get(k) != want.get(k)]
        raise _fail(path, f"differs from the {name} example in {', '.join(differ)}")
    return data


def read_serverpools_search_chunk(config: Mapping[str, Any], path: str | Path) -> Any:
    """One chunk ``.../serverpools_search/i{a}-{b}_r{c}-{d}.json`` of the instability search,
    checked by :func:`read_checked_json` and against the config and the chunk's label: one
    summary per size ``a..b`` of :func:`~queue_routing.serverpools.experiments.search_sizes`
    (``serverpools.search.max_classes`` x ``max_pools``), in order, each of the ``d - c + 1``
    samples starting at ``c``."""
    from ..serverpools.experiments import search_sizes
    from .chunks import parse_chunk

    data = read_checked_json(path)
    search = config["serverpools"]["search"]
    sizes = search_sizes(int(search["max_classes"]), int(search["max_pools"]))
    chunk = parse_chunk(Path(path).stem)
    items = chunk.items if chunk.items is not None else range(len(sizes))
    if items.stop > len(sizes):
        raise _fail(path, f"its label names size {items.stop - 1}, the config has {len(sizes)}")
    want = [sizes[k] for k in items]
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise _fail(path, "is not a list of size summaries")
    if len(data) != len(want):
        raise _fail(path, f"has {len(data)} sizes, the config determines {len(want)}")
    for k, (d, size) in enumerate(zip(data, want, strict=True)):
        found = (d.get("n_classes"), d.get("n_pools"))
        if found != size:
            raise _fail(path, f"entry {k + 1} is size {found}, the config determines {size}")
        if d.get("samples") != len(chunk.replications):
            raise _fail(
                path,
                f"entry {k + 1} has {d.get('samples')} samples, its label determines "
                f"{len(chunk.replications)}",
            )
        if d.get("first_sample") != chunk.replications.start:
            raise _fail(
                path,
                f"entry {k + 1} starts at sample {d.get('first_sample')}, its label determines "
                f"{chunk.replications.start}",
            )
    return data
