"""Draw one Part A figure from the pipeline's tables (thin adapter, dispatched on the rule)."""

import pandas as pd

from queue_routing.multiskill import figures
from queue_routing.workflow.scripts import run_figure_script


def _draw(snakemake):
    inp, rule = snakemake.input, snakemake.rule
    if rule == "multiskill_fig1":
        return figures.fig1_schematic()
    if rule == "multiskill_fig2":
        tc = snakemake.params.setting
        return figures.fig2_case_map(
            pd.read_csv(inp.case_map), pd.read_csv(inp.boundaries), tc["mu"], tc["cost"]
        )
    if rule == "multiskill_fig3":
        tc = snakemake.params.setting
        return figures.fig3_loads(pd.read_csv(inp.loads), tc["mu"], tc["cost"], tc["line_eta1"])
    if rule == "multiskill_fig4":
        tc = snakemake.params.setting
        return figures.fig4_costs(
            pd.read_csv(inp.costs),
            pd.read_csv(inp.switching_points),
            pd.read_csv(inp.switching_curve),
            tc["mu"],
            tc["cost"],
            tc["line_eta1"],
            region=pd.read_csv(inp.region),
        )
    if rule == "multiskill_fig5":
        st = snakemake.params.setting
        return figures.fig5_region(
            pd.read_csv(inp.region), pd.read_csv(inp.switching_curve), st["mu"], st["cost"]
        )
    if rule == "multiskill_fig6":
        update = snakemake.wildcards.update_rule
        runs = pd.read_csv(inp.runs)
        runs = runs[(runs["update"] == update) & ~runs["paper_rounding"]]
        return figures.fig6_trajectories(
            pd.read_csv(inp.trajectories),
            update=update,
            paper_rounding=False,
            status=dict(zip(runs["init"], runs["status"], strict=False)),
        )
    if rule == "multiskill_fig7":
        return figures.fig7_iterations(
            pd.read_csv(inp.stats), update=snakemake.wildcards.update_rule
        )
    if rule == "multiskill_fig8":
        return figures.fig8_policies_vs_size(pd.read_csv(inp.rows))
    if rule == "multiskill_fig9":
        return figures.fig9_policies_vs_load(pd.read_csv(inp.rows))
    raise ValueError(f"no figure for rule {rule}")


run_figure_script(snakemake, _draw)  # noqa: F821
