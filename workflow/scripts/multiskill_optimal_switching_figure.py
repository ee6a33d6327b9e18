"""Draw the optimal switching curve beside PI's line (thin adapter)."""

from queue_routing.multiskill import figures_optimal
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_table


def _draw(snakemake):
    p = snakemake.params
    title = f"instance {p.kind} at total load {p.load:g}"
    rows = read_table(
        snakemake.input.rows,
        columns=["x_other", "x0", "optimal", "pi", "pi_slope"],
        no_nan=True,
        min_rows=1,
    )
    return figures_optimal.fig_optimal_switching(rows, title)


run_figure_script(snakemake, _draw)  # noqa: F821
