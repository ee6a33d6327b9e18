"""The smoke run carries the numbers it carried before the code was reorganised.

``tests/data/smoke_reference.json`` was written from a smoke run of the code as it stood
before the library was reorganised into one frame for the three parts (the shared floor, the
``queue_routing.workflow`` subpackage, one n-cluster path for Part B, one window vocabulary
for Part C): for every aggregated table under ``results/`` (CSV), its columns, its number of
rows and the SHA-256 of each column's text as written; for every other table (Markdown,
JSON), its text; for every figure, the SHA-256 of its PNG. A reorganisation that changes no
result reproduces all of it: each CSV value by value (a column renamed on purpose is read
under its new name, :data:`RENAMED_COLUMNS`), each Markdown or JSON table to the byte (after
the same renames; a Markdown table of renamed columns cell by cell, its padding aside), each
PNG to the byte (a figure whose only change is a label is listed in
:data:`RELABELLED_FIGURES` with the reason).

This is the reference of a second implementation (the code before the change), not of the
code under test: regenerate it (``python tests/test_smoke_reference.py SMOKE_DIR``) only with
a change that is meant to move a result, and say which in the commit.
"""

import hashlib
import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from _workflow import CHUNK_FILE, NOT_RESULTS

REFERENCE = Path(__file__).with_name("data") / "smoke_reference.json"

#: Columns renamed on purpose (one vocabulary across the parts), by the table's directory
#: prefix: ``{prefix: {old name: new name}}``.
RENAMED_COLUMNS: dict[str, dict[str, str]] = {
    # Part B: a long-run cost per unit time is "cost" in every part (was "cost_rate").
    "results/deadlines/deadlines_large_table/large.csv": {"cost_rate": "cost"},
    # Part C's stationary runs: the run's end was "horizon", the warm-up "burn_in" and the
    # measured window "window"; a window is now a horizon after a warmup in every part.
    "results/serverpools/serverpools_stochastic_summary/runs.csv": {
        "horizon": "t_end",
        "burn_in": "warmup",
    },
    "results/serverpools/serverpools_stochastic_summary/time_averages.csv": {
        "horizon": "t_end",
        "burn_in": "warmup",
        "window": "horizon",
    },
}

#: Text renamed on purpose in the Markdown and JSON tables: ``{prefix: {old: new}}``.
RENAMED_TEXT: dict[str, dict[str, str]] = {}

#: Figures whose PNG changed only by a label: ``{file name: reason}``.
RELABELLED_FIGURES: dict[str, str] = {}


def _renames(table: dict[str, dict[str, str]], path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for prefix, renames in table.items():
        if path.startswith(prefix):
            out.update(renames)
    return out


def _column_digest(values: pd.Series) -> str:
    """SHA-256 of a column's text as written (one value per line): equal digests, equal
    values to the last digit written."""
    return hashlib.sha256("\n".join(values.tolist()).encode()).hexdigest()


def _tables(workdir: Path):
    """The aggregated tables under ``workdir/results`` (no per-chunk outputs, no provenance)."""
    for path in sorted((workdir / "results").rglob("*")):
        rel = path.relative_to(workdir).as_posix()
        if not path.is_file() or rel in NOT_RESULTS or CHUNK_FILE.fullmatch(path.name):
            continue
        if path.suffix in {".csv", ".md", ".json"}:
            yield rel, path


def snapshot(workdir: Path) -> dict:
    """The reference of the smoke run in ``workdir`` (see the module's docstring)."""
    tables, texts = {}, {}
    for rel, path in _tables(workdir):
        if path.suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            tables[rel] = {
                "rows": len(frame),
                "columns": [[c, _column_digest(frame[c])] for c in frame.columns],
            }
        else:
            texts[rel] = path.read_text()
    figures = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((workdir / "figures").glob("*.png"))
    }
    return {"tables": tables, "texts": texts, "figures": figures}


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


def test_smoke_run_tables_carry_the_reference_values(smoke_run, reference):
    problems = []
    for rel, expected in reference["tables"].items():
        path = smoke_run / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        renames = _renames(RENAMED_COLUMNS, rel)
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        if len(frame) != expected["rows"]:
            problems.append(f"{rel}: {len(frame)} rows, expected {expected['rows']}")
            continue
        columns = [renames.get(c, c) for c, _ in expected["columns"]]
        if list(frame.columns) != columns:
            problems.append(f"{rel}: columns {list(frame.columns)}, expected {columns}")
            continue
        for old, digest in expected["columns"]:
            if _column_digest(frame[renames.get(old, old)]) != digest:
                problems.append(f"{rel}: column {renames.get(old, old)} differs")
    assert not problems, "\n".join(problems)


def _markdown_cells(text: str, renames: dict[str, str]) -> list:
    """A Markdown table's lines as cells without padding (a renamed column changes the
    padding of its column, not its values), the header's cells renamed; other lines as they
    are."""
    out = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= set("-:") for c in cells):
                cells = ["---"] * len(cells)  # the alignment row: only its width changes
            out.append([renames.get(c, c) for c in cells])
        else:
            out.append(line)
    return out


def test_smoke_run_markdown_and_json_tables_are_the_reference(smoke_run, reference):
    problems = []
    for rel, text in reference["texts"].items():
        path = smoke_run / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        for old, new in _renames(RENAMED_TEXT, rel).items():
            text = text.replace(old, new)
        columns = _renames(RENAMED_COLUMNS, rel.removesuffix(".md") + ".csv")
        if columns and rel.endswith(".md"):
            same = _markdown_cells(path.read_text(), {}) == _markdown_cells(text, columns)
        else:
            same = path.read_text() == text
        if not same:
            problems.append(f"{rel}: differs")
    assert not problems, "\n".join(problems)


def test_smoke_run_figures_are_the_reference(smoke_run, reference):
    problems = []
    for name, digest in reference["figures"].items():
        path = smoke_run / "figures" / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif name not in RELABELLED_FIGURES:
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"{name}: differs")
    assert not problems, "\n".join(problems)


def test_renamed_columns_name_columns_of_the_reference(reference):
    """Every rename is of a column the reference has (a stale entry would hide nothing)."""
    for prefix, renames in RENAMED_COLUMNS.items():
        names = {
            c
            for rel, table in reference["tables"].items()
            if rel.startswith(prefix)
            for c, _ in table["columns"]
        }
        assert set(renames) <= names, (prefix, set(renames) - names)


if __name__ == "__main__":  # regenerate: python tests/test_smoke_reference.py SMOKE_DIR
    data = snapshot(Path(sys.argv[1]))
    buffer = io.StringIO()
    json.dump(data, buffer, indent=1, sort_keys=True)
    REFERENCE.parent.mkdir(exist_ok=True)
    REFERENCE.write_text(buffer.getvalue() + "\n")
    print(
        f"{REFERENCE}: {len(data['tables'])} tables, {len(data['texts'])} texts, "
        f"{len(data['figures'])} figures"
    )
