"""The example instances with SPP solution, duals, spectra and simulation verdict."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.serverpools.experiments import instance_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    table = instance_table(pd.read_csv(snakemake.input.rows), pd.read_csv(snakemake.input.verdicts))
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            "Example instances (ours): SPP solution, duals, spectra of A_u and A_c, and the "
            "simulation verdict"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
