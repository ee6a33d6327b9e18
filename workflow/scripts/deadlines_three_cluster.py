"""Exact optimum of three clusters and of the matched two against BS, IO, PI, RB, one sweep."""

from queue_routing.deadlines.experiments import cluster_sweep
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    block = {
        "servers": p.servers,
        "service_rates": p.service_rates,
        "load": p.load,
        "rejection_cost": p.rejection_cost,
        "deadline": p.deadline,
        "mean_deadline": p.mean_deadline,
        "uniform_spread": p.uniform_spread,
    }
    table = cluster_sweep(
        block,
        p.sweeps,
        snakemake.wildcards.tcsweep,
        truncation=p.truncation,
        tol=p.tol,
        clusters=p.clusters,
    )
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
