"""Draw the job-size study's figure from its summary table (thin adapter)."""

import pandas as pd

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    return figures.fig_job_sizes(pd.read_csv(snakemake.input.summary))


run_figure_script(snakemake, _draw)  # noqa: F821
