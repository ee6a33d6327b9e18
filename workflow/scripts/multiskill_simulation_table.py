"""Paired comparisons of the policies from the chunks' replication costs: per-C and Table 1
tables (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, read_json, write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import (
    policy_comparison_from_costs,
    simulation_summary,
    table1_load_sweep_from_costs,
    verdict_summary,
)
from queue_routing.workflow.scripts import run_script


def _concat(paths):
    frames = [pd.read_csv(p) for p in paths]
    return pd.concat([f for f in frames if len(f)], ignore_index=True)


def main(snakemake):
    p = snakemake.params
    common = {"policies": p.policies, "warmup": p.warmup, "seed": p.seed}
    costs = _concat(snakemake.input.costs)
    frames, diff_frames = [], []
    for path in snakemake.input.instances:
        data = read_json(path)
        instances = [(k, Instance.from_dict(d)) for k, d in enumerate(data["instances"])]
        rows, diffs = policy_comparison_from_costs(
            instances,
            costs[costs["n_classes"] == data["n_classes"]],
            horizon=p.horizon,
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
    verdicts = verdict_summary(rows)
    with atomic_path(snakemake.output.markdown) as tmp:
        tmp.write_text(
            "# Routing policies relative to optimal Bernoulli routing (random instances)\n\n"
            "Paired ratio to the exact optimal Bernoulli cost (common random numbers, the "
            "simulated Bernoulli cost as control variate), per C over the instances.\n\n"
            + summary.to_markdown(index=False, floatfmt=".4g")
            + "\n\n## Best policy per instance (Holm-separated at family-wise level 0.05)\n\n"
            + verdicts.to_markdown(index=False)
            + "\n"
        )
    table1, differences = table1_load_sweep_from_costs(
        p.load_factors, _concat(snakemake.input.table1), horizon=p.table1_horizon, **common
    )
    for f in table1.attrs.get("skipped", []):
        print(f"load factor {f}: unstable, skipped")
    write_table(table1, snakemake.output.load_sweep)
    write_table(differences, snakemake.output.load_sweep_differences)
    cols = ["load_factor", "policy", "ratio", "ratio_ci95", "rank", "best", "cost", "ci95"]
    dcols = ["load_factor", "policy_a", "policy_b", "relative_difference", "relative_ci95"]
    with atomic_path(snakemake.output.table1) as tmp:
        tmp.write_text(
            "# Routing policies on Table 1 with intensities scaled by s\n\n"
            "Paired ratio to the exact optimal Bernoulli cost at the same s; `best` is the "
            "policy separated from every other (Holm, family-wise level 0.05), else "
            "'not separated'.\n\n"
            + table1[cols].to_markdown(index=False, floatfmt=".4g")
            + "\n\n## Paired differences (cost_a - cost_b) / Bernoulli cost\n\n"
            + differences[[*dcols, "verdict"]].to_markdown(index=False, floatfmt=".4g")
            + "\n"
        )


run_script(snakemake, main)  # noqa: F821
