"""Figures of Part B (ours): Niño-Mora (2012). Each function takes the tables of
:mod:`.experiments` and returns ``(fig, caption)``; nothing is computed beyond reshaping and
nothing is written (use :func:`queue_routing.plotting.save_figure`). Importing this module
loads neither numba nor the solvers and simulators.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..labels import POLICY_LABELS
from ..plotting import PALETTE, label_above, new_figure, require_columns, styled
from ..user_policy import policy_label
from .instances import HEURISTICS

__all__ = [
    "gap_figure",
    "index_figure",
    "large_figure",
    "three_cluster_figure",
]

#: How captions cite the reproduced paper.
PAPER = "Niño-Mora (2012, Comput. Oper. Res. 39)"

_OURS = (
    f"Ours: the numerical study of {PAPER} (its Sec. 6) is missing from our source, so the "
    "instances and the figure are ours."
)

COLORS = {"BS": PALETTE[3], "IO": PALETTE[1], "PI": PALETTE[0], "RB": PALETTE[2]}
MARKERS = {"BS": "s", "IO": "v", "PI": "o", "RB": "^"}

_X_LABELS = {
    "arrival_rate": "arrival rate λ (jobs per unit time)",
    "rejection_cost": "rejection cost R",
    "mean_deadline": "mean deadline E[τ] (time units)",
}
_GAP_COLUMNS = [f"gap_{p}_pct" for p in HEURISTICS] + [f"bound_{p}" for p in HEURISTICS]


def _span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _base_text(df: pd.DataFrame, varied: str) -> str:
    row = df.iloc[0]
    parts = [f"m = ({row['servers'].replace(' ', ', ')})"]
    parts.append(f"μ = ({row['service_rates'].replace(' ', ', ')})")
    if varied != "arrival_rate":
        parts.append(f"λ = {row['arrival_rate']:g}")
    if varied != "rejection_cost":
        r = row["rejection_cost"]
        parts.append("no rejection (pure routing)" if pd.isna(r) else f"R = {r:g}")
    if varied != "mean_deadline":
        parts.append(f"mean deadline {row['mean_deadline']:g}")
    return ", ".join(parts)


def _gap_panel(ax, df: pd.DataFrame, xcol: str) -> bool:
    """Gap (%) of each heuristic against ``xcol``; points whose cost the truncation decides
    are drawn hollow and not joined. Returns whether any such point was drawn."""
    df = df.sort_values(xcol)
    hollow = False
    for p in HEURISTICS:
        lab = POLICY_LABELS[p]
        bound = df[f"bound_{p}"].astype(bool).to_numpy()
        x, y = df[xcol].to_numpy(float), df[f"gap_{p}_pct"].to_numpy(float)
        ax.plot(x[~bound], y[~bound], marker=MARKERS[lab], color=COLORS[lab], label=lab, zorder=3)
        if bound.any():
            hollow = True
            ax.plot(
                x[bound],
                y[bound],
                linestyle="none",
                marker=MARKERS[lab],
                markerfacecolor="none",
                color=COLORS[lab],
                zorder=3,
            )
    ax.axhline(0.0, color="0.3", linewidth=0.8)
    ax.set_xlabel(_X_LABELS[xcol])
    return hollow


@styled
def gap_figure(df: pd.DataFrame, sweep: str) -> tuple[Figure, str]:
    """Suboptimality gap (%) vs the varied parameter of ``sweep``
    (:func:`.experiments.cluster_sweep` of the two-cluster block); one panel per deadline
    law for the
    ``distribution`` sweep."""
    require_columns(
        df,
        ["sweep", "value", "distribution", "uniform_spread", "arrival_rate", "rejection_cost",
         "mean_deadline", "servers", "service_rates", "L", *_GAP_COLUMNS],
        "sweep table",
        allow_empty=False,
    )  # fmt: skip
    xcol = {"distribution": "arrival_rate", "pure_routing": "arrival_rate"}.get(sweep, sweep)
    kinds = list(dict.fromkeys(df["distribution"])) if sweep == "distribution" else [None]
    width = 3.4 * len(kinds) + 0.6 if len(kinds) > 1 else 6.4
    fig, axes = new_figure(1, len(kinds), figsize=(width, 3.6), sharey=True)
    axes = np.asarray(axes).reshape(1, -1)
    hollow = False
    for ax, kind in zip(axes[0], kinds, strict=True):
        part = df if kind is None else df[df["distribution"] == kind]
        hollow |= _gap_panel(ax, part, xcol)
        if kind is not None:
            ax.set_title(f"{kind} deadline")
        if sweep == "rejection_cost":
            ax.set_xscale("log")
            ax.set_xticks(sorted(part["value"]), [f"{v:g}" for v in sorted(part["value"])])
            ax.minorticks_off()
    axes[0][0].set_ylabel("gap to optimal cost (%)")
    if len(kinds) > 1:
        axes[0][-1].legend(title="policy", loc="upper left")
    else:
        axes[0][0].legend(title="policy", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    what = {
        "arrival_rate": "the arrival rate λ",
        "rejection_cost": "the rejection cost R",
        "mean_deadline": "the mean deadline",
        "distribution": "the arrival rate λ, for each deadline law with the same mean",
        "pure_routing": "the arrival rate λ in pure routing (no rejection, λ < Σ m_k μ_k)",
    }[sweep]
    laws = ""
    if sweep == "distribution" or (df["distribution"] != "constant").any():
        laws = (
            f" Uniform deadlines on mean·(1 ∓ {float(df['uniform_spread'].iloc[0]):g}), "
            "exponential deadlines with the same mean."
        )
    caption = (
        f"{_OURS} Two-cluster instance, {_base_text(df, xcol)}, deadline on the response time "
        f"({', '.join(dict.fromkeys(df['distribution']))}). Relative suboptimality gap "
        f"100 (cost − optimal)/optimal of the index policies IO, PI, RB and of optimal "
        f"Bernoulli splitting (BS) against {what}. All costs exact (truncated CTMC); the "
        "optimal cost by relative value iteration, truncation level raised until the cost "
        f"moved less than the tolerance (final L = {_span(df['L'])})."
        + laws
        + (
            " Hollow markers: the policy's cost is decided by the truncation level (it moves "
            "when L grows, e.g. IO never rejects when R > 1), so it is not a property of the "
            "policy; those points are excluded from the gap table."
            if hollow
            else ""
        )
    )
    return fig, caption


@styled
def index_figure(df: pd.DataFrame) -> tuple[Figure, str]:
    """``nu^IO, nu^PI, nu^RB`` vs ``x``, one panel per cluster
    (:func:`.experiments.index_functions`)."""
    require_columns(
        df,
        ["policy", "cluster", "servers", "service_rate", "x", "index", "indexable", "bs_rate",
         "arrival_rate", "rejection_cost"],
        "index table",
        allow_empty=False,
    )  # fmt: skip
    clusters = sorted(df["cluster"].unique())
    r_cost = float(df["rejection_cost"].iloc[0])
    fig, axes = new_figure(1, len(clusters), figsize=(3.4 * len(clusters) + 0.6, 3.6), sharey=True)
    axes = np.asarray(axes).reshape(1, -1)
    top = 1.75 * r_cost
    for ax, k in zip(axes[0], clusters, strict=True):
        part = df[df["cluster"] == k]
        for pol in ("IO", "PI", "RB"):
            rows = part[part["policy"] == pol].sort_values("x")
            ax.plot(rows["x"], rows["index"], marker=MARKERS[pol], color=COLORS[pol], label=pol,
                    markersize=4)  # fmt: skip
        ax.axhline(r_cost, color="0.3", linestyle="--", linewidth=1.0, label="R (reject above)")
        m, mu = int(part["servers"].iloc[0]), float(part["service_rate"].iloc[0])
        ax.set_title(f"cluster {k}: m = {m}, μ = {mu:g}")
        ax.set_xlabel("jobs in the cluster x")
        ax.set_ylim(0.0, top)
    axes[0][0].set_ylabel("index ν(x) (cost per job)")
    axes[0][-1].legend(loc="center right")
    rates = df.drop_duplicates("cluster").sort_values("cluster")["bs_rate"]
    non_idx = sorted(set(df.loc[~df["indexable"].astype(bool), "policy"]))
    caption = (
        f"{_OURS} Index functions of the base two-cluster instance (λ = "
        f"{float(df['arrival_rate'].iloc[0]):g}, R = {r_cost:g}, constant deadline on the "
        "response time): IO = deadline-miss probability P^miss(x); PI = one policy-improvement "
        "step from optimal Bernoulli splitting (BS rates λ_k* = "
        + ", ".join(f"{v:.3g}" for v in rates)
        + "); RB = restless-bandit (marginal productivity) index of a cluster fed the whole "
        "stream. A job is rejected when every cluster's index is ≥ R, else routed to the "
        f"smallest index. The axis is cut at {top:g} (values above it are not shown). "
        + (
            "Indexability (nondecreasing index) fails numerically for "
            + ", ".join(non_idx)
            + " over x = 0..max, far above R."
            if non_idx
            else "Every index is nondecreasing in x (indexability check passed)."
        )
    )
    return fig, caption


#: Colours and markers of user policies (``path.py:name``), in the order they appear.
_USER_STYLES = (("#CC79A7", "P"), ("#56B4E9", "X"), ("#000000", "*"), ("#BBBBBB", "x"))


def _style(policy: str, users: list[str]) -> tuple[str, str, str]:
    """``(colour, marker, legend label)`` of a built-in's label or a user policy's name
    (labelled "yours: <function name>", ``docs/README.md#your-own-policy``)."""
    if policy in COLORS:
        return COLORS[policy], MARKERS[policy], policy
    color, marker = _USER_STYLES[users.index(policy) % len(_USER_STYLES)]
    return color, marker, f"yours: {policy_label(policy)}"


@styled
def large_figure(df: pd.DataFrame) -> tuple[Figure, str]:
    """Paired cost ratio of each policy to PI vs the number of clusters
    (:func:`.experiments.large_system`, all sizes concatenated): dots with 95% intervals, the
    Holm-separated best of each n (or "n.s.") above it, hollow where the end of a policy's
    index table may have decided arrivals (``table_bound > 0``: the truncated policy)."""
    require_columns(
        df,
        ["clusters", "policy", "ratio", "ratio_ci95", "best", "table_bound", "arrival_rate",
         "capacity", "horizon", "replications"],
        "large-system table",
        allow_empty=False,
    )  # fmt: skip
    fig, ax = new_figure(figsize=(6.4, 3.9))
    sizes = sorted(df["clusters"].unique())
    step = float(np.min(np.diff(sizes))) if len(sizes) > 1 else 1.0
    builtin = [p for p in ("BS", "IO", "PI", "RB") if p in set(df["policy"])]
    users = [p for p in dict.fromkeys(df["policy"]) if p not in COLORS]  # your own policies
    shown = builtin + users
    for k, pol in enumerate(shown):
        rows = df[df["policy"] == pol].sort_values("clusters")
        offset = (k - (len(shown) - 1) / 2) * 0.2  # -0.3, -0.1, 0.1, 0.3 for four
        x = rows["clusters"].to_numpy(float) + offset * step / 4
        y, ci = rows["ratio"].to_numpy(float), rows["ratio_ci95"].to_numpy(float)
        cut = rows["table_bound"].to_numpy() > 0
        color, marker, label = _style(pol, users)
        ax.errorbar(x, y, yerr=ci, ls="none", color=color, capsize=3)
        ax.plot(x[~cut], y[~cut], ls="none", marker=marker, color=color, label=label)
        ax.plot(
            x[cut], y[cut], ls="none", marker=marker, mfc="white", mec=color,
            label=f"{label} (truncated table)" if cut.any() else None,
        )  # fmt: skip
    verdicts = df.drop_duplicates("clusters").sort_values("clusters")
    label_above(
        ax,
        verdicts["clusters"].tolist(),
        ["n.s." if b == "not separated" else f"best: {policy_label(b)}" for b in verdicts["best"]],
    )
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_xticks(sizes, [str(int(s)) for s in sizes])
    ax.set_xlabel("number of clusters n")
    ax.set_ylabel("cost rate / PI's cost rate")
    ax.legend(title="policy", ncols=2, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    load = (df["arrival_rate"] / df["capacity"]).iloc[0]
    cut = df[df["table_bound"] > 0]
    truncated = (
        " Hollow: the end of the policy's index table may have decided "
        + ", ".join(f"{int(r.table_bound)} arrivals of {r.policy} at n = {int(r.clusters)}"
                    for r in cut.itertuples())
        + " (a cluster beyond the table counts as full), so the point is the cost of the "
        "truncated policy."
        if len(cut)
        else ""
    )  # fmt: skip
    caption = (
        f"{_OURS} Larger systems by simulation: n clusters with m_k and μ_k drawn at random "
        f"(seeded per n), arrival rate λ = {load:.2g} Σ m_k μ_k. Paired comparison: in each "
        "replication every policy sees the same jobs (arrival times, work and deadlines: "
        "common random numbers); cost rate of each policy divided by PI's, ratio of the mean "
        "costs with a delta-method 95% confidence interval from the paired replications "
        f"({int(df['replications'].iloc[0])} replications of horizon "
        f"{float(df['horizon'].iloc[0]):g} after a warm-up). Above each n: the policy "
        "separated from every other by one-sided paired tests with Holm's correction at "
        "family-wise level 0.05, or n.s. (not separated). Points are offset horizontally "
        "for legibility." + truncated
        + (
            " Yours: index policies of your own (docs/your-own-policy.md): "
            + "; ".join(users) + "."
            if users
            else ""
        )
    )  # fmt: skip
    return fig, caption


_THREE_PANELS = (
    ("load", "load", "load λ / Σ m_k μ_k (R = {R})"),
    ("rejection_cost", "rejection_cost", "rejection cost R (load {load})"),
    ("distribution", "load", "load, PI per deadline law (R = {R})"),
    ("pure_routing", "load", "load, pure routing"),
)
_LAW_STYLE = {"constant": "o", "uniform": "D", "exponential": "P"}
_LAW_COLORS = {"constant": PALETTE[0], "uniform": PALETTE[4], "exponential": PALETTE[5]}


@styled
def three_cluster_figure(df: pd.DataFrame) -> tuple[Figure, str]:
    """Gap (%) to the exact optimum of every heuristic on three clusters (solid) and on the
    matched two-cluster system (dotted), one panel per sweep of
    :func:`.experiments.cluster_sweep` with ``clusters=(2, 3)`` (all sweeps concatenated);
    the deadline-law panel shows PI for each law (constant: the load sweep's points). Points
    whose cost the truncation decides are left out (marked x on the axis)."""
    require_columns(
        df,
        ["sweep", "clusters", "value", "load", "distribution", "rejection_cost", "servers",
         "service_rates", "mean_deadline", "uniform_spread", "L", *_GAP_COLUMNS],
        "three-cluster sweep table",
        allow_empty=False,
    )  # fmt: skip
    panels = [p for p in _THREE_PANELS if (df["sweep"] == p[0]).any()]
    fig, axes = new_figure(1, len(panels), figsize=(3.3 * len(panels) + 0.8, 3.7), sharey=True)
    axes = np.asarray(axes).reshape(-1)
    dropped = 0
    for ax, (sweep, xcol, label) in zip(axes, panels, strict=True):
        part = df[df["sweep"] == sweep]
        if sweep == "distribution":
            loads = set(part["load"])
            const = df[(df["sweep"] == "load") & df["load"].isin(loads)]
            part = pd.concat([const, part], ignore_index=True)
            lines = [("pi", law) for law in dict.fromkeys(part["distribution"])]
        else:
            lines = [(p, None) for p in HEURISTICS]
        for p, law in lines:
            lab = POLICY_LABELS[p]
            for n, style in ((3, "-"), (2, ":")):
                rows = part[part["clusters"] == n]
                if law is not None:
                    rows = rows[rows["distribution"] == law]
                rows = rows.sort_values(xcol)
                ok = ~rows[f"bound_{p}"].astype(bool).to_numpy()
                dropped += int((~ok).sum())
                name = f"{lab}, {law}" if law else lab
                ax.plot(
                    rows[xcol].to_numpy(float)[ok],
                    rows[f"gap_{p}_pct"].to_numpy(float)[ok],
                    linestyle=style,
                    marker=_LAW_STYLE[law] if law else MARKERS[lab],
                    mfc=(COLORS[lab] if law is None else _LAW_COLORS[law]) if n == 3 else "white",
                    color=COLORS[lab] if law is None else _LAW_COLORS[law],
                    label=f"{name}, n = {n}",
                    markersize=4,
                    zorder=3,
                )
        ax.axhline(0.0, color="0.3", linewidth=0.8)
        ax.set_yscale("symlog", linthresh=1.0)
        first = part.iloc[0]
        ax.set_xlabel(label.format(R=f"{first['rejection_cost']:g}", load=f"{first['load']:g}"))
        if sweep in ("load", "distribution"):
            ax.legend(fontsize=6, loc="best", ncols=2 if sweep == "load" else 1)
    axes[0].set_ylabel("gap to optimal cost (%), symlog")
    row3 = df[df["clusters"] == 3].iloc[0]
    row2 = df[df["clusters"] == 2].iloc[0]
    caption = (
        f"{_OURS} Three clusters, m = ({row3['servers'].replace(' ', ', ')}), μ = "
        f"({row3['service_rates'].replace(' ', ', ')}) (solid, filled markers), and the "
        f"matched two-cluster system m = ({row2['servers'].replace(' ', ', ')}), μ = "
        f"({row2['service_rates'].replace(' ', ', ')}) at the same load λ/Σ m_k μ_k, "
        "rejection cost and deadline law (dotted, open markers); constant deadline of mean "
        f"{float(row3['mean_deadline']):g} unless stated (uniform on mean·(1 ∓ "
        f"{float(row3['uniform_spread']):g}), exponential with the same mean). Relative gap "
        "100 (cost − optimal)/optimal of BS (closed form), IO, PI and RB; index policies and "
        "optimum exact on the truncated chain, the optimum by compiled relative value "
        "iteration with the truncation raised until its cost moved less than the tolerance "
        f"(final L = {_span(df['L'])}). Symmetric-log axis, linear below 1%."
        + (
            f" {dropped} points whose cost the truncation decides (IO never rejects when "
            "R ≥ 1) are left out, as in the gap table."
            if dropped
            else ""
        )
    )
    return fig, caption
