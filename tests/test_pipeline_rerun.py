"""Rules rerun only what changed: one more value in a sweep schedules only its new jobs.

On the finished smoke run, a dry run with one value added to a sweep must schedule the new
jobs of the rule that the sweep expands, none of that rule's existing jobs, and otherwise only
rules downstream of it in the rule graph (the aggregations and figures that read its outputs)
plus the rules that run on every invocation. Each job receives only the config values it uses,
so Snakemake's params trigger sees no change in the others.
"""

import re

import pytest
import yaml

from _workflow import SMOKE, run_snakemake

#: Rules that run whatever changed (the run's provenance record) and the target rule.
ALWAYS = {"all", "provenance"}


def _smoke_with(tmp_path, section: tuple[str, ...], value):
    """The smoke config with ``value`` appended to the list at ``section`` (merged over the
    default config as Snakemake merges config files)."""
    default = yaml.safe_load((SMOKE.parent / "default.yaml").read_text())
    smoke = yaml.safe_load(SMOKE.read_text())
    node_default, node_smoke = default, smoke
    for key in section[:-1]:
        node_default = node_default[key]
        node_smoke = node_smoke.setdefault(key, {})
    current = node_smoke.get(section[-1], node_default[section[-1]])
    node_smoke[section[-1]] = [*current, value]
    path = tmp_path / "bigger.yaml"
    path.write_text(yaml.safe_dump(smoke, sort_keys=False))  # key order is part of the params
    return path


def _scheduled(workdir, *args) -> dict[str, int]:
    """Rule -> number of jobs of a dry run (Snakemake's "Job stats" table)."""
    proc = run_snakemake(workdir, "-n", *args)
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1]
    counts = {}
    for line in table.splitlines()[3:]:
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if not match:
            break
        counts[match[1]] = int(match[2])
    counts.pop("total", None)
    return counts


def _downstream(workdir, rule: str) -> set[str]:
    """Every rule that (transitively) reads an output of ``rule``, from ``--rulegraph``."""
    proc = run_snakemake(workdir, "--rulegraph", "--configfile", str(SMOKE), cores=None)
    labels = dict(re.findall(r'(\d+)\[label = "(\w+)"', proc.stdout))
    edges = [(labels[a], labels[b]) for a, b in re.findall(r"(\d+) -> (\d+)", proc.stdout)]
    found, frontier = set(), {rule}
    while frontier:
        nxt = {b for a, b in edges if a in frontier} - found
        found |= nxt
        frontier = nxt
    return found


#: The default run checks one sweep (the cheapest, 30 s); the other three are the same check on
#: other rules, 30-60 s each on the smoke group's worker (the suite's critical path): slow.
CASES = [
    # (sweep, value added, rule that the sweep expands, new jobs of that rule)
    pytest.param(
        ("serverpools", "stochastic", "r"), 3000, "serverpools_stochastic", 2,  # two examples
        marks=pytest.mark.slow,
    ),
    (("deadlines", "large", "clusters"), 6, "deadlines_large", 1),
    pytest.param(
        ("deadlines", "sweeps", "mean_deadline"), 3.0, "deadlines_two_cluster", 1,
        marks=pytest.mark.slow,
    ),
    pytest.param(
        ("multiskill", "sizes"), None, "multiskill_simulate", 1,  # see below: one more C
        marks=pytest.mark.slow,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("section", "value", "rule", "new_jobs"), CASES)
def test_one_more_sweep_value_reruns_only_its_jobs(
    smoke_run, tmp_path, section, value, rule, new_jobs
):
    if section == ("multiskill", "sizes"):  # a range, not a list: extend it by one step
        smoke = yaml.safe_load(SMOKE.read_text())
        sizes = smoke["multiskill"]["sizes"]
        smoke["multiskill"]["sizes"] = {**sizes, "last": sizes["last"] + sizes["step"]}
        config = tmp_path / "bigger.yaml"
        config.write_text(yaml.safe_dump(smoke, sort_keys=False))
    else:
        config = _smoke_with(tmp_path, section, value)
    assert _scheduled(smoke_run, "--configfile", str(SMOKE)).keys() <= ALWAYS  # up to date
    counts = _scheduled(smoke_run, "--configfile", str(config))
    assert counts.get(rule) == new_jobs, counts
    allowed = ALWAYS | {rule} | _downstream(smoke_run, rule)
    if rule == "multiskill_simulate":  # a new C also draws, solves and compares its instances
        allowed |= {"multiskill_instances", "multiskill_solve", "multiskill_compare"}
        allowed |= set().union(
            *(_downstream(smoke_run, r) for r in ("multiskill_solve", "multiskill_compare"))
        )
    if rule == "deadlines_large":  # a new n also draws its instance, once
        assert counts.get("deadlines_large_instances") == 1, counts
        allowed |= {"deadlines_large_instances"}
    assert set(counts) <= allowed, set(counts) - allowed


def test_one_more_table1_load_factor_leaves_the_random_instances_alone(smoke_run, tmp_path):
    config = _smoke_with(tmp_path, ("multiskill", "simulation", "table1_load_factors"), 0.9)
    counts = _scheduled(smoke_run, "--configfile", str(config))
    assert counts.get("multiskill_simulate_table1") == 1, counts
    assert "multiskill_simulate" not in counts, counts
    allowed = ALWAYS | {"multiskill_simulate_table1"}
    allowed |= _downstream(smoke_run, "multiskill_simulate_table1")
    assert set(counts) <= allowed, set(counts) - allowed
