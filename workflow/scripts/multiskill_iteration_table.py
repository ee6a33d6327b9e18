"""Iteration statistics of Algorithm 1 per C and update rule (thin adapter)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.multiskill.experiments import iteration_statistics
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import multiskill_solve_checks, read_table


def main(snakemake):
    runs = pd.concat(
        [
            read_table(p, **multiskill_solve_checks(snakemake.config, p))
            for p in snakemake.input.runs
        ],
        ignore_index=True,
    )
    stats = iteration_statistics(runs, by=("n_classes", "update"))
    write_table(
        stats,
        snakemake.output.stats,
        snakemake.output.markdown,
        title="Algorithm 1: partition changes until convergence (Fig. 7)",
    )
    runs["init_kind"] = runs["init"].str.split("-").str[0]
    by_init = iteration_statistics(runs, by=("n_classes", "update", "init_kind"))
    write_table(by_init, snakemake.output.by_init)


run_script(snakemake, main)  # noqa: F821
