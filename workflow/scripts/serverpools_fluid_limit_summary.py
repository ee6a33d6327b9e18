"""Fluid-limit distances against r and their log-log slopes (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools.experiments import fluid_limit_slopes, fluid_limit_table
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_tables


def main(snakemake):
    confidence = snakemake.params.confidence
    runs = read_serverpools_tables(snakemake.config, snakemake.input.rows)
    runs = runs.sort_values(["example", "r", "replication"])
    table = fluid_limit_table(runs, confidence=confidence)
    slopes = fluid_limit_slopes(runs, confidence=confidence)
    print(table.to_string())
    print(slopes.to_string())
    write_table(runs, snakemake.output.runs)
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            "sup over the window of |X^r(t)/r - x(t)| (per unit r) against r: mean of "
            f"replications, ± half-width of the {confidence:.0%} t interval in sup_distance_ci"
        ),
        float_format="%.4g",
    )
    write_table(slopes, snakemake.output.slopes)


run_script(snakemake, main)  # noqa: F821
