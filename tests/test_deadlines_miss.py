"""Miss probabilities and M/M/m formulas of Part B (``miss.py``) against Monte Carlo,
independent quadrature references and each other."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from queue_routing.deadlines import (
    Cluster,
    Deadline,
    Instance,
    InstanceError,
    UnstableInstanceError,
    erlang_c,
    f,
    f_prime,
    miss_probability,
    sojourn_tail,
    stationary_distribution,
    steady_state_miss,
    waiting_tail,
)
from queue_routing.seeding import rng_for

SEED = 2012
DEADLINES = {
    "constant": {"kind": "constant", "t": 1.5},
    "uniform": {"kind": "uniform", "low": 0.5, "high": 3.0},
    "exponential": {"kind": "exponential", "mean": 1.2},
}
ALL = [(k, on) for k in DEADLINES for on in ("response", "waiting")]


def deadline(kind, on="response", **over):
    return Deadline.from_dict({**DEADLINES[kind], **over, "on": on})


# -- model ------------------------------------------------------------------------------
def test_model_round_trip_and_errors():
    data = {
        "arrival_rate": 3.0,
        "servers": [3, 2],
        "service_rates": [1.0, 0.8],
        "rejection_cost": None,
        "deadline": {"kind": "uniform", "low": 0.5, "high": 2.0},
    }
    inst = Instance.from_dict(data)
    assert inst.to_dict() == data
    assert inst.capacity == pytest.approx(4.6)
    with pytest.raises(UnstableInstanceError, match=r"deficit is 0\.4"):
        Instance.from_dict({**data, "arrival_rate": 5.0})
    with pytest.raises(InstanceError, match=r"deadline\.high"):
        Deadline.from_dict({"kind": "uniform", "low": 2.0, "high": 1.0})
    with pytest.raises(InstanceError, match=r"deadline\.mean"):
        Deadline.from_dict({"kind": "exponential", "mean": -1})
    with pytest.raises(InstanceError, match="unknown key"):
        Deadline.from_dict({"kind": "constant", "t": 1, "mean": 2})
    with pytest.raises(InstanceError, match=r"deadline\.on"):
        Deadline("constant", t=1.0, on="service")
    with pytest.raises(InstanceError, match="servers"):
        Cluster(0, 1.0)
    with pytest.raises(InstanceError, match="cluster 2: service_rates"):
        Instance.from_dict({**data, "service_rates": [1.0, 0.0]})
    with pytest.raises(InstanceError, match="rejection_cost"):
        Instance.from_dict({**data, "rejection_cost": -1})
    rng = rng_for(SEED, "deadline-sample")
    assert deadline("uniform").sample(rng, 1000).min() >= 0.5


# -- P^miss vs Monte Carlo ------------------------------------------------------------
@pytest.mark.parametrize(("kind", "on"), ALL)
def test_miss_probability_matches_monte_carlo(kind, on):
    m, mu, n = 3, 0.9, 200_000
    dl = deadline(kind, on)
    xs = np.array([0, 2, 3, 5, 9])
    p = miss_probability(xs, m, mu, dl)
    rng = rng_for(SEED, "pmiss-mc", kind, on)
    for x, px in zip(xs, p, strict=True):
        j = x - m + 1
        wait = rng.gamma(j, 1.0 / (m * mu), n) if j > 0 else np.zeros(n)
        time = wait + (rng.exponential(1.0 / mu, n) if on == "response" else 0.0)
        hat = np.mean(time > dl.sample(rng, n))
        se = math.sqrt(max(px * (1 - px), 1.0 / n) / n)
        assert abs(hat - px) <= 5 * se, (x, hat, px, se)


def test_miss_probability_closed_cases():
    # m = 1: P = sum_{i<=x} Pois(i; mu t) (Erlang(x+1, mu) tail).
    x = np.arange(60)
    p = miss_probability(x, 1, 0.7, Deadline("constant", t=20.0))
    np.testing.assert_allclose(p, stats.poisson.cdf(x, 14.0), rtol=1e-12)
    # x < m: e^{-mu t} (response), 0 (waiting); waiting x >= m: Erlang(j, m mu) tail.
    p = miss_probability(np.arange(3), 3, 1.0, Deadline("constant", t=1.5))
    np.testing.assert_allclose(p, math.exp(-1.5), rtol=1e-15)
    pw = miss_probability(np.arange(40), 3, 1.0, Deadline("constant", t=1.5, on="waiting"))
    assert np.all(pw[:3] == 0)
    np.testing.assert_allclose(pw[3:], stats.gamma.sf(1.5, np.arange(1, 38), scale=1 / 3), 1e-12)
    # Spec's closed form r^j e^{-mu t}[1 - sum_{i<j} Pois(i; (m-1) mu t)] at small j.
    m, mu, t = 3, 1.0, 1.5
    j = np.arange(1, 8)
    r = m / (m - 1)
    closed = stats.poisson.cdf(j - 1, m * mu * t) + r**j * math.exp(-mu * t) * stats.poisson.sf(
        j - 1, (m - 1) * mu * t
    )
    p = miss_probability(j + m - 1, m, mu, Deadline("constant", t=t))
    np.testing.assert_allclose(p, closed, rtol=1e-12)


def _reference_response(x, m, mu, t):
    """P(Erlang(j, m mu) + Exp(mu) > t) by adaptive quadrature in log space (independent)."""
    j = x - m + 1
    lo_g = stats.gamma(j, scale=1.0 / (m * mu))

    def integrand(w):  # f_W(w) P(S > t - w)
        return math.exp(lo_g.logpdf(w) - mu * (t - w))

    mode = (j - 1) / (m * mu)
    pts = [p for p in (mode,) if 0 < p < t]
    tail, _ = integrate.quad(
        integrand, 0.0, t, points=pts or None, epsabs=0, epsrel=1e-13, limit=500
    )
    return lo_g.sf(t) + tail


@pytest.mark.parametrize("mut", [10.0, 100.0, 200.0])
def test_miss_probability_accuracy_large_x(mut):
    m, mu = 4, 1.0
    t = mut / mu
    dl = Deadline("constant", t=t)
    xs = [4, 50, 250, 390, 400, 410, 500]
    p = miss_probability(np.array(xs), m, mu, dl)
    for x, px in zip(xs, p, strict=True):
        ref = _reference_response(x, m, mu, t)
        if ref >= 1e-300:
            assert px == pytest.approx(ref, rel=1e-10, abs=0), (x, px, ref)


@pytest.mark.parametrize(("kind", "on"), ALL)
@pytest.mark.parametrize("m", [1, 4])
def test_miss_probability_monotone_to_600(kind, on, m):
    big = {
        "constant": {"t": 120.0},
        "uniform": {"low": 60.0, "high": 140.0},
        "exponential": {"mean": 120.0},
    }[kind]
    x = np.arange(601)
    p = miss_probability(x, m, 1.0, deadline(kind, on, **big))
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.all(np.diff(p) >= 0)
    assert p[-1] > p[m]  # the deadline does bite within range


def test_uniform_is_the_average_of_constants():
    x = np.arange(0, 40)
    dl = Deadline("uniform", low=0.5, high=3.0)
    p = miss_probability(x, 3, 1.0, dl)
    ref = (
        integrate.quad_vec(
            lambda t: miss_probability(x, 3, 1.0, Deadline("constant", t=t)),
            0.5,
            3.0,
            epsabs=0,
            epsrel=1e-12,
        )[0]
        / 2.5
    )
    np.testing.assert_allclose(p, ref, rtol=1e-10)


# -- stationary quantities ------------------------------------------------------------
@pytest.mark.parametrize(("kind", "on"), ALL)
@pytest.mark.parametrize("lam", [0.3, 2.0, 2.5, 2.95])  # 2.0 = (m - 1) mu
def test_tail_average_equals_stationary_sum(kind, on, lam):
    dl = deadline(kind, on)
    a = steady_state_miss(3, 1.0, lam, dl, method="tail")
    b = steady_state_miss(3, 1.0, lam, dl, method="sum")
    assert a == pytest.approx(b, rel=1e-12, abs=1e-15)


def test_sojourn_tail_closed_forms():
    t = np.linspace(0, 8, 33)
    np.testing.assert_allclose(sojourn_tail(t, 1, 1.3, 0.9), np.exp(-(1.3 - 0.9) * t), 1e-13)
    # lam = (m - 1) mu is the continuous limit, value e^{-mu t}(1 + C mu t)
    c = erlang_c(3, 2.0)
    np.testing.assert_allclose(sojourn_tail(t, 3, 1.0, 2.0), np.exp(-t) * (1 + c * t), 1e-14)
    near = sojourn_tail(t, 3, 1.0, 2.0 + 1e-9)
    np.testing.assert_allclose(near, sojourn_tail(t, 3, 1.0, 2.0), rtol=1e-7)
    pi, tail = stationary_distribution(3, 1.0, 2.5)
    assert tail <= 1e-15 and pi.sum() == pytest.approx(1.0, abs=1e-14)
    c_ = erlang_c(3, 2.5)
    assert pi[3:].sum() == pytest.approx(c_, rel=1e-12) and c_ < 1
    np.testing.assert_allclose(waiting_tail(t, 3, 1.0, 2.5), c_ * np.exp(-0.5 * t), 1e-14)


def _simulate_mmm(m, mu, lam, n, rng):
    """Kiefer-Wolfowitz recursion of the FCFS G/G/m queue: waiting and response times."""
    inter = rng.exponential(1 / lam, n)
    serv = rng.exponential(1 / mu, n)
    work = [0.0] * m
    wait = np.empty(n)
    for i in range(n):
        w = work[0]
        wait[i] = w
        work[0] = w + serv[i]
        work.sort()
        a = inter[i]
        work = [v - a if v > a else 0.0 for v in work]
    return wait, wait + serv


def test_sojourn_tail_matches_mmm_simulation():
    m, mu, lam, n, batches = 3, 1.0, 2.4, 300_000, 30
    wait, resp = _simulate_mmm(m, mu, lam, n, rng_for(SEED, "mmm-lindley"))
    wait, resp = wait[20_000:], resp[20_000:]
    for t in (0.5, 1.5, 3.0):
        for sample, exact in (
            (resp, sojourn_tail(t, m, mu, lam)),
            (wait, waiting_tail(t, m, mu, lam)),
        ):
            means = np.array([b.mean() for b in np.array_split(sample > t, batches)])
            se = means.std(ddof=1) / math.sqrt(batches)
            assert abs(means.mean() - exact) <= 5 * se + 1e-4, (t, means.mean(), exact, se)


@pytest.mark.parametrize(("kind", "on"), ALL)
def test_f_and_f_prime(kind, on):
    m, mu = 3, 1.0
    dl = deadline(kind, on)
    assert f(0.0, m, mu, dl) == 0.0
    assert f(3.0, m, mu, dl) == 3.0
    assert f(3.0 - 1e-9, m, mu, dl) == pytest.approx(3.0, abs=1e-7)  # continuous at saturation
    assert f_prime(0.0, m, mu, dl) == pytest.approx(float(miss_probability(0, m, mu, dl)), 1e-12)
    for lam in (0.4, 1.7, 2.0, 2.9):
        d, err = f_prime(lam, m, mu, dl, with_error=True)
        assert err <= 1e-8 * max(1.0, abs(d))
        h = 1e-5
        fd = (f(lam + h, m, mu, dl) - f(lam - h, m, mu, dl)) / (2 * h)
        assert d == pytest.approx(fd, rel=1e-6)
        # against the stationary-sum route
        fs = [(lam + s) * steady_state_miss(m, mu, lam + s, dl, method="sum") for s in (h, -h)]
        assert d == pytest.approx((fs[0] - fs[1]) / (2 * h), rel=1e-5)
    left = f_prime(3.0, m, mu, dl)
    assert left == pytest.approx((3.0 - f(3.0 - 1e-4, m, mu, dl)) / 1e-4, rel=1e-3)
