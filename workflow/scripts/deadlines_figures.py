"""Draw one Part B figure from the pipeline's tables (thin adapter): the rule names the
function of queue_routing.deadlines.figures (params ``draw``) and its options (the other
params); the tables of its inputs are concatenated."""

import pandas as pd

from queue_routing.deadlines import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    table = pd.concat([pd.read_csv(path) for path in snakemake.input], ignore_index=True)
    options = {name: value for name, value in snakemake.params.items() if name != "draw"}
    return getattr(figures, snakemake.params.draw)(table, **options)


run_figure_script(snakemake, _draw)  # noqa: F821
