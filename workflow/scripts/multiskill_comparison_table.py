"""Comparison costs over all random instances, with a per-C summary (thin adapter)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.multiskill.experiments import comparison_summary
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import multiskill_compare_checks, read_table


def main(snakemake):
    table = pd.concat(
        [
            read_table(p, **multiskill_compare_checks(snakemake.config, p))
            for p in snakemake.input.costs
        ],
        ignore_index=True,
    )
    write_table(table, snakemake.output.table)
    write_table(
        comparison_summary(table),
        snakemake.output.summary,
        snakemake.output.markdown,
        title="Multi-skilled vs no sharing vs all sharing (random instances)",
    )


run_script(snakemake, main)  # noqa: F821
