"""Draw one Part B figure from the pipeline's tables (thin adapter): the rule names the
function of queue_routing.deadlines.figures (params ``draw``) and its options (the other
params); the tables of its inputs are concatenated."""

import pandas as pd

from queue_routing.deadlines import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import deadlines_sweep_checks, read_table


def _checks(snakemake, path):
    """What the config determines of one input table of the rule (:mod:`..tables`)."""
    rule, config = snakemake.rule, snakemake.config
    if rule == "deadlines_fig_gap":
        return deadlines_sweep_checks(config, path)
    if rule == "deadlines_fig_three_cluster":
        return deadlines_sweep_checks(config, path, three=True)
    if rule == "deadlines_fig_indices":
        upto = int(config["deadlines"]["indices"]["upto"])
        clusters = len(config["deadlines"]["base"]["servers"])
        return {
            "columns": ["policy", "cluster", "x", "index"],
            "rows": 3 * clusters * (upto + 1),
            "keys": {"x": list(range(upto + 1)), "cluster": list(range(1, clusters + 1))},
            "no_nan": ["policy", "index"],
        }
    if rule == "deadlines_fig_large":
        return {"keys": {"clusters": config["deadlines"]["large"]["clusters"]}}
    return {}


def _draw(snakemake):
    table = pd.concat(
        [read_table(path, **_checks(snakemake, path)) for path in snakemake.input],
        ignore_index=True,
    )
    options = {name: value for name, value in snakemake.params.items() if name != "draw"}
    return getattr(figures, snakemake.params.draw)(table, **options)


run_figure_script(snakemake, _draw)  # noqa: F821
