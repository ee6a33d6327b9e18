"""Smoke tests of the figure helpers and the Part A figures, on small synthetic tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import RendererAgg

from queue_routing.multiskill import figures as F
from queue_routing.plotting import new_figure, save_figure, style_context, wrap_caption

MU = np.array([1.0, 1.0, 1.0])
COST = np.array([2.0, 1.0, 1.5])
ETA1 = 0.2


# -- synthetic tables in the documented schemas ------------------------------------------
def _plane(n: int = 30, hi: float = 2.5) -> tuple[np.ndarray, np.ndarray]:
    g = np.linspace(0.02, hi, n)
    e1, e2 = np.meshgrid(g, g)
    return e1.ravel(), e2.ravel()


def case_map() -> pd.DataFrame:
    e1, e2 = _plane()
    case = 1 + (np.floor(e1 * 3).astype(int) + np.floor(e2 * 2).astype(int)) % 7
    case[(e1 + e2 > 3.0) | (e1 > 2.0) | (e2 > 2.0)] = 0
    case[0] = 9  # an unknown value is drawn as "other"
    return pd.DataFrame({"eta1": e1, "eta2": e2, "case": case})


def boundaries() -> pd.DataFrame:
    x = np.linspace(0.0, 2.5, 20)
    lines = {
        "1|2": (x, np.where(x < 1.0, 0.5 + 0.2 * x, np.nan)),
        "2|5": (np.full(20, 1.0), np.linspace(0.0, 2.0, 20)),
        "stability": (x, np.where(x < 2.0, np.minimum(2.0, 3.0 - x), np.nan)),
    }
    return pd.concat(
        pd.DataFrame({"boundary": k, "eta1": a, "eta2": b}) for k, (a, b) in lines.items()
    )


def loads() -> pd.DataFrame:
    e2 = np.linspace(0.01, 1.3, 80)
    base = {
        "eta2": e2,
        "rho0": 0.3 * e2,
        "rho1": np.full_like(e2, 0.5),
        "rho2": np.minimum(0.9, e2 / 2),
    }
    return pd.concat([pd.DataFrame({**base, "source": s}) for s in ("closed-form", "exact")])


def costs() -> pd.DataFrame:
    e = np.linspace(0.01, 1.99, 60)
    ms = e / (2.0 - e)
    return pd.DataFrame(
        {
            "eta2": e,
            "multiskilled": ms,
            "no_sharing": np.where(e < 1.0, e / (1.0 - e), np.nan),
            "all_sharing": 1.2 * e / (2.2 - e) + 0.2,
            "all_sharing_same_costs": 0.9 * ms,
        }
    )


def switching_points() -> pd.DataFrame:
    return pd.DataFrame({"eta1": [ETA1, 0.7], "eta2": [1.2, 1.5]})


def switching_curve() -> pd.DataFrame:
    x = np.linspace(0.01, 2.0, 25)
    upper = np.where(x < 1.0, 1.1 + 0.9 * x, np.nan)
    lower = np.where(x > 1.1, (x - 1.1), np.nan)
    return pd.concat(
        [
            pd.DataFrame({"eta1": x, "eta2": upper, "branch": 0}),
            pd.DataFrame({"eta1": x, "eta2": lower, "branch": 1}),
        ]
    )


def region() -> pd.DataFrame:
    e1, e2 = _plane()
    ms = (e1 + e2) / (3.0 - e1 - e2)
    ms[e1 + e2 >= 2.5] = np.nan
    al = ms + (1.0 + e1 - e2)
    return pd.DataFrame(
        {"eta1": e1, "eta2": e2, "multiskilled": ms, "all_sharing": al, "difference": al - ms}
    )


INITS = ("all C_d", "C_d={1,3,4}, C_b={2,5}", "C_d={1,2,3,4}, C_b={5}")


def trajectories() -> pd.DataFrame:
    rows = []
    for update in ("jacobi", "single"):
        for rounding in (False, True):
            for k, init in enumerate(INITS):
                for it in range(5 - k):  # runs of different lengths
                    for server in range(6):
                        load = min(1.0, 0.1 * server + 0.08 * it + 0.05 * k)
                        rows.append(
                            {
                                "init": init,
                                "update": update,
                                "paper_rounding": rounding,
                                "iteration": it,
                                "server": server,
                                "load": load,
                            }
                        )
    return pd.DataFrame(rows)


def stats() -> pd.DataFrame:
    rows = []
    for update in ("jacobi", "single"):
        for c in range(10, 201, 10):
            lo = 1 + c // 100
            rows.append(
                {
                    "n_classes": c,
                    "update": update,
                    "runs": 12,
                    "min": lo,
                    "median": lo + c / 40,
                    "max": lo + c / 20,
                    "not_converged": (c // 10) % 4 if update == "jacobi" else 0,
                }
            )
    frame = pd.DataFrame(rows)
    frame.loc[
        (frame["update"] == "jacobi") & (frame["n_classes"] == 30), ["min", "median", "max"]
    ] = np.nan  # no run converged
    frame.loc[(frame["update"] == "jacobi") & (frame["n_classes"] == 30), "not_converged"] = 12
    return frame


BUILDERS = {
    "fig1": lambda: F.fig1_schematic(3),
    "fig2": lambda: F.fig2_case_map(case_map(), boundaries(), MU, COST),
    "fig3": lambda: F.fig3_loads(loads(), MU, COST, 0.6),
    "fig4": lambda: F.fig4_costs(
        costs(),
        switching_points(),
        switching_curve(),
        MU,
        COST,
        ETA1,
        region=region()[["eta1", "eta2", "difference"]],
    ),
    "fig5": lambda: F.fig5_region(region(), switching_curve(), MU, COST),
    "fig6": lambda: F.fig6_trajectories(
        trajectories(), "jacobi", False, status={INITS[0]: "cycle"}
    ),
    "fig7": lambda: F.fig7_iterations(stats(), "jacobi"),
}


# -- the figures -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_figure_saves_and_is_byte_stable(name, tmp_path):
    fig, caption = BUILDERS[name]()
    first = save_figure(fig, tmp_path / "a" / name, caption)
    assert [p.name for p in first] == [f"{name}.pdf", f"{name}.png"]
    for path in first:
        assert path.stat().st_size > 1000
    assert first[0].read_bytes().startswith(b"%PDF")
    assert first[1].read_bytes().startswith(b"\x89PNG")
    # Rebuilding the figure from the same tables and saving it (a rerun of the plotting
    # rule) gives the same bytes: no timestamps or other varying metadata.
    fig2, caption2 = BUILDERS[name]()
    assert caption2 == caption
    rebuilt = save_figure(fig2, tmp_path / "b" / name, caption2)
    for a, b in zip(first, rebuilt, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [f"{name}.pdf", f"{name}.png"]


@pytest.mark.parametrize("name", ["fig2"])
def test_saving_the_same_figure_twice_is_byte_identical(name, tmp_path):
    # Drawing runs the constrained-layout solver from the current positions; without the
    # fresh copy in save_figure the second PDF of this figure differs in the 4th decimal.
    fig, caption = BUILDERS[name]()
    n_texts = len(fig.texts)
    first = save_figure(fig, tmp_path / "a" / name, caption)
    again = save_figure(fig, tmp_path / "b" / name, caption)
    assert len(fig.texts) == n_texts  # the caption was not added to fig itself
    for a, b in zip(first, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_captions_name_paper_and_figure(name):
    _, caption = BUILDERS[name]()
    assert F.PAPER in caption
    assert F.CAPTION_FIGURE[name] in caption
    number = int(name[-1])
    assert ("Reconstructed" in caption) == (2 <= number <= 5)


def test_captions_state_parameters():
    _, cap2 = BUILDERS["fig2"]()
    assert "μ = (1, 1, 1)" in cap2 and "c = (2, 1, 1.5)" in cap2
    _, cap4 = BUILDERS["fig4"]()
    assert "η_1 = 0.2" in cap4 and "η_2 = 1.2" in cap4  # only the point at eta1 = 0.2
    assert "1.5" not in cap4.split("switching point(s)")[1].split(".")[0]
    _, cap6 = BUILDERS["fig6"]()
    assert "(25, 34, 38, 39, 13, 27)" in cap6 and "cycles" in cap6


def test_fig2_legend_uses_original_labels_when_classes_swapped():
    # delta_1 > delta_2: case numbers are in the relabelled frame, legend in original labels.
    fig, caption = F.fig2_case_map(case_map(), boundaries(), [10, 10, 10], [1, 9, 2.25])
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("2: $C_b=\\{1\\},\\ C_d=\\{2\\}$") for t in texts)
    assert any("not in the paper" in t for t in texts)
    assert "relabelled" in caption


def test_fig3_subsamples_markers():
    fig, _ = F.fig3_loads(loads(), MU, COST, 0.6, max_markers=10)
    marker_lines = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "None"]
    assert len(marker_lines) == 3
    assert all(len(ln.get_xdata()) == 10 for ln in marker_lines)


def test_fig4_without_region_and_linear_scale():
    flat = costs().assign(
        no_sharing=1.0, multiskilled=2.0, all_sharing=2.5, all_sharing_same_costs=1.5
    )
    fig, caption = F.fig4_costs(
        flat, switching_points().iloc[:0], switching_curve(), MU, COST, ETA1
    )
    assert fig.axes[0].get_yscale() == "linear"
    assert "no switching point" in caption
    fig, _ = F.fig4_costs(costs(), switching_points(), switching_curve(), MU, COST, ETA1)
    assert fig.axes[0].get_yscale() == "log"


def test_fig6_filters_rows_and_marks_cycles():
    fig, caption = BUILDERS["fig6"]()
    assert len(fig.axes) == 2
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["servers 0, 1, 2", "servers 3, 4, 5"]
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3 * 3  # 3 initial partitions x 3 servers, one update only
    assert [len(ln.get_xdata()) for ln in lines[::3]] == [5, 4, 3]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[0] == "all $C_d$ (cycles)"
    assert "single" not in caption.split(";")[1]
    with pytest.raises(ValueError, match="no trajectories"):
        F.fig6_trajectories(trajectories(), "gauss-seidel")


def test_fig7_annotates_non_converged():
    fig, caption = BUILDERS["fig7"]()
    ax = fig.axes[0]
    numbers = [t.get_text() for t in ax.texts]
    expected = stats().query("update == 'jacobi' and not_converged > 0")["not_converged"]
    assert numbers == [str(k) for k in expected]
    assert f"{int(expected.sum())} in total" in caption
    _, caption = F.fig7_iterations(stats(), "single")
    assert "Every run converged" in caption


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match=r"missing column\(s\) \['case'\]"):
        F.fig2_case_map(case_map().drop(columns="case"), boundaries(), MU, COST)
    with pytest.raises(ValueError, match="not_converged"):
        F.fig7_iterations(stats().drop(columns="not_converged"), "single")
    with pytest.raises(ValueError, match="n_shown"):
        F.fig1_schematic(1)


# -- save_figure -------------------------------------------------------------------------
class _Boom(Artist):
    """An artist that fails while drawing (optionally only in the PNG renderer)."""

    def __init__(self, png_only: bool = False):
        super().__init__()
        self.png_only = png_only

    def draw(self, renderer):
        if not self.png_only or isinstance(renderer, RendererAgg):
            raise RuntimeError("boom")


def _simple_figure():
    with style_context():
        fig, ax = new_figure()
        ax.plot([0, 1, 2], [1, 0, 2], label="a")
        ax.legend()
    return fig


@pytest.mark.parametrize("png_only", [False, True])
def test_save_figure_leaves_nothing_behind_on_error(tmp_path, png_only):
    stem = tmp_path / "out" / "fig"
    fig = _simple_figure()
    good = save_figure(fig, stem, "first version")
    before = {p.name: p.read_bytes() for p in good}
    fig.add_artist(_Boom(png_only))
    with pytest.raises(RuntimeError, match="boom"):
        save_figure(fig, stem, "second version")
    # No temporary file left, and the previous pair is untouched (not half-updated).
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before

    fresh = tmp_path / "fresh" / "fig"
    with pytest.raises(RuntimeError, match="boom"):
        save_figure(fig, fresh, "caption")
    assert list(fresh.parent.iterdir()) == []


def test_save_figure_metadata_caption_and_names(tmp_path):
    fig = _simple_figure()
    n_texts = len(fig.texts)
    pdf, png = save_figure(fig, tmp_path / "deep" / "dir" / "fig.v1", "A caption. " * 40)
    assert (pdf.name, png.name) == ("fig.v1.pdf", "fig.v1.png")
    assert len(fig.texts) == n_texts  # caption removed again
    assert b"CreationDate" not in pdf.read_bytes() and b"ModDate" not in pdf.read_bytes()
    assert b"Software" not in png.read_bytes() and b"tIME" not in png.read_bytes()
    assert oct(pdf.stat().st_mode & 0o777) == "0o644"
    # The caption makes the image taller than the bare figure.
    _, bare_png = save_figure(fig, tmp_path / "bare", "")
    from PIL import Image

    with Image.open(png) as a, Image.open(bare_png) as b:
        assert a.size[1] > b.size[1] + 40


def test_wrap_caption_fits_width():
    text = wrap_caption("word " * 200 + "\n\nsecond paragraph", width_in=6.0, fontsize=8)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= int(6.0 * 72 / (0.53 * 8))
    assert lines[-1] == "second paragraph"
