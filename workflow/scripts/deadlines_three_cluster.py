"""Exact optimum of three clusters and of the matched two against BS, IO, PI, RB, one sweep."""

from queue_routing.deadlines.experiments import three_cluster_sweep
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    table = three_cluster_sweep(snakemake.params.block, snakemake.wildcards.tcsweep)
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
