"""The optimal switching curve of one C = 2 instance beside PI's line (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.optimal_study import switching_rows
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    rows = switching_rows(p.kind, p.load, others=p.others, rtol=p.rtol)
    write_table(rows, snakemake.output.rows)


run_script(snakemake, main)  # noqa: F821
