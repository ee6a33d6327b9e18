"""Smoke tests of the Part C figures (ours) on small synthetic tables in the documented schemas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from queue_routing.plotting import save_figure
from queue_routing.serverpools import figures as F
from queue_routing.serverpools.experiments import example_rows
from queue_routing.serverpools.instances import EXAMPLES, example_system


def _check(result, *words):
    fig, caption = result
    assert isinstance(fig, Figure)
    assert F.PAPER in caption and "ours" in caption.lower()
    for word in words:
        assert word in caption, word
    return fig, caption


def scan() -> pd.DataFrame:
    theta = np.linspace(0.0, 1.5, 31)
    return pd.DataFrame(
        {
            "theta": theta,
            "mu_spread": 300.0**theta,
            "beta_spread": 60.0**theta,
            "rho": 0.9,
            "max_real_underloaded": -1.4 + 1.6 * theta**2,
            "imag_underloaded": 3.0,
            "max_real_critical": -1.4 - 2.0 * theta**2,
        }
    )


def crossings() -> pd.DataFrame:
    t = float(np.sqrt(1.4 / 1.6))
    return pd.DataFrame(
        {
            "matrix": ["A_u", "A_c"],
            "found": [True, False],
            "theta_crossing": [t, np.nan],
            "mu_spread": [300.0**t, np.nan],
            "beta_spread": [60.0**t, np.nan],
            "frequency": [3.0, np.nan],
        }
    )


def fluid() -> pd.DataFrame:
    parts = []
    for name, rate, t_end in (("stable", -1.0, 10.0), ("unstable", 0.3, 80.0)):
        t = np.linspace(0.0, t_end, 161)
        amp = 1e-3 * np.exp(rate * t)
        sat = np.minimum(amp, 0.02) if rate > 0 else amp
        df = pd.DataFrame(
            {
                "example": name,
                "time": t,
                "norm_fluid": sat * (1.2 + np.cos(3 * t)),
                "norm_linear": amp * (1.2 + np.cos(3 * t)),
                "load_spread": 0.0,
                "queue_total": 0.0,
            }
        )
        for i in (1, 2):
            df[f"fluid_class_{i}"] = sat * np.cos(3 * t + i)
        for i in (1, 2):
            df[f"linear_class_{i}"] = amp * np.cos(3 * t + i)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def traces() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for name, growth in (("stable", 0.0), ("unstable", 0.2)):
        for r in (100.0, 1000.0):
            t = np.arange(0.0, 20.5, 0.5)
            dev = rng.normal(size=(t.size, 2)) * r**growth
            df = pd.DataFrame({"example": name, "r": r, "replication": 0, "time": t})
            df["norm"] = np.linalg.norm(dev, axis=1)
            df.loc[0, "norm"] = 0.0  # started exactly at the nominal point
            df["deviation_class_1"], df["deviation_class_2"] = dev[:, 0], dev[:, 1]
            rows.append(df)
    return pd.concat(rows, ignore_index=True)


def averages() -> pd.DataFrame:
    rows = []
    for name, slope in (("stable", 0.0), ("unstable", 0.5)):
        for r in (100.0, 1000.0, 10000.0):
            rows.append(
                {
                    "example": name,
                    "r": r,
                    "replications": 3,
                    "t_end": 80.0,
                    "warmup": 20.0,
                    "horizon": 60.0,
                    "mean_norm": 1.5 * r**slope,
                    "mean_norm_se": 0.05 * r**slope,
                    "mean_norm_ci": 0.2 * r**slope,
                    "stationary": not (name == "unstable" and r == 100.0),
                }
            )
    return pd.DataFrame(rows)


def verdicts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example": ["stable", "unstable"],
            "r_min": [1000.0, 1000.0],
            "r_max": [10000.0, 10000.0],
            "slope": [0.0, 0.5],
            "slope_low": [-0.03, 0.46],
            "slope_high": [0.03, 0.54],
            "confidence": [0.95, 0.95],
            "verdict": ["tight", "escaping"],
        }
    )


def limit_table() -> pd.DataFrame:
    rows = []
    for name, c in (("stable", 2.0), ("unstable", 5.0)):
        for r in (1e3, 1e4, 1e5):
            rows.append(
                {
                    "example": name,
                    "r": r,
                    "replications": 4,
                    "t_end": 6.0,
                    "sup_distance": c / np.sqrt(r),
                    "sup_distance_ci": 0.2 * c / np.sqrt(r),
                    "fluid_error": 1e-8,
                }
            )
    return pd.DataFrame(rows)


def limit_slopes() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example": ["stable", "unstable"],
            "slope": [-0.5, -0.45],
            "slope_low": [-0.55, -0.48],
            "slope_high": [-0.45, -0.42],
            "confidence": [0.95, 0.95],
        }
    )


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_tree_figure(name, tmp_path):
    rows = example_rows(name, example_system(name))
    fig, caption = _check(F.tree_figure(EXAMPLES[name], rows, name), "μ_ij", "Theorem 3.1")
    assert ("unstable." in caption) == (name != "stable")  # both unstable examples
    paths = save_figure(fig, tmp_path / f"tree_{name}", caption)
    assert all(p.stat().st_size > 1000 for p in paths)


def test_boundary_figure(tmp_path):
    fig, caption = _check(F.boundary_figure(scan(), crossings()), "θ*", "A_c stays stable")
    save_figure(fig, tmp_path / "boundary", caption)
    with pytest.raises(ValueError, match="missing"):
        F.boundary_figure(scan().drop(columns="theta"), crossings())


def test_boundary_figure_without_crossing():
    _, caption = F.boundary_figure(scan(), crossings().assign(found=False))
    assert "none in this range" in caption


def test_fluid_figure(tmp_path):
    fig, caption = _check(F.fluid_figure(fluid(), detail_until=40.0), "first 40 time units")
    save_figure(fig, tmp_path / "fluid", caption)
    with pytest.raises(ValueError, match="empty"):
        F.fluid_figure(fluid().iloc[:0])


def test_deviation_figure(tmp_path):
    fig, caption = _check(F.deviation_figure(traces(), warmup=5.0), "r = 10², 10³")
    save_figure(fig, tmp_path / "deviation", caption)
    with pytest.raises(ValueError, match="replication"):
        F.deviation_figure(traces(), replication=3)
    burn = {("stable", 100.0): 3.5, ("unstable", 1000.0): 40.0}
    _, marked = F.deviation_figure(traces(), warmups=burn)
    assert "derived burn-in" in marked


def test_time_average_figure(tmp_path):
    levels = {"unstable": 0.015}
    fig, caption = _check(
        F.time_average_figure(averages(), verdicts(), fluid_levels=levels),
        "escaping",
        "contains 1/2 and not 0",
        "window of 60 time units",
        "95% interval [0.46, 0.54]",
    )
    assert "0.015·√r" in caption
    assert "flags (unstable at r = 10²)" in caption  # the open marker, left out of the fit
    save_figure(fig, tmp_path / "time_average", caption)
    _, plain = F.time_average_figure(averages(), verdicts())
    assert "Dotted" not in plain
    passed = averages().assign(stationary=True)
    assert "Every window passes" in F.time_average_figure(passed, verdicts())[1]


def test_fluid_limit_figure(tmp_path):
    fig, caption = _check(
        F.fluid_limit_figure(limit_table(), limit_slopes()),
        "stable: slope −0.5, interval [−0.55, −0.45] (contains −1/2)",
        "(excludes −1/2)",
        "[0, 6]",
    )
    save_figure(fig, tmp_path / "fluid_limit", caption)
    with pytest.raises(ValueError, match="missing"):
        F.fluid_limit_figure(limit_table().drop(columns="sup_distance"), limit_slopes())


def test_deviation_figure_thins_the_scales():
    many = pd.concat([traces().assign(r=lambda d, k=k: d["r"] * 10**k) for k in (0, 2, 4)])
    _, caption = F.deviation_figure(many, max_curves=3)
    assert "r = 10², 10⁴, 10⁷" in caption
    _, everything = F.deviation_figure(many, max_curves=None)
    assert "10³" in everything
