"""Draw the optimal-routing study's gap figure from its rows (thin adapter)."""

from queue_routing.multiskill import figures_optimal
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_table


def _draw(snakemake):
    rows = read_table(
        snakemake.input.rows,
        columns=["kind", "n_classes", "load", "policy", "gap_pct"],
        no_nan=True,
        min_rows=1,
    )
    return figures_optimal.fig_optimal_gaps(rows)


run_figure_script(snakemake, _draw)  # noqa: F821
