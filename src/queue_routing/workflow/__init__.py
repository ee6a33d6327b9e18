"""The pipeline's support: what the Snakemake workflow needs and the science does not.

Nothing in the three parts (:mod:`queue_routing.multiskill`, :mod:`queue_routing.deadlines`,
:mod:`queue_routing.serverpools`) imports this subpackage; the rules and scripts under the
repository's ``workflow/`` do, and so do the tests and ``benchmarks/``:

- :mod:`.config` -- the config's validation against ``workflow/schemas/config.schema.yaml``;
- :mod:`.chunks` -- how a study is cut into bounded jobs (labels, reassembly);
- :mod:`.resources` -- the jobs' cost model (predicted seconds and MB per rule);
- :mod:`.scripts` -- the glue of every Snakemake script (``run_script``, ``run_figure_script``);
- :mod:`.provenance` -- the record of a run (versions, config, commit);
- :mod:`.summary` -- every number the README and the part guides quote, read from the
  pipeline's tables;
- :mod:`.tables` -- the checked reader of intermediate tables (what the config determines;
  a file changed after the job that wrote it is refused with the command that rebuilds it).
"""
