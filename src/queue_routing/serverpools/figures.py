"""Figures of Part C (ours), drawn from the pipeline's tidy tables.

Stolyar & Yudovina (2013) has no figures and no numerical examples (and the source text lost
its displayed equations), so every figure here is ours: it illustrates one of the paper's
claims on our example instances (:mod:`.instances`). One pure function per figure: each takes
:class:`pandas.DataFrame` objects in the schemas of :mod:`.experiments` and returns
``(fig, caption)``; nothing is computed beyond reshaping and nothing is written (use
:func:`queue_routing.plotting.save_figure`).

Units: time in units of 1/mu; eigenvalues per unit time; fluid deviations per unit r;
diffusion-scaled deviations ``(X^r - r x*)/sqrt(r)`` in customers / sqrt(r).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from ..plotting import GREY, PALETTE, lighten, new_figure, require_columns, styled
from .linear import eigenvalue_text
from .tree import adjacency

__all__ = [
    "EXAMPLE_COLORS",
    "PAPER",
    "POLICY_STYLE",
    "boundary_figure",
    "deviation_figure",
    "fluid_figure",
    "fluid_limit_figure",
    "lap_figure",
    "time_average_figure",
    "tree_figure",
]

#: How captions cite the reproduced paper.
PAPER = "Stolyar & Yudovina (2013)"

_OURS = (
    f"Ours: {PAPER} has no numerical examples or figures, so the instance and the figure are ours."
)

#: Axis label of the diffusion-scaled deviation.
_DEV_LABEL = r"$|X^r(t) - r\,x^*|\,/\sqrt{r}$"

#: Colour of each example in figures that show both.
EXAMPLE_COLORS = {"stable": PALETTE[0], "unstable": PALETTE[1], "large_cycle": PALETTE[2]}


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise ``ValueError`` naming the missing columns of ``df``, or if it is empty."""
    require_columns(df, columns, what, allow_empty=False)


def _color(example: str, k: int) -> str:
    return EXAMPLE_COLORS.get(example, PALETTE[k % len(PALETTE)])


def _eigen_text(rows: pd.DataFrame) -> str:
    """``0.236 ± 3.08i, −2.33`` from eigenvalue rows (``value``, ``imag``): 3 significant
    digits, Unicode minus (:func:`~.linear.eigenvalue_text`)."""
    return eigenvalue_text(
        rows["value"].astype(float), rows["imag"].astype(float), digits=3, unicode_minus=True
    )


def _num(x: float) -> str:
    return f"{x:.3g}".replace("-", "−")


def _superscript(k: int) -> str:
    return "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(d)] for d in str(k))


def _r_plain(r: float) -> str:
    """``10⁴`` for powers of ten (unicode superscripts), ``3.16·10⁵`` for 10^5.5, else ``2000``.

    >>> _r_plain(1e4), _r_plain(316228), _r_plain(2000)
    ('10⁴', '3.16·10⁵', '2000')
    """
    e = np.log10(r)
    if r >= 100 and np.isclose(e, round(e)):
        return "10" + _superscript(round(e))
    if r >= 1000 and np.isclose(e - np.floor(e), 0.5, atol=1e-6):
        return f"{r / 10 ** np.floor(e):.3g}·10{_superscript(int(np.floor(e)))}"
    return f"{r:g}"


def _r_text(r: float) -> str:
    """``10^4`` for powers of ten, else ``2000``."""
    e = np.log10(r)
    if np.isclose(e, round(e)):
        return f"$10^{{{round(e)}}}$"
    return f"{r:g}"


# -- activity tree ----------------------------------------------------------------------------
def _tree_layout(edges: list[tuple[int, int]], n_i: int, n_j: int) -> dict[int, float]:
    """x position of every node (classes 0..I-1, pools I..): its depth-first preorder index.

    The walk starts at the first pool leaf (else the first leaf) and visits neighbours in
    index order, so the subtrees of a node occupy consecutive positions (few crossings).
    """
    n = n_i + n_j
    adj = adjacency(edges, n_i, n_j)
    leaves = [v for v in range(n) if len(adj[v]) == 1]
    pool_leaves = [v for v in leaves if v >= n_i]
    start = (pool_leaves or leaves or [0])[0]
    pos: dict[int, float] = {}
    stack = [start]
    while stack:
        v = stack.pop()
        if v in pos:
            continue
        pos[v] = float(len(pos))
        stack.extend(sorted((w for w in adj[v] if w not in pos), reverse=True))
    for v in range(n):  # a disconnected node (not expected on a tree): put it at the end
        pos.setdefault(v, float(len(pos)))
    return pos


@styled
def tree_figure(
    instance: Mapping[str, Any], rows: pd.DataFrame, example: str
) -> tuple[Figure, str]:
    """The activity tree of an example with lambda_i, beta_j, mu_ij and the SPP flows.

    ``instance``: the JSON contract (``arrival_rates, pool_sizes, activities``).
    ``rows``: the example's rows of :func:`.experiments.example_rows` (``quantity, class,
    pool, index, value, imag``), for rho, the flows lambda_ij and the spectra. Classes are
    drawn on top, pools at the bottom, in depth-first order of the tree; an edge's width
    grows with its flow lambda_ij.
    """
    _require(rows, ["quantity", "class", "pool", "value", "imag"], "rows")
    lam = [float(x) for x in instance["arrival_rates"]]
    beta = [float(x) for x in instance["pool_sizes"]]
    acts = instance["activities"]
    n_i, n_j = len(lam), len(beta)
    flows = {
        (int(c) - 1, int(p) - 1): float(v)
        for c, p, v in rows.loc[rows["quantity"] == "flow", ["class", "pool", "value"]].itertuples(
            index=False
        )
    }
    edges = [(int(a["class"]) - 1, int(a["pool"]) - 1) for a in acts]
    mu = {(int(a["class"]) - 1, int(a["pool"]) - 1): float(a["rate"]) for a in acts}
    pos = _tree_layout(edges, n_i, n_j)
    n = n_i + n_j
    rho = float(rows.loc[rows["quantity"] == "rho", "value"].iloc[0])

    y_cls, y_pool = 1.25, 0.0
    x_lo, x_hi, y_lo, y_hi = -0.9, n - 0.35, -0.42, y_cls + 0.62
    width = max(6.4, 1.1 * (x_hi - x_lo))
    fig, ax = new_figure(figsize=(width, width * (y_hi - y_lo) / (x_hi - x_lo) + 0.45))
    ax.set_axis_off()
    ax.set_aspect("equal")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    max_flow = max(flows.values()) if flows else 1.0
    for i, j in edges:
        x0, x1 = pos[i], pos[n_i + j]
        f = flows.get((i, j), 0.0)
        basic = f > 0
        lw = 1.0 + 6.0 * np.sqrt(f / max_flow) if basic else 1.0
        ax.plot(
            [x0, x1],
            [y_cls, y_pool],
            color="0.35" if basic else GREY,
            lw=lw,
            ls="-" if basic else ":",
            solid_capstyle="round",
            zorder=1,
        )
        xm, ym = 0.5 * (x0 + x1), 0.5 * (y_cls + y_pool)
        ax.text(
            xm,
            ym,
            f"μ={mu[i, j]:.3g}\nλ={f:.3g}" if basic else f"μ={mu[i, j]:.3g}",
            ha="center",
            va="center",
            fontsize=7.5,
            linespacing=1.15,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.18", "fc": "white", "ec": "0.75", "lw": 0.6},
        )
    for i in range(n_i):
        x = pos[i]
        _tree_node(ax, Circle((x, y_cls), 0.2), PALETTE[5], f"C{i + 1}", (x, y_cls))
        ax.add_patch(
            FancyArrowPatch(
                (x, y_cls + 0.52),
                (x, y_cls + 0.21),
                arrowstyle="-|>",
                mutation_scale=10,
                lw=1.1,
                color="0.15",
                zorder=2,
            )
        )
        ax.text(
            x + 0.06,
            y_cls + 0.36,
            f"λ{_sub(i + 1)}={lam[i]:.3g}",
            ha="left",
            va="center",
            fontsize=8,
        )
    for j in range(n_j):
        x = pos[n_i + j]
        box = FancyBboxPatch((x - 0.24, y_pool - 0.15), 0.48, 0.3, boxstyle="round,pad=0.02")
        _tree_node(ax, box, PALETTE[3], f"P{j + 1}", (x, y_pool))
        ax.text(
            x, y_pool - 0.22, f"β{_sub(j + 1)}={beta[j]:.3g}", ha="center", va="top", fontsize=8
        )
    ax.text(x_lo + 0.02, y_cls, "classes", ha="left", va="center", fontsize=9, color="0.3")
    ax.text(x_lo + 0.02, y_pool, "pools", ha="left", va="center", fontsize=9, color="0.3")
    eig_u = _eigen_text(rows[rows["quantity"] == "eigenvalue_underloaded"])
    ax.set_title(
        f"{_title(example)} example: activity tree, ρ = {rho:.3g};  eigenvalues of $A_u$: {eig_u}",
        loc="left",
        fontsize=10,
    )
    mus = np.array(list(mu.values()))
    caption = (
        f"{_OURS} The {_title(example).lower()} example: {n_i} customer classes (circles, "
        f"arrival rate r·λ_i) and {n_j} server pools (boxes, r·β_j servers); each edge is a "
        "basic activity with service rate μ_ij (jobs per unit time per server) and SPP flow "
        "λ_ij (customers per unit time per unit r; line width grows with λ_ij). The SPP "
        "optimum is this tree with "
        f"every pool at load ρ = {rho:.3g} (complete resource pooling). Pool sizes spread by a "
        f"factor {max(beta) / min(beta):.3g} and rates by {mus.max() / mus.min():.3g}. The "
        f"linearised LQFS-LB fluid model (the paper's Theorem 3.1) has eigenvalues {eig_u} "
        "per unit time: the equilibrium is locally "
        + ("unstable." if _has_positive(rows) else "stable.")
        + (
            " The paper's claim illustrated: a tree that is not too small, with heterogeneous "
            "rates and pool sizes, can make the natural load-balancing equilibrium unstable."
            if _has_positive(rows)
            else " For contrast with the unstable example: rates of the same order and pool "
            "sizes of the same order give a stable equilibrium."
        )
    )
    return fig, caption


def _tree_node(ax, patch, colour, label: str, centre: tuple[float, float]) -> None:
    """A node of the activity-tree figure: ``patch`` (its shape: circle for a class, box for
    a pool) filled with ``colour`` lightened, outlined, and ``label`` at its ``centre``."""
    patch.set(facecolor=lighten(colour, 0.45), edgecolor="0.15", lw=1.2, zorder=2)
    ax.add_patch(patch)
    ax.text(*centre, label, ha="center", va="center", fontsize=9.5, zorder=4)


def _scale_points(ax, r, y, ci, color, label, *, face=None) -> None:
    """Values ``y`` at the scales ``r`` with their interval half-widths ``ci``: markers (filled
    with ``face``, default ``color``) and bars, unjoined (the time-average and fluid-limit
    figures)."""
    ax.errorbar(
        r,
        y,
        yerr=ci,
        color=color,
        mfc=face,
        marker="o",
        ms=5,
        ls="none",
        capsize=3,
        label=label,
        zorder=3,
    )


def _sub(k: int) -> str:
    return "".join("₀₁₂₃₄₅₆₇₈₉"[int(d)] for d in str(k))


def _has_positive(rows: pd.DataFrame) -> bool:
    eig = rows[rows["quantity"] == "eigenvalue_underloaded"]["value"].astype(float)
    return bool((eig > 0).any())


# -- stability boundary -------------------------------------------------------------------------
@styled
def boundary_figure(scan: pd.DataFrame, crossings: pd.DataFrame) -> tuple[Figure, str]:
    """Largest real part of the spectra of A_u and A_c over the heterogeneity family.

    ``scan``: :func:`.experiments.boundary_scan` (``theta, mu_spread, beta_spread,
    max_real_underloaded, max_real_critical``); ``crossings``:
    :func:`.experiments.boundary_crossings` (``matrix, found, theta_crossing, mu_spread,
    beta_spread, frequency``).
    """
    _require(
        scan,
        ["theta", "mu_spread", "beta_spread", "max_real_underloaded", "max_real_critical"],
        "scan",
    )
    _require(
        crossings, ["matrix", "found", "theta_crossing", "mu_spread", "beta_spread"], "crossings"
    )
    scan = scan.sort_values("theta")
    theta = scan["theta"].to_numpy(float)
    u = scan["max_real_underloaded"].to_numpy(float)
    c = scan["max_real_critical"].to_numpy(float)
    fig, ax = new_figure(figsize=(7.6, 4.6))
    ymin = float(np.nanmin(np.concatenate([u, c])))
    ymax = float(np.nanmax(np.concatenate([u, c])))
    pad = 0.08 * (ymax - ymin)
    ax.axhspan(0.0, ymax + pad, color=lighten(PALETTE[1], 0.88), lw=0, zorder=0)
    ax.axhline(0.0, color="black", lw=0.8, zorder=1)
    rho_text = f", ρ = {float(scan['rho'].iloc[0]):.3g}" if "rho" in scan else ""
    ax.plot(theta, u, color=PALETTE[1], lw=1.8, label=f"$A_u$ (underloaded{rho_text})", zorder=3)
    ax.plot(
        theta,
        c,
        color=PALETTE[0],
        lw=1.6,
        ls="--",
        label="$A_c$ (critically loaded; structural zero removed)",
        zorder=3,
    )
    ax.text(
        theta.min() + 0.01 * np.ptp(theta),
        ymax + 0.5 * pad,
        "unstable (Re λ > 0)",
        ha="left",
        va="center",
        fontsize=8.5,
        color=PALETTE[1],
    )
    found_u = crossings[(crossings["matrix"] == "A_u") & crossings["found"].astype(bool)]
    text = []
    for _, row in found_u.iterrows():
        t = float(row["theta_crossing"])
        ax.axvline(t, color="0.3", lw=0.9, ls=":", zorder=2)
        ax.plot([t], [0.0], marker="o", color="black", ms=5, zorder=4)
        ax.annotate(
            f"θ* = {t:.4g}\nμ spread {row['mu_spread']:.3g}×\nβ spread {row['beta_spread']:.3g}×",
            (t, 0.0),
            xytext=(-12, 18),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=8,
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7", "lw": 0.6},
        )
        text.append(
            f"θ* = {t:.4g} (rates spread {row['mu_spread']:.3g}×, pool sizes "
            f"{row['beta_spread']:.3g}×; the crossing eigenvalues are a complex pair ±"
            f"{float(row.get('frequency', np.nan)):.3g}i, a Hopf-type loss of stability)"
        )
    if theta.min() <= 1.0 <= theta.max():
        k = int(np.argmin(np.abs(theta - 1.0)))
        ax.plot([1.0], [u[k]], marker="s", color=PALETTE[1], ms=6, zorder=4)
        ax.annotate(
            "unstable example",
            (1.0, u[k]),
            xytext=(8, -4),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize=8,
        )
    ax.set_xlim(theta.min(), theta.max())
    ax.set_ylim(ymin - pad, ymax + pad)
    ax.set_xlabel("heterogeneity exponent θ (0: equal rates and occupancies; 1: unstable example)")
    ax.set_ylabel("largest real part of the spectrum (per unit time)")
    ax.legend(loc="lower left", frameon=True)
    # Top axis: the rate spread max/min mu = S^theta.
    spread = scan["mu_spread"].to_numpy(float)
    top = ax.twiny()
    top.set_xlim(ax.get_xlim())
    s_max = float(spread.max())
    if s_max > 1.0 and theta.max() > 0:
        log_s = np.log(s_max) / theta.max()  # spread = exp(log_s * theta)
        ticks = [10.0**k for k in range(0, int(np.floor(np.log10(s_max))) + 1)]
        top.set_xticks([np.log(s) / log_s for s in ticks], [f"{s:g}" for s in ticks])
    top.set_xlabel("rate spread max μ / min μ", fontsize=9)
    top.grid(False)
    top.spines["top"].set_visible(True)
    none_c = crossings[(crossings["matrix"] == "A_c") & ~crossings["found"].astype(bool)]
    caption = (
        f"{_OURS} Stability boundary of the linearised LQFS-LB fluid model (the paper's Theorems "
        "3.1 and 3.2) along a one-parameter family through the unstable example: on the same "
        "tree and at ρ = 0.9, the log service rates and log nominal occupancies are scaled "
        "about their geometric means by θ (θ = 0: all equal, A_u = −μ̄I; θ = 1: the unstable "
        f"example; θ = {theta.max():g}: more spread). Solid: largest real part of the spectrum "
        "of A_u; dashed: of A_c without its structural zero mode. Crossing found by Brent's "
        "method on the exact spectrum: "
        + ("; ".join(text) if text else "none in this range")
        + "."
        + (" A_c stays stable over the whole range." if len(none_c) else "")
        + " Illustrates the paper's claim that the equilibrium can be unstable, and that "
        "this needs sufficiently heterogeneous parameters."
    )
    return fig, caption


# -- fluid trajectories ----------------------------------------------------------------------
def _class_columns(df: pd.DataFrame, prefix: str) -> list[str]:
    cols = [c for c in df.columns if c.startswith(prefix)]
    return sorted(cols, key=lambda c: int(c.rsplit("_", 1)[1]))


@styled
def fluid_figure(fluid: pd.DataFrame, *, detail_until: float = 50.0) -> tuple[Figure, str]:
    """Fluid trajectories from a perturbed equilibrium, with the linearised prediction.

    ``fluid``: :func:`.experiments.fluid_rows` of one or more examples (``example, time,
    norm_fluid, norm_linear, fluid_class_i, linear_class_i``). Top row: |x(t) − x*| on log
    axes over the whole run; bottom row: x_i(t) − x*_i per class over the first
    ``detail_until`` time units (the linearisation is cut where it leaves the frame).
    """
    _require(fluid, ["example", "time", "norm_fluid", "norm_linear"], "fluid")
    names = list(dict.fromkeys(fluid["example"]))
    fig, axes = new_figure(2, len(names), figsize=(4.3 * len(names) + 0.6, 6.4))
    axes = np.asarray(axes).reshape(2, len(names))
    details, zoomed = [], []
    for k, name in enumerate(names):
        df = fluid[fluid["example"] == name].sort_values("time")
        t = df["time"].to_numpy(float)
        nf = df["norm_fluid"].to_numpy(float)
        nl = df["norm_linear"].to_numpy(float)
        ax = axes[0, k]
        color = _color(name, k)
        lo = max(float(np.nanmin(nf[nf > 0])) if np.any(nf > 0) else 1e-12, 1e-12)
        hi = float(np.nanmax(nf))
        ax.semilogy(t, nf, color=color, lw=1.2 if t.size < 1000 else 0.8, label="fluid model")
        ax.semilogy(
            t,
            np.clip(nl, lo / 10, None),
            color="black",
            lw=1.1,
            ls="--",
            label="linearisation $e^{A_u t}\\,\\delta_0$",
        )
        ax.set_ylim(lo / 3, hi * 8)
        ax.set_title(f"{_title(name)} example", loc="left")
        ax.set_ylabel("|x(t) − x*|  (per unit r)")
        growing = nf[-1] > nf[0]
        ax.legend(loc="lower right" if growing else "upper right", fontsize=8)
        ax.set_xlim(t.min(), t.max())

        bottom = axes[1, k]
        window = t <= t.min() + detail_until
        if not window.all():
            zoomed.append(name)
        fcols = _class_columns(df, "fluid_class_")
        lcols = _class_columns(df, "linear_class_")
        fvals = df[fcols].to_numpy(float)[window]
        span = max(float(np.nanmax(np.abs(fvals))), 1e-300)
        for m, lc in enumerate(lcols[: len(fcols)]):
            col = PALETTE[(m + 2) % len(PALETTE)]
            lin = df[lc].to_numpy(float)[window].copy()
            out = np.flatnonzero(np.abs(lin) > 1.3 * span)
            if out.size:  # the linearisation has left the frame: stop drawing it
                lin[out[0] + 1 :] = np.nan
            bottom.plot(t[window], fvals[:, m], color=col, lw=1.1, label=f"class {m + 1}")
            bottom.plot(t[window], lin, color=col, lw=0.9, ls="--", alpha=0.75)
        bottom.set_ylim(-1.2 * span, 1.2 * span)
        bottom.set_xlim(t[window].min(), t[window].max())
        bottom.set_xlabel("time (units of 1/μ)")
        bottom.set_ylabel("$x_i(t) - x^*_i$  (per unit r)")
        handles, labels = bottom.get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", ls="--", lw=0.9))
        labels.append("linearisation")
        bottom.legend(handles, labels, loc="upper left", fontsize=7.5, ncol=2)
        tail = nf[t >= t.min() + 0.5 * np.ptp(t)]
        if growing:
            details.append(
                f"{_title(name).lower()} example |x − x*| grows from {_num(nf[0])} into a "
                "persistent oscillation "
                f"between {_num(tail.min())} and {_num(tail.max())} (second half of the "
                f"{t.max():g} time units)"
            )
        else:
            details.append(
                f"{_title(name).lower()} example |x − x*| decays from {_num(nf[0])} to "
                f"{_num(nf[-1])} in "
                f"{t.max():g} time units"
            )
    zoom_text = (
        f" (for the {', '.join(zoomed)} example: the first {detail_until:g} time units)"
        if zoomed
        else ""
    )
    caption = (
        f"{_OURS} The LQFS-LB fluid model (full nonlinear dynamics, integrated by an "
        "implicit time-stepping scheme) from a seeded random perturbation of the equilibrium "
        "x* (off the load-balanced manifold), against the linearised dynamics "
        "δ(t) = exp(A_u t) δ(0) of the paper's Theorem 3.1 (dashed). Top: norm of the "
        "deviation of the class totals x_i (per unit r), log scale; bottom: per class"
        + zoom_text
        + ". "
        + "In the "
        + "; in the ".join(details)
        + ". Growing deviations follow the linearisation until the nonlinearity stops them in "
        "a persistent oscillation that never returns to x*: the paper's claim that the fluid "
        "equilibrium can be unstable; decaying ones follow it all the way."
    )
    return fig, caption


# -- stochastic system ----------------------------------------------------------------------
def _r_colors(rs: Sequence[float]) -> dict[float, Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    rs = sorted(rs)
    if len(rs) == 1:
        return {rs[0]: cmap(0.2)}
    return {r: cmap(0.8 * k / (len(rs) - 1)) for k, r in enumerate(rs)}


@styled
def deviation_figure(
    traces: pd.DataFrame,
    *,
    replication: int = 0,
    warmup: float | None = None,
    warmups: Mapping[tuple[str, float], float] | None = None,
    max_curves: int | None = 3,
) -> tuple[Figure, str]:
    """|diffusion-scaled deviation| against time at several r, one panel per example.

    ``traces``: :func:`.experiments.stochastic_runs` traces (``example, r, replication, time,
    norm``); only ``replication`` is drawn, and at most ``max_curves`` values of r (the
    smallest, the largest and evenly spread ones between; None: all). The end of the
    warm-up (the time averages start there) is marked: one ``warmup`` for all, or per
    ``(example, r)`` from ``warmups`` (the derived warm-ups), in the colour of its r. (The
    drawn texts call the warm-up "burn-in", as the published figures do.)
    """
    _require(traces, ["example", "r", "replication", "time", "norm"], "traces")
    sel = traces[traces["replication"] == replication]
    if sel.empty:
        raise ValueError(f"no traces of replication {replication}")
    names = list(dict.fromkeys(sel["example"]))
    rs = sorted(float(r) for r in sel["r"].unique())
    if max_curves is not None and len(rs) > max_curves:
        keep = np.unique(np.round(np.linspace(0, len(rs) - 1, max_curves)).astype(int))
        rs = [rs[k] for k in keep]
        sel = sel[sel["r"].isin(rs)]
    colors = _r_colors(rs)
    fig, axes = new_figure(1, len(names), figsize=(4.4 * len(names) + 1.2, 4.4), sharey=True)
    axes = np.asarray(axes).reshape(1, len(names))
    positive = sel.loc[sel["time"] > sel["time"].min(), "norm"].to_numpy(float)
    positive = positive[positive > 0]
    floor = float(np.quantile(positive, 0.01)) if positive.size else 1e-2
    lo = 10.0 ** np.floor(np.log10(max(floor, 1e-6)))
    hi = float(sel["norm"].max()) * 1.5
    for k, name in enumerate(names):
        ax = axes[0, k]
        for r in rs:
            df = sel[(sel["example"] == name) & (sel["r"] == r)].sort_values("time")
            if df.empty:
                continue
            ax.semilogy(
                df["time"],
                np.clip(df["norm"].to_numpy(float), lo, None),
                color=colors[r],
                lw=0.9,
                label=f"r = {_r_text(r)}",
            )
            end = (warmups or {}).get((name, r))
            if end is not None and end > 0:
                ax.axvline(end, color=colors[r], lw=0.9, ls=":")
        if warmup is not None and warmup > 0:
            ax.axvline(warmup, color="0.4", lw=0.8, ls=":")
            ax.text(warmup, hi / 1.3, " warm-up ends", fontsize=7.5, color="0.3", va="top")
        ax.set_ylim(lo, hi)
        ax.set_title(f"{_title(name)} example", loc="left")
        ax.set_xlabel("time (units of 1/μ)")
        ax.set_xlim(float(sel["time"].min()), float(sel["time"].max()))
    axes[0, 0].set_ylabel(_DEV_LABEL)
    axes[0, -1].legend(
        loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, title="scale"
    )
    marks = (
        " Dotted vertical lines: the end of each r's derived burn-in (time averages start there)."
        if warmups
        else ""
    )
    caption = (
        f"{_OURS} Diffusion-scaled deviation |(X^r(t) − r x*)/√r| of the class totals of the "
        "r-th stochastic system under LQFS-LB (exact event-driven simulation, one replication "
        f"per r, started at the nominal point r x*), for r = {', '.join(_r_plain(r) for r in rs)} "
        "(arrival rates r λ_i, r β_j servers); log scale."
        + marks
        + " If the diffusion-scaled stationary distributions are tight the curves for all r "
        "overlap after the burn-in (O(1) fluctuations, expected for the stable example); if "
        "they escape to infinity the curves climb with r: the paper's claim for an unstable "
        "fluid equilibrium."
    )
    return fig, caption


def _title(name: str) -> str:
    """``Large-cycle`` from ``large_cycle``."""
    return name.replace("_", "-").capitalize()


def _interval(low: float, high: float) -> str:
    return f"[{_num(low)}, {_num(high)}]"


@styled
def time_average_figure(
    averages: pd.DataFrame,
    verdicts: pd.DataFrame,
    fluid_levels: Mapping[str, float] | None = None,
) -> tuple[Figure, str]:
    """Stationary time-averaged |diffusion-scaled deviation| against r on log axes.

    ``averages``: :func:`.experiments.time_average_table` (``example, r, mean_norm,
    mean_norm_ci, stationary``, optionally ``replications, horizon``); ``verdicts``:
    :func:`.experiments.scaling_verdicts` (``example, r_min, r_max, slope, slope_low,
    slope_high, verdict``, optionally ``confidence``); ``fluid_levels`` (optional): per
    unstable example, the time-averaged fluid |x − x*| on its limit cycle, drawn as
    ``level·sqrt(r)``. Error bars: the t interval of each mean; open markers: windows the
    stationarity test flags (left out of the fits). Lines: the top-decade fits.
    """
    _require(averages, ["example", "r", "mean_norm", "mean_norm_ci", "stationary"], "averages")
    _require(
        verdicts,
        ["example", "r_min", "r_max", "slope", "slope_low", "slope_high", "verdict"],
        "verdicts",
    )
    fig, ax = new_figure(figsize=(7.4, 4.8))
    names = list(dict.fromkeys(averages["example"]))
    rs_all = np.sort(averages["r"].unique().astype(float))
    grid = np.geomspace(rs_all.min(), rs_all.max(), 50)
    notes, dotted, flagged = [], [], []
    conf = float(verdicts["confidence"].iloc[0]) if "confidence" in verdicts else 0.95
    for k, name in enumerate(names):
        df = averages[averages["example"] == name].sort_values("r")
        r = df["r"].to_numpy(float)
        y = df["mean_norm"].to_numpy(float)
        ci = np.nan_to_num(df["mean_norm_ci"].to_numpy(float))
        ok = df["stationary"].astype(bool).to_numpy()
        color = _color(name, k)
        v = verdicts[verdicts["example"] == name]
        label = name.replace("_", "-")
        if len(v):
            v = v.iloc[0]
            slope, low, high = float(v["slope"]), float(v["slope_low"]), float(v["slope_high"])
            verdict = str(v["verdict"])
            if np.isfinite(slope):
                label = (
                    f"{label}: slope {_num(slope)}, {conf:.0%} CI {_interval(low, high)} "
                    f"({verdict})"
                )
                notes.append(
                    f"{name.replace('_', '-')}: slope {_num(slope)} with {conf:.0%} interval "
                    f"{_interval(low, high)} over r = {_r_plain(float(v['r_min']))}…"
                    f"{_r_plain(float(v['r_max']))}, {verdict}"
                )
                fit = (r >= float(v["r_min"])) & (r <= float(v["r_max"])) & ok
                x0, y0 = np.log10(r[fit]).mean(), np.log10(y[fit]).mean()
                line = np.geomspace(float(v["r_min"]), float(v["r_max"]), 10)
                ax.loglog(
                    line,
                    10 ** (y0 + slope * (np.log10(line) - x0)),
                    color=color,
                    lw=1.6,
                    alpha=0.8,
                )
            else:
                label = f"{label}: {verdict} (too few stationary scales in the top decade)"
                notes.append(f"{name.replace('_', '-')}: {verdict} (too few stationary scales)")
        for mask, face, lab in ((ok, color, label), (~ok, "white", None)):
            if mask.any():
                _scale_points(ax, r[mask], y[mask], ci[mask], color, lab, face=face)
        if (~ok).any():
            flagged.append(
                f"{name.replace('_', '-')} at r = {', '.join(_r_plain(x) for x in r[~ok])}"
            )
        level = float((fluid_levels or {}).get(name, 0.0))
        if level > 0:
            ax.loglog(
                grid,
                level * np.sqrt(grid),
                color=color,
                lw=1.0,
                ls=":",
                label=f"{name.replace('_', '-')}: fluid limit cycle {level:.3g}·√r",
            )
            dotted.append(f"{name.replace('_', '-')}: {level:.3g}·√r")
    ax.set_xlabel("scale r (arrival rates r λ_i, r β_j servers)")
    ax.set_ylabel("time average of " + _DEV_LABEL)
    ax.legend(loc="upper left", fontsize=7.5)
    reps = int(averages["replications"].max()) if "replications" in averages else None
    window = (
        f" over a window of {float(averages['horizon'].iloc[0]):g} time units (of 1/μ) after a "
        "burn-in derived from A_u's leading eigenvalue and r"
        if "horizon" in averages.columns
        else ""
    )
    caption = (
        f"{_OURS} Stationary time average{window} of the diffusion-scaled deviation "
        "|X^r(t) − r x*|/√r of the class totals against the scale r, log-log"
        + (f"; mean of {reps} independent replications" if reps else "")
        + f" with its {conf:.0%} t interval. "
        + (
            "Open markers: windows the first-half/second-half stationarity test flags ("
            + "; ".join(flagged)
            + "), reported but left out of the fits. "
            if flagged
            else "Every window passes the first-half/second-half stationarity test. "
        )
        + "Solid lines: the fits over the top decade of r. Verdict rule: 'tight' if the "
        "slope's interval contains 0 and not 1/2, 'escaping' if it contains 1/2 and not 0. "
        + "; ".join(notes)
        + "."
        + (
            " Dotted: the time-averaged size of the fluid model's limit cycle times √r, the "
            "deviation expected once the system follows the fluid oscillation "
            f"({'; '.join(dotted)})."
            if dotted
            else ""
        )
        + " Illustrates the paper's claim: when the fluid equilibrium is unstable, the "
        "diffusion-scaled stationary distributions are not tight (they escape as r grows)."
    )
    return fig, caption


@styled
def fluid_limit_figure(table: pd.DataFrame, slopes: pd.DataFrame) -> tuple[Figure, str]:
    """sup over a fixed window of |X^r(t)/r − x(t)| against r, log-log, one colour per example.

    ``table``: :func:`.experiments.fluid_limit_table` (``example, r, sup_distance,
    sup_distance_ci``, optionally ``t_end, replications, fluid_error``); ``slopes``:
    :func:`.experiments.fluid_limit_slopes` (``example, slope, slope_low, slope_high``,
    optionally ``confidence``). Error bars: t intervals; thin dashed lines: the reference
    slope −1/2 through each example's points.
    """
    _require(table, ["example", "r", "sup_distance", "sup_distance_ci"], "table")
    _require(slopes, ["example", "slope", "slope_low", "slope_high"], "slopes")
    fig, ax = new_figure(figsize=(6.8, 4.6))
    conf = float(slopes["confidence"].iloc[0]) if "confidence" in slopes else 0.95
    notes = []
    for k, name in enumerate(dict.fromkeys(table["example"])):
        df = table[table["example"] == name].sort_values("r")
        r = df["r"].to_numpy(float)
        y = df["sup_distance"].to_numpy(float)
        ci = np.nan_to_num(df["sup_distance_ci"].to_numpy(float))
        color = _color(name, k)
        label = name.replace("_", "-")
        v = slopes[slopes["example"] == name]
        if len(v):
            v = v.iloc[0]
            s, lo, hi = float(v["slope"]), float(v["slope_low"]), float(v["slope_high"])
            label += f": slope {_num(s)}, {conf:.0%} CI {_interval(lo, hi)}"
            notes.append(
                f"{name.replace('_', '-')}: slope {_num(s)}, interval {_interval(lo, hi)}"
                + (" (contains −1/2)" if lo <= -0.5 <= hi else " (excludes −1/2)")
            )
        _scale_points(ax, r, y, ci, color, label)
        x0, y0 = np.log10(r).mean(), np.log10(y).mean()
        ax.loglog(r, 10 ** (y0 - 0.5 * (np.log10(r) - x0)), color=color, lw=0.9, ls="--", alpha=0.7)
    ax.plot([], [], color="0.4", lw=0.9, ls="--", label="reference slope −1/2")
    ax.set_xlabel("scale r (arrival rates r λ_i, r β_j servers)")
    ax.set_ylabel(r"$\sup_{t \leq T}\, |X^r(t)/r - x(t)|$  (per unit r)")
    ax.legend(loc="lower left", fontsize=7.5)
    window = f" [0, {float(table['t_end'].iloc[0]):g}]" if "t_end" in table else ""
    reps = int(table["replications"].max()) if "replications" in table else None
    err = (
        f" The fluid integrator's own error (step halved) is at most "
        f"{float(table['fluid_error'].max()):.1e}, far below the distances."
        if "fluid_error" in table
        else ""
    )
    caption = (
        f"{_OURS} The fluid limit, directly: from one fluid-scaled initial condition per "
        "example (stable: a perturbation of x*; unstable: a point on the fluid limit cycle), "
        f"the largest distance over the fixed window{window} (time units of 1/μ) between the "
        "scaled r-th stochastic system X^r(t)/r and the LQFS-LB fluid solution x(t) started "
        "at the same point, against r, log-log"
        + (f"; mean of {reps} replications" if reps else "")
        + f" with its {conf:.0%} t interval. The fluid limit with Gaussian fluctuations (which "
        "the paper's Theorems 3.1-3.2 build on) predicts slope −1/2 (dashed). "
        + "; ".join(notes)
        + "."
        + err
    )
    return fig, caption


# -- what to do instead -------------------------------------------------------------------------
#: Colour and label of each discipline in the what-to-do-instead figure.
POLICY_STYLE = {
    "lqfs-lb": (PALETTE[1], "LQFS-LB"),
    "lap": (PALETTE[0], "LAP"),
    "static": (PALETTE[2], "static routing"),
}


@styled
def lap_figure(
    averages: pd.DataFrame, verdicts: pd.DataFrame, ou: pd.DataFrame, price: pd.DataFrame
) -> tuple[Figure, str]:
    """LQFS-LB, LAP and static routing side by side: one row per example.

    Left: the stationary time-averaged |diffusion-scaled deviation| against r (log-log) per
    discipline with its t intervals, the top-decade slope and verdict in the legend, and LAP's
    OU prediction E|Y|, Y ~ N(0, Sigma), dashed. Right: the price of stability, customers per
    unit r at the largest common r per discipline (bars: the fluid equilibrium; markers with
    intervals: simulated), sojourn time by Little's law in the labels.

    ``averages``, ``verdicts``: :func:`.experiments.lap_time_averages`; ``ou``:
    :func:`.experiments.lap_ou_table`; ``price``: :func:`.experiments.price_of_stability`.
    """
    _require(
        averages, ["example", "policy", "r", "mean_norm", "mean_norm_ci", "stationary"], "averages"
    )
    _require(
        verdicts, ["example", "policy", "slope", "slope_low", "slope_high", "verdict"], "verdicts"
    )
    _require(ou, ["example", "r", "quantity", "predicted"], "ou")
    _require(
        price,
        ["example", "policy", "r", "equilibrium", "customers", "customers_ci", "sojourn_time"],
        "price",
    )
    names = list(dict.fromkeys(averages["example"]))
    fig, axes = new_figure(
        len(names),
        2,
        figsize=(10.5, 3.9 * len(names)),
        squeeze=False,
        gridspec_kw={"width_ratios": [1.7, 1.0]},
    )
    conf = float(verdicts["confidence"].iloc[0]) if "confidence" in verdicts else 0.95
    notes = []
    for row, name in enumerate(names):
        ax, bx = axes[row]
        title = _title(name)
        for policy, (color, label) in POLICY_STYLE.items():
            df = averages[(averages["example"] == name) & (averages["policy"] == policy)]
            if not len(df):
                continue
            df = df.sort_values("r")
            r = df["r"].to_numpy(float)
            ok = df["stationary"].astype(bool).to_numpy()
            v = verdicts[(verdicts["example"] == name) & (verdicts["policy"] == policy)]
            text = label
            if len(v) and np.isfinite(float(v["slope"].iloc[0])):
                v = v.iloc[0]
                low, high = float(v["slope_low"]), float(v["slope_high"])
                slope = f"slope {_num(float(v['slope']))} {_interval(low, high)}"
                text = f"{label}: {slope}, {v['verdict']}"
                notes.append(f"{title} {label} {slope}")
            y = df["mean_norm"].to_numpy(float)
            ci = np.nan_to_num(df["mean_norm_ci"].to_numpy(float))
            for mask, face, lab in ((ok, color, text), (~ok, "white", None)):
                if mask.any():
                    _scale_points(ax, r[mask], y[mask], ci[mask], color, lab, face=face)
            ax.loglog(r, y, color=color, lw=0.8, alpha=0.5)
        level = ou[(ou["example"] == name) & (ou["quantity"] == "mean_norm")]
        if len(level):
            ax.axhline(
                float(level["predicted"].iloc[0]),
                color=POLICY_STYLE["lap"][0],
                ls="--",
                lw=1.0,
                label=f"LAP's OU limit E|Y| = {float(level['predicted'].iloc[0]):.3g}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("scale r")
        ax.set_ylabel("time average of " + _DEV_LABEL)
        ax.set_title(f"{title}: diffusion-scaled deviation", fontsize=10)
        ax.legend(loc="upper left", fontsize=7)
        pr = price[price["example"] == name]
        labels, ys = [], []
        for k, (policy, (color, label)) in enumerate(POLICY_STYLE.items()):
            p = pr[pr["policy"] == policy]
            if not len(p):
                continue
            p = p.iloc[0]
            bx.bar(k, float(p["equilibrium"]), color=lighten(color), edgecolor=color, width=0.6)
            bx.errorbar(
                k, float(p["customers"]), yerr=float(p["customers_ci"]), color=color,
                marker="o", ms=5, capsize=3,
            )  # fmt: skip
            labels.append(f"{label}\nW = {float(p['sojourn_time']):.3g}")
            ys.append(k)
        bx.set_xticks(ys, labels, fontsize=8)
        bx.set_ylabel("customers per unit r, sum X_i / r")
        r_top = float(pr["r"].iloc[0]) if len(pr) else float("nan")
        bx.set_title(f"price of stability at r = {_r_plain(r_top)}", fontsize=10)
    reps = int(averages["replications"].max()) if "replications" in averages else None
    caption = (
        "Ours: what to do instead of LQFS-LB. Left: the stationary time average of the "
        "diffusion-scaled deviation |X^r − r x*|/√r of each discipline from its own fluid "
        "equilibrium x*, against r (log-log), LQFS-LB (the paper's discipline), Leaf Activity "
        "Priority (LAP, Stolyar & Yudovina (2012)) and static routing in proportion to the "
        "SPP's flows, on common random numbers"
        + (f"; mean of {reps} replications" if reps else "")
        + f" with {conf:.0%} t intervals, open markers where the stationarity test flags the "
        "window. Legend: the slope over the top decade with its interval and the verdict "
        "('tight': contains 0 not 1/2; 'escaping': contains 1/2 not 0). Dashed: E|Y| under "
        "the stationary law N(0, Σ) of LAP's Ornstein–Uhlenbeck limit, A Σ + Σ Aᵀ + 2 diag λ "
        "= 0. Right: customers per unit r (bars: the fluid equilibrium; markers: simulated, "
        "with intervals) and the mean sojourn time W by Little's law (time units of 1/μ). "
        + "Slopes: "
        + "; ".join(notes)
        + "."
    )
    return fig, caption
