"""Property-based checks of Part B over wide classes of inputs (hypothesis): rates 1e-6..1e6
(jobs per unit time), loads up to 1 - 1e-9, deadlines 1e-3..1e4 mean service times, 1 to 50
clusters. Every public function returns a finite, in-range result (probabilities in [0, 1],
monotone where the theory says so, costs >= 0, the optimal cost below every heuristic on
small instances) or one clear error (a ``ValueError`` with a one-line message); no
floating-point warning escapes (``RuntimeWarning`` is an error here).

Each class runs twice: in the default run over the same wide ranges with few examples and
small tables (``*_quick``, seconds in all), and behind the ``slow`` marker with many examples
and the full sizes (minutes of exact chains; ``pytest -m slow``).
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.deadlines import (
    Cluster,
    Deadline,
    Instance,
    InstanceError,
    evaluate,
    f,
    f_prime,
    index_table,
    io_index,
    miss_increments,
    miss_probability,
    optimal_split,
    pi_index,
    rb_index,
    sojourn_tail,
    steady_state_miss,
)
from queue_routing.errors import AccuracyError

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
slow = pytest.mark.slow


@contextmanager
def strict():
    """Floating-point warnings are failures."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _one_line(exc: BaseException) -> None:
    msg = str(exc)
    assert isinstance(exc, ValueError) and "\n" not in msg and 0 < len(msg) < 300, msg


log_rate = st.floats(-6.0, 6.0).map(lambda e: 10.0**e)  # 1e-6 .. 1e6
servers = st.one_of(st.integers(1, 8), st.integers(9, 60), st.sampled_from([200, 1000]))
load = st.one_of(
    st.floats(1e-6, 0.999),
    st.floats(3.0, 9.0).map(lambda e: 1.0 - 10.0**-e),  # 0.999 .. 1 - 1e-9
)
scale = st.floats(-3.0, 4.0).map(lambda e: 10.0**e)  # deadline in mean service times


@st.composite
def deadlines(draw, mu: float, max_scale: float = 1e4):
    """A deadline law of ``1e-3 .. max_scale`` mean service times ``1/mu``, any target."""
    kind = draw(st.sampled_from(["constant", "uniform", "exponential"]))
    on = draw(st.sampled_from(["response", "waiting"]))
    c = min(draw(scale), max_scale)
    if kind == "constant":
        return Deadline("constant", t=c / mu, on=on)
    if kind == "exponential":
        return Deadline("exponential", mean=c / mu, on=on)
    spread = draw(st.floats(0.05, 1.0))
    return Deadline("uniform", low=c * (1 - spread) / mu, high=c * (1 + spread) / mu, on=on)


@st.composite
def cluster_cases(draw, max_scale: float = 1e4):
    mu = draw(log_rate)
    m = draw(servers)
    return Cluster(m, mu), draw(deadlines(mu, max_scale))


# -- miss probabilities -------------------------------------------------------------------
def _check_miss_probability(case, upto: int) -> None:
    c, dl = case
    x = np.arange(upto + 1)
    with strict():
        p = miss_probability(x, c.servers, c.rate, dl)
        d = miss_increments(x[:-1], c.servers, c.rate, dl)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.all(np.diff(p) >= -1e-13 * p[1:])
    assert np.all(np.isfinite(d)) and np.all(d >= 0)
    # the increments are the differences, computed without the cancellation
    np.testing.assert_allclose(d, np.diff(p), rtol=0, atol=1e-12 * max(1e-300, float(p[-1])))
    assert np.all(d[: max(c.servers - 1, 0)] == 0)  # a free server ahead: nothing changes


@settings(max_examples=40, **SETTINGS)
@given(cluster_cases())
def test_miss_probability_is_a_nondecreasing_probability_quick(case):
    _check_miss_probability(case, 40)


@slow
@settings(max_examples=40, **SETTINGS)
@given(cluster_cases(max_scale=300.0))
def test_miss_probability_is_a_nondecreasing_probability(case):
    _check_miss_probability(case, 300)


# -- stationary quantities ----------------------------------------------------------------
def _check_stationary(case, rho) -> None:
    c, dl = case
    m, mu = c.servers, c.rate
    lam = rho * m * mu
    with strict():
        pbar = steady_state_miss(m, mu, lam, dl)
        tail = sojourn_tail(np.array([0.0, 0.5, 1.0, 10.0, 1e3]) / mu, m, mu, lam)
        fv = f(lam, m, mu, dl)
        try:
            d = f_prime(lam, m, mu, dl)
        except AccuracyError as exc:  # only when f' itself is not a finite double
            _one_line(exc)
            d = None
    assert 0.0 <= pbar <= 1.0
    assert np.all(np.isfinite(tail)) and np.all((tail >= 0) & (tail <= 1))
    assert np.all(np.diff(tail) <= 1e-15)
    assert tail[0] == pytest.approx(1.0)
    assert 0.0 <= fv <= lam * (1 + 1e-15)
    if d is not None:
        assert math.isfinite(d) and d >= -1e-9 * max(1.0, abs(d))  # f increases with lam


@settings(max_examples=40, **SETTINGS)
@given(cluster_cases(), load)
def test_stationary_quantities_are_in_range_quick(case, rho):
    _check_stationary(case, rho)


@slow
@settings(max_examples=40, **SETTINGS)
@given(cluster_cases(), load)
def test_stationary_quantities_are_in_range(case, rho):
    _check_stationary(case, rho)


# -- index functions ----------------------------------------------------------------------
ratios = st.floats(-3.0, 3.0).map(lambda e: 10.0**e)


def _check_io_rb(case, ratio, upto: int) -> None:
    c, dl = case
    lam = ratio * c.capacity  # RB takes any arrival rate, also far above capacity
    with strict():
        io = io_index(c, dl, upto)
        rb = rb_index(c, dl, lam, upto)
    assert np.all((io >= 0) & (io <= 1)) and np.all(np.diff(io) >= -1e-13 * io[1:])
    assert not np.isnan(rb).any() and np.all(rb >= 0)
    assert rb[0] == io[0]
    assert np.all(rb >= io * (1 - 1e-12))  # nu(x) = P(x) + (nonnegative)
    # +inf only as an overflow, after which it stays +inf
    inf = np.flatnonzero(np.isinf(rb))
    if inf.size:
        assert np.all(np.isinf(rb[inf[0] :]))


@settings(max_examples=40, **SETTINGS)
@given(cluster_cases(), ratios)
def test_io_and_rb_indices_are_finite_or_overflow_quick(case, ratio):
    _check_io_rb(case, ratio, 60)


@slow
@settings(max_examples=40, **SETTINGS)
@given(cluster_cases(), ratios)
def test_io_and_rb_indices_are_finite_or_overflow(case, ratio):
    _check_io_rb(case, ratio, 300)


def _check_pi(case, rho, upto: int) -> None:
    c, dl = case
    rho = min(rho, 1 - 1e-6)  # PI's clamp of a saturated cluster
    lam = rho * c.capacity
    with strict():
        try:
            nu = pi_index(c, dl, lam, upto)
        except AccuracyError as exc:
            _one_line(exc)
            return
        pbar = steady_state_miss(c.servers, c.rate, lam, dl)
    assert np.all(np.isfinite(nu)) and np.all(nu >= 0)
    assert nu[0] == pytest.approx(pbar, rel=1e-9, abs=1e-300)


@settings(max_examples=12, **SETTINGS)
@given(cluster_cases(max_scale=50.0), load)  # longer: P^miss by quadrature to x ~ 1e4
def test_pi_index_is_finite_and_starts_at_the_stationary_miss_probability_quick(case, rho):
    _check_pi(case, rho, 40)


@slow
@settings(max_examples=30, **SETTINGS)
@given(cluster_cases(max_scale=50.0), load)
def test_pi_index_is_finite_and_starts_at_the_stationary_miss_probability(case, rho):
    _check_pi(case, rho, 200)


# -- instances of 1 to 50 clusters --------------------------------------------------------
@st.composite
def instances(draw, max_clusters: int = 50, spread: float = 1e6):
    n = draw(st.integers(1, max_clusters))
    base = draw(st.floats(-6.0, 6.0))  # common time unit
    logs = st.floats(-math.log10(spread) / 2, math.log10(spread) / 2)
    mus = [10.0 ** min(6.0, max(-6.0, base + draw(logs))) for _ in range(n)]
    ms = [draw(st.integers(1, 6)) for _ in range(n)]
    cap = float(np.dot(ms, mus))
    pure = draw(st.booleans())
    rho = draw(load) if pure else draw(st.floats(0.01, 3.0))
    r_cost = None if pure else draw(st.floats(-3.0, 3.0).map(lambda e: 10.0**e))
    mu_ref = float(np.median(mus))
    dl = draw(deadlines(mu_ref, max_scale=100.0))
    return Instance(
        rho * cap, tuple(Cluster(m, mu) for m, mu in zip(ms, mus, strict=True)), r_cost, dl
    )


def _check_split_tables(inst, upto: int) -> None:
    with strict():
        split = optimal_split(inst, check_convexity=False)
        tables = [index_table(inst, p, upto).table for p in ("io", "rb")]
    caps = inst.servers * inst.service_rates
    assert np.all(split.rates >= 0) and np.all(split.rates <= caps * (1 + 1e-12))
    assert split.rates.sum() + split.rejected_rate == pytest.approx(inst.arrival_rate, rel=1e-9)
    assert math.isfinite(split.cost) and split.cost >= 0
    for t in tables:
        assert not np.isnan(t).any() and np.all(t >= 0)


@settings(max_examples=3, **SETTINGS)
@given(instances())
def test_bernoulli_split_and_index_tables_are_consistent_quick(inst):
    _check_split_tables(inst, 10)


@slow
@settings(max_examples=15, **SETTINGS)
@given(instances())
def test_bernoulli_split_and_index_tables_are_consistent(inst):
    _check_split_tables(inst, 60)


def _check_simulation(inst, arrivals: float, table_size: int) -> None:
    horizon = arrivals / inst.arrival_rate
    for p in ("bs", "io", "rb"):
        with strict():
            try:
                res = evaluate(
                    inst,
                    p,
                    method="simulation",
                    horizon=horizon,
                    replications=2,
                    table_size=table_size,
                )
            except AccuracyError as exc:  # the table decided some arrivals
                _one_line(exc)
                continue
        assert math.isfinite(res.cost) and res.cost >= 0 and res.table_bound == 0
        assert 0.0 <= res.miss_rate <= res.cost * (1 + 1e-12) and res.rejection_rate >= 0


@settings(max_examples=4, **SETTINGS)
@given(instances(max_clusters=50))
def test_simulation_is_finite_or_says_why_quick(inst):
    _check_simulation(inst, 300.0, 30)


@slow
@settings(max_examples=10, **SETTINGS)
@given(instances(max_clusters=50))
def test_simulation_is_finite_or_says_why(inst):
    _check_simulation(inst, 1500.0, 60)  # about 1500 arrivals per replication


two_clusters = instances(max_clusters=2, spread=100.0).filter(lambda i: i.n_clusters == 2)


def _check_optimal(inst, level: int) -> None:
    with strict():
        try:
            opt = evaluate(inst, "optimal", truncation=level)
        except AccuracyError as exc:  # relative value iteration did not converge
            _one_line(exc)
            return
        costs = {p: evaluate(inst, p, truncation=level) for p in ("io", "pi", "rb")}
    r = inst.rejection_cost
    for res in (opt, *costs.values()):
        assert math.isfinite(res.cost) and res.cost >= 0
        charged = res.miss_rate + (0.0 if r is None else r * res.rejection_rate)
        assert res.cost == pytest.approx(charged, rel=1e-12, abs=1e-300)
    for p, res in costs.items():
        assert opt.cost <= res.cost * (1 + 1e-7) + 1e-12, p


@settings(max_examples=3, **SETTINGS)
@given(two_clusters)
def test_optimal_is_below_every_index_policy_on_small_instances_quick(inst):
    _check_optimal(inst, 6)


@slow
@settings(max_examples=12, **SETTINGS)
@given(two_clusters)
def test_optimal_is_below_every_index_policy_on_small_instances(inst):
    _check_optimal(inst, 12)


# -- the instance JSON ----------------------------------------------------------------------
json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**400), 10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.floats(0.5, 2.0), max_size=2),
)


fields = st.sampled_from(["arrival_rate", "rejection_cost", "servers", "service_rates", "deadline"])


def _check_from_dict(field, value) -> None:
    data = {
        "arrival_rate": 3.0,
        "servers": [3, 2],
        "service_rates": [1.0, 0.8],
        "rejection_cost": 2.0,
        "deadline": {"kind": "constant", "t": 1.5},
    }
    if field in ("servers", "service_rates"):
        data[field] = [data[field][0], value]
    elif field == "deadline":
        data[field] = {"kind": "constant", "t": value}
    else:
        data[field] = value
    try:
        inst = Instance.from_dict(data)
    except InstanceError as exc:
        _one_line(exc)
        key = {"deadline": "deadline.t"}.get(field, field)
        assert key in str(exc)
        return
    assert all(math.isfinite(v) for v in (inst.arrival_rate, *inst.service_rates))
    if not (field == "rejection_cost" and value is None):  # null: pure routing
        assert isinstance(value, int | float) and not isinstance(value, bool)


@settings(max_examples=50, **SETTINGS)
@given(fields, json_values)
def test_from_dict_accepts_or_names_the_field_quick(field, value):
    _check_from_dict(field, value)


@slow
@settings(max_examples=150, **SETTINGS)
@given(fields, json_values)
def test_from_dict_accepts_or_names_the_field(field, value):
    _check_from_dict(field, value)
