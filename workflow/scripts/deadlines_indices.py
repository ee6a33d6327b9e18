"""The index functions nu^IO, nu^PI, nu^RB vs x on the base two-cluster instance."""

from queue_routing.deadlines.experiments import index_functions
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
    write_table(index_functions(base, p.upto), snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
