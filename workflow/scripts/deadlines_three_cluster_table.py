"""Mean and max gap per policy and sweep, two and three clusters side by side."""

import pandas as pd

from queue_routing.deadlines.experiments import gap_table
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import deadlines_sweep_checks, read_table


def main(snakemake):
    sweeps = pd.concat(
        [
            read_table(p, **deadlines_sweep_checks(snakemake.config, p, three=True))
            for p in snakemake.input.sweeps
        ],
        ignore_index=True,
    )
    table = gap_table(sweeps, clusters=snakemake.params.clusters, overall=True)
    pi = table[(table["sweep"] == "all") & (table["policy"] == "PI")].iloc[0]
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            "Suboptimality gap (%) to the exact optimum per policy and sweep, three clusters "
            "and the matched two-cluster system (same load, rejection cost and deadline law) "
            "side by side (ours). Points whose cost the truncation decides for either system "
            f"are excluded (n_bound). PI over all matched points: mean {pi.mean_gap_2_pct:.2f}"
            f"% / max {pi.max_gap_2_pct:.2f}% with two clusters, mean {pi.mean_gap_3_pct:.2f}%"
            f" / max {pi.max_gap_3_pct:.2f}% with three"
        ),
        float_format="%.3f",
    )


run_script(snakemake, main)  # noqa: F821
