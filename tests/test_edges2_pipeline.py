"""The pipeline never uses a damaged intermediate table, and refuses at validation what
could only fail when a job runs.

* :mod:`queue_routing.workflow.tables`: every consumer reads through ``read_table`` /
  ``read_checked_json``; a table cut short, a column dropped, a NaN, a file deleted or
  changed after its job wrote it stops the consumer with one line naming the file and the
  command that rebuilds it (``snakemake --cores all --forcerun FILE``), and that command
  restores every table of the run byte for byte;
* :func:`queue_routing.workflow.config.validate_config`: job-size laws, user policies (their
  file, function and part), nested ``--config`` values parsed as Snakemake hands them over.

The tests named ``test_smoke_run_*`` use the session's smoke run (tests/conftest.py) on a
copy; the sweep over the intermediate tables of every producing rule is ``slow``.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _workflow import ROOT, SMOKE, digests, merged_config, run_snakemake
from queue_routing.workflow import tables
from queue_routing.workflow.config import ConfigError, coerce_strings, load_schema, validate_config
from queue_routing.workflow.tables import TableError, read_table

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SCRIPTS = ROOT / "workflow" / "scripts"
DAMAGES = ("truncate", "drop_column", "nan", "delete")


# -- the reader ------------------------------------------------------------------------------
def _damage(path: Path, kind: str, column: str | None = None) -> None:
    """Damage the CSV table at ``path`` as a user, a crash or a full disk might."""
    if kind == "delete":
        path.unlink()
        return
    table = pd.read_csv(path)
    if kind == "truncate":
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[: max(1, min(5, len(lines) - 1))]))
    elif kind == "drop_column":
        table.drop(columns=[column or table.columns[-1]]).to_csv(path, index=False)
    elif kind == "nan":  # a value lost: a cell that holds one, from the last column back
        names = [column] if column else list(reversed(table.columns))
        name = next(c for c in names if table[c].notna().any())
        row = table.index[table[name].notna().to_numpy()][len(table) // 2 % table[name].count()]
        table[name] = table[name].astype(object)
        table.loc[row, name] = None
        table.to_csv(path, index=False)


def _assert_one_line_naming(exc: Exception, path: Path | str) -> None:
    msg = str(exc)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: ")
    assert f"--forcerun {path}" in msg


tables_strategy = st.integers(2, 30).flatmap(
    lambda n: st.fixed_dictionaries(
        {
            "key": st.just(list(range(n))),
            "label": st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n),
            "value": st.lists(
                st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
                min_size=n,
                max_size=n,
            ),
        }
    )
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables_strategy, kind=st.sampled_from(DAMAGES), column=st.sampled_from(["key", "value"])
)
def test_any_damage_is_one_line_naming_the_file(tmp_path_factory, data, kind, column):
    path = tmp_path_factory.mktemp("t") / "table.csv"
    pd.DataFrame(data).to_csv(path, index=False)
    n = len(data["key"])
    checks = {"columns": ["key", "label", "value"], "rows": n,
              "keys": {"key": list(range(n))}, "no_nan": True}  # fmt: skip
    # undamaged: exactly what pandas reads
    pd.testing.assert_frame_equal(read_table(path, **checks), pd.read_csv(path))
    _damage(path, kind, column)
    with pytest.raises(TableError) as e:
        read_table(path, **checks)
    _assert_one_line_naming(e.value, path)


def test_a_file_changed_after_its_job_is_refused_whatever_its_contents(tmp_path, monkeypatch):
    # Snakemake's record of the job (.snakemake/metadata): the output's time when it ended
    monkeypatch.chdir(tmp_path)
    path = Path("results") / "x.csv"
    path.parent.mkdir()
    path.write_text("a,b\n1,2\n")
    meta = Path(".snakemake") / "metadata"
    meta.mkdir(parents=True)
    key = base64.urlsafe_b64encode(str(path).encode()).decode()
    (meta / key).write_text(json.dumps({"rule": "r", "endtime": path.stat().st_mtime}))
    assert read_table(path, rows=1).shape == (1, 2)
    # the same bytes written again later: not the file the job wrote
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 10.0))
    with pytest.raises(TableError, match="changed after the job that wrote it") as e:
        read_table(path, rows=1)
    _assert_one_line_naming(e.value, path)
    with pytest.raises(TableError, match="changed after"):
        tables.read_checked_json(path)


#: Consumers added while the reader was written, not yet reading through it (their rules'
#: authors convert them: ``read_table(path, columns=..., rows=..., keys=..., no_nan=...)``).
PENDING: set[str] = set()


def test_no_script_reads_an_intermediate_but_through_the_reader():
    raw = re.compile(r"pd\.read_csv\(|\bread_json\(|json\.load\(|np\.load(txt)?\(")
    offenders = {
        p.name
        for p in sorted(SCRIPTS.glob("*.py"))
        for line in p.read_text().splitlines()
        if raw.search(line)
    }
    assert offenders <= PENDING, sorted(offenders - PENDING)


# -- the smoke run, damaged ---------------------------------------------------------------------
def _copy(smoke_run: Path, tmp_path: Path) -> Path:
    work = tmp_path / "run"
    shutil.copytree(smoke_run, work, symlinks=True)  # copy2: modification times kept
    return work


def _intermediates(work: Path) -> list[str]:
    """Every file under results/ that some job of the run read (Snakemake's records)."""
    used: set[str] = set()
    for record in (work / ".snakemake" / "metadata").iterdir():
        try:
            used.update(json.loads(record.read_text()).get("input", []))
        except (ValueError, OSError):
            continue
    return sorted(p for p in used if p.startswith("results/") and (work / p).is_file())


def _check_damage(work: Path, rel: str, kind: str, targets: tuple[str, ...] = ()) -> None:
    """Damage ``rel`` in the finished run ``work``: the rerun fails with the reader's line
    naming it, or runs nothing; no other table changes; the README's command rebuilds every
    table byte for byte."""
    reference = digests(work)
    path = work / rel
    if kind != "delete" and path.suffix != ".csv":
        kind = "truncate_text"
    if kind == "truncate_text":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    else:
        _damage(path, kind)
    proc = run_snakemake(work, *targets, "--configfile", str(SMOKE), check=False)
    after = digests(work)
    changed = [p for p, d in after.items() if p != rel and reference.get(p) != d]
    assert changed == [], f"{rel} ({kind}) silently changed {changed}"
    if proc.returncode != 0:
        logs = "\n".join(p.read_text() for p in (work / "logs").rglob("*.log"))
        lines = [ln for ln in logs.splitlines() if "TableError: " in ln and rel in ln]
        assert lines, f"{rel} ({kind}): the rerun failed otherwise:\n{proc.stderr[-3000:]}"
        assert all(f"--forcerun {rel}" in ln for ln in lines)
    else:
        assert kind == "delete", f"{rel} ({kind}): the rerun used the damaged table"
    run_snakemake(work, *targets, "--configfile", str(SMOKE), "--forcerun", rel)
    assert digests(work) == reference, f"{rel} ({kind}): not rebuilt byte for byte"


def test_smoke_run_damaged_distribution_table_is_refused_then_rebuilt(smoke_run, tmp_path):
    # the reproduction: the table cut to its first 5 lines, then deleted
    work = _copy(smoke_run, tmp_path)
    rel = "results/deadlines/deadlines_two_cluster/distribution.csv"
    _check_damage(work, rel, "truncate")
    _check_damage(work, rel, "delete")


def _one_per_rule(paths: list[str]) -> list[str]:
    """The first intermediate of each producing rule (``results/<part>/<rule>/...``): every
    consumer's reader and every kind of table, at a tenth of the full sweep's cost."""
    first: dict[str, str] = {}
    for rel in paths:
        first.setdefault("/".join(rel.split("/")[:3]), rel)
    return sorted(first.values())


@pytest.mark.slow
@pytest.mark.parametrize("kind", DAMAGES)
def test_smoke_run_every_rules_intermediate_damaged_in_turn(smoke_run, tmp_path, kind):
    work = _copy(smoke_run, tmp_path)
    selected = _one_per_rule(_intermediates(work))
    assert len(selected) >= 10, selected  # the smoke run has intermediates of every part
    for rel in selected:
        _check_damage(work, rel, kind)


# -- validation before any job runs ---------------------------------------------------------
def _config(**sections):
    config = merged_config(SMOKE)
    for dotted, value in sections.items():
        node = config
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return config


@pytest.mark.parametrize(
    "key,value,index",
    [
        ("multiskill.job_sizes.laws", ["exponential", "lognormal:0"], 1),
        ("multiskill.job_sizes.laws", ["erlang:3_0"], 0),
        ("deadlines.large.policies", ["bs", "docs/examples/my_policy.py:no_such"], 1),
        ("deadlines.large.policies", ["pi", "docs/examples/my_policy.py:pi_damped"], 1),
        ("multiskill.simulation.policies", ["jsq", "docs/examples/my_policy.py:miss_guess"], 1),
        ("deadlines.large.policies", ["pi", "docs/examples/missing.py:f"], 1),
    ],
)
def test_values_that_fail_only_at_run_time_are_refused_by_validation(
    key, value, index, monkeypatch
):
    monkeypatch.chdir(ROOT)  # user policy paths are relative to the working directory
    with pytest.raises(ConfigError) as e:
        validate_config(_config(**{key: value}), SCHEMA)
    msg = str(e.value)
    assert msg.startswith(f"{key}[{index}]: ") and "\n" not in msg


def test_the_worked_example_of_user_policies_validates(monkeypatch):
    monkeypatch.chdir(ROOT)
    example = yaml.safe_load((ROOT / "docs" / "examples" / "my_policies.yaml").read_text())
    validate_config(merged_config(SMOKE, example), SCHEMA)


def test_nested_config_lists_and_numbers_read_as_snakemake_hands_them_over():
    from snakemake.cli import parse_config  # Snakemake's own parser: an independent reference

    schema = load_schema(SCHEMA)
    given_ = parse_config(['deadlines={"sweeps": {"arrival_rate": [2.5, 4], "pure_routing": '
                           '["1:30"]}, "indices": {"upto": "12"}}'])  # fmt: skip
    sweeps = given_["deadlines"]["sweeps"]
    assert sweeps["arrival_rate"] == ["2.5", "4"]  # strings, as Snakemake hands them over
    config = merged_config(SMOKE, given_)
    coerce_strings(config, schema)
    assert config["deadlines"]["sweeps"]["arrival_rate"] == [2.5, 4]
    assert config["deadlines"]["indices"]["upto"] == 12
    # YAML 1.1 reads "1:30" as the sexagesimal 90; here it stays text, and is refused
    assert config["deadlines"]["sweeps"]["pure_routing"] == ["1:30"]
    with pytest.raises(ConfigError, match=r"^deadlines\.sweeps\.pure_routing"):
        validate_config(copy.deepcopy(config), schema)


@pytest.mark.parametrize("spec", ["a:b/p.py:f", "dir/p.py:f"])
def test_a_policy_path_is_accepted_alike_by_the_cli_and_the_schema(spec):
    from queue_routing.user_policy import is_spec

    schema = load_schema(SCHEMA)
    item = schema["properties"]["deadlines"]["properties"]["large"]["properties"]["policies"][
        "items"
    ]
    jsonschema.validate(spec, item)
    assert is_spec(spec)
