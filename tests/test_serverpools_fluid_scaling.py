"""Part C: the fluid model in any units (docs/serverpools.md, "Model and units", "Fluid model").

References are independent of the integrator's output at the scale under test:

* the exact scaling laws of the fluid model (the unscaled trajectory is the reference):
  lambda and beta by c (the unit of r, rates fixed) give x_c(t) = c x(t); every rate
  (lambda and mu) by c (the unit of time) gives x_c(t) = x(c t);
* ``scipy.integrate.solve_ivp`` (DOP853, rtol 1e-12) on the smooth ODE of a small N-shaped
  tree on its load-balanced manifold, derived by hand below (not from the library);
* the spectrum-level law A_u -> c A_u (tested in ``test_serverpools_edges``) for the fluid
  velocity's finite differences.

Tolerances (relative to max |x|). A difference d in the start state grows to at most
``AMPLIFICATION[name] * d`` over the runs below (checked by finite differences in
``test_sensitivity_bounds``: about 3 for the stable example, 3e3 for the unstable one, whose
equilibrium repels). Under a power-of-two c the kernels see bit-identical inputs (sizes and
steps are converted with powers of two, fluid.py), so the only difference is the rounding of
the SPP solution psi* (a few ulps, < 1e-15 relative): tolerance 10 * AMPLIFICATION * 1e-15.
For other c every one of the <= 3600 steps rounds differently too, at most about eps = 2.2e-16
relative each, so the differences stay below 3600 eps < 1e-12 before amplification:
tolerance AMPLIFICATION * 1e-12. The solve_ivp comparison uses the trapezoidal rule's global
error bound (see there).
"""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from queue_routing.seeding import rng_for
from queue_routing.serverpools import (
    ServerPoolSystem,
    a_underloaded,
    fluid_trajectory,
    fluid_velocity,
    linearised_deviation,
    load_balancing_map,
    solve_spp,
)
from queue_routing.serverpools.fluid import FLUID_MAX_STEPS, fluid_units
from queue_routing.serverpools.instances import example_system, tree_instance

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEED = 2022

#: (perturbation size, t_end, points) per example: a few thousand steps each.
RUNS = {"stable": (0.05, 6.0, 61), "unstable": (1e-3, 20.0, 101)}
#: Upper bounds of the growth of a start-state difference over those runs (module docstring).
AMPLIFICATION = {"stable": 3.0, "unstable": 3e3}
ROUNDING_POW2 = 1e-14  # 10 x the rounding of psi*
ROUNDING_ANY = 1e-12  # 3600 steps x eps
examples = st.sampled_from(sorted(RUNS))
exponents = st.floats(-8.0, 8.0)
pow2 = st.integers(-27, 27)  # 2^-27 ~ 7e-9 ... 2^27 ~ 1.3e8


def scaled(system, s_lam=1.0, s_beta=1.0, s_mu=1.0):
    return ServerPoolSystem(
        system.arrival_rates * s_lam, system.pool_sizes * s_beta, system.rates * s_mu
    )


def perturbation(solution, eps, name):
    """eps * v * psi* on the basic tree, v a seeded direction with max |v| = 1."""
    edges = solution.basic
    v = rng_for(SEED, "serverpools-fluid-scaling", name).normal(size=len(edges))
    v /= np.abs(v).max()
    out = np.zeros_like(solution.occupancy)
    out[edges[:, 0], edges[:, 1]] = eps * v * solution.occupancy[edges[:, 0], edges[:, 1]]
    return out


@functools.cache
def reference(name):
    """The unscaled example, its perturbation and its default-step trajectory."""
    system = example_system(name)
    solution = solve_spp(system)
    eps, t_end, points = RUNS[name]
    pert = perturbation(solution, eps, name)
    return system, pert, fluid_trajectory(solution, pert, t_end, points)


def assert_law(traj, ref, factor, rtol):
    """traj = factor * ref in psi, queues, totals and deviation (relative to max |x|)."""
    scale = np.abs(ref.totals).max()
    for got, want in (
        (traj.psi, ref.psi),
        (traj.queues, ref.queues),
        (traj.totals, ref.totals),
        (traj.deviation, ref.deviation),
    ):
        np.testing.assert_allclose(got / factor, want, rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(traj.loads, ref.loads, rtol=0, atol=rtol)


def check_size_law(name, c, rtol):
    system, pert, ref = reference(name)
    _, t_end, points = RUNS[name]
    traj = fluid_trajectory(solve_spp(scaled(system, c, c, 1.0)), c * pert, t_end, points)
    assert traj.step == ref.step  # the step does not depend on the unit of r
    np.testing.assert_array_equal(traj.times, ref.times)
    assert_law(traj, ref, c, rtol)


def check_time_law(name, c, rtol, *, default_step):
    system, pert, ref = reference(name)
    _, t_end, points = RUNS[name]
    solution = solve_spp(scaled(system, c, 1.0, c))
    step = None if default_step else ref.step / c
    traj = fluid_trajectory(solution, pert, t_end / c, points, max_step=step)
    assert traj.step * c == pytest.approx(ref.step, rel=1e-12)
    np.testing.assert_allclose(traj.times * c, ref.times, rtol=1e-14, atol=0)
    assert_law(traj, ref, 1.0, rtol)


# -- the exact scaling laws -------------------------------------------------------------------
@SETTINGS
@given(examples, pow2)
def test_power_of_two_units_reproduce_the_trajectory(name, k):
    # Default step: the same trajectory in other units, to the rounding of psi* only.
    rtol = ROUNDING_POW2 * AMPLIFICATION[name]
    check_size_law(name, 2.0**k, rtol)
    check_time_law(name, 2.0**k, rtol, default_step=True)


@SETTINGS
@given(examples, exponents)
def test_unit_of_r_scales_the_trajectory(name, u):
    # lambda and beta by 10^u, default step: x_c(t) = c x(t), loads unchanged, same step.
    check_size_law(name, 10.0**u, ROUNDING_ANY * AMPLIFICATION[name])


@SETTINGS
@given(examples, exponents)
def test_time_unit_rescales_time(name, u):
    # every rate by 10^u with the step h / c: x_c(t / c) = x(t).
    check_time_law(name, 10.0**u, ROUNDING_ANY * AMPLIFICATION[name], default_step=False)


@SETTINGS
@given(examples, exponents)
def test_default_step_follows_the_time_unit(name, u):
    # The default step is min(0.01 / u, 0.2 / max mu) with u the geometric-mean rate rounded
    # to a power of two: in the rates' own unit it moves by less than a factor 2 between
    # non-power-of-two units (the accuracy at any scale: the solve_ivp test below).
    c = 10.0**u
    system, pert, ref = reference(name)
    solution = solve_spp(scaled(system, c, 1.0, c))
    _, t_end, points = RUNS[name]
    traj = fluid_trajectory(solution, pert, t_end / c, points)
    assert 0.5 <= traj.step * c / ref.step <= 2.0
    assert traj.step * solution.system.rates.max() <= 0.2 * (1 + 1e-12)
    gm = np.exp(np.log(solution.system.rates[solution.system.rates > 0]).mean())
    assert 2**-0.5 * (1 - 1e-12) <= fluid_units(solution)[1] / gm <= 2**0.5 * (1 + 1e-12)


@pytest.mark.slow
@SLOW
@given(examples, exponents, exponents)
def test_slow_independent_size_and_time_units(name, u, v):
    # Both changes at once (lambda by 10^(u+v), beta by 10^v, mu by 10^u) with the step h / c.
    system, pert, ref = reference(name)
    _, t_end, points = RUNS[name]
    c_t, c_s = 10.0**u, 10.0**v
    solution = solve_spp(scaled(system, c_t * c_s, c_s, c_t))
    traj = fluid_trajectory(solution, c_s * pert, t_end / c_t, points, max_step=ref.step / c_t)
    assert_law(traj, ref, c_s, ROUNDING_ANY * AMPLIFICATION[name])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_sensitivity_bounds(name):
    # The growth of a small start-state difference (random directions on the tree, 1e-9
    # relative) stays below AMPLIFICATION[name], the factor the tolerances above assume.
    _, pert, ref = reference(name)
    solution = ref.solution
    _, t_end, points = RUNS[name]
    edges = solution.basic
    scale = np.abs(solution.occupancy).max()
    for k in range(3):
        d = np.zeros_like(pert)
        direction = rng_for(SEED, "serverpools-fluid-sensitivity", name, k).normal(size=len(edges))
        d[edges[:, 0], edges[:, 1]] = 1e-9 * scale * direction / np.abs(direction).max()
        traj = fluid_trajectory(solution, pert + d, t_end, points)
        growth = np.abs(traj.psi - ref.psi).max() / (1e-9 * scale)
        assert growth < AMPLIFICATION[name], growth


# -- accuracy of the default step against solve_ivp ------------------------------------------
#: The N-shape C1 - P1, C1 - P2, C2 - P2 as (class, pool, mu, psi*) at rho = 0.8.
N_TREE = ((1, 1, 1.0, 0.6), (1, 2, 2.0, 0.3), (2, 2, 0.5, 0.5))
N_RHO = 0.8


def n_shape_rhs(lam, beta, mu):
    """The fluid ODE on the manifold rho_1 = rho_2 without queues, derived by hand.

    State (p11, p12, p22). Class 2 can only enter pool 2; class 1 splits its arrivals
    a11 + a12 = lambda_1 so that the loads stay equal:
    (a11 - mu11 p11) / beta1 = (a12 - mu12 p12 + lambda_2 - mu22 p22) / beta2. Valid while
    0 <= a12 <= lambda_1 (true along the runs below: a12 stays near lambda_12* = 0.6 c).
    """
    (l1, l2), (b1, b2), (m11, m12, m22) = lam, beta, mu

    def rhs(_t, p):
        p11, p12, p22 = p
        a12 = ((l1 - m11 * p11) / b1 - (l2 - m12 * p12 - m22 * p22) / b2) / (1 / b1 + 1 / b2)
        return [l1 - a12 - m11 * p11, a12 - m12 * p12, l2 - m22 * p22]

    return rhs


@pytest.mark.parametrize(
    "c_rate, c_size", [(1.0, 1.0), (1e-8, 1.0), (1e8, 1.0), (1.0, 1e-8), (1.0, 1e8), (1e8, 1e-8)]
)
def test_default_step_matches_solve_ivp_on_the_manifold(c_rate, c_size):
    base = ServerPoolSystem.from_dict(tree_instance(N_TREE, N_RHO))
    system = scaled(base, c_rate * c_size, c_size, c_rate)
    solution = solve_spp(system)
    edges = solution.basic
    assert sorted(map(tuple, edges.tolist())) == [(0, 0), (0, 1), (1, 1)]
    beta = system.pool_sizes
    # d on the manifold: d11 / beta1 = (d12 + d22) / beta2.
    d12, d22 = 0.06 * c_size, 0.04 * c_size
    delta = np.array([beta[0] * (d12 + d22) / beta[1], d12, d22])
    psi_star = np.array([0.6, 0.3, 0.5]) * c_size
    pert = np.zeros((2, 2))
    pert[0, 0], pert[0, 1], pert[1, 1] = delta
    t_end = 8.0 / c_rate
    traj = fluid_trajectory(solution, pert, t_end, 81)
    mu = np.array([1.0, 2.0, 0.5]) * c_rate
    rhs = n_shape_rhs(system.arrival_rates, beta, mu)
    sol = solve_ivp(
        rhs,
        (0.0, t_end),
        psi_star + delta,
        method="DOP853",
        rtol=1e-12,
        atol=1e-15 * c_size,
        t_eval=traj.times,
    )
    assert sol.success
    got = traj.psi[:, [0, 0, 1], [0, 1, 1]]
    # Trapezoidal (Crank-Nicolson) global error on the linear ODE y' = A (y - y*): at most
    # t h^2 / 12 max |y'''| per unit of the propagator's growth (<= 1: A is stable here),
    # with y''' = A^3 (y - y*) and |y - y*| <= |delta| (checked: the deviation decays); the
    # corrector pass adds O(h^3) per step, at most the same again: factor 2.
    unit = c_size  # the rhs is affine: exact columns from steps of the state's own size
    a = np.column_stack(
        [np.subtract(rhs(0, psi_star + e), rhs(0, psi_star)) / unit for e in unit * np.eye(3)]
    )
    # The hand ODE conserves rho_1 - rho_2 (a structural zero mode off the manifold, not
    # excited); the two modes along the manifold decay.
    modes = np.sort(np.linalg.eigvals(a).real)
    assert abs(modes[2]) <= 1e-6 * np.abs(a).max() and modes[1] < 0
    dev = np.linalg.norm(sol.y.T - psi_star, axis=1)
    assert np.all(dev <= np.linalg.norm(delta) * (1 + 1e-9))
    h = traj.step
    bound = 2 * t_end * h**2 / 12 * np.linalg.norm(a, 2) ** 3 * np.linalg.norm(delta)
    err = np.abs(got - sol.y.T).max()
    assert err <= bound, (err, bound)
    assert err <= 1e-5 * np.abs(sol.y).max()  # the default step is accurate at this scale
    assert np.ptp(traj.loads, axis=1).max() <= 1e-12  # stays on the manifold


# -- absurd horizons and inputs ---------------------------------------------------------------
def test_horizon_far_beyond_the_time_scale_is_refused_fast():
    _, pert, ref = reference("stable")
    solution = ref.solution
    with pytest.raises(ValueError, match="steps") as err:  # before any step (benchmarks/edges.py)
        fluid_trajectory(solution, pert, 1e12, 101)
    text = str(err.value)
    assert "\n" not in text and len(text) < 300 and "t_end" in text, text
    # The same horizon in slow time units (rates by 1e-12) is an ordinary run.
    slow = solve_spp(scaled(example_system("stable"), 1e-12, 1.0, 1e-12))
    traj = fluid_trajectory(slow, pert, 6e12, 61)
    assert_law(traj, ref, 1.0, 1e-10)
    with pytest.raises(ValueError, match="steps"):
        fluid_trajectory(solution, pert, 1.0, 11, max_step=1e-300)
    assert FLUID_MAX_STEPS >= 1_000_000


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"t_end": float("nan")}, "t_end"),
        ({"t_end": "10"}, "t_end"),
        ({"t_end": 1e308, "n_points": 2}, "steps"),
        ({"n_points": 2.5}, "n_points"),
        ({"n_points": True}, "n_points"),
        ({"n_points": 10**7}, "n_points"),
        ({"correctors": -1}, "correctors"),
        ({"queue_level": float("nan")}, "queue_level"),
        ({"max_step": float("nan")}, "max_step"),
    ],
)
def test_bad_arguments_give_one_line(kwargs, needle):
    _, pert, ref = reference("stable")
    args = {"t_end": 1.0, "n_points": 11} | kwargs
    with pytest.raises(ValueError, match=needle) as err:
        fluid_trajectory(ref.solution, pert, **args)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


# -- the linearisation in other units ---------------------------------------------------------
@pytest.mark.parametrize("c", [1e-9, 1e9])
def test_linearised_deviation_on_an_irregular_grid_in_any_time_unit(c):
    # The grid test of linearised_deviation is relative: at c = 1e9 an irregular grid of
    # nanoseconds is not mistaken for a regular one (the law: x_c(t / c) = x(t)).
    base = example_system("stable")
    sol, sol_c = solve_spp(base), solve_spp(scaled(base, c, 1.0, c))
    d0 = np.array([0.03, -0.02, 0.01])
    times = np.array([0.0, 0.5, 1.5, 2.0, 4.0])
    ref = linearised_deviation(sol, d0, times)
    np.testing.assert_allclose(linearised_deviation(sol_c, d0, times / c), ref, rtol=1e-10)


@pytest.mark.parametrize("c", [1e-8, 1.0, 1e8])
def test_fluid_velocity_is_a_u_in_any_time_unit(c):
    # Finite differences with the default h = 1e-6 / u give c A_u y: O(h |A_u|^2) + rounding
    # eps |psi*| / (h |A_u y|) (fluid_velocity), both below 1e-5 relative here.
    base = example_system("stable")
    unit = solve_spp(base)
    solution = solve_spp(scaled(base, c, 1.0, c))
    edges = solution.basic
    y = np.array([0.02, -0.01, 0.015])
    p = np.zeros_like(solution.occupancy)
    p[edges[:, 0], edges[:, 1]] = load_balancing_map(solution) @ y
    up, _ = fluid_velocity(solution, solution.occupancy + p)
    down, _ = fluid_velocity(solution, solution.occupancy - p)
    got = (up - down).sum(axis=1) / 2
    want = c * a_underloaded(unit) @ y
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_a_fluid_trajectory_has_a_json_object():
    import json

    _, pert, ref = reference("stable")
    traj = fluid_trajectory(ref.solution, pert, 1.0, 3)
    obj = json.loads(json.dumps(traj.to_dict(), allow_nan=False))
    assert obj["times"] == [0.0, 0.5, 1.0] and obj["step"] == traj.step
    assert np.array(obj["psi"]).shape == traj.psi.shape
    np.testing.assert_array_equal(np.array(obj["deviation"]), traj.deviation)
