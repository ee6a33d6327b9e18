"""Multi-skilled vs no-sharing vs all-sharing costs on one size C (thin adapter)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.multiskill import Instance
from queue_routing.multiskill.compare import compare
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_multiskill_instances


def main(snakemake):
    data = read_multiskill_instances(snakemake.config, snakemake.input.instances)
    rows = []
    for k, d in enumerate(data["instances"]):
        inst = Instance.from_dict(d)
        rows.append({"n_classes": inst.n_classes, "instance": k, **compare(inst)})
    write_table(pd.DataFrame(rows), snakemake.output.costs)


run_script(snakemake, main)  # noqa: F821
