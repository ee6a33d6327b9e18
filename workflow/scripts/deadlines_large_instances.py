"""Draw the n random clusters of Part B's large-system study (thin adapter; see the library):
the instance every chunk of deadlines_large and the table of deadlines_large_table read. The
clusters come from the deadlines.large block, the rejection cost and the deadline law from the
base instance."""

from queue_routing.deadlines.instances import deadline_dict, large_instance
from queue_routing.io import write_json
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p, n = snakemake.params, int(snakemake.wildcards.n)
    instance = large_instance(
        p.seed,
        n,
        servers_range=p.servers_range,
        rate_range=p.rate_range,
        load=p.load,
        rejection_cost=p.rejection_cost,
        deadline=deadline_dict(p.deadline, p.mean_deadline, p.uniform_spread),
    )
    write_json(
        {"clusters": n, "seed": p.seed, "instance": instance.to_dict()},
        snakemake.output.instance,
    )


run_script(snakemake, main)  # noqa: F821
