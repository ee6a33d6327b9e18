"""Draw one Part B figure from the pipeline's tables (thin adapter, dispatched on the rule)."""

import pandas as pd

from queue_routing.deadlines import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    inp, rule = snakemake.input, snakemake.rule
    if rule == "deadlines_fig_gap":
        return figures.gap_figure(pd.read_csv(inp.table), snakemake.wildcards.sweep)
    if rule == "deadlines_fig_indices":
        return figures.index_figure(pd.read_csv(inp.table))
    if rule == "deadlines_fig_large":
        return figures.large_figure(pd.read_csv(inp.table))
    raise ValueError(f"no figure for rule {rule}")


run_figure_script(snakemake, _draw)  # noqa: F821
