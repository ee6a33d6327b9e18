"""Large-system comparisons of every size from the chunks' replications, in one table."""

import pandas as pd

from queue_routing.deadlines.experiments import large_system_from_replications
from queue_routing.deadlines.instances import LARGE_KEY
from queue_routing.deadlines.model import Instance
from queue_routing.io import read_json, write_table
from queue_routing.labels import POLICY_LABELS
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    replications = pd.concat(
        [pd.read_csv(path) for path in snakemake.input.replications], ignore_index=True
    )
    tables = []
    for path in snakemake.input.instances:
        drawn = read_json(path)
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
