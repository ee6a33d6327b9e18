"""Sup-distance of X^r/r from the fluid solution for one example at one r (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import fluid_limit_runs, fluid_limit_start
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    example = snakemake.wildcards.example
    p = snakemake.params
    solution = solve_spp(example_system(example))
    psi0, queues0 = fluid_limit_start(
        example, solution, perturbation=p.perturbation, settle=p.settle, seed=p.seed
    )
    rows = fluid_limit_runs(
        example,
        solution,
        int(snakemake.wildcards.r),
        psi0=psi0,
        queues0=queues0,
        t_end=p.t_end,
        record_every=p.record_every,
        replications=p.replications,
        seed=p.seed,
        max_step=p.max_step,
    )
    print(rows.to_string())
    write_table(rows, snakemake.output.rows)


run_script(snakemake, main)  # noqa: F821
