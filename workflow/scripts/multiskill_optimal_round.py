"""One round of a long case of the optimal-routing study: its searches and evaluations advanced
for a job's time from the last round's, and saved (thin adapter)."""

from queue_routing.multiskill.optimal_study import (
    load_case_round,
    optimal_case_round,
    save_case_round,
)
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    ((kind, load),) = p.cases
    progress = None
    if "search" in snakemake.input.keys():  # not the first round
        progress = load_case_round(kind, load, snakemake.input.search, snakemake.input.evaluations)
    progress = optimal_case_round(
        kind, load, p.policies, rtol=p.rtol, seconds=p.seconds, progress=progress
    )
    save_case_round(progress, p.policies, snakemake.output.search, snakemake.output.evaluations)


run_script(snakemake, main)  # noqa: F821
