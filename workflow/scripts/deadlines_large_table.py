"""Large-system comparisons of every size from the chunks' replications, in one table."""

import pandas as pd

from queue_routing.deadlines.experiments import (
    POLICY_LABELS,
    configured_large_instance,
    large_system_from_replications,
)
from queue_routing.io import write_table
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    large = p.large
    replications = pd.concat(
        [pd.read_csv(path) for path in snakemake.input.replications], ignore_index=True
    )
    tables = []
    for n in p.clusters:
        instance = configured_large_instance(
            p.seed,
            n,
            large,
            rejection_cost=p.rejection_cost,
            deadline=p.deadline,
            mean_deadline=p.mean_deadline,
            uniform_spread=p.uniform_spread,
        )
        tables.append(
            large_system_from_replications(
                instance,
                replications[replications["clusters"] == n],
                table_size=large["table_size"],
                horizon=large["horizon"],
                warmup=large["warmup"],
                seed=p.seed,
                keys=("deadlines-large", n),
                policies=large["policies"],
            )
        )
    write_table(
        pd.concat(tables, ignore_index=True),
        snakemake.output.table,
        snakemake.output.markdown,
        title=(
            f"Paired comparison of {', '.join(POLICY_LABELS.get(q, q) for q in large['policies'])}"
            " on n random clusters "
            "(ours; Niño-Mora (2012)): "
            "cost rates with 95% half-widths, the paired ratio to PI, and the policy separated "
            "from every other (Holm, family-wise level 0.05)"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
