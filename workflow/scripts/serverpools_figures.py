"""Draw one Part C figure from the pipeline's tables (thin adapter, dispatched on the rule)."""

import pandas as pd

from queue_routing.io import read_json
from queue_routing.pipeline import run_figure_script
from queue_routing.serverpools import figures
from queue_routing.serverpools.experiments import fluid_limit_level


def _concat(paths):
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def _draw(snakemake):
    inp, rule = snakemake.input, snakemake.rule
    if rule == "serverpools_fig_tree":
        example = snakemake.wildcards.example
        rows = pd.read_csv(inp.rows)
        instance = read_json(inp.instance)
        return figures.tree_figure(instance, rows[rows["example"] == example], example)
    if rule == "serverpools_fig_boundary":
        return figures.boundary_figure(pd.read_csv(inp.scan), pd.read_csv(inp.crossings))
    if rule == "serverpools_fig_fluid":
        return figures.fluid_figure(_concat(inp.trajectories))
    if rule == "serverpools_fig_deviation":
        return figures.deviation_figure(pd.read_csv(inp.traces), warmup=snakemake.params.warmup)
    if rule == "serverpools_fig_time_average":
        levels = fluid_limit_level(_concat(inp.trajectories), snakemake.params.tail_fraction)
        return figures.time_average_figure(
            pd.read_csv(inp.averages), pd.read_csv(inp.verdicts), fluid_levels=levels
        )
    raise ValueError(f"no figure for rule {rule}")


run_figure_script(snakemake, _draw)  # noqa: F821
