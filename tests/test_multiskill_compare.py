"""Comparison models (Sec. 5, reconstructed): no sharing, all sharing, switching curves."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize

from queue_routing.multiskill import Instance, holding_cost, solve_exact
from queue_routing.multiskill.compare import (
    FIG4_COST,
    FIG4_ETA1,
    FIG4_ETA1_VALUES,
    FIG4_ETA2_RANGE,
    FIG4_MU,
    FIG5_COST,
    FIG5_ETA1_VALUES,
    FIG5_ETA2_RANGE,
    FIG5_MU,
    all_sharing,
    all_sharing_batch,
    compare,
    cost_curves,
    cost_difference,
    cost_difference_map,
    no_sharing_cost,
    switching_curve,
    switching_point,
)
from queue_routing.multiskill.instances import random_instance, table1


def _random_instances(rng, count, c_max=8):
    """Stable instances with a spread of loads and costs (mu_0 may be small or large)."""
    out = []
    while len(out) < count:
        c = int(rng.integers(1, c_max + 1))
        mu = rng.uniform(0.5, 10.0, c + 1)
        cost = rng.uniform(0.2, 10.0, c + 1)
        eta = mu[1:] * rng.uniform(0.05, 1.4, c)
        try:
            out.append(Instance(mu=mu, cost=cost, eta=eta))
        except ValueError:
            continue
    return out


# -- all sharing ---------------------------------------------------------------------------
def _all_sharing_generic(mu, cost, total):
    """Independent reference: SLSQP on the loads from a feasible start, objective scaled."""
    x0 = np.full(mu.size, total / mu.sum())
    f0 = float(holding_cost(x0, cost))

    def f(x):
        x = np.minimum(x, 1 - 1e-9)
        return float(np.sum(cost * x / (1 - x))) / f0

    def grad(x):
        x = np.minimum(x, 1 - 1e-9)
        return cost / (1 - x) ** 2 / f0

    res = minimize(
        f,
        x0,
        jac=grad,
        method="SLSQP",
        bounds=[(0.0, 1 - 1e-6)] * mu.size,
        constraints=[{"type": "eq", "fun": lambda x: mu @ x - total, "jac": lambda x: mu}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x


def _all_sharing_bisection(mu, cost, total):
    """Independent reference: bisection on the multiplier of F(g) = sum mu (1 - a g)^+."""
    a = np.sqrt(cost / mu)
    lo, hi = 0.0, 1.0 / a.min()
    for _ in range(200):
        g = 0.5 * (lo + hi)
        if np.sum(mu * np.clip(1 - a * g, 0, None)) > total:
            lo = g
        else:
            hi = g
    return np.clip(1 - a * 0.5 * (lo + hi), 0, None)


@pytest.mark.parametrize("variant", ["multiskilled", "same"])
def test_all_sharing_matches_generic_solvers(variant):
    rng = np.random.default_rng(11)
    for inst in _random_instances(rng, 60):
        sol = all_sharing(inst, variant)
        charged = inst.cost if variant == "same" else np.full(inst.mu.size, inst.cost[0])
        np.testing.assert_array_equal(sol.charged_cost, charged)
        total = inst.eta.sum()
        assert inst.mu @ sol.loads == pytest.approx(total, rel=1e-12)  # flow conservation
        np.testing.assert_allclose(
            sol.loads, _all_sharing_bisection(inst.mu, charged, total), atol=1e-12
        )
        ref = _all_sharing_generic(inst.mu, charged, total)
        ref_cost = float(holding_cost(ref, charged))
        assert sol.cost <= ref_cost * (1 + 1e-12)  # never beaten by the generic solver
        assert sol.cost == pytest.approx(ref_cost, rel=1e-6)
        np.testing.assert_allclose(sol.loads, ref, atol=1e-4)
        # KKT: equal marginal cost c/(mu (1-rho)^2) on used servers, >= it on unused ones
        marg = charged / (inst.mu * (1 - sol.loads) ** 2)
        used = sol.used
        assert used.any()
        np.testing.assert_allclose(marg[used], marg[used][0], rtol=1e-9)
        assert np.all(charged[~used] / inst.mu[~used] >= marg[used][0] * (1 - 1e-12))
        assert sol.multiplier == pytest.approx(1 / np.sqrt(marg[used][0]), rel=1e-9)


def test_all_sharing_batch_unstable_and_broadcast():
    mu = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    cost = np.array([1.0, 2.0, 3.0])
    loads, g = all_sharing_batch(mu, cost, np.array([5.0, 3.0]))
    assert np.all(np.isfinite(loads[0])) and np.isfinite(g[0])
    assert np.all(np.isnan(loads[1])) and np.isnan(g[1])  # total = sum mu: unstable
    with pytest.raises(ValueError, match="cost_variant"):
        all_sharing(table1(), "cheap")


# -- orderings and the no-sharing criterion -------------------------------------------------
def _instances_for_orderings():
    rng = np.random.default_rng(5)
    insts = _random_instances(rng, 300)
    insts += [random_instance(c, 2022, k) for c in (2, 3, 5, 10, 20) for k in range(20)]
    return insts


def test_no_sharing_ge_multiskilled_ge_all_sharing_same_costs():
    n_ns = 0
    for inst in _instances_for_orderings():
        res = compare(inst)
        assert set(res) == {"multiskilled", "no_sharing", "all_sharing", "all_sharing_same_costs"}
        ms = res["multiskilled"]
        assert ms == pytest.approx(solve_exact(inst).cost)
        assert res["all_sharing_same_costs"] <= ms * (1 + 1e-12)
        assert res["all_sharing"] is not None  # a stable instance has sum eta < sum mu
        if res["no_sharing"] is None:
            assert np.any(inst.eta >= inst.mu[1:])
        else:
            n_ns += 1
            assert ms <= res["no_sharing"] * (1 + 1e-12)
    assert n_ns > 100


def test_no_sharing_optimal_iff_delta_below_spare_capacity():
    """Equal costs iff delta_j <= 1 - eta_j/mu_j for every j; strictly better otherwise."""
    rng = np.random.default_rng(7)
    n_equal = n_strict = 0
    for _ in range(400):
        c = int(rng.integers(1, 7))
        mu = rng.uniform(0.5, 10.0, c + 1)
        r = rng.uniform(0.02, 0.95, c)
        # delta_j around its threshold 1 - r_j, on both sides
        target = (1 - r) * rng.choice([0.5, 0.9, 0.99, 1.01, 1.1, 2.0], c, p=[0.3] + [0.14] * 5)
        cost = np.empty(c + 1)
        cost[0] = rng.uniform(0.5, 5.0)
        cost[1:] = target**2 * mu[1:] * cost[0] / mu[0]
        inst = Instance(mu=mu, cost=cost, eta=r * mu[1:])
        ns, ms = no_sharing_cost(inst), solve_exact(inst).cost
        if np.all(inst.delta <= 1 - inst.dedicated_loads):
            assert ms == pytest.approx(ns, rel=1e-12, abs=0)
            n_equal += 1
        else:
            assert ms < ns
            n_strict += 1
    assert n_equal > 50 and n_strict > 50


def test_no_sharing_unstable_and_table1():
    assert no_sharing_cost(Instance(mu=[2, 1, 1], cost=[1, 1, 1], eta=[1.5, 0.5])) is None
    assert no_sharing_cost(Instance(mu=[2, 1, 1], cost=[1, 1, 1], eta=[1.0, 0.5])) is None
    res = compare(table1())
    assert res["no_sharing"] == pytest.approx(
        float(np.sum(table1().cost[1:] * (r := table1().dedicated_loads) / (1 - r)))
    )


def test_cli_compare(tmp_path, capsys):
    from queue_routing.cli import main

    path = tmp_path / "inst.json"
    path.write_text(json.dumps({"mu": [2, 1, 1], "cost": [3, 1, 1], "eta": [1.5, 0.5]}))
    assert main(["multiskill", "compare", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["no_sharing"] is None
    assert set(out) == {"multiskilled", "no_sharing", "all_sharing", "all_sharing_same_costs"}


# -- cost curves and switching curves ---------------------------------------------------------
def test_cost_curves_columns_and_values():
    eta2 = np.linspace(0.0, 2.2, 23)
    df = cost_curves(FIG4_MU, FIG4_COST, FIG4_ETA1, eta2)
    assert list(df.columns) == [
        "eta2",
        "multiskilled",
        "no_sharing",
        "all_sharing",
        "all_sharing_same_costs",
    ]
    for row in df.itertuples():
        if row.eta2 <= 0:
            assert np.isnan(row.multiskilled) and np.isnan(row.no_sharing)
            continue
        try:
            inst = Instance(mu=FIG4_MU, cost=FIG4_COST, eta=[FIG4_ETA1, row.eta2])
        except ValueError:
            assert np.isnan(row.multiskilled)
            continue
        ref = compare(inst)
        for col in ("multiskilled", "no_sharing", "all_sharing", "all_sharing_same_costs"):
            if ref[col] is None:
                assert np.isnan(getattr(row, col))
            else:
                assert getattr(row, col) == pytest.approx(ref[col], rel=1e-12)
    assert np.isfinite(df["all_sharing"].iloc[-1])  # all sharing stable beyond multi-skilled


def _check_roots(mu, cost, eta1, roots, variant="multiskilled"):
    for x in roots:
        inst = Instance(mu=mu, cost=cost, eta=[eta1, x])
        ms, sh = solve_exact(inst).cost, all_sharing(inst, variant).cost
        assert ms == pytest.approx(sh, rel=1e-8)
        h = 1e-5 * max(1.0, x)
        lo, hi = cost_difference(mu, cost, eta1, [x - h, x + h], variant)
        assert lo * hi < 0, (eta1, x, lo, hi)


def test_switching_point_fig4_line():
    roots = switching_point(FIG4_MU, FIG4_COST, FIG4_ETA1, FIG4_ETA2_RANGE)
    assert roots.size == 1
    _check_roots(FIG4_MU, FIG4_COST, FIG4_ETA1, roots)
    # multi-skilled is cheaper below the switching point, all sharing above it
    below, above = cost_difference(FIG4_MU, FIG4_COST, FIG4_ETA1, [roots[0] - 0.1, roots[0] + 0.1])
    assert below < 0 < above


@pytest.mark.parametrize(
    "mu, cost, eta1_values, eta2_range",
    [
        (FIG4_MU, FIG4_COST, FIG4_ETA1_VALUES[::6], FIG4_ETA2_RANGE),
        (FIG5_MU, FIG5_COST, FIG5_ETA1_VALUES[::6], FIG5_ETA2_RANGE),
        ((3.0, 2.0, 1.0), (6.0, 1.0, 1.5), np.linspace(0.1, 4.9, 25), (0.01, 3.99)),
    ],
)
def test_switching_curve_roots(mu, cost, eta1_values, eta2_range):
    curve = switching_curve(mu, cost, eta1_values, eta2_range, n_grid=801)
    assert curve.shape[0] == len(eta1_values)
    n_roots = 0
    for e1, row in zip(eta1_values, curve, strict=True):
        roots = row[np.isfinite(row)]
        assert np.all(np.diff(roots) > 0)
        _check_roots(mu, cost, e1, roots)
        n_roots += roots.size
    assert n_roots >= len(eta1_values) // 2  # a genuine curve, not isolated points


def test_fig5_has_equal_capacities_and_different_costs():
    assert np.all(FIG5_MU == FIG5_MU[0])
    assert np.unique(FIG5_COST).size == FIG5_COST.size


def test_no_switching_curve_with_same_costs():
    """All sharing with the same holding costs contains the multi-skilled system."""
    for mu, cost in ((FIG4_MU, FIG4_COST), (FIG5_MU, FIG5_COST), ((3.0, 2.0, 1.0), (1, 2, 3))):
        for e1 in (0.1, 0.5, 0.9, 1.3):
            df = cost_curves(mu, cost, e1, np.linspace(0.01, 3.0, 301)).dropna(
                subset=["multiskilled"]
            )
            assert len(df) > 10
            assert np.all(df["all_sharing_same_costs"] <= df["multiskilled"] * (1 + 1e-12))
            assert switching_point(mu, cost, e1, (0.01, 3.0), "same", n_grid=301).size == 0


def test_switching_point_errors():
    with pytest.raises(ValueError, match="eta2_range"):
        switching_point(FIG4_MU, FIG4_COST, 0.5, (1.0, 0.5))
    with pytest.raises(ValueError, match="C = 2"):
        cost_curves([1, 1, 1, 1], [1, 1, 1, 1], 0.5, [0.5])


def test_cost_difference_map_and_curve_agree():
    """The sign of the grid map flips exactly across the switching curve (Fig. 5 region)."""
    e1 = FIG5_ETA1_VALUES[::10]
    e2 = np.linspace(0.001, 2.0, 301)
    g1, g2 = np.meshgrid(e1, e2, indexing="ij")
    dmap = cost_difference_map(FIG5_MU, FIG5_COST, g1, g2)
    assert dmap.shape == g1.shape
    curve = switching_curve(FIG5_MU, FIG5_COST, e1, FIG5_ETA2_RANGE, n_grid=301)
    for i, x in enumerate(e1):
        np.testing.assert_allclose(dmap[i], cost_difference(FIG5_MU, FIG5_COST, x, e2))
        fin = np.isfinite(dmap[i])
        flips = np.sum(np.diff(np.sign(dmap[i][fin])) != 0)
        assert flips == np.isfinite(curve[i]).sum()
    assert np.nanmin(dmap) < 0 < np.nanmax(dmap)  # both regions exist
