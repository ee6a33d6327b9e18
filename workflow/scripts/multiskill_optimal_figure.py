"""Draw the optimal-routing study's gap figure from its rows (thin adapter)."""

import pandas as pd

from queue_routing.multiskill import figures_optimal
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    return figures_optimal.fig_optimal_gaps(pd.read_csv(snakemake.input.rows))


run_figure_script(snakemake, _draw)  # noqa: F821
