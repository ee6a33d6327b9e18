"""figures/summary.md: every number README.md and the part guides quote, from the parts'
tables (thin adapter)."""

import pandas as pd

from queue_routing.io import atomic_path
from queue_routing.workflow import summary
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_table


def _paths(item):
    return [item] if isinstance(item, str) else list(item)


def main(snakemake):
    tables, sources = {}, {}
    for part, name in summary.PARTS.items():
        tables[part] = {}
        for table in summary.TABLES[part]:
            paths = _paths(getattr(snakemake.input, f"{name}_{table}"))
            frames = [read_table(p) for p in paths]
            tables[part][table] = pd.concat(frames, ignore_index=True)
            sources[f"{part}.{table}"] = ", ".join(paths)
    values = {
        **summary.multiskill_summary(tables["A"]),
        **summary.deadlines_summary(tables["B"]),
        **summary.serverpools_summary(tables["C"], tail_fraction=snakemake.params.tail_fraction),
    }
    with atomic_path(snakemake.output.summary) as tmp:
        tmp.write_text(summary.render_markdown(values, sources), encoding="utf-8")


run_script(snakemake, main)  # noqa: F821
