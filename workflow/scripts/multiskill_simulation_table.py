"""Paired comparisons of the policies from the chunks' replication costs: the per-C tables of
the random instances and Table 1's load sweep (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import (
    load_sweep_markdown,
    policy_comparison_from_costs,
    simulation_markdown,
    simulation_summary,
    table1_load_sweep_from_costs,
    verdict_summary,
)
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import (
    multiskill_simulate_checks,
    multiskill_simulate_table1_checks,
    read_multiskill_instances,
    read_table,
)


def _concat(paths, checks, config):
    frames = [read_table(p, **checks(config, p)) for p in paths]
    return pd.concat([f for f in frames if len(f)], ignore_index=True)


def _write_markdown(text, path):
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def random_instances(snakemake, common):
    """policies.csv, differences.csv, summary.csv and summary.md of the random instances."""
    costs = _concat(snakemake.input.costs, multiskill_simulate_checks, snakemake.config)
    frames, diff_frames = [], []
    for path in snakemake.input.instances:
        data = read_multiskill_instances(snakemake.config, path)
        instances = [(k, Instance.from_dict(d)) for k, d in enumerate(data["instances"])]
        rows, diffs = policy_comparison_from_costs(
            instances,
            costs[costs["n_classes"] == data["n_classes"]],
            horizon=snakemake.params.horizon,
            tag="random",
            **common,
        )
        frames.append(rows)
        diff_frames.append(diffs)
    rows = pd.concat(frames, ignore_index=True)
    write_table(rows, snakemake.output.rows)
    write_table(pd.concat(diff_frames, ignore_index=True), snakemake.output.differences)
    summary = simulation_summary(rows)
    write_table(summary, snakemake.output.summary)
    _write_markdown(simulation_markdown(summary, verdict_summary(rows)), snakemake.output.markdown)


def load_sweep(snakemake, common):
    """load_sweep.csv, load_sweep_differences.csv and table1.md of Table 1's load sweep."""
    rows, differences = table1_load_sweep_from_costs(
        snakemake.params.load_factors,
        _concat(snakemake.input.table1, multiskill_simulate_table1_checks, snakemake.config),
        horizon=snakemake.params.table1_horizon,
        **common,
    )
    for f in rows.attrs.get("skipped", []):
        print(f"load factor {f}: unstable, skipped")
    write_table(rows, snakemake.output.load_sweep)
    write_table(differences, snakemake.output.load_sweep_differences)
    _write_markdown(load_sweep_markdown(rows, differences), snakemake.output.table1)


def main(snakemake):
    p = snakemake.params
    common = {"policies": p.policies, "warmup": p.warmup, "seed": p.seed}
    random_instances(snakemake, common)
    load_sweep(snakemake, common)


run_script(snakemake, main)  # noqa: F821
