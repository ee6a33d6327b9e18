"""One block of replications of the stable example's covariance simulation (thin adapter;
serverpools_covariance_table compares their mean with the Lyapunov solution)."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import covariance_replications
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    runs = covariance_replications(
        "stable",
        solve_spp(example_system("stable")),
        r=p.r,
        horizon=p.horizon,
        warmup=p.warmup,
        replications=parse_chunk(snakemake.wildcards.chunk).replications,
        seed=p.seed,
    )
    write_table(runs, snakemake.output.runs)


run_script(snakemake, main)  # noqa: F821
