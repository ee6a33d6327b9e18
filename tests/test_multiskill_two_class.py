"""C = 2 closed forms (Sec. 4.1) against the exact solver, an independent implementation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from queue_routing.multiskill import Instance, delta, solve_exact, solve_exact_batch
from queue_routing.multiskill.two_class import (
    BOUNDARY_KEYS,
    CASE_PARTITIONS,
    _boundary_lines,
    case_boundaries,
    case_conditions,
    case_map,
    closed_form_loads,
    solve_two_class,
)

# (mu, cost) settings that together make every case optimal somewhere (asserted below);
# delta = (1.5, 3), (0.5, 2), (0.5, 0.71) and (1.22, 1.73).
SETTINGS = [
    ((10.0, 10.0, 10.0), (1.0, 2.25, 9.0)),
    ((10.0, 10.0, 10.0), (1.0, 0.25, 4.0)),
    ((10.0, 10.0, 10.0), (4.0, 1.0, 2.0)),
    ((3.0, 2.0, 1.0), (1.0, 1.0, 1.0)),
]


def _swapped(mu, cost):
    """The same system with the two classes relabelled (so delta_1 > delta_2)."""
    return (mu[0], mu[2], mu[1]), (cost[0], cost[2], cost[1])


ALL_SETTINGS = SETTINGS + [_swapped(*s) for s in SETTINGS]


def _grid(mu, n):
    """An n x n grid over the box that contains the stable region (stable points only)."""
    mu = np.asarray(mu)
    e1, e2 = np.meshgrid(
        np.linspace(0.0, mu[0] + mu[1], n + 1)[1:],
        np.linspace(0.0, mu[0] + mu[2], n + 1)[1:],
        indexing="ij",
    )
    stable = mu[0] > np.clip(e1 - mu[1], 0, None) + np.clip(e2 - mu[2], 0, None)
    return e1, e2, stable


def _near_boundary(inst: Instance, loads: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether some class sits on a Proposition 2 threshold at the optimum."""
    x = inst.delta * (1.0 - loads[0])
    r = inst.dedicated_loads
    return bool(np.any((np.abs(x - 1.0) < tol) | (np.abs(x - (1.0 - r)) < tol)))


@pytest.mark.parametrize("mu, cost", ALL_SETTINGS)
def test_closed_form_matches_exact_per_instance(mu, cost):
    e1, e2, stable = _grid(mu, 40)
    swapped = delta(np.array(mu), np.array(cost))[0] > delta(np.array(mu), np.array(cost))[1]
    mismatched_partitions = 0
    for a, b in zip(e1[stable], e2[stable], strict=True):
        inst = Instance(mu=mu, cost=cost, eta=[a, b])
        cf = solve_two_class(inst)
        ex = solve_exact(inst)
        np.testing.assert_allclose(cf.loads, ex.loads, rtol=0, atol=1e-9)
        assert cf.relabelled == swapped
        assert cf.cost == pytest.approx(ex.cost, rel=1e-9)
        assert 1 <= cf.case <= 7
        # The partition (original labels) is the exact solver's, except on a boundary.
        if cf.partition != ex.partition:
            assert _near_boundary(inst, ex.loads), (inst, cf, ex)
            mismatched_partitions += 1
        # The case's partition, in the w.l.o.g. frame, is the reported one.
        labels = cf.partition.labels[::-1] if swapped else cf.partition.labels
        assert tuple(labels) == CASE_PARTITIONS[cf.case]
        sol = cf.to_solution()
        assert sol.method == "closed-form" and sol.cost == pytest.approx(cf.cost)
    assert mismatched_partitions <= 0.01 * stable.sum()


def test_every_case_occurs():
    seen: set[int] = set()
    for mu, cost in SETTINGS:
        e1, e2, stable = _grid(mu, 80)
        seen |= set(np.unique(case_map(mu, cost, e1, e2)[stable]).tolist())
    assert seen == {1, 2, 3, 4, 5, 6, 7}  # the paper's six cases and C_b={1}, C_0={2}


def test_case_seven_example_from_docstring():
    inst = Instance(mu=[10, 10, 10], cost=[1, 2.25, 9], eta=[5, 5])
    sol = solve_two_class(inst)
    assert sol.case == 7 and not sol.relabelled
    np.testing.assert_allclose(sol.loads, [0.6, 0.4, 0.0], atol=1e-14)
    assert sol.partition == solve_exact(inst).partition


@pytest.mark.parametrize("mu, cost", ALL_SETTINGS)
def test_closed_form_matches_exact_dense_grid(mu, cost):
    """Vectorised: every stable point of a 200 x 200 grid; exactly one case holds at each."""
    mu_a, cost_a = np.array(mu), np.array(cost)
    e1, e2, stable = _grid(mu, 200)
    eta = np.stack([e1[stable], e2[stable]], axis=-1)
    exact = solve_exact_batch(np.tile(mu_a, (len(eta), 1)), np.tile(cost_a, (len(eta), 1)), eta)
    dlt = delta(mu_a, cost_a)
    m, d, et = mu_a, dlt, eta
    swap = dlt[0] > dlt[1]
    if swap:
        m, d, et = mu_a[[0, 2, 1]], dlt[::-1], eta[:, ::-1]
    conds = case_conditions(m, d, et)
    n_true = sum(c.astype(int) for c in conds.values())
    assert np.all(n_true == 1)
    case = case_map(mu, cost, e1, e2)
    assert np.all(case[~stable] == 0) and np.all(case[stable] >= 1)
    loads = closed_form_loads(case[stable], m, d, et)
    if swap:
        loads = loads[:, [0, 2, 1]]
    np.testing.assert_allclose(loads, exact, rtol=0, atol=1e-9)
    # case_map agrees with the per-instance solver on a sample
    for k in range(0, len(eta), 997):
        assert solve_two_class(Instance(mu=mu, cost=cost, eta=eta[k])).case == case[stable][k]


def _wlog_labels(sol, swap: bool) -> tuple[int, int]:
    labels = sol.partition.labels
    return tuple(int(v) for v in (labels[::-1] if swap else labels))


@pytest.mark.parametrize("mu, cost", ALL_SETTINGS)
def test_boundaries_separate_the_exact_partitions(mu, cost):
    """On each side of each closed-form boundary, the exact solver's partitions are the two
    cases the boundary names."""
    mu_a, cost_a = np.array(mu), np.array(cost)
    swap = bool(delta(mu_a, cost_a)[0] > delta(mu_a, cost_a)[1])
    x = np.linspace(0.0, mu[0] + mu[1], 61)[1:]
    curves = case_boundaries(mu, cost, x)
    assert set(curves) == {*BOUNDARY_KEYS, "stability"}
    n_checked = 0
    for key in BOUNDARY_KEYS:
        e1, e2 = curves[key]
        assert e1.shape == e2.shape == x.shape
        i, j = (int(c) for c in key.split("|"))
        pts = np.flatnonzero(np.isfinite(e1) & np.isfinite(e2))
        if pts.size < 2:
            continue
        # normal of the line from two of its points
        t = np.array([e1[pts[-1]] - e1[pts[0]], e2[pts[-1]] - e2[pts[0]]])
        n = np.array([-t[1], t[0]]) / np.hypot(*t)
        for k in pts:
            got = set()
            for sgn in (1.0, -1.0):
                p = np.array([e1[k], e2[k]]) + sgn * 1e-6 * n
                got.add(_wlog_labels(solve_exact(Instance(mu=mu, cost=cost, eta=p)), swap))
            assert got == {CASE_PARTITIONS[i], CASE_PARTITIONS[j]}, (key, e1[k], e2[k])
            n_checked += 1
    assert n_checked > 20
    s1, s2 = curves["stability"]
    ok = np.isfinite(s1)
    margin = mu[0] - np.clip(s1[ok] - mu[1], 0, None) - np.clip(s2[ok] - mu[2], 0, None)
    np.testing.assert_allclose(margin, 0.0, atol=1e-12)


def test_boundary_keys_are_complete():
    """Neighbouring grid cells in different cases are separated by a listed boundary, except
    for cell pairs straddling a corner where two boundary lines cross."""
    keys = {tuple(int(c) for c in k.split("|")) for k in BOUNDARY_KEYS}
    found = set()
    for mu, cost in SETTINGS:  # all with delta_1 <= delta_2
        n = 400
        e1, e2, _ = _grid(mu, n)
        h = max(mu[0] + mu[1], mu[0] + mu[2]) / n
        cm = case_map(mu, cost, e1, e2)
        lines = list(_boundary_lines(np.array(mu), delta(np.array(mu), np.array(cost))).values())
        corners = []
        for (a1, a2, b1), (c1, c2, b2) in itertools.combinations(lines, 2):
            det = a1 * c2 - a2 * c1
            if abs(det) > 1e-12:
                corners.append(((b1 * c2 - a2 * b2) / det, (a1 * b2 - b1 * c1) / det))
        corners = np.array(corners)
        for a, b, x, y in (
            (cm[1:, :], cm[:-1, :], e1[1:, :], e2[1:, :]),
            (cm[:, 1:], cm[:, :-1], e1[:, 1:], e2[:, 1:]),
        ):
            diff = (a != b) & (a > 0) & (b > 0)
            for p, xx, yy in zip(zip(a[diff], b[diff], strict=True), x[diff], y[diff], strict=True):
                pair = tuple(sorted(int(v) for v in p))
                if pair in keys:
                    found.add(pair)
                else:
                    dist = np.hypot(corners[:, 0] - xx, corners[:, 1] - yy).min()
                    assert dist < 2 * h, (mu, cost, pair, xx, yy)
    assert found == keys  # every listed boundary is met on these settings


def test_case_map_relabelling_is_a_transpose():
    mu, cost = SETTINGS[0]
    mu_s, cost_s = _swapped(mu, cost)
    e = np.linspace(0.1, 19.9, 57)
    g1, g2 = np.meshgrid(e, e, indexing="ij")
    np.testing.assert_array_equal(case_map(mu, cost, g1, g2), case_map(mu_s, cost_s, g2, g1))


def test_rejects_other_sizes():
    with pytest.raises(ValueError, match="C = 2"):
        solve_two_class(Instance(mu=[5, 1, 1, 1], cost=[1, 1, 1, 1], eta=[0.5, 0.5, 0.5]))
    with pytest.raises(ValueError):
        case_map([1, 1], [1, 1], 0.5, 0.5)


def test_ties_in_delta_are_not_relabelled():
    for a, b in itertools.product([0.3, 0.9, 1.4], repeat=2):
        inst = Instance(mu=[1, 1, 1], cost=[2, 1, 1], eta=[a, b])
        sol = solve_two_class(inst)
        assert not sol.relabelled
        np.testing.assert_allclose(sol.loads, solve_exact(inst).loads, atol=1e-12)
