"""Simulated costs of BS, IO, PI, RB on n random clusters, relative to PI."""

from queue_routing.deadlines.experiments import deadline_dict, large_instance, large_system
from queue_routing.io import write_table
from queue_routing.pipeline import run_script


def main(snakemake):
    p, n = snakemake.params, int(snakemake.wildcards.n)
    large = p.large
    instance = large_instance(
        p.seed,
        n,
        servers_range=large["servers_range"],
        rate_range=large["rate_range"],
        load=large["load"],
        rejection_cost=p.rejection_cost,
        deadline=deadline_dict(p.deadline, p.mean_deadline, p.uniform_spread),
    )
    table = large_system(
        instance,
        table_size=large["table_size"],
        horizon=large["horizon"],
        warmup=large["warmup"],
        replications=large["replications"],
        seed=p.seed,
        keys=("deadlines-large", n),
    )
    write_table(table, snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
