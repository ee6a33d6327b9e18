"""SPP solution, duals and spectra of the example instances, and their JSON (thin adapter)."""

from queue_routing.io import write_json, write_table
from queue_routing.serverpools.experiments import summarise_examples
from queue_routing.serverpools.instances import EXAMPLES, example_system
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    rows = summarise_examples({name: example_system(name) for name in EXAMPLES})
    write_table(rows, snakemake.output.rows)
    for name, instance in EXAMPLES.items():
        write_json(instance, getattr(snakemake.output, name))


run_script(snakemake, main)  # noqa: F821
