"""The example instances with SPP solution, duals, spectra and simulation verdict."""

from queue_routing.io import write_table
from queue_routing.serverpools.experiments import instance_table
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_table


def main(snakemake):
    inp, config = snakemake.input, snakemake.config
    table = instance_table(
        read_serverpools_table(config, inp.rows), read_serverpools_table(config, inp.verdicts)
    )
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
