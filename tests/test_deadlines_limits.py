"""Part B at the edges: what it accepts, what it refuses (one line naming the field or
argument) and that what it accepts is finite and right (the ranges of ``deadlines/model.py``
and the limits of ``deadlines/policies.py``).

References are independent of the code under test: mpmath evaluations of closed forms,
exact identities of the model (a one-server loss system, pure routing as the limit of a huge
rejection cost), the compiled simulator against the chain, and the optimal cost as a bound.
"""

from __future__ import annotations

import functools
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from test_deadlines_precision import rb_reference

from queue_routing.deadlines import (
    Cluster,
    Deadline,
    Instance,
    InstanceError,
    PolicyError,
    TableBoundWarning,
    erlang_c,
    evaluate,
    evaluate_index_policy,
    f,
    f_prime,
    index_function,
    index_table,
    markov,
    miss_probability,
    optimal_split,
    policies,
    rb_index,
    simulate,
    simulate_policy,
    sojourn_tail,
    stationary_distribution,
    steady_state_miss,
)
from queue_routing.deadlines.indices import MAX_UPTO
from queue_routing.errors import AccuracyError

README = {
    "arrival_rate": 3.0,
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "rejection_cost": 2.0,
    "deadline": {"kind": "constant", "t": 1.5},
}
FAST = {
    "arrival_rate": 300,
    "servers": [3, 2],
    "service_rates": [100, 80],
    "rejection_cost": 2,
    "deadline": {"kind": "constant", "t": 10},
}


def _one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert "\n" not in msg and 0 < len(msg) < 300, msg
    return msg


# -- 1. long deadlines: the sojourn tail without 0 * inf ----------------------------------
def _mp_sojourn_tail(t, m, mu, lam):
    """``e^{-mu t} + C mu (e^{-mu t} - e^{-(m mu - lam) t}) / ((m-1) mu - lam)`` at 60 digits,
    Erlang C from its defining sums."""
    with mp.workdps(60):
        t, mu, lam = mp.mpf(t), mp.mpf(mu), mp.mpf(lam)
        a = lam / mu
        top = a**m / mp.factorial(m) * m / (m - a)
        c = top / (sum(a**k / mp.factorial(k) for k in range(m)) + top)
        d = (m - 1) * mu - lam
        em = mp.exp(-mu * t)
        if d == 0:
            return em * (1 + c * mu * t)
        return em + c * mu * (em - mp.exp(-(m * mu - lam) * t)) / d


@pytest.mark.parametrize("t", [1.5, 50.0, 800.0, 1e4, 1e6])
@pytest.mark.parametrize(("m", "mu", "lam"), [(3, 1.0, 2.9), (3, 1.0, 2.0), (2, 80.0, 150.0)])
def test_sojourn_tail_is_finite_and_exact_at_long_times(t, m, mu, lam):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = float(sojourn_tail(t, m, mu, lam))
    ref = float(_mp_sojourn_tail(t, m, mu, lam))
    assert math.isfinite(got) and 0.0 <= got <= 1.0
    if ref > 1e-300:
        assert got == pytest.approx(ref, rel=1e-12)
    else:
        assert got <= 1e-290


def _mp_f(lam, m, mu, t):
    return mp.mpf(lam) * _mp_sojourn_tail_mp(t, m, mu, lam)


def _mp_sojourn_tail_mp(t, m, mu, lam):
    # the same closed form in mpmath numbers (for mp.diff)
    a = lam / mu
    top = a**m / mp.factorial(m) * m / (m - a)
    c = top / (sum(a**k / mp.factorial(k) for k in range(m)) + top)
    d = (m - 1) * mu - lam
    em = mp.exp(-mu * t)
    return em + c * mu * (em - mp.exp(-(m * mu - lam) * t)) / d


@pytest.mark.parametrize("t", [1.5, 40.0, 800.0])
@pytest.mark.parametrize("frac", [0.3, 0.9, 0.999])
def test_f_prime_matches_high_precision_derivative(t, frac):
    m, mu = 3, 1.0
    lam = frac * m * mu
    got = f_prime(lam, m, mu, Deadline("constant", t=t))
    with mp.workdps(50):
        ref = float(mp.diff(lambda x: _mp_f(x, m, mp.mpf(mu), mp.mpf(t)), mp.mpf(lam)))
        val = float(_mp_f(mp.mpf(lam), m, mp.mpf(mu), mp.mpf(t)))
    assert f(lam, m, mu, Deadline("constant", t=t)) == pytest.approx(val, rel=1e-12, abs=1e-300)
    if abs(ref) > 1e-290:
        assert got == pytest.approx(ref, rel=1e-9)
    else:
        assert abs(got) <= 1e-280


LONG = [
    (FAST, ("bs", "io", "rb")),  # PI: below (its indices underflow at both clusters)
    ({**README, "deadline": {"kind": "constant", "t": 800.0}}, ("bs", "io", "pi", "rb")),
    ({**README, "deadline": {"kind": "constant", "t": 1e4}}, ("bs",)),  # PI: below
    pytest.param(  # ~3 min: PI needs P^miss (by quadrature) up to x ~ 6700 here
        {**README, "deadline": {"kind": "uniform", "low": 500.0, "high": 2000.0}},
        ("bs", "pi"),
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize(("data", "names"), LONG)
def test_long_deadlines_evaluate_to_finite_costs(data, names):
    inst = Instance.from_dict(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for p in names:
            res = evaluate(inst, p, truncation=60)
            assert math.isfinite(res.cost) and res.cost >= 0.0, p
            # deadlines of hundreds of mean service times are (almost) never missed; what
            # is left is the level's forced rejections, charged R and reported
            assert res.miss_rate <= 1e-12 and res.cost <= 1e-9, (p, res)
            assert res.rejection_rate == pytest.approx(res.forced_rejection_rate, abs=1e-300)


@pytest.mark.parametrize("data", [FAST, {**README, "deadline": {"kind": "constant", "t": 1e4}}])
def test_pi_refuses_indices_underflowing_at_two_clusters(data):
    """Deadlines of ~1000 mean service times or more at both clusters (the BS split keeps
    every cluster's marginal miss rate down to 1e-300): both clusters' PI indices lie below
    the doubles (IO and RB order theirs by logarithms; PI has no log form): one line saying
    so, not the policy that ties of zeros would make."""
    with pytest.raises(AccuracyError) as err:
        evaluate(Instance.from_dict(data), "pi", truncation=60)
    assert _one_line(err.value).startswith("pi: the indices of clusters 1, 2 fall below 1e-290")


@pytest.mark.slow
@pytest.mark.parametrize(("data", "names"), LONG)
def test_long_deadlines_default_evaluation_is_finite_or_refused(data, names):
    """The miss probabilities of such deadlines lie below the doubles (IO and RB order them
    by logarithms, and one cluster then takes every job until its queue is hundreds long):
    the default evaluation either settles or says which level it reached."""
    inst = Instance.from_dict(data)
    for p in names:
        try:
            res = evaluate(inst, p)
        except AccuracyError as exc:
            assert _one_line(exc).startswith("truncation: ")
            continue
        assert math.isfinite(res.cost) and 0.0 <= res.cost <= 1e-9


def test_bs_cost_at_long_deadline_is_the_high_precision_miss_rate():
    data = {**README, "deadline": {"kind": "constant", "t": 800.0}}
    inst = Instance.from_dict(data)
    split = optimal_split(inst)
    with mp.workdps(60):
        ref = sum(
            float(_mp_f(mp.mpf(r), c.servers, mp.mpf(c.rate), mp.mpf(800.0)))
            for r, c in zip(split.rates, inst.clusters, strict=True)
            if r > 0
        )
    assert evaluate(inst, "bs").cost == pytest.approx(ref, rel=1e-10)


# -- 2. RB: O(upto), no NaN, overflow to +inf that still orders ---------------------------
def test_rb_is_linear_in_upto_and_never_nan():
    """README clusters, lam = 5, exponential deadlines of mean 1.5: the index of cluster 2
    grows geometrically (no plateau at 5.9e35 from x = 130, no NaN) up to the largest
    double, then is +inf."""
    c = Cluster(2, 0.8)
    dl = Deadline("exponential", mean=1.5)
    nu = rb_index(c, dl, 5.0, MAX_UPTO)  # its time: benchmarks/edges.py
    assert not np.isnan(nu).any()
    finite = nu[np.isfinite(nu)]
    assert np.all(np.diff(finite) >= 0) and 500 < finite.size < MAX_UPTO
    assert np.all(np.isposinf(nu[finite.size :]))  # beyond the doubles: +inf, still ordered
    with mp.workdps(220):
        p = tuple(_mp_p_exponential(x, 2, 0.8, 1.5) for x in range(302))
    ref = rb_reference(p, 2, 0.8, 5.0, 300, 220)
    for x in (129, 130, 131, 200, 300):
        assert nu[x] == pytest.approx(float(ref[x]), rel=1e-11), x
    assert nu[300] > 1e50


def _mp_p_exponential(x, m, mu, mean):
    theta, mu = 1 / mp.mpf(mean), mp.mpf(mu)
    return 1 - mu / (mu + theta) * (m * mu / (m * mu + theta)) ** max(x - m + 1, 0)


def test_index_function_refuses_runaway_upto_and_computes_one_row_only():
    inst = Instance.from_dict(README)
    with pytest.raises(PolicyError, match=r"^upto must be an integer in 0\.\.100000") as info:
        index_function(inst, "rb", 1, 10**9)
    _one_line(info.value)
    nu = index_function(inst, "rb", 2, MAX_UPTO)  # one row only; its time: benchmarks/edges.py
    assert nu.shape == (MAX_UPTO + 1,)
    with pytest.raises(PolicyError, match=r"^upto"):
        index_table(inst, "io", MAX_UPTO + 1)


def test_simulation_with_many_clusters_at_high_load_uses_the_default_table():
    rng = np.random.default_rng(5)
    m = rng.integers(1, 5, 12).tolist()
    mu = rng.uniform(0.5, 1.5, 12).tolist()
    cap = float(np.dot(m, mu))
    inst = Instance.from_dict(
        {
            "arrival_rate": 0.9 * cap,
            "servers": m,
            "service_rates": mu,
            "rejection_cost": 2.0,
            "deadline": {"kind": "constant", "t": 1.5},
        }
    )
    tab = index_table(inst, "rb", 400)
    assert not np.isnan(tab.table).any()
    res = evaluate(inst, "rb", method="simulation", horizon=200.0, replications=3)
    assert math.isfinite(res.cost) and res.table_bound == 0


# -- 3. truncation: raised until stable, or refused; forced rejections said ---------------
def test_default_exact_evaluation_raises_the_level_until_stable():
    inst = Instance.from_dict(README)
    for p in ("io", "pi", "rb"):
        res = evaluate(inst, p)
        levels = [lv for lv, _ in res.history]
        assert levels[0] == 60 and res.truncation == levels[-1] >= 90
        c_prev, c_last = res.history[-2][1], res.history[-1][1]
        assert abs(c_last - c_prev) <= 1e-6 * c_last
        assert res.truncation_rate <= 1e-8 * inst.arrival_rate


def _near_critical_refused(max_level: int) -> None:
    inst = Instance.from_dict({**README, "arrival_rate": 4.4, "rejection_cost": None})
    with pytest.raises(AccuracyError, match=r"^truncation: the cost of pi is not stable") as e:
        evaluate(inst, "pi")
    msg = _one_line(e.value)
    assert f"level {max_level}" in msg and "last relative change" in msg


def test_near_critical_pure_routing_is_refused_not_biased(monkeypatch):
    # load 0.957: at the default level 60 the cost is 6.7% off; with the state bound lowered
    # (levels 60, 90, 135, 140) it is refused quickly, as it is at the real bound (slow test)
    monkeypatch.setattr(policies, "AUTO_MAX_STATES", 141**2)
    _near_critical_refused(140)


@pytest.mark.slow
def test_near_critical_pure_routing_is_answered_below_the_real_bound():
    # the level cap is 4 million states (L = 1999 for two clusters): the cost is certified
    # there (it was refused at the former cap, 499); about 4 minutes and 6 GB
    inst = Instance.from_dict({**README, "arrival_rate": 4.4, "rejection_cost": None})
    res = evaluate(inst, "pi")
    assert res.certified and res.truncation <= 1999
    # reference: the chain at a level of its own, solved as it stands
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = evaluate(inst, "pi", truncation=1414)
    assert abs(res.cost - ref.cost) <= 1e-5


def test_huge_rejection_cost_is_not_charged_for_truncation_rejections():
    big = Instance.from_dict({**README, "rejection_cost": 1e300})
    auto = evaluate(big, "pi")
    assert 0.5 < auto.cost < 2.0  # not R times a probability below the solver's resolution
    assert auto.rejection_rate == 0.0
    # explicitly at level 60: charged as the truncated chain stands, and said so
    fixed = evaluate(big, "pi", truncation=60)
    assert fixed.forced_rejection_rate > 0.0
    assert fixed.forced_rejection_rate <= fixed.rejection_rate
    assert fixed.cost == pytest.approx(1e300 * fixed.rejection_rate + fixed.miss_rate)
    lost = evaluate_index_policy(big, index_table(big, "pi", 60).table, 60, truncation_losses=True)
    assert lost.rejection_rate == 0.0 and lost.lost_rate >= fixed.forced_rejection_rate
    # Monte Carlo: the PI policy itself (no truncation, the table never binds) costs the same
    sim = evaluate(big, "pi", method="simulation", horizon=4000.0, replications=8, seed=3)
    assert abs(sim.cost - auto.cost) <= 4 * sim.standard_error + 1e-3


def test_huge_rejection_cost_splits_like_pure_routing():
    pure = optimal_split(Instance.from_dict({**README, "rejection_cost": None}))
    big = optimal_split(Instance.from_dict({**README, "rejection_cost": 1e300}))
    np.testing.assert_allclose(big.rates, pure.rates, rtol=1e-9)
    assert big.rejected_rate == 0.0 and big.cost == pytest.approx(pure.cost, rel=1e-9)


def test_flat_miss_rate_still_splits_the_whole_stream():
    # deadlines of 1e11 mean service times: every f_k is 0 in double precision
    inst = Instance.from_dict(
        {**README, "rejection_cost": None, "deadline": {"kind": "constant", "t": 1e11}}
    )
    split = optimal_split(inst)
    assert split.rates.sum() == pytest.approx(3.0, rel=1e-12)
    assert np.all(split.rates <= inst.servers * inst.service_rates)
    assert 0.0 <= split.cost <= 1e-12  # within rounding of capacity f is no longer 0
    assert np.isfinite(policies.split_probabilities(inst, split)).all()


def test_bs_default_is_its_closed_form():
    inst = Instance.from_dict({**README, "arrival_rate": 4.4, "rejection_cost": None})
    res = evaluate(inst, "bs")
    split = optimal_split(inst)
    ref = sum(
        f(float(r), c.servers, c.rate, inst.deadline)
        for r, c in zip(split.rates, inst.clusters, strict=True)
    )
    assert res.truncation is None and res.cost == pytest.approx(ref, rel=1e-14)


def test_optimal_does_not_converge_silently(monkeypatch):
    inst = Instance.from_dict({**README, "rejection_cost": 1e300})
    # at an explicit level the forced rejections (charged 1e300) swamp the span; 2000
    # iterations instead of 200 000 keep the test short
    short = functools.partial(markov.optimal_policy, max_iter=2000)
    monkeypatch.setattr(policies, "optimal_policy", short)
    with pytest.raises(AccuracyError, match=r"^truncation: relative value iteration") as e:
        evaluate(inst, "optimal", truncation=12)
    _one_line(e.value)


# -- 4. argument ranges of the policy layer -----------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"truncation": 0}, "truncation"),
        ({"truncation": -3}, "truncation"),
        ({"truncation": True}, "truncation"),
        ({"truncation": 2.5}, "truncation"),
        ({"truncation": 10**6}, "truncation"),
        ({"method": "simulation", "table_size": 0}, "table_size"),
        ({"method": "simulation", "table_size": MAX_UPTO + 1}, "table_size"),
        ({"method": "simulation", "horizon": 0.0}, "horizon"),
        ({"method": "simulation", "horizon": math.inf}, "horizon"),
        ({"method": "simulation", "horizon": 1e300}, "horizon"),
        ({"method": "simulation", "replications": 1}, "replications"),
        ({"method": "simulation", "seed": -1}, "seed"),
        ({"method": 3}, "method"),
    ],
)
def test_policy_arguments_out_of_range(kwargs, argument):
    inst = Instance.from_dict(README)
    with pytest.raises(PolicyError) as info:
        evaluate(inst, "pi", **kwargs)
    assert info.value.argument == argument
    assert _one_line(info.value).startswith(argument)


def test_binding_simulation_table_is_reported_or_refused():
    """A table of one entry on one server: every arrival that finds the server busy is
    beyond the table, so it is rejected and counted as table-bound; their share is the
    M/M/1/1 blocking probability ``rho/(1+rho)``."""
    inst = Instance.from_dict(
        {
            "arrival_rate": 0.5,
            "servers": [1],
            "service_rates": [1.0],
            "rejection_cost": 2.0,
            "deadline": {"kind": "exponential", "mean": 1.0},
        }
    )
    run = {"horizon": 4000.0, "warmup": 100.0, "replications": 4, "seed": 9}
    res = simulate(inst, index=[[0.0]], **run)
    n_rejected = res.rejection_rate * 4000.0 * 4
    assert res.table_bound == round(n_rejected)
    share = res.replication_rejection_rates / 0.5
    assert abs(share.mean() - 1 / 3) <= 4 * share.std(ddof=1) / 2 + 1e-3
    with pytest.warns(TableBoundWarning, match="^table_size"):
        simulate_policy(inst, "io", table_size=1, **run)
    with pytest.raises(AccuracyError, match=r"^table_size: the end of the index table") as e:
        evaluate(inst, "io", method="simulation", table_size=1, **run)
    _one_line(e.value)


def test_index_beyond_the_doubles_is_still_routed_in_pure_routing():
    """Pure routing on one cluster whose index is +inf from x = 1 on (an overflowed index,
    not a full cluster): every job is routed, so the cost is the M/M/m miss rate f(lam)."""
    inst = Instance.from_dict(
        {
            "arrival_rate": 1.2,
            "servers": [2],
            "service_rates": [1.0],
            "rejection_cost": None,
            "deadline": {"kind": "exponential", "mean": 2.0},
        }
    )
    row = np.full(300, np.inf)
    row[0] = 0.5
    res = evaluate_index_policy(inst, [row], 299)
    assert res.lost_rate < 1e-30
    assert res.cost == pytest.approx(f(1.2, 2, 1.0, inst.deadline), rel=1e-12)
    sim = simulate(inst, index=[row], horizon=4000.0, warmup=100.0, replications=6, seed=2)
    assert sim.rejection_rate == 0.0
    assert abs(sim.cost - res.cost) <= 4 * sim.standard_error


# -- 4./5. the instance: JSON numbers in documented ranges, clusters numbered from 1 ------
FIELDS = {
    "arrival_rate": lambda v: {**README, "arrival_rate": v},
    "rejection_cost": lambda v: {**README, "rejection_cost": v},
    "servers": lambda v: {**README, "servers": [3, v]},
    "service_rates": lambda v: {**README, "service_rates": [1.0, v]},
    "deadline.t": lambda v: {**README, "deadline": {"kind": "constant", "t": v}},
    "deadline.mean": lambda v: {**README, "deadline": {"kind": "exponential", "mean": v}},
    "deadline.low": lambda v: {**README, "deadline": {"kind": "uniform", "low": v, "high": 2.0}},
    "deadline.high": lambda v: {**README, "deadline": {"kind": "uniform", "low": 0.5, "high": v}},
}
BAD = [True, False, "3.5", None, [1.0], 10**400, -(10**400), math.nan, math.inf, 1e300, 1e308]


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("value", BAD, ids=repr)
def test_instance_refuses_non_numbers_and_out_of_range(field, value):
    if field == "rejection_cost" and value is None:
        return  # null is pure routing
    data = FIELDS[field](value)
    if field == "rejection_cost" and value == 1e300:
        Instance.from_dict(data)  # accepted: R up to 1e300 with R lam <= 1e306
        return
    with pytest.raises(InstanceError) as info:
        Instance.from_dict(data)
    msg = _one_line(info.value)
    name = field.split(".")[-1]
    assert name in msg, msg
    if field in ("servers", "service_rates"):
        assert msg.startswith("cluster 2: "), msg


def test_instance_ranges_are_documented_and_accepted_extremes_compute():
    lo = {
        "arrival_rate": 1e-12,
        "servers": [1, 10**6],
        "service_rates": [1e-12, 1e-12],
        "rejection_cost": 1e-12,
        "deadline": {"kind": "constant", "t": 1e12},
    }
    hi = {
        "arrival_rate": 1e12,
        "servers": [1, 1000],
        "service_rates": [1e12, 1e9],
        "rejection_cost": 1e12,
        "deadline": {"kind": "uniform", "low": 0.0, "high": 1e-12},
    }
    for data in (lo, hi):
        inst = Instance.from_dict(data)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for p in ("bs", "io", "pi", "rb"):
                res = evaluate(inst, p, truncation=20)
                assert math.isfinite(res.cost) and res.cost >= 0.0, (p, res)
                assert res.cost <= data["rejection_cost"] * data["arrival_rate"] * (1 + 1e-12)
    with pytest.raises(InstanceError, match=r"rejection_cost \* arrival_rate"):
        Instance.from_dict({**README, "rejection_cost": 1e300, "arrival_rate": 1e12})
    with pytest.raises(InstanceError, match=r"^cluster 1: servers must be an integer"):
        Instance.from_dict({**README, "servers": [2.5, 2]})


def test_miss_kernels_refuse_bad_arguments_with_one_line():
    dl = Deadline("constant", t=1.5)
    for call in (
        lambda: miss_probability([10**400], 2, 1.0, dl),
        lambda: miss_probability([1.5], 2, 1.0, dl),
        lambda: miss_probability([True], 2, 1.0, dl),
        lambda: miss_probability([0], 10**400, 1.0, dl),
        lambda: miss_probability([0], 2, 1e308, dl),
        lambda: miss_probability([0], 2, 1.0, "constant"),
        lambda: sojourn_tail(math.inf, 2, 1.0, 1.0),
        lambda: steady_state_miss(2, 1.0, math.nan, dl),
        lambda: stationary_distribution(2, 1.0, 2.0 * (1 - 1e-12)),
        lambda: f(-1.0, 2, 1.0, dl),
        lambda: f_prime("1", 2, 1.0, dl),
    ):
        with pytest.raises(ValueError) as info:
            call()
        _one_line(info.value)
    assert erlang_c(20_000, 19_000.0) == pytest.approx(_mp_erlang_c(20_000, 19_000), rel=1e-10)


def _mp_erlang_c(m, a):
    with mp.workdps(40):
        a = mp.mpf(a)
        # C = P(Pois(a) >= m)-weighted form: B from its terms, then C = B / (1 - rho (1 - B))
        logs = [k * mp.log(a) - mp.loggamma(k + 1) for k in range(m + 1)]
        top = max(logs)
        b = mp.exp(logs[-1] - top) / sum(mp.exp(v - top) for v in logs)
        return float(b / (1 - a / m * (1 - b)))
