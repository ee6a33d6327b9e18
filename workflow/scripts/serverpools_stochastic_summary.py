"""Time-averaged deviations against r and the tight/escaping verdicts (thin adapter)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.pipeline import run_script
from queue_routing.serverpools.experiments import scaling_verdicts, time_average_table


def _concat(paths):
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def main(snakemake):
    traces = _concat(snakemake.input.traces)
    runs = _concat(snakemake.input.summaries).sort_values(["example", "r", "replication"])
    averages = time_average_table(runs)
    verdicts = scaling_verdicts(runs, snakemake.params.slope_threshold)
    print(averages.to_string())
    print(verdicts.to_string())
    write_table(traces, snakemake.output.traces)
    write_table(runs, snakemake.output.runs)
    write_table(
        averages,
        snakemake.output.averages,
        snakemake.output.markdown,
        title="Time-averaged |diffusion-scaled deviation| against r (mean of replications ± SE)",
    )
    write_table(verdicts, snakemake.output.verdicts)


run_script(snakemake, main)  # noqa: F821
