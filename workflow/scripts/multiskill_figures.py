"""Draw one Part A figure from the pipeline's tables (thin adapter): the rule names the
figure (``params.draw``) and gives the scalars it needs."""

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script
from queue_routing.workflow.tables import multiskill_figure_checks, read_table


def _read(snakemake, name):
    """The rule's input table ``name``, checked against what the config determines."""
    checks = multiskill_figure_checks(snakemake.config, snakemake.rule, name)
    return read_table(snakemake.input[name], **checks)


def fig1(snakemake):
    return figures.fig1_schematic()


def fig2(snakemake):
    p, s = snakemake.params, snakemake
    return figures.fig2_case_map(_read(s, "case_map"), _read(s, "boundaries"), p.mu, p.cost)


def fig3(snakemake):
    p = snakemake.params
    return figures.fig3_loads(_read(snakemake, "loads"), p.mu, p.cost, p.line_eta1)


def fig4(snakemake):
    p, s = snakemake.params, snakemake
    return figures.fig4_costs(
        _read(s, "costs"),
        _read(s, "switching_points"),
        _read(s, "switching_curve"),
        p.mu,
        p.cost,
        p.line_eta1,
        region=_read(s, "region"),
    )


def fig5(snakemake):
    p, s = snakemake.params, snakemake
    return figures.fig5_region(_read(s, "region"), _read(s, "switching_curve"), p.mu, p.cost)


def fig6(snakemake):
    update = snakemake.wildcards.update_rule
    runs = _read(snakemake, "runs")
    runs = runs[(runs["update"] == update) & ~runs["paper_rounding"]]
    return figures.fig6_trajectories(
        _read(snakemake, "trajectories"),
        update=update,
        paper_rounding=False,
        status=dict(zip(runs["init"], runs["status"], strict=False)),
    )


def fig7(snakemake):
    return figures.fig7_iterations(
        _read(snakemake, "stats"), update=snakemake.wildcards.update_rule
    )


def fig8(snakemake):
    return figures.fig8_policies_vs_size(_read(snakemake, "rows"))


def fig9(snakemake):
    return figures.fig9_policies_vs_load(_read(snakemake, "rows"))


#: The figures by the name a rule's ``params.draw`` gives.
DRAW = {f.__name__: f for f in (fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8, fig9)}


def _draw(snakemake):
    return DRAW[snakemake.params.draw](snakemake)


run_figure_script(snakemake, _draw)  # noqa: F821
