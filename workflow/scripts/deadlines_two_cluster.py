"""Exact costs of BS, IO, PI, RB and the optimal cost along one two-cluster sweep."""

from queue_routing.deadlines.experiments import cluster_sweep
from queue_routing.deadlines.instances import BASE_KEYS
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    base = {key: getattr(p, key) for key in BASE_KEYS}  # the rule's lookups of deadlines.base
    table = cluster_sweep(
        base, p.sweeps, snakemake.wildcards.sweep, truncation=p.truncation, tol=p.tol
    )
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
