"""Gaps to the optimum of two and three clusters along every sweep (thin adapter)."""

import pandas as pd

from queue_routing.deadlines import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    sweeps = pd.concat([pd.read_csv(p) for p in snakemake.input.sweeps], ignore_index=True)
    return figures.three_cluster_figure(sweeps)


run_figure_script(snakemake, _draw)  # noqa: F821
