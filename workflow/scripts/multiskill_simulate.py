"""Paired comparison of the routing policies on one size C, or on Table 1's load sweep (thin
adapter)."""

from queue_routing.io import read_json, write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import policy_comparison_rows, table1_load_sweep
from queue_routing.pipeline import run_script


def main(snakemake):
    p = snakemake.params
    common = {
        "policies": p.policies,
        "horizon": p.horizon,
        "warmup": p.warmup,
        "replications": p.replications,
        "seed": p.seed,
    }
    if snakemake.rule == "multiskill_simulate_table1":
        rows, differences = table1_load_sweep(p.load_factors, **common)
        for f in rows.attrs.get("skipped", []):
            print(f"load factor {f}: unstable, skipped")
    else:
        data = read_json(snakemake.input.instances)
        instances = [(k, Instance.from_dict(d)) for k, d in enumerate(data["instances"])]
        rows, differences = policy_comparison_rows(instances, tag="random", **common)
    write_table(rows, snakemake.output.rows)
    write_table(differences, snakemake.output.differences)


run_script(snakemake, main)  # noqa: F821
