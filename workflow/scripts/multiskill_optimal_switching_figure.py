"""Draw the optimal switching curve beside PI's line (thin adapter)."""

import pandas as pd

from queue_routing.multiskill import figures_optimal
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    p = snakemake.params
    title = f"instance {p.kind} at total load {p.load:g}"
    return figures_optimal.fig_optimal_switching(pd.read_csv(snakemake.input.rows), title)


run_figure_script(snakemake, _draw)  # noqa: F821
