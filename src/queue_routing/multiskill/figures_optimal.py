"""Figures of the optimal-routing study (ours; ``docs/multiskill.md#the-optimal-dynamic-policy``):
each policy's exact gap to the optimum, and an optimal switching curve beside PI's line.

Each function takes the study's tidy tables (:mod:`.optimal_study`) and returns ``(figure,
caption)``; nothing is written (``queue_routing.plotting.save_figure``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..labels import POLICY_SHORT
from ..plotting import GREY, PALETTE, new_figure, require_columns, styled
from .optimal_study import LABELS

_SHORT = {**POLICY_SHORT, "pi2": "PI²"}

__all__ = ["fig_optimal_gaps", "fig_optimal_switching"]

_KIND_MARKERS = {
    "symmetric": "o",
    "costs": "s",
    "capacities": "^",
    "table1": "D",
}


def _kind_marker(kind: str) -> str:
    return _KIND_MARKERS.get(kind.rsplit("-", 1)[0], "x")


@styled
def fig_optimal_gaps(rows: pd.DataFrame) -> tuple[Figure, str]:
    """How far from optimal: each policy's gap (percent of the optimal cost, log scale) on
    every instance, the policies side by side; a panel per number of classes, colour = load,
    marker = instance template. ``rows``: :func:`~.optimal_study.optimal_gap_rows`."""
    require_columns(rows, ["kind", "n_classes", "load", "policy", "gap_pct", "certified"], "rows")
    sizes = sorted(rows["n_classes"].unique())
    policies = list(dict.fromkeys(rows["policy"]))
    fig, axes = new_figure(1, len(sizes), figsize=(4.2 * len(sizes) + 0.6, 3.8), squeeze=False,
                           sharey=True)  # fmt: skip
    loads = sorted(rows["load"].unique())
    cmap = {rho: PALETTE[k % len(PALETTE)] for k, rho in enumerate(loads)}
    floor = 1e-3  # gaps below are drawn at the floor (exact ties, rounding)
    for ax, c in zip(axes.ravel(), sizes, strict=True):
        sel = rows[rows["n_classes"] == c]
        kinds = list(dict.fromkeys(sel["kind"]))
        for p, pol in enumerate(policies):
            grp = sel[sel["policy"] == pol]
            for _, r in grp.iterrows():
                k = kinds.index(r["kind"])
                q = loads.index(r["load"])
                x = p + (k - (len(kinds) - 1) / 2) * 0.12 + (q - (len(loads) - 1) / 2) * 0.03
                y = max(float(r["gap_pct"]), floor)
                ax.plot(x, y, ls="none", marker=_kind_marker(r["kind"]), ms=4.5,
                        color=cmap[r["load"]],
                        mfc=cmap[r["load"]] if r["certified"] else "white")  # fmt: skip
        ax.set_yscale("log")
        ax.set_xticks(range(len(policies)), [_SHORT.get(p, LABELS.get(p, p)) for p in policies])
        ax.set_xlim(-0.6, len(policies) - 0.4)
        ax.axhline(1.0, color=GREY, lw=0.8, ls=":")
        ax.set_title(f"C = {c}", loc="left", fontsize=9)
    axes.ravel()[0].set_ylabel("gap to the optimum (% of optimal cost)")
    handles = [Line2D([], [], ls="none", marker="o", color=cmap[rho], label=f"load {rho:g}")
               for rho in loads]  # fmt: skip
    kinds_all = list(dict.fromkeys(k.rsplit("-", 1)[0] for k in rows["kind"]))
    handles += [Line2D([], [], ls="none", marker=_KIND_MARKERS.get(k, "x"), color="0.3",
                       mfc="white", label=k) for k in kinds_all]  # fmt: skip
    axes.ravel()[-1].legend(handles=handles, fontsize=7, loc="upper right", frameon=False)
    n_inst = rows.groupby(["kind", "load"]).ngroups
    caption = (
        f"How far from optimal (ours): on {n_inst} small instances (C = "
        f"{', '.join(str(c) for c in sizes)}; total loads {', '.join(f'{r:g}' for r in loads)}"
        "), the exact gap of each policy's long-run holding cost to the optimal dynamic "
        "routing's, both solved on the same truncated Markov chain (relative value iteration "
        "and Gauss-Seidel, each cost certified by raising the truncation; no simulation noise, "
        "so no intervals). Gaps below 0.001% are drawn at 0.001%; a hollow marker is a cost "
        "the truncation could not certify."
    )
    return fig, caption


@styled
def fig_optimal_switching(switch: pd.DataFrame, title: str) -> tuple[Figure, str]:
    """The optimal switching curve of one C = 2 instance beside PI's straight line:
    for each count at the other dedicated server (a colour), the largest count at server 1
    at which a class-1 arrival still goes to server 1, against the count at server 0.
    ``switch``: :func:`~.optimal_study.switching_rows`."""
    require_columns(switch, ["x_other", "x0", "optimal", "pi", "pi_slope"], "switch")
    fig, ax = new_figure(1, 1, figsize=(5.2, 4.0))
    groups = list(switch.groupby("x_other", sort=True))
    for k, (xo, grp) in enumerate(groups):
        color = PALETTE[k % len(PALETTE)]
        shift = (k - (len(groups) - 1) / 2) * 0.08  # overlapping curves stay visible
        ax.plot(grp["x0"].to_numpy(), grp["optimal"].to_numpy() + shift, color=color,
                marker="o", ms=3.5, lw=1.2, drawstyle="steps-post",
                label=f"optimal, $x_2$ = {xo}")  # fmt: skip
    x0 = switch["x0"].to_numpy()
    top = int(np.max(x0))
    ratio = float(switch["pi_slope"].iloc[0])
    line = np.linspace(0, top, 200)
    ax.plot(line, ratio * (line + 1) - 1, color="black", ls="--", lw=1.2,
            label="PI: $w_1 (x_1 + 1) = w_0 (x_0 + 1)$, any $x_2$")  # fmt: skip
    ax.set_xlim(0, top)
    ax.set_ylim(-1.5, top + 0.5)
    ax.set_xlabel("jobs at the shared server 0, $x_0$")
    ax.set_ylabel("largest $x_1$ routed to server 1 (jobs)")
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    caption = (
        f"The optimal switching curve (ours), {title}: a class-1 arrival goes to its "
        "dedicated server 1 when x_1 is at most the curve, else to server 0, for several "
        "counts x_2 at server 2 (markers at integer counts, curves offset slightly where they "
        "overlap); PI routes to server 1 below the dashed straight line w_1 (x_1 + 1) = "
        "w_0 (x_0 + 1), whatever x_2. Drawn up to half the certified truncation level."
    )
    return fig, caption
