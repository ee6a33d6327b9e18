"""Figures of Miguelez, Doncel & Prabhu (2022), drawn from the pipeline's tidy tables.

One pure function per figure: each takes :class:`pandas.DataFrame` objects (schemas in the
docstrings) and parameters, and returns ``(fig, caption)``; nothing is computed here beyond
reshaping, and nothing is written (use :func:`queue_routing.plotting.save_figure`). Figs. 2-5
are reconstructions: the paper's pages holding them are missing from our source text, so their
parameters are ours (``docs/multiskill.md#what-the-source-text-lacked-and-what-we-reconstructed``),
and their captions say so.

Units: intensities ``eta`` and capacities ``mu`` in work per unit time; loads ``rho``
dimensionless; costs are mean holding cost rates ``sum_j c_j rho_j/(1 - rho_j)`` (cost per
unit time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, Patch
from matplotlib.path import Path as MplPath
from matplotlib.ticker import MaxNLocator

from ..labels import short_label
from ..plotting import (
    GREY,
    PALETTE,
    label_above,
    lighten,
    new_figure,
    require_columns,
    styled,
)
from ..user_policy import policy_label
from .instances import TABLE1

__all__ = [
    "CAPTION_FIGURE",
    "CASE_PARTITION_TEXT",
    "PAPER",
    "fig1_schematic",
    "fig2_case_map",
    "fig3_loads",
    "fig4_costs",
    "fig5_region",
    "fig6_trajectories",
    "fig7_iterations",
    "fig8_policies_vs_size",
    "fig9_policies_vs_load",
    "fig_job_sizes",
]

#: How captions cite the reproduced paper.
PAPER = "Miguelez, Doncel & Prabhu (2022)"

#: The paper's figure reproduced by each function of this module.
CAPTION_FIGURE: dict[str, str] = {
    "fig1": "Fig. 1",
    "fig2": "Fig. 2",
    "fig3": "Fig. 3",
    "fig4": "Fig. 4",
    "fig5": "Fig. 5",
    "fig6": "Fig. 6",
    "fig7": "Fig. 7",
}

#: Partition ``(set of class 1, set of class 2)`` of each C = 2 case, paper numbering in the
#: frame ``delta_1 <= delta_2``; case 7 is not in the paper (see :mod:`.two_class`).
CASE_PARTITION_TEXT: dict[int, tuple[str, str]] = {
    1: ("d", "d"),
    2: ("d", "b"),
    3: ("d", "0"),
    4: ("0", "0"),
    5: ("b", "b"),
    6: ("b", "d"),
    7: ("b", "0"),
}

#: Colour of each C = 2 case in Fig. 2 (0 = unstable, 8 = any other value).
_CASE_COLORS = {
    0: GREY,
    1: lighten(PALETTE[5], 0.35),  # sky blue
    2: lighten(PALETTE[2], 0.45),  # bluish green
    3: lighten(PALETTE[3], 0.35),  # orange
    4: lighten(PALETTE[1], 0.35),  # vermillion
    5: lighten(PALETTE[4], 0.35),  # reddish purple
    6: lighten(PALETTE[6], 0.10),  # yellow
    7: lighten(PALETTE[0], 0.45),  # blue
    8: "#555555",
}

#: Region colours of Figs. 4(b) and 5.
_MS_CHEAPER = lighten(PALETTE[0], 0.55)
_AS_CHEAPER = lighten(PALETTE[3], 0.45)
_TIE = "#F4F4F4"

_UPDATE_TEXT = {
    "jacobi": "jacobi update: every misclassified class moves at once",
    "single": "single update: one misclassified class, chosen at random (seeded), moves "
    "per iteration",
}

_ETA_UNIT = "work per unit time"
_COST_LABEL = "optimal holding cost (cost per unit time)"


# -- helpers -------------------------------------------------------------------------------
_require = require_columns


def _vec(values: Sequence[float] | np.ndarray) -> str:
    """``(1, 2.5, 3)``: a parameter vector for captions."""
    return "(" + ", ".join(f"{float(v):g}" for v in np.ravel(values)) + ")"


def _params(mu, cost) -> str:
    return f"μ = {_vec(mu)} and c = {_vec(cost)} (index 0 = the multi-skilled server)"


def _reconstructed(number: int) -> str:
    return (
        f"Reconstructed Fig. {number} of {PAPER}: the paper's pages with this figure are "
        "missing from our source, so the figure and its parameters are a reconstruction."
    )


def _grid(df: pd.DataFrame, value: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(eta1 values, eta2 values, Z[eta2, eta1])`` from a long table on a grid."""
    if df.duplicated(["eta1", "eta2"]).any():
        raise ValueError(f"grid of {value!r} has duplicate (eta1, eta2) points")
    wide = df.pivot(index="eta2", columns="eta1", values=value).sort_index().sort_index(axis=1)
    return (
        wide.columns.to_numpy(float),
        wide.index.to_numpy(float),
        wide.to_numpy(dtype=float, na_value=np.nan),
    )


def _draw_categories(ax, x, y, codes: np.ndarray, colors: Sequence) -> None:
    """Draw integer category codes ``0..len(colors)-1`` (NaN: transparent) as cells."""
    cmap = ListedColormap(list(colors))
    norm = BoundaryNorm(np.arange(len(colors) + 1) - 0.5, cmap.N)
    ax.pcolormesh(
        x,
        y,
        np.ma.masked_invalid(codes),
        cmap=cmap,
        norm=norm,
        shading="nearest",
        rasterized=True,
        zorder=0,
    )


def _plane_axes(ax, x, y) -> None:
    ax.set_xlabel(f"class-1 intensity $\\eta_1$ ({_ETA_UNIT})")
    ax.set_ylabel(f"class-2 intensity $\\eta_2$ ({_ETA_UNIT})")
    ax.set_xlim(x.min(), x.max())
    ax.set_ylim(y.min(), y.max())
    ax.grid(False)
    span_x, span_y = np.ptp(x), np.ptp(y)
    if span_x > 0 and span_y > 0 and 0.5 <= span_x / span_y <= 2.0:
        ax.set_aspect("equal", adjustable="box")


def _draw_curves(ax, curve: pd.DataFrame, group: str, **style) -> bool:
    """Plot ``eta2`` against ``eta1`` per group, in data order (NaN breaks a line)."""
    drawn = False
    for _, part in curve.groupby(group, sort=False):
        ax.plot(part["eta1"].to_numpy(float), part["eta2"].to_numpy(float), **style)
        drawn = drawn or bool(part[["eta1", "eta2"]].notna().all(axis=1).any())
    return drawn


def _draw_region(ax, region: pd.DataFrame) -> list[Patch]:
    """Shade the sign of ``difference`` = all sharing - multi-skilled; legend patches."""
    x, y, diff = _grid(region, "difference")
    finite = np.abs(diff[np.isfinite(diff)])
    tol = 1e-9 * (finite.max() if finite.size else 0.0)
    codes = np.full(diff.shape, 0.0)  # 0: unstable (NaN difference)
    with np.errstate(invalid="ignore"):
        codes[diff > tol] = 1
        codes[diff < -tol] = 2
        codes[np.abs(diff) <= tol] = 3
    _draw_categories(ax, x, y, codes, [GREY, _MS_CHEAPER, _AS_CHEAPER, _TIE])
    labels = {
        0: ("unstable (no finite cost)", GREY),
        1: ("multi-skilled cheaper", _MS_CHEAPER),
        2: ("all sharing cheaper", _AS_CHEAPER),
        3: ("equal cost", _TIE),
    }
    present = set(np.unique(codes).astype(int))
    handles = [
        Patch(facecolor=labels[k][1], edgecolor="0.5", label=labels[k][0])
        for k in (1, 2, 3, 0)
        if k in present
    ]
    _plane_axes(ax, x, y)
    return handles


# -- Fig. 1 --------------------------------------------------------------------------------
def _arrow(ax, start, end, **kw) -> None:
    style = {
        "arrowstyle": "-|>",
        "mutation_scale": 11,
        "lw": 1.2,
        "color": "0.15",
        "shrinkA": 0,
        "shrinkB": 0,
    }
    style.update(kw)
    ax.add_patch(FancyArrowPatch(start, end, **style))


def _polyline_arrow(ax, points) -> None:
    codes = [MplPath.MOVETO] + [MplPath.LINETO] * (len(points) - 1)
    ax.add_patch(
        FancyArrowPatch(
            path=MplPath(points, codes), arrowstyle="-|>", mutation_scale=11, lw=1.2, color="0.15"
        )
    )


def _server(ax, center, radius: float, name: str, *, fill, lw: float, fontsize: float) -> None:
    """A processor-sharing server of Fig. 1: a circle filled with ``fill`` and its name."""
    ax.add_patch(Circle(center, radius, facecolor=fill, edgecolor="0.15", lw=lw, zorder=2))
    ax.text(*center, name, ha="center", va="center", fontsize=fontsize)


@styled
def fig1_schematic(n_shown: int = 3) -> tuple[Figure, str]:
    """Fig. 1: the model, drawn by code.

    Classes ``1..n_shown-1`` and ``C`` are drawn (vertical dots stand for the others). Class i
    arrives with intensity eta_i and is routed (Bernoulli) to its dedicated PS server i with
    probability p_i and to the multi-skilled PS server 0 with probability 1 - p_i.
    """
    if n_shown < 2:
        raise ValueError(f"n_shown must be >= 2 (classes 1..n_shown-1 and C), got {n_shown}")
    names = [str(i) for i in range(1, n_shown)] + ["C"]
    dy = 1.5
    slots = [*range(n_shown - 1), n_shown]  # slot n_shown - 1 holds the vertical dots
    ys = [-dy * s for s in slots]
    y0 = 0.5 * (ys[0] + ys[-1])
    x_in, x_split, x_ded, r_ded = 0.6, 2.0, 4.3, 0.38
    x_turn, x_srv0, r0 = 5.9, 7.8, 0.62
    lane = 0.68

    height = dy * n_shown + 1.7
    fig, ax = new_figure(figsize=(7.4, 0.7 * height + 0.6))
    ax.set_axis_off()
    ax.set_aspect("equal")
    ax.set_xlim(-0.9, 9.9)
    ax.set_ylim(ys[-1] - 1.15, ys[0] + 0.95)

    for name, y in zip(names, ys, strict=True):
        sub = "{" + name + "}"
        ax.text(x_in - 0.1, y, f"class {name}", ha="right", va="center")
        _arrow(ax, (x_in, y), (x_split - 0.07, y))
        ax.text(0.5 * (x_in + x_split), y + 0.1, f"$\\eta_{sub}$", ha="center", va="bottom")
        ax.add_patch(Circle((x_split, y), 0.07, color="0.15", zorder=3))
        # p_i: to the dedicated server i.
        _arrow(ax, (x_split, y), (x_ded - r_ded, y))
        ax.text(0.5 * (x_split + x_ded - r_ded), y + 0.1, f"$p_{sub}$", ha="center", va="bottom")
        _server(ax, (x_ded, y), r_ded, name, fill=lighten(PALETTE[5], 0.6), lw=1.2, fontsize=10)
        _arrow(ax, (x_ded + r_ded, y), (x_ded + r_ded + 0.75, y))
        ax.text(
            x_ded + r_ded + 0.06,
            y + 0.12,
            f"$\\mu_{sub},\\ c_{sub}$",
            ha="left",
            va="bottom",
            fontsize=9,
        )
        # 1 - p_i: along a lane under the row, then to server 0.
        y_lane = y - lane
        angle = np.arctan2(y0 - y_lane, x_srv0 - x_turn)
        end = (x_srv0 - r0 * np.cos(angle), y0 - r0 * np.sin(angle))
        _polyline_arrow(ax, [(x_split, y), (x_split + 0.45, y_lane), (x_turn, y_lane), end])
        ax.text(x_split + 0.6, y_lane - 0.06, f"$1-p_{sub}$", ha="left", va="top", fontsize=9)

    y_dots = -dy * (n_shown - 1)
    for x in (x_in - 0.55, x_split, x_ded):
        ax.text(x, y_dots + 0.2, "⋮", ha="center", va="center", fontsize=14)

    _server(ax, (x_srv0, y0), r0, "0", fill=lighten(PALETTE[3], 0.45), lw=1.4, fontsize=11)
    ax.text(x_srv0, y0 - r0 - 0.12, "$\\mu_0,\\ c_0$", ha="center", va="top", fontsize=9)
    ax.text(x_srv0, y0 + r0 + 0.12, "multi-skilled\nserver 0", ha="center", va="bottom", fontsize=9)
    _arrow(ax, (x_srv0 + r0, y0), (x_srv0 + r0 + 0.8, y0))
    ax.text(x_ded, ys[0] + 0.55, "dedicated servers", ha="center", va="bottom", fontsize=9)

    caption = (
        f"Fig. 1 of {PAPER} (redrawn): the multi-skilled server model. Class i = 1..C "
        "arrives with traffic intensity η_i (work per unit time) and is routed by a Bernoulli "
        "split: with probability p_i to its dedicated server i, with probability 1 − p_i to "
        "the multi-skilled server 0, which serves every class. All servers are processor "
        "sharing; server j has capacity μ_j (work per unit time) and holding cost c_j (cost "
        "per job per unit time). Dots stand for classes and servers not drawn."
    )
    return fig, caption


# -- Fig. 2 --------------------------------------------------------------------------------
def _case_sets(case: int, swapped: bool) -> dict[str, list[str]]:
    """``{set: [classes]}`` of a case in the original class labels, class 1's set first."""
    sets = CASE_PARTITION_TEXT[case]
    if swapped:  # case numbers are in the frame delta_1 <= delta_2 (classes relabelled)
        sets = sets[::-1]
    members: dict[str, list[str]] = {}
    for k, s in enumerate(sets, start=1):
        members.setdefault(s, []).append(str(k))
    return members


def _case_label(case: int, swapped: bool) -> str:
    """Legend text of a case (mathtext), in the original class labels."""
    members = _case_sets(case, swapped)
    text = ",\\ ".join(f"C_{s}=\\{{{','.join(m)}\\}}" for s, m in members.items())
    extra = " (not in the paper)" if case == 7 else ""
    return f"{case}: ${text}${extra}"


def _case_text(case: int, swapped: bool) -> str:
    """Plain-text partition of a case, in the original class labels."""
    members = _case_sets(case, swapped)
    return ", ".join(f"C_{s} = {{{', '.join(m)}}}" for s, m in members.items())


@styled
def fig2_case_map(
    case_map: pd.DataFrame,
    boundaries: pd.DataFrame,
    mu,
    cost,
) -> tuple[Figure, str]:
    """Fig. 2 (reconstructed): which C = 2 case is optimal over the (eta_1, eta_2) plane.

    Parameters
    ----------
    case_map:
        Columns ``eta1, eta2, case`` on a grid: the case number 1..6 of the paper's Sec. 4.1
        (7 = ``C_b={1}, C_0={2}``, not in the paper), numbered in the frame
        ``delta_1 <= delta_2``; 0 = unstable (no routing is stable). Other values are drawn
        dark grey as "other".
    boundaries:
        Columns ``boundary, eta1, eta2``: closed-form boundary curves, one line per
        ``boundary`` name (``"stability"`` is drawn dashed); NaN breaks a line.
    mu, cost:
        ``(mu_0, mu_1, mu_2)`` and ``(c_0, c_1, c_2)``.
    """
    _require(case_map, ["eta1", "eta2", "case"], "case_map")
    _require(boundaries, ["boundary", "eta1", "eta2"], "boundaries")
    if case_map.empty:
        raise ValueError("case_map is empty")
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    dlt = np.sqrt((cost[1:] / mu[1:]) / (cost[0] / mu[0]))
    swapped = bool(dlt[0] > dlt[1])

    x, y, z = _grid(case_map, "case")
    codes = np.where(np.isfinite(z) & ~np.isin(z, list(range(8))), 8, z)
    fig, ax = new_figure(figsize=(8.2, 4.8))
    _draw_categories(ax, x, y, codes, [_CASE_COLORS[k] for k in range(9)])
    _plane_axes(ax, x, y)

    is_stab = boundaries["boundary"].astype(str).eq("stability")
    has_cases = _draw_curves(ax, boundaries[~is_stab], "boundary", color="black", lw=1.4)
    has_stab = _draw_curves(ax, boundaries[is_stab], "boundary", color="0.25", lw=1.4, ls="--")

    present = {int(v) for v in np.unique(codes[np.isfinite(codes)])}
    handles: list = [
        Patch(facecolor=_CASE_COLORS[k], edgecolor="0.5", label=_case_label(k, swapped))
        for k in range(1, 8)
        if k in present
    ]
    if 0 in present:
        handles.append(Patch(facecolor=GREY, edgecolor="0.5", label="0: unstable"))
    if 8 in present:
        handles.append(Patch(facecolor=_CASE_COLORS[8], edgecolor="0.5", label="other"))
    if has_cases:
        handles.append(Line2D([], [], color="black", lw=1.4, label="closed-form boundary"))
    if has_stab:
        handles.append(Line2D([], [], color="0.25", lw=1.4, ls="--", label="stability boundary"))
    ax.legend(
        handles=handles,
        title="optimal case",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
    )
    ax.set_title("Optimal case of the C = 2 model")

    shown = sorted(k for k in present if 1 <= k <= 7)
    seventh = (
        f", plus case 7 ({_case_text(7, swapped)}), which the paper does not list but "
        "is optimal on a region of positive area"
        if 7 in present
        else ""
    )
    frame = (
        " Case numbers follow the paper in the frame δ_1 ≤ δ_2; here δ_1 > δ_2, so the "
        "classes were relabelled to number the cases and the legend gives the sets in "
        "the original class labels."
        if swapped
        else ""
    )
    caption = (
        f"{_reconstructed(2)} Optimal case of the two-class model over the (η_1, η_2) plane "
        f"(intensities in work per unit time) for {_params(mu, cost)}, "
        f"δ = {_vec(np.round(dlt, 4))}. Colours: the optimal partition into C_d (dedicated "
        "only), C_b (both servers) and C_0 (multi-skilled server only), numbered as the six "
        f"cases of Sec. 4.1{seventh} (cases present: {', '.join(map(str, shown)) or 'none'}); "
        "grey: no routing is stable (Proposition 1). "
        f"Lines: closed-form case boundaries (dashed: stability boundary).{frame}"
    )
    return fig, caption


# -- Fig. 3 --------------------------------------------------------------------------------
@styled
def fig3_loads(
    loads: pd.DataFrame,
    mu,
    cost,
    eta1: float,
    max_markers: int = 25,
) -> tuple[Figure, str]:
    """Fig. 3 (reconstructed): optimal loads rho_0*, rho_1*, rho_2* against eta_2.

    ``loads`` has columns ``eta2, source, rho0, rho1, rho2``; source ``"closed-form"`` is drawn
    as lines, ``"exact"`` as markers (at most ``max_markers`` per server, evenly subsampled),
    any other source as dashed lines.
    """
    _require(loads, ["eta2", "source", "rho0", "rho1", "rho2"], "loads")
    if loads.empty:
        raise ValueError("loads is empty")
    fig, ax = new_figure(figsize=(7.6, 4.4))
    servers = ("rho0", "rho1", "rho2")
    sources = list(dict.fromkeys(loads["source"].astype(str)))
    for source in sources:
        part = loads[loads["source"].astype(str) == source].sort_values("eta2")
        x = part["eta2"].to_numpy(float)
        for j, col in enumerate(servers):
            yv = part[col].to_numpy(float)
            if source == "exact":
                keep = np.unique(
                    np.linspace(0, len(x) - 1, min(len(x), max_markers)).round().astype(int)
                )
                ax.plot(
                    x[keep],
                    yv[keep],
                    ls="none",
                    marker="o",
                    ms=5.5,
                    mfc="none",
                    mew=1.3,
                    color=PALETTE[j],
                    zorder=3,
                )
            else:
                ax.plot(
                    x,
                    yv,
                    color=PALETTE[j],
                    lw=1.8,
                    ls="-" if source == "closed-form" else "--",
                    zorder=2,
                )
    handles = [
        Line2D(
            [],
            [],
            color=PALETTE[j],
            lw=1.8,
            label=f"$\\rho_{j}^*$ ({'multi-skilled ' if j == 0 else 'dedicated '}server {j})",
        )
        for j in range(3)
    ]
    names = {"closed-form": "closed form (Sec. 4.1)", "exact": "exact solver"}
    for source in sources:
        if source == "exact":
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="none",
                    marker="o",
                    mfc="none",
                    mew=1.3,
                    color="0.2",
                    label=names[source],
                )
            )
        else:
            handles.append(
                Line2D(
                    [],
                    [],
                    color="0.2",
                    lw=1.8,
                    ls="-" if source == "closed-form" else "--",
                    label=names.get(source, source),
                )
            )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    ax.set_xlabel(f"class-2 intensity $\\eta_2$ ({_ETA_UNIT})")
    ax.set_ylabel("optimal load $\\rho_j^*$ (dimensionless)")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(f"Optimal loads of the C = 2 model, $\\eta_1$ = {eta1:g}")
    caption = (
        f"{_reconstructed(3)} Optimal loads ρ_0, ρ_1, ρ_2 (dimensionless) against the "
        f"class-2 intensity η_2 (work per unit time), with η_1 = {eta1:g} fixed and "
        f"{_params(mu, cost)}. Lines: the closed-form solution of Sec. 4.1; open markers: "
        "the exact solver (independent implementation), subsampled for legibility."
    )
    return fig, caption


# -- Fig. 4 --------------------------------------------------------------------------------
_COST_SERIES = (
    ("multiskilled", "multi-skilled (optimal)", PALETTE[0], "-"),
    ("no_sharing", "no sharing", PALETTE[1], "--"),
    ("all_sharing", "all sharing, $\\tilde c_j = c_0$", PALETTE[2], "-."),
    ("all_sharing_same_costs", "all sharing, same costs $c_j$", PALETTE[4], ":"),
)


def _near(values: pd.Series, target: float) -> np.ndarray:
    return np.isclose(values.to_numpy(float), target, rtol=1e-9, atol=1e-12)


@styled
def fig4_costs(
    costs: pd.DataFrame,
    switching_points: pd.DataFrame,
    switching_curve: pd.DataFrame,
    mu,
    cost,
    eta1: float,
    region: pd.DataFrame | None = None,
) -> tuple[Figure, str]:
    """Fig. 4 (reconstructed): (a) cost against eta_2 at fixed eta_1; (b) switching curve.

    Parameters
    ----------
    costs:
        Columns ``eta2, multiskilled, no_sharing, all_sharing, all_sharing_same_costs``:
        optimal cost per unit time, NaN (or inf) where the model is unstable.
    switching_points:
        Columns ``eta1, eta2``: points where multi-skilled and all sharing cost the same;
        the rows with ``eta1`` equal to the argument ``eta1`` are marked in panel (a).
    switching_curve:
        Columns ``eta1, eta2, branch``: the curve, one line per branch (NaN breaks a line).
    region:
        Optional columns ``eta1, eta2, difference`` (= all sharing - multi-skilled) on a
        grid: its sign is shaded in panel (b).
    """
    _require(costs, ["eta2", *(s[0] for s in _COST_SERIES)], "costs")
    _require(switching_points, ["eta1", "eta2"], "switching_points")
    _require(switching_curve, ["eta1", "eta2", "branch"], "switching_curve")
    if costs.empty:
        raise ValueError("costs is empty")
    fig, (ax_a, ax_b) = new_figure(1, 2, figsize=(11.0, 4.9))

    data = costs.sort_values("eta2")
    x = data["eta2"].to_numpy(float)
    positive = []
    for col, label, color, ls in _COST_SERIES:
        yv = data[col].to_numpy(float)
        yv = np.where(np.isfinite(yv), yv, np.nan)
        positive.append(yv[yv > 0])
        ax_a.plot(x, yv, color=color, ls=ls, lw=1.9 if col == "multiskilled" else 1.6, label=label)
    pos = np.concatenate(positive)
    if pos.size and pos.max() / pos.min() > 30:
        ax_a.set_yscale("log")
        ax_a.grid(True, which="major")
    points = np.sort(
        switching_points.loc[_near(switching_points["eta1"], eta1), "eta2"].dropna().to_numpy(float)
    )
    for k, p in enumerate(points):
        ax_a.axvline(
            p, color="black", ls=(0, (1, 2)), lw=1.3, label="switching point" if k == 0 else None
        )
    ax_a.set_xlabel(f"class-2 intensity $\\eta_2$ ({_ETA_UNIT})")
    ax_a.set_ylabel(_COST_LABEL)
    ax_a.set_title(f"(a) optimal cost, $\\eta_1$ = {eta1:g}", loc="left")
    ax_a.legend(loc="best")

    handles: list = []
    if region is not None:
        _require(region, ["eta1", "eta2", "difference"], "region")
        handles += _draw_region(ax_b, region)
    else:
        ax_b.set_xlabel(f"class-1 intensity $\\eta_1$ ({_ETA_UNIT})")
        ax_b.set_ylabel(f"class-2 intensity $\\eta_2$ ({_ETA_UNIT})")
    if _draw_curves(ax_b, switching_curve, "branch", color="black", lw=1.8):
        handles.append(Line2D([], [], color="black", lw=1.8, label="switching curve"))
    ax_b.axvline(eta1, color="0.2", ls=(0, (1, 2)), lw=1.2)
    handles.append(
        Line2D([], [], color="0.2", ls=(0, (1, 2)), lw=1.2, label=f"$\\eta_1$ = {eta1:g} (panel a)")
    )
    if points.size:
        ax_b.plot(
            np.full(points.size, eta1), points, ls="none", marker="o", ms=5, color="black", zorder=4
        )
    ax_b.set_title("(b) switching curve", loc="left")
    ax_b.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)

    where = (
        f"switching point(s) at η_2 = {', '.join(f'{p:.4g}' for p in points)} (dotted)"
        if points.size
        else "no switching point in the range shown"
    )
    shade = (
        "; shading: the sign of the cost difference on a grid (grey: unstable)"
        if region is not None
        else ""
    )
    caption = (
        f"{_reconstructed(4)} {_params(mu, cost)}. (a) Optimal holding cost (cost per unit "
        f"time) against the class-2 intensity η_2 at η_1 = {eta1:g}: multi-skilled system, "
        "no sharing, all sharing with every server charged the multi-skilled cost c̃_j = c_0, "
        f"and all sharing with the same costs c_j (never worse than multi-skilled); {where}. "
        "Curves stop where a model is unstable. (b) The switching curve in the (η_1, η_2) "
        f"plane, where multi-skilled and all sharing (c̃_j = c_0) cost the same{shade}."
    )
    return fig, caption


# -- Fig. 5 --------------------------------------------------------------------------------
@styled
def fig5_region(
    region: pd.DataFrame,
    switching_curve: pd.DataFrame,
    mu,
    cost,
) -> tuple[Figure, str]:
    """Fig. 5 (reconstructed): where the multi-skilled system beats all sharing.

    ``region`` has columns ``eta1, eta2, multiskilled, all_sharing, difference`` on a grid
    (``difference`` = all sharing - multi-skilled, NaN where unstable); ``switching_curve``
    has columns ``eta1, eta2, branch`` (one line per branch, NaN breaks a line).
    """
    _require(region, ["eta1", "eta2", "multiskilled", "all_sharing", "difference"], "region")
    _require(switching_curve, ["eta1", "eta2", "branch"], "switching_curve")
    if region.empty:
        raise ValueError("region is empty")
    fig, ax = new_figure(figsize=(7.6, 4.8))
    handles = _draw_region(ax, region)
    if _draw_curves(ax, switching_curve, "branch", color="black", lw=1.8):
        handles.append(Line2D([], [], color="black", lw=1.8, label="switching curve"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    ax.set_title("Multi-skilled vs all sharing ($\\tilde c_j = c_0$)")
    caption = (
        f"{_reconstructed(5)} Equal capacities, different holding costs: {_params(mu, cost)}. "
        "Blue: the optimal multi-skilled system costs less (holding cost per unit time) than "
        "the all-sharing system in which every server is charged the multi-skilled cost "
        "c̃_j = c_0; orange: all sharing costs less; grey: unstable (the cost difference is "
        "undefined). Black: the switching "
        "curve (equal cost), computed by root finding."
    )
    return fig, caption


# -- Fig. 6 --------------------------------------------------------------------------------
_INIT_STYLES = ("-", "--", ":", "-.")
_INIT_MARKERS = ("o", "s", "^", "D")


def _status_note(status: str) -> str:
    s = str(status).lower()
    if s in ("", "converged", "ok"):
        return ""
    if "cycl" in s:
        return " (cycles)"
    if s == "cap":
        return " (iteration cap)"
    return f" ({status})"


def _math_sets(label: str) -> str:
    """``"C_d={1,3}"`` -> ``"$C_d$={1,3}"`` (set names as math in legends)."""
    return re.sub(r"\bC_([db0])\b", r"$C_\1$", label)


@styled
def fig6_trajectories(
    trajectories: pd.DataFrame,
    update: str = "single",
    paper_rounding: bool = False,
    status: Mapping[str, str] | None = None,
    groups: Sequence[Sequence[int]] | None = None,
) -> tuple[Figure, str]:
    """Fig. 6: load of each server per iteration of Algorithm 1 on Table 1.

    ``trajectories`` has columns ``init, update, paper_rounding, iteration, server, load``;
    only the rows of ``update`` and ``paper_rounding`` are drawn. One line style per initial
    partition (``init``, in order of first appearance), one colour per server; ``groups``
    gives the servers of each panel (default: the servers split in two halves, i.e. 0-2 and
    3-5 on Table 1, as in the paper). ``status`` maps an init label to its run status
    (``"cycle"`` adds "(cycles)" to the legend).
    """
    _require(
        trajectories,
        ["init", "update", "paper_rounding", "iteration", "server", "load"],
        "trajectories",
    )
    sel = trajectories[
        (trajectories["update"].astype(str) == update)
        & (trajectories["paper_rounding"].astype(bool) == bool(paper_rounding))
    ]
    if sel.empty:
        raise ValueError(f"no trajectories for update={update!r}, paper_rounding={paper_rounding}")
    inits = list(dict.fromkeys(sel["init"].astype(str)))
    servers = sorted(int(s) for s in sel["server"].unique())
    if groups is None:
        half = (len(servers) + 1) // 2
        groups = [servers[:half], servers[half:]] if len(servers) > 1 else [servers]
    groups = [list(g) for g in groups if len(g)]
    status = dict(status or {})

    fig, axes = new_figure(len(groups), 1, figsize=(7.6, 2.7 * len(groups) + 1.0), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, group in zip(axes, groups, strict=True):
        for k, init in enumerate(inits):
            run = sel[sel["init"].astype(str) == init]
            for server in group:
                pts = run[run["server"].astype(int) == server].sort_values("iteration")
                ax.plot(
                    pts["iteration"].to_numpy(float),
                    pts["load"].to_numpy(float),
                    color=PALETTE[server % 6],
                    ls=_INIT_STYLES[k % 4],
                    marker=_INIT_MARKERS[k % 4],
                    ms=4.5,
                    mfc="white",
                    lw=1.5,
                    zorder=3 - 0.1 * k,
                )
        ax.set_ylabel("load $\\rho_j$ (dimensionless)")
        ax.set_title("servers " + ", ".join(map(str, group)), loc="left", fontsize=10)
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
        ax.legend(
            handles=[
                Line2D([], [], color=PALETTE[s % 6], lw=2.2, label=f"server {s}") for s in group
            ],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0.0,
        )
    axes[-1].set_xlabel("iteration (partition changes)")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    style_handles = [
        Line2D(
            [],
            [],
            color="0.25",
            ls=_INIT_STYLES[k % 4],
            marker=_INIT_MARKERS[k % 4],
            mfc="white",
            ms=4.5,
            lw=1.5,
            label=_math_sets(init) + _status_note(status.get(init, "")),
        )
        for k, init in enumerate(inits)
    ]
    fig.legend(
        handles=style_handles,
        title="initial partition",
        loc="outside upper center",
        ncols=min(len(inits), 3),
    )

    rounding = (
        "with the authors' rounding (c/μ and δ to 2 decimals, loads to 3)"
        if paper_rounding
        else "without rounding"
    )
    notes = [
        init + _status_note(st) for init, st in status.items() if init in inits and _status_note(st)
    ]
    ended = " Runs that did not converge: " + "; ".join(notes) + "." if notes else ""
    caption = (
        f"Fig. 6 of {PAPER}: load of each server (dimensionless) after each partition change "
        f"of Algorithm 1 on the Table 1 instance (μ = {_vec(TABLE1['mu'])}, "
        f"c = {_vec(TABLE1['cost'])}, η = {_vec(TABLE1['eta'])}), from the three initial "
        f"partitions (line styles); {_UPDATE_TEXT.get(update, f'update rule {update}')}, "
        f"{rounding}. Iteration 0 is the initial partition.{ended}"
    )
    return fig, caption


# -- Fig. 7 --------------------------------------------------------------------------------
@styled
def fig7_iterations(stats: pd.DataFrame, update: str) -> tuple[Figure, str]:
    """Fig. 7: minimum and maximum iterations of Algorithm 1 for each C (one update rule).

    ``stats`` has columns ``n_classes, update, runs, min, median, max, not_converged``
    (``min..max`` over converged runs, NaN if none converged); only the rows of ``update``
    are drawn. Bars: the minimum, and stacked on it the extra up to the maximum; a tick
    marks the median; a number above a bar counts the runs that did not converge.
    """
    _require(
        stats, ["n_classes", "update", "runs", "min", "median", "max", "not_converged"], "stats"
    )
    sel = stats[stats["update"].astype(str) == update].sort_values("n_classes")
    if sel.empty:
        raise ValueError(f"no iteration statistics for update={update!r}")
    cs = sel["n_classes"].to_numpy(int)
    lo = sel["min"].to_numpy(float)
    hi = sel["max"].to_numpy(float)
    med = sel["median"].to_numpy(float)
    nc = sel["not_converged"].fillna(0).to_numpy(int)
    runs = sel["runs"].to_numpy(int)
    pos = np.arange(cs.size)

    fig, ax = new_figure(figsize=(8.4, 4.4))
    base = np.nan_to_num(lo)
    ax.bar(pos, base, width=0.7, color=PALETTE[0], label="minimum", zorder=2)
    ax.bar(
        pos,
        np.nan_to_num(hi - lo),
        bottom=base,
        width=0.7,
        color=lighten(PALETTE[0], 0.6),
        edgecolor=PALETTE[0],
        lw=0.6,
        label="extra up to\nthe maximum",
        zorder=2,
    )
    ax.plot(
        pos, med, ls="none", marker="_", ms=14, mew=2.0, color="black", label="median", zorder=3
    )
    top = np.nan_to_num(np.fmax(hi, lo))
    ymax = max(1.0, float(top.max()))
    for p, t, k in zip(pos, top, nc, strict=True):
        if k > 0:
            ax.text(
                p,
                t + 0.015 * ymax,
                str(k),
                ha="center",
                va="bottom",
                fontsize=8,
                color=PALETTE[1],
                fontweight="bold",
            )
    if (nc > 0).any():
        ax.plot(
            [],
            [],
            ls="none",
            marker="$n$",
            ms=7,
            color=PALETTE[1],
            label="n runs did not\nconverge",
        )
    ax.set_ylim(0, ymax * 1.12)
    ax.set_xticks(pos, [str(c) for c in cs])
    if cs.size > 12:
        ax.tick_params(axis="x", labelsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(False, axis="x")
    ax.set_xlabel("number of classes C")
    ax.set_ylabel("iterations (partition changes)")
    ax.set_title(f"Iterations of Algorithm 1, {update} update", loc="left")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(
        range(len(labels)), key=lambda k: (not labels[k].startswith(("min", "extra")), k)
    )
    ax.legend(
        [handles[k] for k in order],
        [labels[k] for k in order],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        labelspacing=0.9,
    )

    per_c = (
        f"{runs[0]} runs per C"
        if np.all(runs == runs[0])
        else f"{runs.min()}-{runs.max()} runs per C"
    )
    total_nc = int(nc.sum())
    caption = (
        f"Fig. 7 of {PAPER}: iterations (partition changes) of Algorithm 1 until it reaches a "
        f"fixed point, over random stable instances with C = {cs.min()}..{cs.max()} classes "
        f"({per_c}); "
        f"{_UPDATE_TEXT.get(update, f'update rule {update}')}. Dark bar: minimum; light bar "
        "stacked on it: the extra up to the maximum; tick: median (over converged runs). "
        + (
            f"Numbers above bars: runs that did not converge (cycled or hit the cap), "
            f"{total_nc} in total."
            if total_nc
            else "Every run converged."
        )
    )
    return fig, caption


# -- Index-policy simulations (ours, beyond the paper) ------------------------------------
_POLICY_STYLE = {
    "bernoulli": ("optimal Bernoulli (simulated)", "black", "o"),
    "jsq": ("JSQ", PALETTE[3], "s"),
    "led": ("least expected delay", PALETTE[2], "^"),
    "io": (r"IO index $c_j(x_j+1)/\mu_j$", PALETTE[1], "v"),
    "pi": (r"PI index $c_j(x_j+1)/(\mu_j-\lambda_j^*)$", PALETTE[0], "D"),
}


#: Colours and markers of user policies (``path.py:name``), in the order they appear.
_USER_STYLES = (("#CC79A7", "P"), ("#56B4E9", "X"), ("#000000", "*"), (GREY, "x"))


def _policy_label(policy: str, policies: Sequence[str] = ()) -> tuple[str, str, str]:
    """``(legend label, colour, marker)``: a built-in's style, or that of a user policy
    (``docs/README.md#your-own-policy``), labelled by its function's name and styled by
    its place among the user policies of ``policies``."""
    if policy in _POLICY_STYLE:
        return _POLICY_STYLE[policy]
    users = [p for p in policies if p not in _POLICY_STYLE]
    k = users.index(policy) if policy in users else 0
    color, marker = _USER_STYLES[k % len(_USER_STYLES)]
    return f"your policy: {policy_label(policy)}", color, marker


def _user_note(policies: Sequence[str]) -> str:
    """The caption's sentence on the user policies among ``policies`` (``""`` if none)."""
    users = [p for p in policies if p not in _POLICY_STYLE]
    if not users:
        return ""
    return (
        " Your policies (index functions of your own, docs/your-own-policy.md): "
        + "; ".join(users)
        + "."
    )


def _policy_short(policy: str) -> str:
    """Short name above a load (Fig. 9): JSQ, PI, ..., or a user policy's function name."""
    return short_label(policy)


_DYNAMIC = ("jsq", "led", "io", "pi")
_NOT_SEPARATED = "not separated"


def _budget(rows: pd.DataFrame) -> str:
    """``"; R paired replications of T time units after a warm-up of W"`` from the rows, or
    ``""``."""
    if not {"replications", "horizon"} <= set(rows.columns):
        return ""
    reps, horizon = int(rows["replications"].iloc[0]), float(rows["horizon"].iloc[0])
    warm = f" after a warm-up of {float(rows['warmup'].iloc[0]):g}" if "warmup" in rows else ""
    return f"; {reps} paired replications of {horizon:g} time units{warm}"


_PAIRING = (
    "Paired comparison: on each instance every policy runs on the same random numbers "
    "(common random numbers), each replication starts from the stationary law of optimal "
    "Bernoulli routing, and the simulated Bernoulli cost is the control variate of every "
    "ratio; error bars are 95% confidence intervals of the ratio."
)


@styled
def fig8_policies_vs_size(rows: pd.DataFrame) -> tuple[Figure, str]:
    """Paired ratio of each dynamic policy to the exact Bernoulli cost, against C.

    ``rows`` (:func:`~queue_routing.multiskill.experiments.policy_comparison_rows`) has
    columns ``n_classes, instance, policy, ratio, ratio_ci95, best``. One panel per dynamic
    policy; a dot per instance with its 95% interval (spread around its C), filled where the
    policy is the instance's Holm-separated best; the line is the median over the instances.
    """
    _require(rows, ["n_classes", "instance", "policy", "ratio", "ratio_ci95", "best"], "rows")
    policies = [p for p in dict.fromkeys(rows["policy"]) if p != "bernoulli"]
    ncols = 2 if len(policies) > 1 else 1
    nrows = -(-len(policies) // ncols)
    fig, axes = new_figure(
        nrows, ncols, figsize=(8.0, 2.6 * nrows + 0.6), sharex=True, sharey=True, squeeze=False
    )
    sizes = np.unique(rows["n_classes"].to_numpy())
    step = float(np.min(np.diff(sizes))) if sizes.size > 1 else 1.0
    n_inst = int(rows.groupby("n_classes")["instance"].nunique().max())
    for ax, policy in zip(axes.ravel(), policies, strict=False):
        sel = rows[rows["policy"] == policy].sort_values(["n_classes", "instance"])
        label, color, marker = _policy_label(policy, policies)
        ax.axhline(1.0, color="black", lw=0.8, ls=":", zorder=1)
        rank = sel.groupby("n_classes").cumcount().to_numpy()
        x = sel["n_classes"].to_numpy(float) + (rank - (n_inst - 1) / 2) * 0.6 * step / n_inst
        y = sel["ratio"].to_numpy(float)
        ci = sel["ratio_ci95"].to_numpy(float)
        best = (sel["best"] == policy).to_numpy()
        ax.errorbar(x, y, yerr=ci, fmt="none", ecolor=color, elinewidth=0.8, alpha=0.7)
        ax.plot(x[best], y[best], ls="none", marker=marker, ms=3.5, color=color)
        ax.plot(
            x[~best], y[~best], ls="none", marker=marker, ms=3.5, mfc="white", mec=color, mew=0.8
        )
        med = sel.groupby("n_classes")["ratio"].median()
        ax.plot(med.index, med.to_numpy(), color=color, lw=1.2, alpha=0.8)
        wins = int(best.sum())
        ax.set_title(f"{label}: separated best on {wins} of {len(sel)}", loc="left", fontsize=9)
    for ax in axes.ravel()[len(policies) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("number of classes C")
    for ax in axes[:, 0]:
        ax.set_ylabel("cost / optimal Bernoulli cost")
    handles = [
        Line2D([], [], ls="none", marker="o", color="black", ms=4, label="separated best"),
        Line2D(
            [],
            [],
            ls="none",
            marker="o",
            mfc="white",
            mec="black",
            ms=4,
            label="not the separated best",
        ),
        Line2D([], [], color="black", lw=1.2, label="median over the instances"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, frameon=False, fontsize=8)
    caption = (
        "Beyond " + PAPER + " (their Sec. 7 names JSQ-type policies as future work): mean "
        "holding cost rate of each dynamic routing policy on the random stable instances of "
        "Fig. 7, relative to the exact optimal Bernoulli cost Σ c_j ρ_j/(1−ρ_j), by exact "
        "simulation of the PS system with exponential job sizes (class i may use server i or "
        f"server 0): a dot per instance, {n_inst} per C"
        + _budget(rows)
        + ". "
        + _PAIRING
        + " Filled: the policy is the instance's best, separated from every other policy "
        "(Bernoulli included) by one-sided paired tests with Holm's correction at family-wise "
        "level 0.05; hollow: it is not (another policy is, or none is separated)."
        + _user_note(policies)
    )
    return fig, caption


@styled
def fig9_policies_vs_load(rows: pd.DataFrame) -> tuple[Figure, str]:
    """Paired ratio of each dynamic policy to the exact Bernoulli cost on Table 1 against a
    load scaling factor.

    ``rows`` has columns ``load_factor, policy, ratio, ratio_ci95, best``: dots with their
    95% intervals, side by side at each factor; the Holm-separated best of each factor (or
    "n.s.") is written above it.
    """
    _require(rows, ["load_factor", "policy", "ratio", "ratio_ci95", "best"], "rows")
    fig, ax = new_figure(figsize=(8.0, 4.6))
    ax.axhline(1.0, color="black", lw=0.8, ls=":", zorder=1)
    policies = [p for p in dict.fromkeys(rows["policy"]) if p != "bernoulli"]
    factors = np.unique(rows["load_factor"].to_numpy(float))
    step = float(np.min(np.diff(factors))) if factors.size > 1 else 0.1
    for k, policy in enumerate(policies):
        sel = rows[rows["policy"] == policy].sort_values("load_factor")
        f = sel["load_factor"].to_numpy(float)
        shift = (k - (len(policies) - 1) / 2) * 0.6 * step / len(policies)
        label, color, marker = _policy_label(policy, policies)
        ax.errorbar(
            f + shift,
            sel["ratio"].to_numpy(float),
            yerr=sel["ratio_ci95"].to_numpy(float),
            ls="none",
            marker=marker,
            ms=4,
            color=color,
            capsize=2,
            label=label,
        )
    verdicts = rows.drop_duplicates("load_factor").sort_values("load_factor")
    label_above(
        ax,
        verdicts["load_factor"].tolist(),
        ["n.s." if b == _NOT_SEPARATED else _policy_short(b) for b in verdicts["best"]],
    )
    ax.set_xticks(factors)
    ax.set_xlabel("load scaling factor s (intensities s·η of Table 1)")
    ax.set_ylabel("mean holding cost / optimal Bernoulli cost")
    ax.set_title("Dynamic routing vs optimal Bernoulli routing (Table 1)", loc="left", pad=16)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=True, fontsize=8)
    caption = (
        "Beyond " + PAPER + ": the Table 1 instance (Sec. 6.3) with every class intensity "
        "scaled by s; mean holding cost rate of each dynamic routing policy relative to the "
        "exact optimal Bernoulli cost at the same s, by exact simulation (exponential job "
        "sizes, PS servers" + _budget(rows) + "). " + _PAIRING + " Above each s: the policy "
        "separated from every other (Bernoulli included) by one-sided paired tests with "
        "Holm's correction at family-wise level 0.05, or n.s. (not separated)."
        + _user_note(policies)
    )
    return fig, caption


# -- General job sizes (ours) --------------------------------------------------------------
_LAW_MARKERS = {
    "deterministic": ("o", "deterministic"),
    "erlang": ("P", "Erlang"),
    "exponential": ("D", "exponential"),
    "hyperexponential": ("s", "hyperexponential (balanced means)"),
    "lognormal": ("^", "lognormal"),
}


@styled
def fig_job_sizes(summary: pd.DataFrame) -> tuple[Figure, str]:
    """Gain of each dynamic policy over optimal Bernoulli routing against the job-size SCV.

    ``summary`` (:func:`~queue_routing.multiskill.experiments.job_sizes_summary`) has
    columns ``sample, job_sizes, law, scv, policy, instances, gain, gain_ci95, gain_min,
    gain_max``. One panel per policy; the SCVs are equally spaced (categories); at each SCV a
    marker per law (shape = law). Table 1: the gain with its 95% interval (filled, the
    policy's colour); random instances (if any): the median with the range over the
    instances (grey, hollow).
    """
    require_columns(
        summary,
        ["sample", "job_sizes", "law", "scv", "policy", "instances", "gain", "gain_ci95",
         "gain_min", "gain_max"],
        "summary",
    )  # fmt: skip
    policies = list(dict.fromkeys(summary["policy"]))
    ncols = 2 if len(policies) > 1 else 1
    nrows = -(-len(policies) // ncols)
    fig, axes = new_figure(
        nrows, ncols, figsize=(8.0, 2.7 * nrows + 0.8), sharex=True, sharey=True, squeeze=False
    )
    scvs = np.unique(summary["scv"].to_numpy(float))
    pos = {v: k for k, v in enumerate(scvs)}
    laws = list(dict.fromkeys(summary["law"]))
    samples = list(dict.fromkeys(summary["sample"]))
    for ax, policy in zip(axes.ravel(), policies, strict=False):
        label, color, _ = _policy_label(policy)
        ax.axhline(0.0, color="black", lw=0.8, ls=":", zorder=1)
        sel = summary[summary["policy"] == policy]
        for (sample, scv), grp in sel.groupby(["sample", "scv"], sort=False):
            grp = grp.sort_values("law", key=lambda s: s.map(laws.index))
            k = len(grp)
            for q, (_, r) in enumerate(grp.iterrows()):
                marker = _LAW_MARKERS.get(r["law"], ("x", r["law"]))[0]
                x = pos[scv] + (q - (k - 1) / 2) * 0.16 + (0.05 if sample != "table1" else -0.05)
                if sample == "table1":
                    ax.errorbar(
                        x, 100 * r["gain"], yerr=100 * r["gain_ci95"], marker=marker, ms=4.5,
                        color=color, capsize=2, ls="none",
                    )  # fmt: skip
                else:
                    lo, hi = 100 * (r["gain"] - r["gain_min"]), 100 * (r["gain_max"] - r["gain"])
                    ax.errorbar(
                        x + 0.04, 100 * r["gain"], yerr=[[lo], [hi]], marker=marker, ms=4.0,
                        mfc="white", mec="#666666", ecolor=GREY, ls="none", elinewidth=0.9,
                    )  # fmt: skip
        t1 = sel[(sel["sample"] == "table1")].sort_values("scv")
        if len(t1):
            per_scv = t1.groupby("scv")["gain"].mean()
            ax.plot(
                [pos[v] - 0.05 for v in per_scv.index], 100 * per_scv.to_numpy(), color=color,
                lw=0.9, alpha=0.6,
            )  # fmt: skip
        ax.set_title(label, loc="left", fontsize=9)
    for ax in axes.ravel()[len(policies) :]:
        ax.set_visible(False)
    short = {"deterministic": "det.", "exponential": "exp.", "erlang": "Erlang"}
    names = {v: sorted(set(summary.loc[summary["scv"] == v, "law"]), key=laws.index) for v in scvs}
    ticks = [
        f"{v:g}" + (f"\n({short.get(names[v][0], names[v][0])})" if len(names[v]) == 1 else "")
        for v in scvs
    ]
    for ax in axes[-1]:
        ax.set_xticks(range(len(scvs)), ticks)
    fig.supxlabel("squared coefficient of variation (SCV) of the job sizes, mean 1", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("gain over optimal\nBernoulli (% of its cost)")
    handles = [
        Line2D([], [], ls="none", marker=_LAW_MARKERS[law][0], color="black", ms=4.5,
               label=_LAW_MARKERS[law][1])
        for law in laws if law in _LAW_MARKERS
    ]  # fmt: skip
    if "random" in samples:
        handles.append(
            Line2D([], [], ls="none", marker="o", mfc="white", mec="#666666", ms=4,
                   label="random instances: median, range")
        )  # fmt: skip
    fig.legend(handles=handles, loc="outside upper center", ncols=3, frameon=False, fontsize=8)
    t1 = summary[summary["sample"] == "table1"]
    budget = ""
    if {"replications", "horizon", "warmup"} <= set(summary.columns) and len(t1):
        r = t1.iloc[0]
        budget = (
            f" ({int(r['replications'])} paired replications of {r['horizon']:g} time units "
            f"after a warm-up of {r['warmup']:g})"
        )
    rnd = summary[summary["sample"] == "random"]
    random_text = ""
    if len(rnd):
        r = rnd.iloc[0]
        random_text = (
            f"; grey hollow: median and range over {int(r['instances'])} random instances of "
            f"Fig. 7's generator ({int(r['replications'])} replications of {r['horizon']:g})"
        )
    caption = (
        "Ours, beyond " + PAPER + ": gain of each dynamic routing policy over optimal "
        "Bernoulli routing, 1 − cost/B with B = Σ c_j ρ_j/(1−ρ_j) the exact optimal "
        "Bernoulli cost (insensitive to the job-size law under PS), against the squared "
        "coefficient of variation of the job sizes (mean 1; SCV 0 deterministic, 1 "
        "exponential, above 1 hyperexponential with balanced means and lognormal, marker "
        "shapes). Exact event-driven simulation of the PS system (exponential: the "
        "uniformised chain). Coloured: Table 1" + budget + ", with 95% intervals of the "
        "paired control-variate estimate (common random numbers across the policies of one "
        "law, every replication started in the stationary law of optimal Bernoulli routing)"
        + random_text
        + "."
    )
    return fig, caption
