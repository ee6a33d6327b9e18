"""Stationarity tests, time averages against r and the slope-interval verdicts (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools.experiments import scaling_verdicts, time_average_table
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_tables


def main(snakemake):
    p = snakemake.params
    config = snakemake.config
    traces = read_serverpools_tables(config, snakemake.input.traces)
    runs = read_serverpools_tables(config, snakemake.input.summaries).sort_values(
        ["example", "r", "replication"]
    )
    averages = time_average_table(
        runs, stationarity_confidence=p.stationarity_confidence, confidence=p.confidence
    )
    verdicts = scaling_verdicts(runs, averages, decades=p.fit_decades, confidence=p.confidence)
    print(averages.to_string())
    print(verdicts.to_string())
    write_table(traces, snakemake.output.traces)
    write_table(runs, snakemake.output.runs)
    write_table(
        averages,
        snakemake.output.averages,
        snakemake.output.markdown,
        title=(
            "Stationary time-averaged |diffusion-scaled deviation| against r (mean of "
            f"replications, ± half-width of the {p.confidence:.0%} t interval in mean_norm_ci; "
            "windows after the derived burn-in; stationary = the first-half/second-half test "
            f"at level {1.0 - p.stationarity_confidence:g} does not flag the window)"
        ),
    )
    write_table(verdicts, snakemake.output.verdicts)


run_script(snakemake, main)  # noqa: F821
