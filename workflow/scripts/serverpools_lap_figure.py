"""Draw the what-to-do-instead figure from the study's tables (thin adapter)."""

from queue_routing.serverpools import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_table


def _draw(snakemake):
    inp = snakemake.input
    return figures.lap_figure(
        read_table(inp.averages),
        read_table(inp.verdicts),
        read_table(inp.ou),
        read_table(inp.price),
    )


run_figure_script(snakemake, _draw)  # noqa: F821
