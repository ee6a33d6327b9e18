"""Draw one Part C figure from the pipeline's tables (thin adapter, dispatched on the rule)."""

import pandas as pd

from queue_routing.io import read_json
from queue_routing.serverpools import figures
from queue_routing.serverpools.experiments import fluid_limit_level
from queue_routing.workflow.scripts import run_figure_script


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
        averages = pd.read_csv(inp.averages)
        burn_in = {(row.example, float(row.r)): float(row.burn_in) for row in averages.itertuples()}
        return figures.deviation_figure(pd.read_csv(inp.traces), burn_in=burn_in)
    if rule == "serverpools_fig_time_average":
        fluid = _concat(inp.trajectories)
        levels = fluid_limit_level(fluid, snakemake.params.tail_fraction)
        growing = {
            name
            for name, df in fluid.groupby("example")
            if df["norm_fluid"].iloc[-1] > df["norm_fluid"].iloc[0]
        }  # the unstable examples: their fluid grows into a limit cycle
        return figures.time_average_figure(
            pd.read_csv(inp.averages),
            pd.read_csv(inp.verdicts),
            fluid_levels={k: v for k, v in levels.items() if k in growing},
        )
    if rule == "serverpools_fig_fluid_limit":
        return figures.fluid_limit_figure(pd.read_csv(inp.table), pd.read_csv(inp.slopes))
    raise ValueError(f"no figure for rule {rule}")


run_figure_script(snakemake, _draw)  # noqa: F821
