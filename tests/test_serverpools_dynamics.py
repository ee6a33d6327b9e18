"""Part C dynamics: the LQFS-LB fluid model, the stochastic simulator and the diffusion limit.

Instances (hand-made, so that the assertions do not depend on a random generator):

* ``path_system(rho)``: the path P1 - C1 - P2 - C2 - P3 - C3 (3 classes, 3 pools) with
  rates of order 1; its A_u has eigenvalues -1, -1.10, -1.67 (stable) at rho = 0.7, and its
  A_c is stable too at rho = 1.
* ``unstable_system()``: a 3-class, 4-pool path found by a seeded random search over trees
  (as in :mod:`queue_routing.serverpools.search`, then rounded); A_u has the complex pair
  0.236 +- 3.08i. Instability needs widely spread pool sizes and rates (here beta over a
  factor 60, mu over a factor 300), as the paper says it needs a "not too small" tree.
* ``large_cycle``: the example instance chosen for a large fluid limit cycle relative to the
  diffusion noise (``instances.LARGE_CYCLE``, docs/serverpools.md), for the tight-vs-escaping
  tests; its stochastic time average approaches a sqrt(r) from below (it lingers near x*,
  where the cycle passes within 0.005 per unit r) and reaches it from r ~ 3e5.
"""

import numpy as np
import pytest
from numba import njit
from scipy.stats import poisson

from queue_routing.seeding import rng_for, stream_states
from queue_routing.serverpools import (
    ServerPoolSystem,
    UnstableEquilibriumError,
    a_underloaded,
    derived_warmup,
    example_system,
    fluid_step,
    fluid_trajectory,
    fluid_velocity,
    halves_test,
    invariant_violations,
    linearised_deviation,
    load_balancing_map,
    lyapunov_residual,
    mean_interval,
    random_tree_system,
    simulate,
    simulation,
    slope_interval,
    solve_spp,
    stationary_covariance,
)
from queue_routing.serverpools.simulation import SIMULATE_KEY, STREAMS, replication_states

SEED = 2022


def path_system(rho: float) -> ServerPoolSystem:
    mu = np.zeros((3, 3))
    flows = np.zeros((3, 3))
    for (i, j), m, f in [
        ((0, 0), 1.0, 0.5),
        ((0, 1), 2.0, 0.5),
        ((1, 1), 0.5, 0.3),
        ((1, 2), 1.5, 0.6),
        ((2, 2), 1.0, 0.8),
    ]:
        mu[i, j], flows[i, j] = m, f
    psi = np.divide(flows, mu, out=np.zeros_like(flows), where=mu > 0)
    return ServerPoolSystem(flows.sum(axis=1), psi.sum(axis=0) / rho, mu)


def unstable_system() -> ServerPoolSystem:
    mu = np.zeros((3, 4))
    psi = np.zeros((3, 4))
    for (i, j), m, p in [
        ((0, 0), 6.0, 0.009),
        ((0, 2), 0.16, 0.027),
        ((1, 1), 0.27, 0.9),
        ((1, 2), 7.0, 0.027),
        ((2, 0), 0.12, 0.009),
        ((2, 3), 36.0, 0.0144),
    ]:
        mu[i, j], psi[i, j] = m, p
    return ServerPoolSystem((mu * psi).sum(axis=1), psi.sum(axis=0) / 0.9, mu)


@pytest.fixture(scope="module")
def stable():
    return solve_spp(path_system(0.7))


@pytest.fixture(scope="module")
def unstable():
    return solve_spp(unstable_system())


@pytest.fixture(scope="module")
def large_cycle():
    """The example chosen for a large fluid limit cycle (instances.LARGE_CYCLE)."""
    return solve_spp(example_system("large_cycle"))


def direction(solution, key):
    """A seeded direction on the basic tree, |v_e| <= psi*_e (generically off the manifold)."""
    edges = solution.basic
    v = np.zeros_like(solution.occupancy)
    draw = rng_for(SEED, "serverpools-test", key).normal(size=len(edges))
    v[edges[:, 0], edges[:, 1]] = draw / np.abs(draw).max()
    return v * solution.occupancy


# -- instances ------------------------------------------------------------------------------
def test_instances_have_the_intended_spectra(stable, unstable):
    eig_s = np.linalg.eigvals(a_underloaded(stable))
    eig_u = np.linalg.eigvals(a_underloaded(unstable))
    assert stable.underloaded and np.all(eig_s.real < -0.9)
    assert unstable.underloaded and eig_u.real.max() == pytest.approx(0.2357, abs=1e-3)
    assert np.abs(eig_u.imag).max() == pytest.approx(3.078, abs=1e-2)


# -- fluid model ----------------------------------------------------------------------------
def test_fluid_matches_linearisation_to_second_order(stable):
    """Off the manifold the loads equalise in time O(eps), shifting class totals by O(eps^2)."""
    v = direction(stable, "second-order")
    errors = {}
    for eps in (0.04, 0.02, 0.01):
        traj = fluid_trajectory(stable, eps * v, 6.0, 301)
        assert np.ptp(traj.loads[0]) > 0.1 * eps  # really starts off the manifold
        assert np.ptp(traj.loads[-1]) < 1e-12  # ... and ends on it (state space collapse)
        assert np.all(traj.queues == 0.0)
        linear = linearised_deviation(stable, traj.deviation[0], traj.times)
        errors[eps] = np.abs(traj.deviation - linear).max()
        assert errors[eps] < 0.2 * eps * np.abs(linear).max() / np.abs(linear[0]).max()
    for big, small in ((0.04, 0.02), (0.02, 0.01)):
        assert 3.0 < errors[big] / errors[small] < 5.0, errors  # O(eps^2): ratio ~ 4


def test_fluid_on_the_manifold_is_the_linear_ode(stable):
    """Started on psi_E = M psi_I the scheme is Crank-Nicolson for psi' = A_u (psi - psi*)."""
    edges = stable.basic
    y = 0.05 * rng_for(SEED, "serverpools-test", "manifold").normal(size=3)
    pert = np.zeros((3, 3))
    pert[edges[:, 0], edges[:, 1]] = load_balancing_map(stable) @ y
    errors = []
    for h in (0.01, 0.005):
        traj = fluid_trajectory(stable, pert, 5.0, 101, max_step=h)
        linear = linearised_deviation(stable, y, traj.times)
        errors.append(np.abs(traj.deviation - linear).max())
    assert errors[0] < 1e-5 * np.abs(y).max() * 100
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)  # second order in h


def test_fluid_velocity_reproduces_a_u(stable):
    """Finite differences of the full fluid vector field along the manifold give A_u."""
    a_u = a_underloaded(stable)
    m = load_balancing_map(stable)
    edges = stable.basic
    delta = 1e-4
    fd = np.zeros((3, 3))
    for k in range(3):
        p = np.zeros((3, 3))
        p[edges[:, 0], edges[:, 1]] = m @ (delta * np.eye(3)[k])
        up, _ = fluid_velocity(stable, stable.occupancy + p)
        down, _ = fluid_velocity(stable, stable.occupancy - p)
        fd[:, k] = (up.sum(axis=1) - down.sum(axis=1)) / (2 * delta)
    np.testing.assert_allclose(fd, a_u, atol=1e-4 * np.abs(a_u).max())
    v0, q0 = fluid_velocity(stable, stable.occupancy)
    assert np.abs(v0).max() < 1e-6 and np.all(q0 == 0.0)


def test_stable_fluid_converges(stable):
    traj = fluid_trajectory(stable, 0.05 * direction(stable, "stable"), 12.0, 121)
    assert traj.norm[-1] < 1e-4 * traj.norm[0]
    assert np.all(traj.psi >= 0.0) and np.all(traj.loads <= 1.0 + 1e-12)


def test_unstable_fluid_perturbation_grows(unstable):
    eps = 1e-5
    traj = fluid_trajectory(unstable, eps * direction(unstable, "unstable"), 15.0, 301)
    linear = linearised_deviation(unstable, traj.deviation[0], traj.times)
    # Still in the linear regime: the fluid follows exp(A_u t) and grows like e^{0.236 t}.
    assert np.abs(traj.deviation - linear).max() < 0.02 * np.abs(linear).max()
    assert traj.norm[-20:].max() > 10 * traj.norm[0]
    # Nonlinear regime: a persistent oscillation of bounded amplitude, never back to psi*.
    long = fluid_trajectory(unstable, 1e-3 * direction(unstable, "unstable"), 200.0, 2001)
    tail = long.norm[long.times >= 150.0]
    assert tail.max() > 10 * long.norm[0]
    assert tail.min() < 0.5 * tail.max()
    assert tail.max() < 0.1 and np.all(long.queues == 0.0)


def test_critical_fluid_equalises_queues():
    """rho = 1 with queues: pools stay full and the longest queues are served until equal."""
    solution = solve_spp(path_system(1.0))
    assert solution.critical
    traj = fluid_trajectory(solution, np.zeros((3, 3)), 20.0, 201, queues=[0.3, 0.1, 0.2])
    np.testing.assert_allclose(traj.loads, 1.0, atol=1e-12)
    spread = np.ptp(traj.queues, axis=1)
    assert spread[0] == pytest.approx(0.2) and spread[-1] < 1e-9
    assert np.all(np.diff(spread) <= 1e-12)  # the gap between queues never widens
    q_end = traj.queues[-1, 0]
    np.testing.assert_allclose(traj.deviation[-1], q_end, atol=1e-6)  # x* + q 1: equilibrium


@pytest.mark.parametrize("size", [(4, 3), (5, 5)])
def test_fluid_step_obeys_lqfs_lb(size):
    """One large step from random states (queues, full pools, unequal loads): the end state
    satisfies the LQFS-LB rules the admission problem encodes (module docstring of fluid)."""
    n_i, n_j = size
    rng = rng_for(SEED, "serverpools-test", "kkt", n_i, n_j)
    system = random_tree_system(n_i, n_j, rng, rho=0.95)
    solution = solve_spp(system)
    edges = solution.basic
    ii, jj = edges[:, 0], edges[:, 1]
    mu = system.rates[ii, jj]
    beta, lam = system.pool_sizes, system.arrival_rates
    h, tol = 0.05, 1e-9
    for _ in range(20):
        share = rng.dirichlet(np.ones(len(edges)))  # random split of each pool's content
        load = np.where(rng.random(n_j) < 0.4, 1.0, rng.uniform(0.5, 1.0, n_j))
        weight = share / np.bincount(jj, weights=share, minlength=n_j)[jj]
        psi = np.zeros((n_i, n_j))
        psi[ii, jj] = weight * (load * beta)[jj]
        q = np.where(rng.random(n_i) < 0.5, 0.0, rng.uniform(0.0, 0.1, n_i))
        new_psi, new_q = fluid_step(solution, psi, q, h, correctors=30)
        c = (1 - h * mu / 2) / (1 + h * mu / 2)
        b = new_psi[ii, jj] - c * psi[ii, jj]  # admitted fluid, as it stands at the end
        new_load = new_psi.sum(axis=0) / beta
        assert np.all(b >= -tol) and np.all(new_q >= 0) and np.all(new_load <= 1 + 1e-12)
        # mass: admitted (trapezoidal) + queue = old queue + arrivals
        used = np.bincount(ii, weights=b * (1 + h * mu / 2), minlength=n_i)
        np.testing.assert_allclose(used + new_q, q + lam * h, atol=1e-9)
        full = new_load >= 1 - tol
        for e, (i, j) in enumerate(edges):
            pools_i = jj[ii == i]
            if new_q[i] > tol:  # queueing only when every pool of S(i) is full
                assert np.all(full[pools_i])
            if b[e] <= tol:
                continue
            if not full[j]:  # routed into a least-loaded pool of S(i), at the common level
                assert new_q[i] <= tol
                assert new_load[j] <= new_load[pools_i].min() + tol
            else:  # a full pool serves only the longest queues of C(j)
                assert np.all(new_q[ii[jj == j]] <= new_q[i] + tol)


def test_fluid_rejects_infeasible_starts(stable):
    with pytest.raises(ValueError, match="infeasible"):
        fluid_trajectory(stable, -2.0 * stable.occupancy, 1.0, 11)
    with pytest.raises(ValueError, match="infeasible"):
        fluid_trajectory(stable, stable.occupancy, 1.0, 11)  # doubles psi*: loads 1.4
    bad = np.zeros((3, 3))
    bad[2, 0] = 0.01  # not an activity
    with pytest.raises(ValueError, match="non-basic"):
        fluid_trajectory(stable, bad, 1.0, 11)


# -- diffusion ------------------------------------------------------------------------------
def test_one_class_lyapunov_is_the_poisson_variance():
    """M/M/infinity: Sigma = lambda/mu = psi*, the variance of Poisson(r lambda/mu) over r."""
    lam, mu, rho = 1.2, 0.8, 0.5
    solution = solve_spp(ServerPoolSystem([lam], [lam / mu / rho], [[mu]]))
    sigma = stationary_covariance(solution)
    assert sigma[0, 0] == pytest.approx(lam / mu, rel=1e-12)
    assert lyapunov_residual(solution, sigma) < 1e-12

    # The exact stationary law of the simulated M/M/N (N = r beta) is Poisson to within the
    # (astronomically small) mass above N; its scaled variance is lambda/mu.
    r = 200.0
    n_servers = round(r * lam / mu / rho)
    a = r * lam / mu
    k = np.arange(4 * n_servers)
    logp = np.where(
        k <= n_servers,
        k * np.log(a) - np.cumsum(np.log(np.maximum(k, 1))),
        n_servers * np.log(a)
        - np.cumsum(np.log(np.maximum(k, 1)))[n_servers]
        + (k - n_servers) * np.log(a / n_servers),
    )
    p = np.exp(logp - logp.max())
    p /= p.sum()
    var_exact = (p * k**2).sum() - (p * k).sum() ** 2
    assert var_exact / r == pytest.approx(lam / mu, rel=1e-9)

    # Simulation: replications give standard errors for the time-averaged variance and for
    # the fraction of grid samples at or below the mean, compared with Poisson's CDF.
    variances, below = [], []
    for rep in range(6):
        run = simulate(
            solution, r, horizon=590.0, warmup=10.0, record_every=0.5, seed=SEED,
            keys=("mm-inf", rep),
        )  # fmt: skip
        variances.append(run.second_moment[0, 0])
        below.append(np.mean(run.deviation[run.times >= 10.0, 0] <= 0.0))
    variances, below = np.array(variances), np.array(below)
    se_var = variances.std(ddof=1) / np.sqrt(len(variances))
    se_below = below.std(ddof=1) / np.sqrt(len(below))
    assert abs(variances.mean() - lam / mu) < 4 * se_var + 0.01 * lam / mu
    assert abs(below.mean() - poisson.cdf(a, a)) < 4 * se_below + 0.01


def test_lyapunov_refuses_unstable_equilibria(unstable):
    with pytest.raises(UnstableEquilibriumError):
        stationary_covariance(unstable)


def test_simulated_covariance_matches_lyapunov(stable):
    """r = 500: 12 independent replications; per entry |mean - Sigma| <= 4 SE + bias allowance.

    4 SE: the replication means are ~ Student t with 11 d.o.f., P(|t| > 4) = 0.002 per entry.
    The allowance 0.03 sqrt(Sigma_ii Sigma_kk) covers the finite-r bias of the diffusion
    approximation (integer load balancing, finite pools): with 16 replications it measured
    up to 3.4% of that scale at r = 200 (z = 4.3 on Sigma_11), 2.6% at r = 500 (Sigma_13)
    and was within noise (|z| < 2) at r = 2000 and 20000 on this instance.
    """
    sigma = stationary_covariance(stable)
    assert lyapunov_residual(stable, sigma) < 1e-12
    covs = np.array(
        [
            simulate(
                stable,
                500.0,
                horizon=980.0,
                warmup=20.0,
                record_every=1.0,
                seed=SEED,
                keys=("lyapunov", rep),
            ).covariance
            for rep in range(12)
        ]
    )
    mean = covs.mean(axis=0)
    se = covs.std(axis=0, ddof=1) / np.sqrt(len(covs))
    scale = np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    assert np.all(np.abs(mean - sigma) <= 4 * se + 0.03 * scale), (mean, sigma, se)


# -- simulator ------------------------------------------------------------------------------
@pytest.mark.parametrize(("rho", "r"), [(1.0, 20.0), (0.95, 60.0)])
def test_simulator_invariants_on_random_instance(rho, r):
    system = random_tree_system(4, 3, rng_for(SEED, "serverpools-test", "invariants"), rho=rho)
    solution = solve_spp(system)
    run = simulate(
        solution, r, horizon=2000.0, record_every=1.0, seed=SEED,
        keys=("invariants", f"{rho:g}"), check=True,
    )  # fmt: skip
    assert run.checked and run.violations == 0 and run.first_violation == -1
    assert run.queued > 0 and run.ties > 0  # queueing and random tie-breaks were exercised
    np.testing.assert_array_equal(run.totals, run.initial_totals + run.arrivals - run.departures)
    edges = solution.basic
    off = np.ones_like(run.busy, dtype=bool)
    off[edges[:, 0], edges[:, 1]] = False
    assert np.all(run.busy[off] == 0) and np.all(run.busy >= 0) and np.all(run.queues >= 0)
    assert np.all(run.busy.sum(axis=0) <= run.n_servers)
    assert run.events == run.arrivals.sum() + run.departures.sum()


def test_invariant_checker_flags_broken_states():
    ei = np.array([0, 1, 1], dtype=np.int64)  # edges (0,0), (1,0), (1,1)
    pool_ptr = np.array([0, 2, 3], dtype=np.int64)
    pool_edges = np.array([0, 1, 2], dtype=np.int64)
    n_servers = np.array([3, 2], dtype=np.int64)
    good = dict(z=np.array([1, 2, 2]), q=np.array([0, 4]), busy=np.array([3, 2]))
    assert (
        invariant_violations(
            **good, n_servers=n_servers, ei=ei, pool_ptr=pool_ptr, pool_edges=pool_edges
        )
        == 0
    )
    idle_while_waiting = dict(z=np.array([1, 1, 2]), q=np.array([0, 4]), busy=np.array([2, 2]))
    assert (
        invariant_violations(
            **idle_while_waiting,
            n_servers=n_servers,
            ei=ei,
            pool_ptr=pool_ptr,
            pool_edges=pool_edges,
        )
        == 1
    )
    over = dict(z=np.array([1, 2, 3]), q=np.array([0, 0]), busy=np.array([3, 3]))
    assert (
        invariant_violations(
            **over, n_servers=n_servers, ei=ei, pool_ptr=pool_ptr, pool_edges=pool_edges
        )
        == 1
    )


def test_simulation_is_deterministic_in_its_seed(stable):
    a = simulate(stable, 300.0, horizon=20.0, record_every=0.5, seed=SEED, keys=("det", 1))
    b = simulate(stable, 300.0, horizon=20.0, record_every=0.5, seed=SEED, keys=("det", 1))
    c = simulate(stable, 300.0, horizon=20.0, record_every=0.5, seed=SEED, keys=("det", 2))
    d = simulate(stable, 300.0, horizon=20.0, record_every=0.5, seed=SEED + 1, keys=("det", 1))
    np.testing.assert_array_equal(a.deviation, b.deviation)
    assert a.events == b.events and np.array_equal(a.busy, b.busy)
    assert not np.array_equal(a.deviation, c.deviation)
    assert not np.array_equal(a.deviation, d.deviation)


@njit
def _numba_global_draws(seed, n):
    """``n`` draws from numba's global generator, reseeded first unless ``seed < 0``."""
    if seed >= 0:
        np.random.seed(seed)  # noqa: NPY002 - the legacy global generator is the point
    out = np.empty(n)
    for k in range(n):
        out[k] = np.random.random()  # noqa: NPY002
    return out


def _run_arrays(run):
    return [
        run.deviation, run.mean, run.second_moment, run.arrivals, run.departures, run.busy,
        run.queues, np.array([run.events, run.ties, run.queued]),
    ]  # fmt: skip


def test_simulation_streams_follow_the_random_number_convention(stable, monkeypatch):
    """docs/README.md#random-numbers: a run is a function of (seed, keys) alone, the
    replication index (last key) selects other streams, numba's global generator is neither
    read nor advanced by the kernel, and the caller's stream states are not changed."""
    states = replication_states(SEED, ("conv", 0))
    np.testing.assert_array_equal(
        states, stream_states(SEED, SIMULATE_KEY, "conv", 0, streams=STREAMS)
    )
    assert states.shape == (3, 4) and states.dtype == np.uint64
    assert STREAMS == ("clock", "events", "ties")

    def run(rep, global_seed):
        _numba_global_draws(global_seed, 3)  # numba's global generator in another state
        return simulate(
            stable, 300.0, horizon=10.0, record_every=0.5, seed=SEED, keys=("conv", rep)
        )

    a, b = run(0, 1), run(0, 2)
    for x, y in zip(_run_arrays(a), _run_arrays(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.deviation, run(1, 1).deviation)

    # The kernel does not advance numba's global generator.
    expected = _numba_global_draws(7, 4)
    _numba_global_draws(7, 0)
    simulate(stable, 300.0, horizon=10.0, record_every=0.5, seed=SEED, keys=("conv", 0))
    np.testing.assert_array_equal(_numba_global_draws(-1, 4), expected)

    # The kernel copies the states it is given: the caller's array is reusable.
    fixed = states.copy()
    monkeypatch.setattr(simulation, "replication_states", lambda seed, keys: fixed)
    c = simulate(stable, 300.0, horizon=10.0, record_every=0.5, seed=SEED, keys=("ignored",))
    np.testing.assert_array_equal(fixed, states)
    for x, y in zip(_run_arrays(a), _run_arrays(c), strict=True):
        np.testing.assert_array_equal(x, y)


# -- stationarity of time averages, tight vs escaping (docs/serverpools.md) ------------------
def _windows(solution, r, *, warmup, horizon, replications, key, batches=10):
    """Time averages and batch means of |deviation| over [warmup, warmup + horizon]."""
    runs = [
        simulate(
            solution, r, horizon=horizon, warmup=warmup, record_every=1.0, seed=SEED,
            keys=(key, int(r), rep), batches=batches,
        )
        for rep in range(replications)
    ]  # fmt: skip
    return np.array([run.mean_norm for run in runs]), np.array(
        [run.batch_mean_norm for run in runs]
    )


def test_halves_test_has_its_level_on_independent_batches():
    """Reference: with i.i.d. normal batch means the statistic is Student t, so a stationary
    window is flagged with probability 1 - `confidence` (binomial bounds over 2000 windows)."""
    rng = rng_for(SEED, "serverpools-test", "halves")
    flags = [
        not halves_test(rng.normal(5.0, 0.3, size=(3, 10)), confidence=0.95).stationary
        for _ in range(2000)
    ]
    assert abs(np.mean(flags) - 0.05) < 4 * np.sqrt(0.05 * 0.95 / 2000)
    # a shift between the halves of 3 batch standard deviations is found almost always
    shifted = [
        not halves_test(rng.normal(5.0, 0.3, size=(3, 10)) + 0.9 * (np.arange(10) >= 5)).stationary
        for _ in range(200)
    ]
    assert np.mean(shifted) > 0.95


def test_stationarity_flags_the_nominal_start_of_an_unstable_example(large_cycle):
    """Started at r x*, the large-cycle example grows (rate gamma) into its limit cycle: a
    window from t = 0 is not stationary; after the derived warm-up it is."""
    gamma = np.linalg.eigvals(a_underloaded(large_cycle)).real.max()
    r = 1e4
    _, from_start = _windows(
        large_cycle, r, warmup=0.0, horizon=3.0 / gamma, replications=4, key="nominal"
    )
    check = halves_test(from_start)
    assert not check.stationary and check.second_half > 2 * check.first_half
    burn = derived_warmup(gamma, r)
    assert burn == pytest.approx((np.log(r) / 2 + np.log(1000)) / gamma)
    _, settled = _windows(large_cycle, r, warmup=burn, horizon=40.0, replications=4, key="settled")
    assert halves_test(settled).stationary


def test_stable_time_average_is_tight_within_its_interval(stable):
    """Stable example, r = 1e2 .. 1e4, windows past the derived warm-up: every window is
    stationary and the slope interval of log time average against log r contains 0 and
    excludes 1/2; the level is that of the Lyapunov covariance (E|Y| <= sqrt(tr Sigma))."""
    gamma = np.linalg.eigvals(a_underloaded(stable)).real.max()
    rs = (1e2, 1e3, 1e4)
    means = []
    for r in rs:
        values, batches = _windows(
            stable, r, warmup=derived_warmup(gamma, r), horizon=60.0, replications=4,
            key="tight",
        )  # fmt: skip
        assert halves_test(batches).stationary
        means.append(values)
    fit = slope_interval(rs, np.column_stack(means))
    assert fit.low <= 0.0 <= fit.high and fit.high < 0.5 and fit.verdict == "tight"
    sigma = stationary_covariance(stable)
    top = np.column_stack(means)[:, -1].mean()
    assert 0.5 * np.sqrt(np.trace(sigma)) < top < np.sqrt(np.trace(sigma))


@pytest.mark.slow
def test_large_cycle_escapes_like_sqrt_r(large_cycle):
    """The paper's non-tightness over the top half-decade of the default grid, r = 10^5.5 and
    10^6 (about 2 minutes): stationary windows after the derived warm-up, a slope interval
    that contains 1/2 and excludes 0, and time averages that reach the fluid limit cycle's
    a sqrt(r) (a from the fluid model, independent of the simulator): the interval of the
    r = 1e6 mean overlaps [0.8, 1.05] a sqrt(r) (from below: at finite r the system still
    lingers near x* now and then, docs/serverpools.md)."""
    gamma = np.linalg.eigvals(a_underloaded(large_cycle)).real.max()
    edges = large_cycle.basic
    v = rng_for(SEED, "serverpools-test", "cycle").normal(size=len(edges))
    pert = np.zeros_like(large_cycle.occupancy)
    pert[edges[:, 0], edges[:, 1]] = (
        1e-3 * v / np.abs(v).max() * large_cycle.occupancy[edges[:, 0], edges[:, 1]]
    )
    fluid = fluid_trajectory(large_cycle, pert, 200.0, 2001)
    level = fluid.norm[fluid.times >= 100.0].mean()
    rs = (10**5.5, 1e6)
    means = []
    for r in rs:
        values, batches = _windows(
            large_cycle, r, warmup=derived_warmup(gamma, r), horizon=60.0, replications=3,
            key="escape",
        )  # fmt: skip
        assert halves_test(batches).stationary
        means.append(values)
    fit = slope_interval(rs, np.column_stack(means))
    assert fit.low > 0.0 and fit.low <= 0.5 <= fit.high and fit.verdict == "escaping"
    top = mean_interval(means[-1])
    assert top.low <= level * np.sqrt(1e6) * 1.05 and top.high >= level * np.sqrt(1e6) * 0.8


# -- the window, the result objects and the argument checks (docs/serverpools.md) -------------
def test_the_warmup_only_moves_the_start_of_the_averages(stable):
    """A run covers [0, warmup + horizon]: the same (seed, keys) and the same end give the same
    trajectory whatever the warm-up; the time averages are over [warmup, warmup + horizon]."""
    common = {"record_every": 0.5, "seed": SEED, "keys": ("window", 0), "batches": 4}
    whole = simulate(stable, 200.0, horizon=8.0, **common)
    late = simulate(stable, 200.0, horizon=5.0, warmup=3.0, **common)
    assert (whole.t_end, late.t_end, late.horizon, late.warmup) == (8.0, 8.0, 5.0, 3.0)
    np.testing.assert_array_equal(whole.deviation, late.deviation)
    assert whole.times[-1] == 8.0 and whole.events == late.events
    # the batches of the window average to its time average
    assert late.batch_mean_norm.mean() == pytest.approx(late.mean_norm, rel=1e-12)
    assert late.mean_norm != whole.mean_norm


def test_a_run_is_one_trajectory_with_a_json_object(stable):
    import json

    run = simulate(stable, 100.0, horizon=2.0, warmup=1.0, record_every=0.5, seed=SEED, keys=("j",))
    obj = json.loads(json.dumps(run.to_dict(), allow_nan=False))
    assert obj["horizon"] == 2.0 and obj["warmup"] == 1.0 and obj["keys"] == ["j"]
    assert obj["times"] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    assert obj["events"] == sum(obj["arrivals"]) + sum(obj["departures"])
    assert not hasattr(run, "ci95")  # a single trajectory: no interval (docstring)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"horizon": 0.0}, "horizon"),
        ({"horizon": float("inf")}, "horizon"),
        ({"warmup": -1.0}, "warmup"),
        ({"record_every": 0.0}, "record_every"),
        ({"seed": -1}, "seed"),
        ({"batches": -2}, "batches"),
        ({"batches": 2.0}, "batches"),
        ({"horizon": 1e-30, "warmup": 1.0}, "horizon"),  # lost against the warm-up
    ],
)
def test_simulate_names_a_bad_argument(stable, kwargs, argument):
    from queue_routing.errors import ArgumentError

    args = {"horizon": 1.0, "record_every": 0.5, "seed": SEED} | kwargs
    with pytest.raises(ArgumentError) as info:
        simulate(stable, 100.0, **args)
    assert info.value.argument == argument and str(info.value).startswith(argument)
    with pytest.raises(ArgumentError, match=r"^r must be finite and > 0"):
        simulate(stable, float("nan"), horizon=1.0, record_every=0.5, seed=SEED)


def test_time_average_is_a_replicated_result():
    """The protocol of every simulation result (queue_routing.stats.Replicated): the
    per-replication time averages, their number, standard error and 95% t half-width,
    against scipy's t quantile."""
    from scipy.stats import t

    from queue_routing.serverpools import TimeAverageEstimate, time_average

    system = ServerPoolSystem([1.2], [3.0], [[0.8]])
    est = time_average(system, 100, horizon=10.0, replications=4, seed=SEED, keys=("rep",))
    assert isinstance(est, TimeAverageEstimate)
    values = np.array(est.replication_deviations)
    sd = values.std(ddof=1)
    assert est.replications == 4 and est.replication_values.shape == (4,)
    assert est.diffusion_deviation == pytest.approx(values.mean(), rel=1e-15)
    assert est.standard_error == pytest.approx(sd / 2.0, rel=1e-14)
    assert est.ci95 == pytest.approx(t.ppf(0.975, 3) * sd / 2.0, rel=1e-12)
    assert est.warmup == pytest.approx(np.log(1000.0) / (2 * 0.8), rel=1e-12)
    assert est.stationarity.confidence == 0.99
    assert est.to_dict()["warmup"] == est.warmup


def test_halves_test_decides_at_one_minus_its_confidence():
    from queue_routing.errors import ArgumentError

    rng = rng_for(SEED, "serverpools-test", "confidence")
    for _ in range(50):
        check = halves_test(rng.normal(5.0, 0.3, size=(2, 8)), confidence=0.9)
        assert check.stationary == (check.p_value >= 0.1) and check.confidence == 0.9
    for bad in (0.0, 1.0, 99.0):
        with pytest.raises(ArgumentError, match=r"^confidence must be in"):
            halves_test(np.ones((2, 8)), confidence=bad)
    with pytest.raises(ArgumentError, match=r"^r must be finite and > 0"):
        derived_warmup(-1.0, 0.0)
