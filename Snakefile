# queue-routing: reproduce every table and figure of the three papers.
#   snakemake --cores all                                         full reproduction
#   snakemake --cores all --configfile workflow/config/smoke.yaml   smoke run (minutes)
import sys

from snakemake.utils import min_version

from queue_routing.config import ConfigError, validate_config

min_version("8.20")


configfile: workflow.source_path("workflow/config/default.yaml")


# Schema (types, ranges, unknown keys) and cross-key rules, before any rule exists: an
# invalid config exits with one line naming the key, and no job or output is created.
try:
    validate_config(config, workflow.source_path("workflow/schemas/config.schema.yaml"))
except ConfigError as error:
    sys.exit(f"invalid config: {error}")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/multiskill.smk"
include: "workflow/rules/serverpools.smk"
include: "workflow/rules/deadlines.smk"


localrules:
    all,


rule all:
    default_target: True
    input:
        rules.multiskill_all.input,
        rules.serverpools_all.input,
        rules.deadlines_all.input,
