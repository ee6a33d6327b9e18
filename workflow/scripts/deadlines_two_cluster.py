"""Exact costs of BS, IO, PI, RB and the optimal cost along one two-cluster sweep."""

from queue_routing.deadlines.experiments import cluster_sweep
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    base = {
        "servers": p.servers,
        "service_rates": p.service_rates,
        "arrival_rate": p.arrival_rate,
        "rejection_cost": p.rejection_cost,
        "deadline": p.deadline,
        "mean_deadline": p.mean_deadline,
        "uniform_spread": p.uniform_spread,
    }
    table = cluster_sweep(
        base, p.sweeps, snakemake.wildcards.sweep, truncation=p.truncation, tol=p.tol
    )
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
