"""One chunk of Part B's large systems: every replication of its block under PI and the
configured policies (BS, IO, PI, RB by default) on n random clusters (thin adapter; the
paired statistics are made by deadlines_large_table)."""

from queue_routing.deadlines.experiments import (
    configured_large_instance,
    large_system_replications,
)
from queue_routing.io import write_table
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p, n = snakemake.params, int(snakemake.wildcards.n)
    large = p.large
    instance = configured_large_instance(
        p.seed,
        n,
        large,
        rejection_cost=p.rejection_cost,
        deadline=p.deadline,
        mean_deadline=p.mean_deadline,
        uniform_spread=p.uniform_spread,
    )
    table = large_system_replications(
        instance,
        table_size=large["table_size"],
        horizon=large["horizon"],
        warmup=large["warmup"],
        replications=parse_chunk(snakemake.wildcards.chunk).replications,
        seed=p.seed,
        keys=("deadlines-large", n),
        policies=large["policies"],
    )
    write_table(table, snakemake.output.replications)


run_script(snakemake, main)  # noqa: F821
