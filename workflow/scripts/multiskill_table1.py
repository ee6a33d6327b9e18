"""Table 1 by every solver and the Fig. 6 trajectories (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill.experiments import table1_solutions, table1_trajectories
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    solutions = table1_solutions(p.generic_methods, p.updates, seed=p.seed)
    write_table(
        solutions,
        snakemake.output.solutions,
        snakemake.output.markdown,
        title="Table 1 instance (Sec. 6.3) solved by every solver",
    )
    trajectories, runs = table1_trajectories(p.updates, seed=p.seed)
    write_table(trajectories, snakemake.output.trajectories)
    write_table(runs, snakemake.output.runs)


run_script(snakemake, main)  # noqa: F821
