"""The optimal-routing study's cases of one chunk: the optimum and every policy's exact cost
and gap on each; a long case's chunk finishes it from its last round (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.optimal_study import (
    finish_case_rows,
    load_case_round,
    optimal_gap_rows,
    optimal_instances,
)
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    if "search" in snakemake.input.keys():  # a long case, after its rounds
        ((kind, load),) = p.cases
        progress = load_case_round(kind, load, snakemake.input.search, snakemake.input.evaluations)
        rows = finish_case_rows(kind, load, p.policies, rtol=p.rtol, progress=progress)
    else:
        cases = [case for kind, load in p.cases for case in optimal_instances([kind], [load])]
        rows = optimal_gap_rows(cases, p.policies, rtol=p.rtol)
    write_table(rows, snakemake.output.rows)


run_script(snakemake, main)  # noqa: F821
