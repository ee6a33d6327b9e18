"""The optimal-routing study's cases of one chunk: the optimum and every policy's exact cost
and gap on each (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.optimal_study import optimal_gap_rows, optimal_instances
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    cases = [case for kind, load in p.cases for case in optimal_instances([kind], [load])]
    write_table(optimal_gap_rows(cases, p.policies, rtol=p.rtol), snakemake.output.rows)


run_script(snakemake, main)  # noqa: F821
