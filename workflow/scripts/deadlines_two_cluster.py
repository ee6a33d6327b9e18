"""Exact costs of BS, IO, PI, RB and the optimal cost along one two-cluster sweep."""

from queue_routing.deadlines.experiments import two_cluster_sweep
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    table = two_cluster_sweep(
        p.base, p.sweeps, snakemake.wildcards.sweep, truncation=p.truncation, tol=p.tol
    )
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
