"""Simulated stationary covariance of the stable example vs Lyapunov, from the chunks' runs
(thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import covariance_from_replications
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_tables


def main(snakemake):
    p = snakemake.params
    runs = read_serverpools_tables(snakemake.config, snakemake.input.runs)
    table = covariance_from_replications("stable", solve_spp(example_system("stable")), runs, r=p.r)
    print(table.to_string())
    write_table(
        table,
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            f"Stable example: simulated stationary covariance of (X^r - r psi*)/sqrt(r) at "
            f"r = {p.r:g} ({p.replications} replications, mean ± SE) vs the Lyapunov "
            "solution of A_u S + S A_u^T + 2 diag(lambda) = 0"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
