"""Exact solver and Algorithm 1 on the instances of one size C (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import sweep_runs
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_multiskill_instances


def main(snakemake):
    data = read_multiskill_instances(snakemake.config, snakemake.input.instances)
    p = snakemake.params
    instances = [(k, Instance.from_dict(d)) for k, d in enumerate(data["instances"])]
    runs = sweep_runs(
        instances,
        seed=p.seed,
        updates=p.update_rules,
        inits=p.initial_partitions,
        random_inits=p.random_initial_partitions,
        p_shared=p.p_shared,
        p_both=p.p_both,
        paper_rounding=p.paper_rounding,
        max_iterations=p.max_iterations,
    )
    write_table(runs, snakemake.output.runs)


run_script(snakemake, main)  # noqa: F821
