"""One chunk of Part A's policy simulations: the cost of every replication of its instances
(random instances of one size C, or Table 1's load factors) under every policy (thin adapter;
the paired statistics are made by multiskill_simulation_table from every chunk)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.experiments import (
    REPLICATION_COLUMNS,
    TABLE1_TAG,
    policy_replication_costs,
    table1_instances,
)
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_multiskill_instances


def main(snakemake):
    p = snakemake.params
    chunk = parse_chunk(snakemake.wildcards.chunk)
    common = {
        "policies": p.policies,
        "horizon": p.horizon,
        "warmup": p.warmup,
        "replications": chunk.replications,
        "seed": p.seed,
    }
    if snakemake.rule == "multiskill_simulate_table1":
        instances, skipped = table1_instances(p.load_factors, indices=chunk.items)
        for f in skipped:
            print(f"load factor {f}: unstable, skipped")
        factors = dict(zip(chunk.items, p.load_factors, strict=True))
        frames = [
            policy_replication_costs(
                [(k, inst)], tag=TABLE1_TAG, extra={"load_factor": float(factors[k])}, **common
            )
            for k, inst in instances
        ]
        empty = pd.DataFrame(columns=["load_factor", *REPLICATION_COLUMNS])
        costs = pd.concat(frames, ignore_index=True) if frames else empty
    else:
        data = read_multiskill_instances(snakemake.config, snakemake.input.instances)
        if chunk.items.stop > len(data["instances"]):
            raise ValueError(f"chunk {chunk.label()}: only {len(data['instances'])} instances")
        instances = [(k, Instance.from_dict(data["instances"][k])) for k in chunk.items]
        costs = policy_replication_costs(instances, tag="random", **common)
    write_table(costs, snakemake.output.costs)


run_script(snakemake, main)  # noqa: F821
