"""Draw the job-size study's figure from its summary table (thin adapter)."""

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_table


def _draw(snakemake):
    return figures.fig_job_sizes(read_table(snakemake.input.summary))


run_figure_script(snakemake, _draw)  # noqa: F821
