"""The job-size study's tables: every sample's rows and differences, and the gains summary
as CSV and Markdown (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill.experiments import job_sizes_markdown, job_sizes_summary
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import multiskill_job_sizes_checks, read_table


def main(snakemake):
    config, inp = snakemake.config, snakemake.input
    rows = pd.concat(
        [read_table(p, **multiskill_job_sizes_checks(config, p)) for p in inp.rows],
        ignore_index=True,
    )
    diffs = pd.concat(
        [
            read_table(p, **multiskill_job_sizes_checks(config, p, differences=True))
            for p in inp.differences
        ],
        ignore_index=True,
    )
    write_table(rows, snakemake.output.rows)
    write_table(diffs, snakemake.output.differences)
    summary = job_sizes_summary(rows, diffs)
    write_table(summary, snakemake.output.summary)
    with atomic_path(snakemake.output.markdown) as tmp:
        tmp.write_text(job_sizes_markdown(summary, rows))


run_script(snakemake, main)  # noqa: F821
