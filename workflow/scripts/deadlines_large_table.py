"""Large-system costs of every size in one table."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.pipeline import run_script


def main(snakemake):
    table = pd.concat([pd.read_csv(p) for p in snakemake.input.tables], ignore_index=True)
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            "Paired comparison of BS, IO, PI, RB on n random clusters (ours; Niño-Mora (2012)): "
            "cost rates with 95% half-widths, the paired ratio to PI, and the policy separated "
            "from every other (Holm, family-wise level 0.05)"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
