"""Simulate one example at one scale r past its derived warm-up, one block of replications."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import stochastic_runs, stochastic_warmup
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    example = snakemake.wildcards.example
    r = int(snakemake.wildcards.r)
    p = snakemake.params
    solution = solve_spp(example_system(example))
    warmup = stochastic_warmup(solution, r, margin=p.warmup_margin)
    print(f"{example} r={r}: derived warm-up {warmup:.4g}, horizon {p.horizon:g}")
    trace, summary = stochastic_runs(
        example,
        solution,
        r,
        horizon=p.horizon,
        warmup=warmup,
        record_every=p.record_every,
        replications=parse_chunk(snakemake.wildcards.chunk).replications,
        seed=p.seed,
        batches=p.batches,
    )
    write_table(trace, snakemake.output.trace)
    write_table(summary, snakemake.output.summary)


run_script(snakemake, main)  # noqa: F821
