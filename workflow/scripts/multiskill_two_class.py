"""C = 2 case map, closed-form boundaries and optimal loads (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.experiments import two_class_tables
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    tables = two_class_tables(p.mu, p.cost, p.eta_max, p.grid_points, p.line_eta1, p.line_points)
    for name, df in tables.items():
        write_table(df, snakemake.output[name])


run_script(snakemake, main)  # noqa: F821
