"""Aggregate the paired policy comparisons into per-C and Table 1 tables (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill.experiments import simulation_summary, verdict_summary
from queue_routing.pipeline import run_script


def _concat(paths):
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def main(snakemake):
    rows = _concat(snakemake.input.rows)
    write_table(rows, snakemake.output.rows)
    write_table(_concat(snakemake.input.differences), snakemake.output.differences)
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
    table1 = pd.read_csv(snakemake.input.table1)
    cols = ["load_factor", "policy", "ratio", "ratio_ci95", "rank", "best", "cost", "ci95"]
    differences = pd.read_csv(snakemake.input.table1_differences)
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
