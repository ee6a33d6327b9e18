"""Part C at the edges: units, overload, message length, input types, extreme magnitudes.

References are independent of the library: tree systems built from known flows and known
duals (complete resource pooling by construction), duals and flows solved in rational
arithmetic by our own elimination, closed forms for one class or one pool, and the exact
scaling laws of the SPP and of A_u, A_c under changes of units:

* every rate by s (lambda -> s lambda, mu -> s mu: a change of the time unit): rho, the
  basic tree and the pool duals are unchanged, flows scale by s, class duals by 1/s, and
  A_u, A_c (hence their spectra) scale by s;
* mu alone by s: rho -> rho / s, flows unchanged, class duals / s, A_u, A_c scale by s;
* lambda and beta by s (the unit of r): rho unchanged, flows scale by s, both duals by 1/s,
  M, A_u, A_c unchanged (they depend on beta only through beta_j / sum beta);
* all three by s: rho -> rho / s, flows scale by s, A_u, A_c scale by s.
"""

import io
import json
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.cli import main
from queue_routing.serverpools import (
    MAX_MESSAGE,
    CRPError,
    DisconnectedError,
    NonBindingPoolError,
    NotATreeError,
    NotUnderloadedError,
    ServerPoolError,
    ServerPoolSystem,
    a_critical,
    a_underloaded,
    analyze,
    check_crp,
    exact_eval,
    example_system,
    load_balancing_map,
    random_spanning_tree,
    random_tree_system,
    solve_spp,
    stability_verdict,
    tree_eval,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- independent references -------------------------------------------------------------------
def exact_tree_duals(n_i, n_j, edges, mu, beta):
    """nu, alpha as Fractions: nu_i mu_ij = alpha_j on the tree, sum alpha beta = 1 (BFS)."""
    adj = {v: [] for v in range(n_i + n_j)}
    for (i, j), m in zip(edges, mu, strict=True):
        adj[int(i)].append((n_i + int(j), Fraction(float(m))))
        adj[n_i + int(j)].append((int(i), Fraction(float(m))))
    pot = {0: Fraction(1)}
    todo = [0]
    while todo:
        v = todo.pop()
        for w, m in adj[v]:
            if w not in pot:
                pot[w] = pot[v] * m if w >= n_i else pot[v] / m
                todo.append(w)
    z = sum(pot[n_i + j] * Fraction(float(beta[j])) for j in range(n_j))
    return [pot[i] / z for i in range(n_i)], [pot[n_i + j] / z for j in range(n_j)]


def exact_tree_flows(n_i, n_j, edges, mu, lam, beta):
    """(rho, flows) as Fractions: Gauss-Jordan elimination of the tree's I + J equations."""
    edges = [(int(i), int(j)) for i, j in edges]
    k = len(edges)
    inv_mu = [1 / Fraction(float(m)) for m in mu]
    rows = []
    for i in range(n_i):  # sum_j f_ij = lambda_i
        rows.append([Fraction(int(e[0] == i)) for e in edges] + [0, Fraction(float(lam[i]))])
    for j in range(n_j):  # sum_i f_ij / mu_ij - rho beta_j = 0
        row = [inv_mu[n] if e[1] == j else Fraction(0) for n, e in enumerate(edges)]
        rows.append([*row, -Fraction(float(beta[j])), Fraction(0)])
    n = k + 1  # unknowns: k flows and rho; I + J = k + 1 equations
    for c in range(n):
        p = next(r for r in range(c, n) if rows[r][c] != 0)
        rows[c], rows[p] = rows[p], rows[c]
        piv = rows[c][c]
        rows[c] = [x / piv for x in rows[c]]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                f = rows[r][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[c], strict=True)]
    return rows[k][n], [rows[r][n] for r in range(k)]


def crp_system(seed, n_i, n_j, spread=1e2, extra=0.5, rho=0.8):
    """A tree with known flows plus non-basic activities of known positive reduced cost.

    Rates and tree flows are log-uniform over a factor ``spread``; an extra activity (i, j)
    gets mu_ij = u alpha_j / nu_i with u in [0.1, 0.9], so alpha_j / (nu_i mu_ij) - 1 >= 1/9:
    the tree is the unique SPP optimum and CRP holds. Returns (system, sorted tree edges).
    """
    rng = np.random.default_rng(seed)
    edges = random_spanning_tree(n_i, n_j, rng)
    lo, hi = np.log(spread) * np.array([-0.5, 0.5])
    mu = np.exp(rng.uniform(lo, hi, len(edges)))
    flows = np.exp(rng.uniform(lo, hi, len(edges)))
    rates = np.zeros((n_i, n_j))
    rates[edges[:, 0], edges[:, 1]] = mu
    lam = np.bincount(edges[:, 0], weights=flows, minlength=n_i)
    beta = np.bincount(edges[:, 1], weights=flows / mu, minlength=n_j) / rho
    nu, alpha = exact_tree_duals(n_i, n_j, edges, mu, beta)
    for i in range(n_i):
        for j in range(n_j):
            if rates[i, j] == 0 and rng.random() < extra:
                rates[i, j] = float(alpha[j] / nu[i]) * rng.uniform(0.1, 0.9)
    return ServerPoolSystem(lam, beta, rates), edges


def scaled(system, s_lam=1.0, s_beta=1.0, s_mu=1.0):
    return ServerPoolSystem(
        system.arrival_rates * s_lam, system.pool_sizes * s_beta, system.rates * s_mu
    )


def one_line(err):
    text = str(err)
    assert "\n" not in text and len(text) < MAX_MESSAGE, text
    return text


def close_spectra(w, ref, rtol=1e-8):
    """Eigenvalues ``w`` equal ``ref`` up to rtol times the spectral radius (as multisets)."""
    w, ref = np.sort_complex(np.asarray(w)), np.sort_complex(np.asarray(ref))
    scale = max(float(np.abs(ref).max()), 1e-300)
    return bool(np.all(np.abs(w - ref) <= rtol * scale))


sizes = st.tuples(st.integers(1, 5), st.integers(1, 5))
exponents = st.floats(-8.0, 8.0)
seeds = st.integers(0, 2**32 - 1)


# -- the SPP against the exact references ---------------------------------------------------------
@SETTINGS
@given(seeds, sizes, st.sampled_from([1e1, 1e2, 1e4]))
def test_crp_systems_match_the_exact_solution(seed, size, spread):
    system, edges = crp_system(seed, *size, spread=spread)
    sol = solve_spp(system)
    assert sol.basic.tolist() == edges.tolist()
    mu = system.rates[edges[:, 0], edges[:, 1]]
    rho, flows = exact_tree_flows(*size, edges, mu, system.arrival_rates, system.pool_sizes)
    nu, alpha = exact_tree_duals(*size, edges, mu, system.pool_sizes)
    # the promise: every value within 1e-10 (relative) of the exact solution
    assert sol.rho == pytest.approx(float(rho), rel=1e-10)
    np.testing.assert_allclose(sol.basic_flows, [float(f) for f in flows], rtol=1e-10)
    np.testing.assert_allclose(sol.class_duals, [float(x) for x in nu], rtol=1e-10)
    np.testing.assert_allclose(sol.pool_duals, [float(x) for x in alpha], rtol=1e-10)
    loads = sol.occupancy.sum(axis=0)
    np.testing.assert_allclose(loads, sol.rho * system.pool_sizes, rtol=3e-10)


@SETTINGS
@given(seeds, sizes, st.sampled_from([1e2, 1e4, 1e6]))
def test_round_off_bounds_contain_the_exact_tree_solution(seed, size, spread):
    # The floating-point tree evaluation's error bounds must contain the exact values: the
    # certificate's decisions rest on them.
    rng = np.random.default_rng(seed)
    system = random_tree_system(*size, rng, mu_range=(1 / spread, spread), rho=0.9)
    acts = system.activities
    mu = system.rates[acts[:, 0], acts[:, 1]]
    ev = tree_eval(system.arrival_rates, system.pool_sizes, acts, mu, np.arange(len(acts)))
    rho, flows = exact_tree_flows(*size, acts, mu, system.arrival_rates, system.pool_sizes)
    assert abs(ev.rho - float(rho)) <= ev.rho_error * float(rho)
    assert np.all(np.abs(ev.flows - [float(f) for f in flows]) <= ev.flow_error + 1e-300)
    exact = exact_eval(system.arrival_rates, system.pool_sizes, acts, mu, ev)
    assert exact.rho == float(rho)
    assert exact.flows.tolist() == [float(f) for f in flows]  # rounded once, correctly


# -- item 1: scale invariance -------------------------------------------------------------------
def check_scaling(system, s_lam, s_beta, s_mu):
    """The exact laws of the module docstring for (lambda, beta, mu) -> (s_lam, s_beta, s_mu)."""
    # solve_spp promises every value within 1e-10 of the exact solution of its (rounded)
    # data, so the two sides agree to 2e-10 plus the rounding of the scaled data.
    a, b = solve_spp(system), solve_spp(scaled(system, s_lam, s_beta, s_mu))
    assert b.basic.tolist() == a.basic.tolist()
    assert b.rho == pytest.approx(a.rho * s_lam / (s_beta * s_mu), rel=3e-10)
    np.testing.assert_allclose(b.basic_flows / s_lam, a.basic_flows, rtol=3e-10)
    np.testing.assert_allclose(b.pool_duals * s_beta, a.pool_duals, rtol=3e-10)
    np.testing.assert_allclose(b.class_duals * s_beta * s_mu, a.class_duals, rtol=3e-10)
    np.testing.assert_allclose(load_balancing_map(b), load_balancing_map(a), rtol=0, atol=1e-12)
    va, vb = stability_verdict(a), stability_verdict(b)
    assert close_spectra(vb.eigenvalues_underloaded / s_mu, va.eigenvalues_underloaded)
    assert close_spectra(vb.eigenvalues_critical / s_mu, va.eigenvalues_critical)
    assert (vb.stable_underloaded, vb.stable_critical) == (
        va.stable_underloaded,
        va.stable_critical,
    )
    np.testing.assert_allclose(
        a_underloaded(b) / s_mu,
        a_underloaded(a),
        rtol=0,
        atol=1e-10 * np.abs(a_underloaded(a)).max(),
    )
    np.testing.assert_allclose(
        a_critical(b) / s_mu, a_critical(a), rtol=0, atol=1e-10 * np.abs(a_underloaded(a)).max()
    )


@SETTINGS
@given(seeds, sizes, exponents)
def test_time_unit_change_scales_flows_and_spectra(seed, size, u):
    system, _ = crp_system(seed, *size)
    check_scaling(system, 10.0**u, 1.0, 10.0**u)


@SETTINGS
@given(seeds, sizes, exponents)
def test_service_rates_alone_scale_rho_and_spectra(seed, size, u):
    system, _ = crp_system(seed, *size)
    check_scaling(system, 1.0, 1.0, 10.0**u)


@SETTINGS
@given(seeds, sizes, exponents)
def test_unit_of_r_leaves_rho_and_spectra_unchanged(seed, size, u):
    system, _ = crp_system(seed, *size)
    check_scaling(system, 10.0**u, 10.0**u, 1.0)


@SETTINGS
@given(seeds, sizes, exponents, exponents)
def test_independent_rate_and_pool_scales(seed, size, u, v):
    # random_tree_system (the search's generator) with s_rate on lambda and mu and s_pool on
    # lambda and beta: rho unchanged, spectra scaled by s_rate, verdicts unchanged.
    rng = np.random.default_rng(seed)
    system = random_tree_system(*size, rng, rho=0.9)
    check_scaling(system, 10.0 ** (u + v), 10.0**v, 10.0**u)
    out_a = analyze(system).to_dict()
    out_b = analyze(scaled(system, 10.0 ** (u + v), 10.0**v, 10.0**u)).to_dict()
    assert out_b["stable_underloaded"] == out_a["stable_underloaded"]
    assert out_b["rho"] == pytest.approx(out_a["rho"], rel=1e-11)


@pytest.mark.parametrize("s", [1e-8, 1e8, 1e-30, 1e30])
def test_readme_example_in_other_units(s):
    # The README's unstable example with every rate and pool size multiplied by s: rho / s,
    # eigenvalues * s, the same verdict; and in other time units (lambda, mu by s).
    base = example_system("unstable")
    check_scaling(base, s, s, s)
    check_scaling(base, s, 1.0, s)
    out = analyze(scaled(base, s, 1.0, s)).to_dict()
    assert out["stable_underloaded"] is False
    assert out["rho"] == pytest.approx(0.9, rel=1e-12)


@pytest.mark.parametrize("lam", [1e-100, 1e-12, 1e-7, 1.0, 1e7, 1e100])
def test_one_activity_at_any_scale(lam):
    # lambda = 1e-7 used to be "non-unique"; rho = lambda / (beta mu) at every scale.
    beta, mu = 4.0 * max(lam, 1.0) ** 0.5, 2.0 * max(lam, 1.0) ** 0.5
    out = analyze(
        {
            "arrival_rates": [lam],
            "pool_sizes": [beta],
            "activities": [{"class": 1, "pool": 1, "rate": mu}],
        }
    ).to_dict()
    assert out["rho"] == pytest.approx(lam / (beta * mu), rel=1e-14)
    assert out["flows"][0]["rate"] == pytest.approx(lam, rel=1e-14)
    assert out["eigenvalues_underloaded"] == [[pytest.approx(-mu, rel=1e-14), 0.0]]


magnitudes = st.floats(-99.9, 99.9).map(lambda x: 10.0**x)


@SETTINGS
@given(st.lists(magnitudes, min_size=1, max_size=5), magnitudes, st.data())
def test_one_pool_closed_form_over_the_whole_range(lam, beta, data):
    # One pool: rho = sum_i (lambda_i / mu_i) / beta; A_u = -diag(mu).
    mu = data.draw(st.lists(magnitudes, min_size=len(lam), max_size=len(lam)))
    system = ServerPoolSystem(lam, [beta], np.array(mu)[:, None])
    ref = float(
        sum(Fraction(x) / Fraction(m) for x, m in zip(lam, mu, strict=True)) / Fraction(beta)
    )
    if not 1e-290 < ref < 1e290:
        return
    sol = solve_spp(system)
    assert sol.rho == pytest.approx(ref, rel=1e-12)
    assert close_spectra(stability_verdict(sol).eigenvalues_underloaded, -np.array(mu), 1e-12)


offsets = st.floats(-1.5, 1.5)


@SETTINGS
@given(
    magnitudes,
    st.floats(-90.0, 90.0),
    st.floats(-90.0, 90.0),
    st.lists(st.tuples(offsets, offsets), min_size=1, max_size=5),
)
def test_one_class_closed_form_over_the_whole_range(lam, b, m, offs):
    # One class: rho = lambda / sum_j beta_j mu_j, flows lambda beta_j mu_j / sum (exact);
    # beta and mu anywhere in the range, spread over up to 1e3 each across the pools.
    pools = [(10.0 ** (b + x), 10.0 ** (m + y)) for x, y in offs]
    beta, mu = (np.array(x) for x in zip(*pools, strict=True))
    cap = [Fraction(b) * Fraction(m) for b, m in pools]
    ref = Fraction(lam) / sum(cap)
    if not 1e-290 < ref < 1e290:
        return
    system = ServerPoolSystem([lam], beta, mu[None, :])
    if min(cap) / sum(cap) <= 1e-8:  # a flow below tol = 1e-9 of lambda counts as zero
        with pytest.raises(CRPError):
            solve_spp(system)
        return
    sol = solve_spp(system)
    assert sol.rho == pytest.approx(float(ref), rel=1e-12)
    flows = [float(Fraction(lam) * c / sum(cap)) for c in cap]
    assert np.all(np.abs(sol.flows[0] - flows) <= 1e-12 * lam)


# -- non-CRP verdicts do not depend on the units -------------------------------------------------
def failure_kind(system):
    try:
        solve_spp(system)
    except CRPError as err:
        one_line(err)
        return type(err), err.classes, err.pools
    return None


def non_crp_systems(seed):
    rng = np.random.default_rng(seed)
    base, _ = crp_system(seed, 3, 3, extra=0.0)
    lam, beta, mu = base.arrival_rates, base.pool_sizes, base.rates.copy()
    sol = solve_spp(base)
    # a non-basic activity with zero reduced cost: a cycle of optimal activities
    i, j = next((i, j) for i in range(3) for j in range(3) if mu[i, j] == 0)
    tie = mu.copy()
    tie[i, j] = sol.pool_duals[j] / sol.class_duals[i]
    yield ServerPoolSystem(lam, beta, tie)
    # a second, heavier component: the first one's pools are slack
    heavy = np.zeros((4, 4))
    heavy[:3, :3] = mu
    heavy[3, 3] = rng.uniform(0.5, 2.0)
    load = 2.0 * sol.rho * heavy[3, 3]
    yield ServerPoolSystem([*lam, load], [*beta, 1.0], heavy)
    # two copies with equal rho: disconnected
    twin = np.zeros((6, 6))
    twin[:3, :3] = twin[3:, 3:] = mu
    yield ServerPoolSystem([*lam, *lam], [*beta, *beta], twin)


@settings(max_examples=8, deadline=None)
@given(seeds, exponents, exponents)
def test_crp_failures_are_named_the_same_in_any_units(seed, u, v):
    expected = (NotATreeError, NonBindingPoolError, DisconnectedError)
    for system, kind in zip(non_crp_systems(seed), expected, strict=True):
        ref = failure_kind(system)
        assert ref is not None and issubclass(ref[0], kind), ref
        for s_lam, s_beta, s_mu in [(10**u, 1, 10**u), (10**v, 10**v, 1), (10**u, 10**v, 10**u)]:
            assert failure_kind(scaled(system, s_lam, s_beta, s_mu)) == ref


# -- item 2: overloaded and critical systems ----------------------------------------------------
@SETTINGS
@given(seeds, sizes, st.floats(1.0, 10.0))
def test_analyze_refuses_systems_that_are_not_underloaded(seed, size, rho):
    system = random_tree_system(*size, np.random.default_rng(seed), rho=rho)
    with pytest.raises(NotUnderloadedError, match="only for rho < 1") as info:
        analyze(system)
    text = one_line(info.value)
    assert info.value.rho == pytest.approx(rho, rel=1e-12)
    assert f"rho = {info.value.rho:.10g}" in text
    verdict = stability_verdict(system)  # the library still gives the spectra, with the regime
    assert verdict.regime == ("critical" if abs(rho - 1) <= 1e-9 else "overloaded")
    assert verdict.rho == pytest.approx(rho, rel=1e-12)


@SETTINGS
@given(seeds, sizes, st.floats(0.01, 0.999))
def test_underloaded_systems_are_analysed(seed, size, rho):
    system = random_tree_system(*size, np.random.default_rng(seed), rho=rho)
    out = analyze(system)
    assert out.rho == pytest.approx(rho, rel=1e-12)
    assert stability_verdict(system).regime == "underloaded"


def test_critical_system_is_refused_by_analyze_and_has_a_regime():
    system = ServerPoolSystem([0.75, 1.5], [1.0, 1.0], [[1.0, 0.0], [2.0, 1.0]])  # rho = 1
    with pytest.raises(NotUnderloadedError):
        analyze(system)
    verdict = stability_verdict(system)
    assert verdict.regime == "critical" and verdict.stable_critical


def run_cli(monkeypatch, capsys, obj):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(obj)))
    code = main(["serverpools", "analyze", "-"])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_an_overloaded_system_in_one_line(monkeypatch, capsys):
    obj = {
        "arrival_rates": [3.0],
        "pool_sizes": [1.0],
        "activities": [{"class": 1, "pool": 1, "rate": 1.0}],
    }
    code, out, err = run_cli(monkeypatch, capsys, obj)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "not underloaded" in err and "rho = 3" in err


def test_cli_analyses_the_readme_example_in_other_units(monkeypatch, capsys):
    base = example_system("unstable")
    ref = analyze(base).to_dict()
    # every rate and pool size by 1e-8: rho = 0.9e8, so not underloaded (it was "non-binding")
    code, out, err = run_cli(monkeypatch, capsys, scaled(base, 1e-8, 1e-8, 1e-8).to_dict())
    assert code == 1 and "not underloaded" in err and "rho = 90000000" in err
    # by 1e8: rho = 0.9e-8, the same eigenvalues times 1e8
    code, out, err = run_cli(monkeypatch, capsys, scaled(base, 1e8, 1e8, 1e8).to_dict())
    assert code == 0, err
    got = json.loads(out)
    assert got["stable_underloaded"] is False
    assert got["rho"] == pytest.approx(ref["rho"] * 1e-8, rel=1e-12)
    np.testing.assert_allclose(
        np.array(got["eigenvalues_underloaded"]) * 1e-8, ref["eigenvalues_underloaded"], rtol=1e-9
    )
    # in another time unit (lambda and mu by 1e-8): rho unchanged, eigenvalues times 1e-8
    code, out, err = run_cli(monkeypatch, capsys, scaled(base, 1e-8, 1.0, 1e-8).to_dict())
    assert code == 0, err
    got = json.loads(out)
    assert got["stable_underloaded"] is False
    assert got["rho"] == pytest.approx(ref["rho"], rel=1e-12)
    np.testing.assert_allclose(
        np.array(got["eigenvalues_underloaded"]) * 1e8, ref["eigenvalues_underloaded"], rtol=1e-9
    )


# -- item 3: one short line for every error ------------------------------------------------------
N_BIG = 200


def test_large_non_binding_system_has_a_short_message():
    lam = np.linspace(1.0, 2.0, N_BIG)  # class i alone on pool i, different loads
    with pytest.raises(NonBindingPoolError) as info:
        solve_spp(ServerPoolSystem(lam, np.ones(N_BIG), np.eye(N_BIG)))
    text = one_line(info.value)
    assert f"and {N_BIG - 3} more" in text
    assert info.value.pools == tuple(range(1, N_BIG))  # every pool but the last is slack


def test_large_disconnected_system_has_a_short_message():
    with pytest.raises(DisconnectedError) as info:
        solve_spp(ServerPoolSystem(np.ones(N_BIG), np.ones(N_BIG), np.eye(N_BIG)))
    text = one_line(info.value)
    assert f"{N_BIG} components" in text and f"and {N_BIG - 3} more" in text


def test_long_cycle_has_a_short_message():
    # class i served by pools i and i + 1 (mod n) at equal rates: one cycle through all nodes
    ring = np.eye(N_BIG) + np.roll(np.eye(N_BIG), 1, axis=1)
    with pytest.raises(NotATreeError) as info:
        solve_spp(ServerPoolSystem(np.ones(N_BIG), np.ones(N_BIG), ring))
    text = one_line(info.value)
    assert f"a cycle of {2 * N_BIG} nodes" in text
    assert len(info.value.classes) == len(info.value.pools) == N_BIG


def test_check_crp_message_is_short_for_a_large_system():
    sol = solve_spp(
        ServerPoolSystem(np.linspace(1, 2, N_BIG), np.ones(N_BIG), np.eye(N_BIG)), require_crp=False
    )
    with pytest.raises(CRPError) as info:
        check_crp(sol)
    one_line(info.value)


def test_validation_messages_are_short():
    base = {
        "arrival_rates": [1.0],
        "pool_sizes": [1.0],
        "activities": [{"class": 1, "pool": 1, "rate": 1.0}],
    }
    cases = [
        {**base, **{f"key{k}" * 20: k for k in range(500)}},
        {**base, "arrival_rates": ["x" * 10_000]},
        {**base, "activities": [{"class": 1, "pool": 1, "rate": 1.0, "y" * 5000: 1}]},
        {**base, "activities": [{"class": 10**400, "pool": 1, "rate": 1.0}]},
    ]
    for data in cases:
        with pytest.raises(ServerPoolError) as info:
            ServerPoolSystem.from_dict(data)
        one_line(info.value)


# -- item 4: types and magnitudes ------------------------------------------------------------------
BAD_NUMBERS = [
    (10**400, "an integer of about 401 digits", "out of range"),
    (-(10**400), "an integer of about 401 digits", "out of range"),
    (1e308, "1e+308", "out of range"),
    (1.5e100, "1.5e+100", "out of range"),
    (1e-101, "1e-101", "out of range"),
    (float("nan"), "nan", "out of range"),
    (float("inf"), "inf", "out of range"),
    (-1.0, "-1", "out of range"),
    (True, "true", "not a number"),
    (False, "false", "not a number"),
    ("3.5", '"3.5" (a string)', "not a number"),
    (None, "null", "not a number"),
    ({"a": 1}, "a dict", "not a number"),
]


def n_shape(**changes):
    data = {
        "arrival_rates": [1.0, 2.0],
        "pool_sizes": [2.0, 2.0],
        "activities": [
            {"class": 1, "pool": 1, "rate": 1.0},
            {"class": 2, "pool": 1, "rate": 2.0},
            {"class": 2, "pool": 2, "rate": 1.0},
        ],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(("value", "shown", "why"), BAD_NUMBERS)
def test_bad_numbers_are_rejected_naming_field_and_node(value, shown, why):
    cases = [
        (n_shape(arrival_rates=[1.0, value]), "arrival_rates", "class 2"),
        (n_shape(pool_sizes=[value, 2.0]), "pool_sizes", "pool 1"),
    ]
    acts = n_shape()["activities"]
    acts[2] = {**acts[2], "rate": value}
    cases.append((n_shape(activities=acts), "activities[2].rate", "class 2, pool 2"))
    for data, field, node in cases:
        with pytest.raises(ServerPoolError) as info:
            ServerPoolSystem.from_dict(data)
        text = one_line(info.value)
        assert text.startswith(f"{field}: {shown} for {node} is {why}"), text
        assert "[1e-100, 1e100]" in text


@pytest.mark.parametrize("value", [10**400, True, "1", 1.5, None])
def test_bad_node_numbers_are_rejected(value):
    acts = n_shape()["activities"]
    acts[0] = {**acts[0], "class": value}
    with pytest.raises(ServerPoolError, match=r"activities\[0\]\.class") as info:
        ServerPoolSystem.from_dict(n_shape(activities=acts))
    one_line(info.value)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (([True], [1.0], [[1.0]]), "arrival_rates: true for class 1 is not a number"),
        ((np.array([True]), [1.0], [[1.0]]), "arrival_rates: true for class 1 is not a number"),
        ((["3.5"], [1.0], [[1.0]]), 'arrival_rates: "3.5" (a string) for class 1'),
        ((np.array(["3.5"]), [1.0], [[1.0]]), 'arrival_rates: "3.5" (a string) for class 1'),
        (([1.0], [10**400], [[1.0]]), "pool_sizes: an integer of about 401 digits for pool 1"),
        (([1.0], [1.0], [[np.float64(2e100)]]), "rates: 2e+100 for class 1, pool 1 is out"),
        (([1.0], [1.0], [[1.0j]]), "rates: a complex for class 1, pool 1 is not a number"),
        (([1.0], [1.0], np.array([[1 + 0j]])), "rates: "),
        (([1.0, 2.0], [1.0], [[1.0], [1.0, 2.0]]), "rates must be"),
        (("1.0", [1.0], [[1.0]]), "arrival_rates must be a 1-dimensional array"),
    ],
)
def test_constructor_rejects_non_numbers(args, needle):
    with pytest.raises(ServerPoolError) as info:
        ServerPoolSystem(*args)
    assert needle in one_line(info.value)


def test_json_numbers_beyond_a_double_are_rejected():
    text = json.dumps(n_shape()).replace(
        '"arrival_rates": [1.0, 2.0]', '"arrival_rates": [1e400, 2.0]'
    )
    with pytest.raises(ServerPoolError, match="arrival_rates: inf for class 1 is out of range"):
        ServerPoolSystem.from_dict(json.loads(text))


@pytest.mark.parametrize("x", [1e-100, 1e100, 10**100, np.float32(3.0), np.int64(7)])
def test_the_range_limits_are_accepted(x):
    system = ServerPoolSystem.from_dict(n_shape(arrival_rates=[x, 2.0]))
    assert system.arrival_rates[0] == float(x)


corners = st.sampled_from([1e-100, 1e-50, 1.0, 1e50, 1e100])


@SETTINGS
@given(st.lists(corners, min_size=8, max_size=8))
def test_extreme_magnitudes_give_finite_results_or_one_error(values):
    # The N-shape plus activity (1, 2) with every value at a corner of the accepted range.
    lam, beta = values[:2], values[2:4]
    mu = np.array([[values[4], values[5]], [values[6], values[7]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system = ServerPoolSystem(lam, beta, mu)
        assert_finite_or_one_error(system)


def assert_finite_or_one_error(system):
    lam = system.arrival_rates
    try:  # an optimum, with or without CRP (HiGHS may fail on extreme data: one error)
        lp = solve_spp(system, require_crp=False)
    except ServerPoolError as err:
        one_line(err)
    else:
        for arr in (lp.flows, lp.occupancy, lp.class_duals, lp.pool_duals):
            assert np.all(np.isfinite(arr))
        assert np.isfinite(lp.rho) and lp.rho > 0 and np.all(lp.flows >= 0)
    try:
        sol = solve_spp(system)
    except ServerPoolError as err:
        one_line(err)
        return
    assert np.isfinite(sol.rho) and sol.rho > 0
    for arr in (sol.flows, sol.occupancy, sol.class_duals, sol.pool_duals):
        assert np.all(np.isfinite(arr)) and np.all(arr >= 0)
    assert np.all(np.abs(sol.flows.sum(axis=1) - lam) <= 1e-9 * lam)
    assert np.all(sol.occupancy.sum(axis=0) <= sol.rho * system.pool_sizes * (1 + 1e-9))
    verdict = stability_verdict(sol)
    assert np.all(np.isfinite(verdict.eigenvalues_underloaded))
    assert np.all(np.isfinite(load_balancing_map(sol)))
    if sol.underloaded:
        out = analyze(system).to_dict()
        assert np.isfinite(out["rho"])
        json.dumps(out, allow_nan=False)
    else:
        with pytest.raises(NotUnderloadedError):
            analyze(system)


# -- item 5: wide ranges ------------------------------------------------------------------------
@SETTINGS
@given(seeds, sizes, st.floats(-45.0, 45.0), st.floats(-45.0, 45.0), st.sampled_from([1e2, 1e4]))
def test_crp_systems_far_from_unit_scale_are_solved_exactly(seed, size, u, v, spread):
    # Global scales up to 1e+-90 (lambda) on top of a heterogeneity of up to 1e4 stay exact.
    system, edges = crp_system(seed, *size, spread=spread)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        far = scaled(system, 10.0 ** (u + v), 10.0**v, 10.0**u)
        sol = solve_spp(far)
        assert sol.basic.tolist() == edges.tolist()
        assert sol.rho == pytest.approx(solve_spp(system).rho, rel=1e-11)
        assert_finite_or_one_error(far)


@SETTINGS
@given(seeds, sizes, st.floats(0.0, 99.9), st.floats(0.0, 1.0))
def test_random_systems_over_the_whole_range(seed, size, spread_exp, density):
    # Any values in [1e-100, 1e100], on any activity graph: finite, consistent results or
    # one clear error, and no warning.
    rng = np.random.default_rng(seed)
    n_i, n_j = size
    draw = lambda shape: 10.0 ** rng.uniform(-spread_exp, spread_exp, shape)  # noqa: E731
    mu = draw((n_i, n_j)) * (rng.random((n_i, n_j)) < density)
    mu[np.arange(n_i), rng.integers(0, n_j, n_i)] = draw(n_i)
    mu[rng.integers(0, n_i, n_j), np.arange(n_j)] = draw(n_j)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_finite_or_one_error(ServerPoolSystem(draw(n_i), draw(n_j), mu))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**500), 10**500)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["arrival_rates", "pool_sizes", "activities", "class", "pool", "rate"]),
    json_values,
)
def test_any_json_value_gives_a_system_or_one_short_error(where, value):
    data = n_shape()
    if where in ("class", "pool", "rate"):
        data["activities"][1][where] = value
    else:
        data[where] = value
    try:
        ServerPoolSystem.from_dict(data)
    except ServerPoolError as err:
        one_line(err)


def test_tolerance_is_validated():
    system = example_system("stable")
    for tol in (-1.0, float("nan"), 0.5, "1e-9", True):
        with pytest.raises(ServerPoolError, match="tol"):
            solve_spp(system, tol=tol)
        with pytest.raises(ServerPoolError, match="tol"):
            stability_verdict(system, tol=tol)


@settings(max_examples=10, deadline=None)
@given(seeds, exponents)
def test_lp_optimum_without_crp_satisfies_duality(seed, u):
    # require_crp=False returns HiGHS's optimum of the scaled LP: primal and dual feasible,
    # with equal objectives, in any units.
    for base in non_crp_systems(seed):
        system = scaled(base, 10.0**u, 1.0, 10.0**u)
        sol = solve_spp(system, require_crp=False)
        lam, beta, mu = system.arrival_rates, system.pool_sizes, system.rates
        assert np.all(np.abs(sol.flows.sum(axis=1) - lam) <= 1e-9 * lam)
        assert np.all(sol.occupancy.sum(axis=0) <= sol.rho * beta * (1 + 1e-9))
        acts = system.activities
        lhs = sol.class_duals[acts[:, 0]] * mu[acts[:, 0], acts[:, 1]]
        assert np.all(lhs <= sol.pool_duals[acts[:, 1]] * (1 + 1e-8) + 1e-12 * lhs.max())
        assert sol.pool_duals @ beta == pytest.approx(1.0, rel=1e-8)
        assert sol.class_duals @ lam == pytest.approx(sol.rho, rel=1e-8)


# -- heavier versions (pytest -m slow) ------------------------------------------------------------
@pytest.mark.slow
@SLOW
@given(seeds, st.tuples(st.integers(1, 12), st.integers(1, 12)), st.sampled_from([1e2, 1e4, 1e6]))
def test_slow_crp_systems_match_the_exact_solution(seed, size, spread):
    test_crp_systems_match_the_exact_solution.hypothesis.inner_test(seed, size, spread)


@pytest.mark.slow
@SLOW
@given(seeds, st.tuples(st.integers(1, 10), st.integers(1, 10)), exponents, exponents)
def test_slow_independent_rate_and_pool_scales(seed, size, u, v):
    system, _ = crp_system(seed, *size, spread=1e3)
    check_scaling(system, 10.0 ** (u + v), 10.0**v, 10.0**u)
    check_scaling(system, 1.0, 1.0, 10.0**u)


@pytest.mark.slow
@SLOW
@given(seeds, st.tuples(st.integers(1, 8), st.integers(1, 8)), st.floats(0.0, 99.9))
def test_slow_random_systems_over_the_whole_range(seed, size, spread_exp):
    test_random_systems_over_the_whole_range.hypothesis.inner_test(seed, size, spread_exp, 0.5)
