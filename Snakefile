# queue-routing: reproduce every table and figure of the three papers.
#   snakemake --cores all                                         full reproduction
#   snakemake --cores all --configfile workflow/config/smoke.yaml   smoke run (minutes)
from snakemake.utils import min_version, validate

min_version("8.20")


configfile: workflow.source_path("workflow/config/default.yaml")


validate(config, "workflow/schemas/config.schema.yaml", set_default=True)


include: "workflow/rules/common.smk"
include: "workflow/rules/multiskill.smk"
include: "workflow/rules/serverpools.smk"
include: "workflow/rules/deadlines.smk"


rule all:
    default_target: True
    input:
        rules.multiskill_all.input,
        rules.serverpools_all.input,
        rules.deadlines_all.input,
