"""One round of a long case of the optimal-routing study: its search and evaluations advanced
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
    search, evaluations = None, None
    if "search" in snakemake.input.keys():  # not the first round
        search, evaluations = load_case_round(
            kind, load, snakemake.input.search, snakemake.input.evaluations
        )
    search, evaluations = optimal_case_round(
        kind, load, p.policies, rtol=p.rtol, seconds=p.seconds, search=search,
        evaluations=evaluations,
    )  # fmt: skip
    out = snakemake.output
    save_case_round(search, evaluations, p.policies, out.search, out.evaluations)


run_script(snakemake, main)  # noqa: F821
