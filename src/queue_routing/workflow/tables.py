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
    "producer_problem",
    "read_checked_json",
    "read_table",
    "read_tables",
    "rebuild_command",
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
