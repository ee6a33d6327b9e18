"""Draw the random stable instances of one size C (thin adapter; see the library)."""

from queue_routing.io import write_json
from queue_routing.multiskill.instances import random_instance
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    n = int(snakemake.wildcards.n_classes)
    instances = [
        random_instance(n, snakemake.params.seed, k).to_dict()
        for k in range(snakemake.params.n_instances)
    ]
    write_json(
        {"n_classes": n, "seed": snakemake.params.seed, "instances": instances},
        snakemake.output.instances,
    )


run_script(snakemake, main)  # noqa: F821
