"""Draw the job-size study's figure from its summary table (thin adapter)."""

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import multiskill_figure_checks, read_table


def _draw(snakemake):
    checks = multiskill_figure_checks(snakemake.config, snakemake.rule, "summary")
    return figures.fig_job_sizes(read_table(snakemake.input.summary, **checks))


run_figure_script(snakemake, _draw)  # noqa: F821
