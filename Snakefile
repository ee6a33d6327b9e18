# queue-routing: reproduce every table and figure of the three papers (entry point).
#   snakemake --cores all                                          full reproduction
#   snakemake --cores all --configfile workflow/config/smoke.yaml   smoke run (minutes)
#
# The workflow is workflow/Snakefile (config, validation, report, the rules), included here
# so that `snakemake` run from the repository root, or with `-s` from anywhere, finds this
# file and the default profile profiles/default/ next to it. Paths in the included files
# resolve relative to those files. `rule all` is declared here: Snakemake does not carry a
# default target over from an included file.


include: "workflow/Snakefile"


localrules:
    all,


rule all:
    default_target: True
    input:
        rules.reproduce.input,
