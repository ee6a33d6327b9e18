"""Simulate one example at one scale r, one block of replications (thin adapter)."""

from queue_routing.chunks import parse_chunk
from queue_routing.io import write_table
from queue_routing.pipeline import run_script
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import stochastic_runs
from queue_routing.serverpools.instances import example_system


def main(snakemake):
    example = snakemake.wildcards.example
    p = snakemake.params
    trace, summary = stochastic_runs(
        example,
        solve_spp(example_system(example)),
        int(snakemake.wildcards.r),
        t_end=p.t_end,
        warmup=p.warmup,
        record_every=p.record_every,
        replications=parse_chunk(snakemake.wildcards.chunk).replications,
        seed=p.seed,
    )
    write_table(trace, snakemake.output.trace)
    write_table(summary, snakemake.output.summary)


run_script(snakemake, main)  # noqa: F821
