"""Fluid trajectory of one example from a perturbed equilibrium (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import fluid_rows
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    example = snakemake.wildcards.example
    p = snakemake.params
    rows = fluid_rows(
        example,
        solve_spp(example_system(example)),
        perturbation=p.perturbation,
        t_end=p.t_end,
        points=p.points,
        seed=p.seed,
    )
    write_table(rows, snakemake.output.trajectory)


run_script(snakemake, main)  # noqa: F821
