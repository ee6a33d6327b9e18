"""One sample of the job-size study (Table 1, or the first random instances of one C): the
paired comparison of the policies under every job-size law (thin adapter)."""

from queue_routing.io import write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import job_sizes_rows
from queue_routing.multiskill.instances import table1
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_multiskill_instances


def main(snakemake):
    p = snakemake.params
    sample = snakemake.wildcards.sample
    if sample == "table1":
        instances = [(0, table1())]
    else:
        data = read_multiskill_instances(snakemake.config, snakemake.input.instances[0])
        if p.random_instances > len(data["instances"]):
            raise ValueError(
                f"multiskill.job_sizes.random_instances = {p.random_instances}, but the "
                f"C={data['n_classes']} file has {len(data['instances'])} instances "
                "(multiskill.instances_per_size)"
            )
        instances = [
            (k, Instance.from_dict(data["instances"][k])) for k in range(p.random_instances)
        ]
    rows, diffs = job_sizes_rows(
        instances,
        laws=p.laws,
        policies=p.policies,
        horizon=p.horizon,
        warmup=p.warmup,
        replications=p.replications,
        seed=p.seed,
        sample=sample,
    )
    write_table(rows, snakemake.output.rows)
    write_table(diffs, snakemake.output.differences)


run_script(snakemake, main)  # noqa: F821
