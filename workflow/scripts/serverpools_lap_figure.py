"""Draw the what-to-do-instead figure from the study's tables (thin adapter)."""

from queue_routing.serverpools import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_serverpools_table


def _draw(snakemake):
    inp, config = snakemake.input, snakemake.config
    return figures.lap_figure(
        read_serverpools_table(config, inp.averages),
        read_serverpools_table(config, inp.verdicts),
        read_serverpools_table(config, inp.ou),
        read_serverpools_table(config, inp.price),
    )


run_figure_script(snakemake, _draw)  # noqa: F821
