"""Draw one Part A figure from the pipeline's tables (thin adapter): the rule names the
figure (``params.draw``) and gives the scalars it needs."""

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import read_table


def fig1(snakemake):
    return figures.fig1_schematic()


def fig2(snakemake):
    inp, p = snakemake.input, snakemake.params
    return figures.fig2_case_map(read_table(inp.case_map), read_table(inp.boundaries), p.mu, p.cost)


def fig3(snakemake):
    p = snakemake.params
    return figures.fig3_loads(read_table(snakemake.input.loads), p.mu, p.cost, p.line_eta1)


def fig4(snakemake):
    inp, p = snakemake.input, snakemake.params
    return figures.fig4_costs(
        read_table(inp.costs),
        read_table(inp.switching_points),
        read_table(inp.switching_curve),
        p.mu,
        p.cost,
        p.line_eta1,
        region=read_table(inp.region),
    )


def fig5(snakemake):
    inp, p = snakemake.input, snakemake.params
    return figures.fig5_region(
        read_table(inp.region), read_table(inp.switching_curve), p.mu, p.cost
    )


def fig6(snakemake):
    update = snakemake.wildcards.update_rule
    runs = read_table(snakemake.input.runs)
    runs = runs[(runs["update"] == update) & ~runs["paper_rounding"]]
    return figures.fig6_trajectories(
        read_table(snakemake.input.trajectories),
        update=update,
        paper_rounding=False,
        status=dict(zip(runs["init"], runs["status"], strict=False)),
    )


def fig7(snakemake):
    return figures.fig7_iterations(
        read_table(snakemake.input.stats), update=snakemake.wildcards.update_rule
    )


def fig8(snakemake):
    return figures.fig8_policies_vs_size(read_table(snakemake.input.rows))


def fig9(snakemake):
    return figures.fig9_policies_vs_load(read_table(snakemake.input.rows))


#: The figures by the name a rule's ``params.draw`` gives.
DRAW = {f.__name__: f for f in (fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8, fig9)}


def _draw(snakemake):
    return DRAW[snakemake.params.draw](snakemake)


run_figure_script(snakemake, _draw)  # noqa: F821
