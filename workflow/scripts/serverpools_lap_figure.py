"""Draw the what-to-do-instead figure from the study's tables (thin adapter)."""

import pandas as pd

from queue_routing.serverpools import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    inp = snakemake.input
    return figures.lap_figure(
        pd.read_csv(inp.averages),
        pd.read_csv(inp.verdicts),
        pd.read_csv(inp.ou),
        pd.read_csv(inp.price),
    )


run_figure_script(snakemake, _draw)  # noqa: F821
