"""One chunk of Part B's large systems: every replication of its block under PI and the
configured policies (BS, IO, PI, RB by default) on the n random clusters of
deadlines_large_instances (thin adapter; the paired statistics are made by
deadlines_large_table)."""

from queue_routing.deadlines.experiments import large_system_replications
from queue_routing.deadlines.instances import LARGE_KEY
from queue_routing.deadlines.model import Instance
from queue_routing.io import write_table
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_checked_json


def main(snakemake):
    p = snakemake.params
    drawn = read_checked_json(snakemake.input.instance)
    table = large_system_replications(
        Instance.from_dict(drawn["instance"]),
        table_size=p.table_size,
        horizon=p.horizon,
        warmup=p.warmup,
        replications=parse_chunk(snakemake.wildcards.chunk).replications,
        seed=p.seed,
        keys=(LARGE_KEY, drawn["clusters"]),
        policies=p.policies,
    )
    write_table(table, snakemake.output.replications)


run_script(snakemake, main)  # noqa: F821
