"""Draw one Part C figure from the pipeline's tables (thin adapter): the rule says which
(``params.draw``) and names its inputs."""

from queue_routing.serverpools import figures
from queue_routing.serverpools.experiments import fluid_limit_level, growing_examples
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import (
    read_serverpools_example,
    read_serverpools_table,
    read_serverpools_tables,
)


def _read(snakemake, path):
    """The table at ``path``, checked against what the config determines of it."""
    return read_serverpools_table(snakemake.config, path)


def _concat(snakemake, paths):
    return read_serverpools_tables(snakemake.config, paths)


def _tree(snakemake):
    example = snakemake.wildcards.example
    rows = _read(snakemake, snakemake.input.rows)
    instance = read_serverpools_example(snakemake.input.instance)
    return figures.tree_figure(instance, rows[rows["example"] == example], example)


def _boundary(snakemake):
    inp = snakemake.input
    return figures.boundary_figure(_read(snakemake, inp.scan), _read(snakemake, inp.crossings))


def _fluid(snakemake):
    return figures.fluid_figure(_concat(snakemake, snakemake.input.trajectories))


def _deviation(snakemake):
    averages = _read(snakemake, snakemake.input.averages)
    # the derived warm-ups
    warmups = {(row.example, float(row.r)): float(row.warmup) for row in averages.itertuples()}
    return figures.deviation_figure(_read(snakemake, snakemake.input.traces), warmups=warmups)


def _time_average(snakemake):
    inp = snakemake.input
    fluid = _concat(snakemake, inp.trajectories)
    levels = fluid_limit_level(fluid, snakemake.params.tail_fraction)
    growing = growing_examples(fluid)  # the unstable examples: a fluid limit cycle
    return figures.time_average_figure(
        _read(snakemake, inp.averages),
        _read(snakemake, inp.verdicts),
        fluid_levels={k: v for k, v in levels.items() if k in growing},
    )


def _fluid_limit(snakemake):
    inp = snakemake.input
    return figures.fluid_limit_figure(_read(snakemake, inp.table), _read(snakemake, inp.slopes))


DRAW = {
    "tree": _tree,
    "boundary": _boundary,
    "fluid": _fluid,
    "deviation": _deviation,
    "time_average": _time_average,
    "fluid_limit": _fluid_limit,
}


def _draw(snakemake):
    draw = snakemake.params.draw
    if draw not in DRAW:
        raise ValueError(f"params.draw = {draw!r} is not one of {', '.join(DRAW)}")
    return DRAW[draw](snakemake)


run_figure_script(snakemake, _draw)  # noqa: F821
