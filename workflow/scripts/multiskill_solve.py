"""Exact solver and Algorithm 1 on the instances of one size C (thin adapter)."""

from queue_routing.io import read_json, write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import sweep_runs
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    data = read_json(snakemake.input.instances)
    fp = snakemake.params.fixed_point
    instances = [(k, Instance.from_dict(d)) for k, d in enumerate(data["instances"])]
    runs = sweep_runs(
        instances,
        seed=snakemake.params.seed,
        updates=fp["update_rules"],
        inits=fp["initial_partitions"],
        random_inits=fp["random_initial_partitions"],
        p_shared=fp["random_partition"]["p_shared"],
        p_both=fp["random_partition"]["p_both"],
        paper_rounding=fp["paper_rounding"],
        max_iterations=fp["max_iterations"],
    )
    write_table(runs, snakemake.output.runs)


run_script(snakemake, main)  # noqa: F821
