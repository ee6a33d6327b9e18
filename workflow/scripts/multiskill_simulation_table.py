"""Aggregate the policy simulations into per-C and Table 1 tables (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill.experiments import simulation_summary
from queue_routing.pipeline import run_script


def main(snakemake):
    rows = pd.concat([pd.read_csv(p) for p in snakemake.input.rows], ignore_index=True)
    write_table(rows, snakemake.output.rows)
    write_table(
        simulation_summary(rows),
        snakemake.output.summary,
        snakemake.output.markdown,
        title="Routing policies relative to optimal Bernoulli routing (random instances)",
    )
    table1 = pd.read_csv(snakemake.input.table1)
    cols = ["load_factor", "policy", "relative", "relative_ci95", "cost", "ci95", "bernoulli_exact"]
    with atomic_path(snakemake.output.table1) as tmp:
        tmp.write_text(
            "# Routing policies on Table 1 with intensities scaled by s\n\n"
            + table1[cols].to_markdown(index=False, floatfmt=".4g")
            + "\n"
        )


run_script(snakemake, main)  # noqa: F821
