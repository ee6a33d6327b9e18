"""Write results/provenance.json (thin adapter; see queue_routing.workflow.provenance).

The record is measured in this job's own environment (under ``--sdm conda`` that is the
rule's conda environment, which may differ from Snakemake's); git was measured once, when
the workflow was parsed, and comes in the ``expected`` param with the record Snakemake's
process expected. A difference between the two is logged, not an error.
"""

import logging

from queue_routing.workflow.provenance import collect, write_provenance
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    expected = snakemake.params.expected
    record = collect(snakemake.config, git=expected["git"])
    for key in sorted(set(record) | set(expected)):
        if record.get(key) != expected.get(key):
            logging.getLogger("provenance").warning(
                "%s measured in the job (%s) differs from the workflow's process (%s)",
                key,
                record.get(key),
                expected.get(key),
            )
    write_provenance(record, snakemake.output.provenance)


run_script(snakemake, main)  # noqa: F821
