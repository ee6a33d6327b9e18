"""Mean and max suboptimality gap per policy and sweep, and the best policy of each sweep."""

import pandas as pd

from queue_routing.deadlines.experiments import gap_table
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import deadlines_sweep_checks, read_table


def main(snakemake):
    sweeps = pd.concat(
        [
            read_table(p, **deadlines_sweep_checks(snakemake.config, p))
            for p in snakemake.input.sweeps
        ],
        ignore_index=True,
    )
    table = gap_table(sweeps)
    best = table[table["best"]]
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            "Suboptimality gap (%) to the optimal cost per policy and sweep, two-cluster "
            "instances (ours; the study of Niño-Mora (2012), Sec. 6, is missing from our "
            "source). Points whose cost the truncation decides are excluded (n_bound). "
            "Smallest mean gap: " + "; ".join(f"{r.sweep}: {r.policy}" for r in best.itertuples())
        ),
        float_format="%.3f",
    )


run_script(snakemake, main)  # noqa: F821
