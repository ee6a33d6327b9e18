"""The optimal-routing study for one number of classes: the optimum and every policy's exact
cost and gap on each instance of the family (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.optimal_study import optimal_gap_rows, optimal_instances
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    cases = optimal_instances(p.kinds, p.loads)
    write_table(optimal_gap_rows(cases, p.policies, rtol=p.rtol), snakemake.output.rows)


run_script(snakemake, main)  # noqa: F821
