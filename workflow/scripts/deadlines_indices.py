"""The index functions nu^IO, nu^PI, nu^RB vs x on the base two-cluster instance."""

from queue_routing.deadlines.experiments import index_functions
from queue_routing.deadlines.instances import BASE_KEYS
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    base = {key: getattr(p, key) for key in BASE_KEYS}  # the rule's lookups of deadlines.base
    write_table(index_functions(base, p.upto), snakemake.output.table)


run_script(snakemake, main)  # noqa: F821
