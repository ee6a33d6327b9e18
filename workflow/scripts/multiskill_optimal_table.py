"""The optimal-routing study's tables: every chunk's rows in the study's order, the gap table
(CSV and Markdown) and the per-policy summary (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path, write_table
from queue_routing.multiskill.optimal_study import gap_summary, gaps_markdown, gaps_wide
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_table

COLUMNS = ["kind", "n_classes", "load", "policy", "cost", "gap_pct", "optimal_cost"]


def main(snakemake):
    p = snakemake.params
    frames = []
    for chunk, path in zip(p.chunks, snakemake.input.rows, strict=True):
        frame = read_table(
            path,
            columns=COLUMNS,
            rows=len(chunk["cases"]) * len(p.policies),
            keys={
                "policy": p.policies,
                "n_classes": [int(chunk["n_classes"])],
                "kind": sorted({kind for kind, _ in chunk["cases"]}),
                "load": sorted({float(load) for _, load in chunk["cases"]}),
            },
            unique=["kind", "load", "policy"],
            no_nan=["cost", "gap_pct", "optimal_cost"],
        )
        frames.append(frame)
    rows = pd.concat(frames, ignore_index=True)
    write_table(rows, snakemake.output.rows)
    wide = gaps_wide(rows)
    write_table(wide, snakemake.output.gaps)
    write_table(gap_summary(rows), snakemake.output.summary)
    with atomic_path(snakemake.output.markdown) as tmp:
        tmp.write_text(gaps_markdown(wide))


run_script(snakemake, main)  # noqa: F821
