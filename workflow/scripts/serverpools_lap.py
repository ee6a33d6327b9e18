"""One discipline of the what-to-do-instead study at one example and scale r, every
replication past its derived warm-up (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import policy_runs
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    runs = policy_runs(
        w.example,
        solve_spp(example_system(w.example)),
        w.policy,
        int(w.r),
        horizon=p.horizon,
        warmup_margin=p.warmup_margin,
        replications=p.replications,
        seed=p.seed,
        batches=p.batches,
    )
    write_table(runs, snakemake.output.runs)


run_script(snakemake, main)  # noqa: F821
