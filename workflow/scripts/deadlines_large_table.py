"""Large-system comparisons of every size from the chunks' replications, in one table."""

from pathlib import Path

import pandas as pd

from queue_routing.deadlines.experiments import (
    LARGE_REPLICATION_COLUMNS,
    large_system_from_replications,
)
from queue_routing.deadlines.instances import LARGE_KEY
from queue_routing.deadlines.model import Instance
from queue_routing.io import write_table
from queue_routing.labels import POLICY_LABELS
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_checked_json, read_table


def _replications(path, policies):
    """One chunk's replications, checked: one row per policy and replication of its label
    (``.../n{n}/{label}.csv``), for its number of clusters."""
    n = int(Path(path).parent.name[1:])
    chunk = parse_chunk(Path(path).stem)
    return read_table(
        path,
        columns=LARGE_REPLICATION_COLUMNS,
        rows=len(policies) * chunk.size,
        keys={"clusters": [n], "policy": list(policies)},
        unique=["policy", "replication"],
        no_nan=["replication", "cost", "rejection_rate", "miss_rate"],
    )


def main(snakemake):
    p = snakemake.params
    replications = pd.concat(
        [_replications(path, p.policies) for path in snakemake.input.replications],
        ignore_index=True,
    )
    tables = []
    for path in snakemake.input.instances:
        drawn = read_checked_json(path)
        n = drawn["clusters"]
        tables.append(
            large_system_from_replications(
                Instance.from_dict(drawn["instance"]),
                replications[replications["clusters"] == n],
                table_size=p.table_size,
                horizon=p.horizon,
                warmup=p.warmup,
                seed=p.seed,
                keys=(LARGE_KEY, n),
                policies=p.policies,
            )
        )
    write_table(
        pd.concat(tables, ignore_index=True),
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            f"Paired comparison of {', '.join(POLICY_LABELS.get(q, q) for q in p.policies)}"
            " on n random clusters "
            "(ours; Niño-Mora (2012)): "
            "cost rates with 95% half-widths, the paired ratio to PI, and the policy separated "
            "from every other (Holm, family-wise level 0.05)"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
