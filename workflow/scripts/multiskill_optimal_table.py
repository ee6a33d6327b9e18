"""The optimal-routing study's tables: every instance's rows, the gap table (CSV and
Markdown) and the per-policy summary (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill.optimal_study import gap_summary, gaps_markdown, gaps_wide
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    rows = pd.concat([pd.read_csv(p) for p in snakemake.input.rows], ignore_index=True)
    write_table(rows, snakemake.output.rows)
    wide = gaps_wide(rows)
    write_table(wide, snakemake.output.gaps)
    write_table(gap_summary(rows), snakemake.output.summary)
    with atomic_path(snakemake.output.markdown) as tmp:
        tmp.write_text(gaps_markdown(wide))


run_script(snakemake, main)  # noqa: F821
