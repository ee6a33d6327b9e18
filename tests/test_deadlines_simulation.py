"""The compiled deadline simulator against independent references (docs/deadlines.md#simulation).

References (all computed here, independently of the package's formula code):

* M/M/1 FCFS, everything admitted: the response time is ``T ~ Exp(mu - lambda)``, so with an
  exponential deadline ``P(T > tau) = theta/(theta + mu - lambda)``, with a constant one
  ``P(T > t) = exp(-(mu - lambda) t)``; the waiting time has ``P(W > t) = rho exp(-(mu -
  lambda) t)``; the mean response time is ``1/(mu - lambda)``;
* M/M/m response-time tail ``e^{-mu t} + C mu/((m-1) mu - lambda) (e^{-mu t} - e^{-(m mu -
  lambda) t})`` with the textbook Erlang-C probability ``C``, for constant, uniform
  (quadrature) and exponential (closed-form Laplace transform) deadlines;
* Bernoulli splitting over two clusters = two independent M/M/m queues;
* a threshold index table on one cluster = the M/M/m/z loss-delay system (birth-death chain);
* Ciw (an independent discrete-event library) on an M/M/2;
* seeds reproduce results bit for bit; ties go to the lowest cluster; a table's missing
  columns act as +inf;
* common random numbers (docs/deadlines.md#common-random-numbers): a pure-Python event loop
  that gives job ``j`` the ``j``-th uniform of each named stream (``queue_routing.rng``),
  whatever the policy and whether the job is admitted or rejected, reproduces the kernel's
  counts exactly for index tables and Bernoulli splitting that reject; policies that take the
  same decisions give bit-identical paths; the streams do not depend on the policy.

Statistical tolerance: Bonferroni t tests at a family-wise level of 1% per test function
(``tests/_stats.py``). Seeds are fixed, so the tests are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from _stats import assert_mean_agrees, bonferroni_t
from queue_routing.deadlines.model import Instance, InstanceError
from queue_routing.deadlines.simulation import (
    MAX_JOBS_IN_CLUSTER,
    SIMULATE_KEY,
    STREAMS,
    SimulationResult,
    _index_table,
    _kernel,
    deadline_arguments,
    replication_states,
    simulate,
    simulate_replications,
)
from queue_routing.rng import uniforms

SEED = 2012
REPS = 10
_check = assert_mean_agrees  # Bonferroni t test (tests/_stats.py)


def erlang_c(m: int, a: float) -> float:
    """Erlang-C probability of waiting in an M/M/m queue with offered load ``a = lambda/mu``."""
    top = a**m / math.factorial(m) * m / (m - a)
    return top / (sum(a**k / math.factorial(k) for k in range(m)) + top)


def mmm_tail(m: int, mu: float, lam: float, t: float) -> float:
    """``P{T > t}`` of the FCFS M/M/m response time."""
    c = erlang_c(m, lam / mu)
    if m == 1:
        return math.exp(-(mu - lam) * t)
    if lam == (m - 1) * mu:  # the limit of the general formula
        return math.exp(-mu * t) * (1.0 + c * mu * t)
    return math.exp(-mu * t) + c * mu / ((m - 1) * mu - lam) * (
        math.exp(-mu * t) - math.exp(-(m * mu - lam) * t)
    )


def mmm_miss_exponential(m: int, mu: float, lam: float, mean: float) -> float:
    """``E[P{T > tau}]`` for ``tau ~ Exp`` with the given mean (Laplace transform at theta)."""
    theta = 1.0 / mean
    c = erlang_c(m, lam / mu)
    e1 = theta / (theta + mu)
    if m == 1:
        return theta / (theta + mu - lam)
    if lam == (m - 1) * mu:  # E[tau e^{-mu tau}] = theta/(theta + mu)^2
        return e1 + c * mu * theta / (theta + mu) ** 2
    e2 = theta / (theta + m * mu - lam)
    return e1 + c * mu / ((m - 1) * mu - lam) * (e1 - e2)


_PARAMS = {"constant": ("t",), "uniform": ("low", "high"), "exponential": ("mean",)}


def _instance(lam, m, mu, kind, params, *, on="response", rejection_cost=None) -> Instance:
    """The instance of ``lam``, servers ``m``, rates ``mu`` and a deadline law with parameters
    ``params`` (``(t,)``, ``(low, high)`` or ``(mean,)``)."""
    deadline = {"kind": kind, **dict(zip(_PARAMS[kind], params, strict=True)), "on": on}
    return Instance.from_dict(
        {
            "arrival_rate": lam,
            "servers": list(m),
            "service_rates": list(mu),
            "rejection_cost": rejection_cost,
            "deadline": deadline,
        }
    )


def _run(lam, m, mu, kind, params, *, on="response", rejection_cost=None, **kw):
    kw.setdefault("horizon", 2e5)
    kw.setdefault("warmup", 2e3)
    kw.setdefault("replications", REPS)
    kw.setdefault("seed", SEED)
    inst = _instance(lam, m, mu, kind, params, on=on, rejection_cost=rejection_cost)
    res = simulate(inst, **kw)
    assert isinstance(res, SimulationResult)
    return res


def _admit_all(n: int, width: int = 1) -> list[list[float]]:
    """An index table that admits everything (pure routing, all indices 0 up to ``width``)."""
    return [[0.0] * width for _ in range(n)]


# -- single cluster, everything admitted --------------------------------------------------------
def test_mm1_exponential_deadline():
    lam, mu, mean = 0.8, 1.0, 2.0
    res = _run(lam, [1], [mu], "exponential", [mean], index=_admit_all(1, 10**6))
    theta = 1.0 / mean
    _check(res.replication_miss_probabilities, theta / (theta + mu - lam), 3, "P(T > tau)")
    _check(res.replication_miss_rates, lam * theta / (theta + mu - lam), 3, "miss rate")
    _check(res.replication_response_times, 1.0 / (mu - lam), 3, "E[T]")
    assert res.rejection_rate == 0.0
    assert res.cost == pytest.approx(res.miss_rate)


def test_mm1_constant_deadline_response_and_waiting():
    lam, mu, t = 0.7, 1.0, 3.0
    table = _admit_all(1, 10**6)
    res = _run(lam, [1], [mu], "constant", [t], index=table)
    wait = _run(lam, [1], [mu], "constant", [t], index=table, on="waiting")
    _check(res.replication_miss_probabilities, math.exp(-(mu - lam) * t), 2, "P(T > t)")
    rho = lam / mu
    _check(wait.replication_miss_probabilities, rho * math.exp(-(mu - lam) * t), 2, "P(W > t)")


@pytest.mark.parametrize(
    ("m", "mu", "lam"),
    [(3, 1.0, 2.4), (2, 0.5, 0.6), (5, 0.6, 2.5)],
)
def test_mmm_response_tail(m, mu, lam):
    table = _admit_all(1, 10**6)
    t, low, high, mean = 1.5, 0.5, 3.0, 2.0
    const = _run(lam, [m], [mu], "constant", [t], index=table)
    unif = _run(lam, [m], [mu], "uniform", [low, high], index=table, seed=SEED + 1)
    expo = _run(lam, [m], [mu], "exponential", [mean], index=table, seed=SEED + 2)
    exact_unif = integrate.quad(lambda u: mmm_tail(m, mu, lam, u), low, high)[0] / (high - low)
    _check(const.replication_miss_probabilities, mmm_tail(m, mu, lam, t), 3, "constant")
    _check(unif.replication_miss_probabilities, exact_unif, 3, "uniform")
    _check(expo.replication_miss_probabilities, mmm_miss_exponential(m, mu, lam, mean), 3, "exp")


# -- Bernoulli splitting -----------------------------------------------------------------------
def test_bernoulli_splitting_is_two_independent_mmm_queues():
    lam, m, mu, mean, rcost = 2.0, [2, 3], [1.0, 0.5], 2.0, 2.5
    p = [0.1, 0.5, 0.4]
    res = _run(lam, m, mu, "exponential", [mean], split=p, rejection_cost=rcost)
    exact_k = [mmm_miss_exponential(m[k], mu[k], lam * p[k + 1], mean) for k in range(2)]
    miss = sum(lam * p[k + 1] * exact_k[k] for k in range(2))
    n_cmp = 5
    _check(res.replication_cluster_miss_probabilities[:, 0], exact_k[0], n_cmp, "cluster 1")
    _check(res.replication_cluster_miss_probabilities[:, 1], exact_k[1], n_cmp, "cluster 2")
    _check(res.replication_rejection_rates, lam * p[0], n_cmp, "rejection rate")
    _check(res.replication_miss_rates, miss, n_cmp, "miss rate")
    _check(res.replication_costs, rcost * lam * p[0] + miss, n_cmp, "cost rate")
    np.testing.assert_allclose(
        res.cluster_admission_rate, [lam * p[1], lam * p[2]], rtol=0.01
    )  # sanity (binomial thinning); the t tests above are the real checks


# -- index tables ------------------------------------------------------------------------------
def _mmmz_blocking(m: int, mu: float, lam: float, z: int) -> float:
    w = [1.0]
    for x in range(1, z + 1):
        w.append(w[-1] * lam / (mu * min(x, m)))
    return w[-1] / sum(w)


@pytest.mark.parametrize(
    ("lam", "m", "mu", "z"),
    [(2.5, 2, 1.0, 4), (1.2, 2, 0.5, 300)],  # the second overloads (rings grow and wrap)
)
def test_threshold_table_gives_mmmz_blocking(lam, m, mu, z):
    rcost = 1.0
    short = _run(lam, [m], [mu], "exponential", [1.0], index=[[0.0] * z], rejection_cost=rcost)
    block = _mmmz_blocking(m, mu, lam, z)
    _check(short.replication_rejection_rates, lam * block, 1, "M/M/m/z blocking")
    # Missing columns are +inf: the same table with explicit +inf columns is bit-identical.
    padded = [[0.0] * z + [math.inf] * 3]
    explicit = _run(lam, [m], [mu], "exponential", [1.0], index=padded, rejection_cost=rcost)
    np.testing.assert_array_equal(explicit.replication_costs, short.replication_costs)
    # A finite index above R rejects as well (reject iff min index >= R).
    high = [[0.0] * z + [rcost] * 3]
    at_r = _run(lam, [m], [mu], "exponential", [1.0], index=high, rejection_cost=rcost)
    np.testing.assert_array_equal(at_r.replication_costs, short.replication_costs)


def test_pure_routing_with_a_binding_truncation_costs_inf():
    # Pure routing (R = +inf) with a table that treats the cluster as full from x = 4 on:
    # the jobs that find it "full" are rejected and cost +inf.
    pure = _run(1.5, [2], [1.0], "exponential", [1.0], index=[[0.0] * 4], horizon=1e3)
    assert pure.rejection_rate > 0 and math.isinf(pure.cost)


def test_overflow_routing_two_clusters_vs_ctmc():
    """Cluster 1 while ``x_1 < z_1``, else cluster 2 while ``x_2 < z_2``, else reject.

    Cluster 1 alone is overloaded, so its ring buffer grows (copying cluster 2's) and wraps;
    blocking depends on how cluster 2's count evolves. The exact rejection rate comes
    from the two-dimensional birth-death chain (sparse solve).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    lam, m, mu, z = 2.4, (2, 1), (1.0, 0.5), (100, 12)
    size = (z[0] + 1) * (z[1] + 1)

    def idx(a: int, b: int) -> int:
        return a * (z[1] + 1) + b

    rows, cols, vals = [], [], []
    for a in range(z[0] + 1):
        for b in range(z[1] + 1):
            moves = []
            if a < z[0]:
                moves.append((idx(a + 1, b), lam))
            elif b < z[1]:
                moves.append((idx(a, b + 1), lam))
            if a > 0:
                moves.append((idx(a - 1, b), mu[0] * min(a, m[0])))
            if b > 0:
                moves.append((idx(a, b - 1), mu[1] * min(b, m[1])))
            for j, rate in moves:
                rows += [idx(a, b), idx(a, b)]
                cols += [j, idx(a, b)]
                vals += [rate, -rate]
    q = coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr().T.tolil()
    q[0, :] = 1.0  # replace one balance equation by the normalisation
    rhs = np.zeros(size)
    rhs[0] = 1.0
    pi = spsolve(q.tocsc(), rhs)
    table = [[0.0] * z[0], [0.5] * z[1]]
    res = _run(lam, list(m), list(mu), "constant", [1.0], index=table, rejection_cost=1.0)
    _check(res.replication_rejection_rates, lam * pi[idx(*z)], 1, "overflow blocking")


def test_ties_go_to_lowest_cluster_and_index_routes():
    # All indices equal: every job goes to cluster 1 (index 0).
    res = _run(0.5, [1, 1], [1.0, 1.0], "constant", [1.0], index=_admit_all(2, 10**5), horizon=1e4)
    assert res.cluster_admission_rate[1] == 0.0
    assert res.cluster_admission_rate[0] > 0.0
    # Cluster 1 is "full" beyond x = 0 and cluster 2 always costs 1 < R: a job goes to cluster
    # 1 iff it is empty, so cluster 1 is an M/M/1/1 loss system fed by lambda.
    lam, mu = 1.2, 1.0
    table = [[0.0], [1.0] * 10**5]
    res = _run(lam, [1, 1], [mu, 2.0], "constant", [1.0], index=table, rejection_cost=5.0)
    block = _mmmz_blocking(1, mu, lam, 1)
    assert res.rejection_rate == 0.0
    assert res.cluster_admission_rate[0] == pytest.approx(lam * (1 - block), rel=0.01)


# -- independent discrete-event library ----------------------------------------------------------
def test_against_ciw_mm2():
    ciw = pytest.importorskip("ciw")
    lam, mu, m, t = 1.5, 1.0, 2, 1.5
    horizon, warmup, reps = 4000.0, 200.0, 6
    ciw_resp, ciw_miss = [], []
    for r in range(reps):
        ciw.seed(SEED + r)
        net = ciw.create_network(
            arrival_distributions=[ciw.dists.Exponential(rate=lam)],
            service_distributions=[ciw.dists.Exponential(rate=mu)],
            number_of_servers=[m],
        )
        sim = ciw.Simulation(net)
        sim.simulate_until_max_time(warmup + horizon + 200.0)
        recs = [
            rec for rec in sim.get_all_records() if warmup <= rec.arrival_date < warmup + horizon
        ]
        resp = np.array([rec.exit_date - rec.arrival_date for rec in recs])
        ciw_resp.append(resp.mean())
        ciw_miss.append(np.mean(resp > t))
    ours = _run(lam, [m], [mu], "constant", [t], index=_admit_all(1, 10**6), horizon=5e4)
    q = bonferroni_t(2, reps - 1)
    for what, theirs, mine in (
        ("mean response time", ciw_resp, ours.replication_response_times),
        ("P(T > t)", ciw_miss, ours.replication_miss_probabilities),
    ):
        theirs = np.asarray(theirs)
        se = math.sqrt(theirs.var(ddof=1) / theirs.size + np.var(mine, ddof=1) / np.size(mine))
        assert abs(theirs.mean() - np.mean(mine)) <= q * se, (what, theirs.mean(), np.mean(mine))
    # and both agree with the formula for the miss probability (sanity)
    assert np.mean(ciw_miss) == pytest.approx(mmm_tail(m, mu, lam, t), abs=0.02)


# -- reproducibility and arguments ---------------------------------------------------------------
def test_seeds_reproduce_bit_for_bit():
    kw = dict(index=[[0.0, 0.3, 0.6], [0.1, 0.2, 0.5, 0.9]], rejection_cost=0.8, horizon=2e3)
    a = _run(1.5, [1, 2], [1.0, 0.7], "uniform", [0.5, 2.0], keys=("x", 3), **kw)
    b = _run(1.5, [1, 2], [1.0, 0.7], "uniform", [0.5, 2.0], keys=("x", 3), **kw)
    c = _run(1.5, [1, 2], [1.0, 0.7], "uniform", [0.5, 2.0], keys=("x", 4), **kw)
    for name in (
        "replication_costs",
        "replication_rejection_rates",
        "replication_miss_rates",
        "replication_miss_probabilities",
        "replication_response_times",
        "cluster_admission_rate",
    ):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.replication_costs, c.replication_costs)
    assert a.to_dict() == b.to_dict() and a.events == b.events
    assert set(a.to_dict()) == {"cost", "rejection_rate", "miss_rate", "ci95"}
    assert a.to_dict()["cost"] == a.cost and a.to_dict()["ci95"] == a.ci95
    assert a.events > 0 and a.events_per_second > 0


def test_standard_error_and_ci95():
    res = _run(1.5, [1, 2], [1.0, 0.7], "constant", [1.0], index=[[0.0] * 50] * 2, horizon=2e3)
    costs = res.replication_costs
    assert res.standard_error == pytest.approx(costs.std(ddof=1) / math.sqrt(REPS), rel=1e-12)
    assert res.ci95 == pytest.approx(stats.t.ppf(0.975, REPS - 1) * res.standard_error)
    assert res.cost == pytest.approx(costs.mean()) and res.replications == REPS


def test_bad_arguments():
    ok = dict(horizon=10.0, warmup=1.0, replications=2, seed=0)
    one = _instance(1.0, [1], [2.0], "constant", [1.0])
    with pytest.raises(TypeError, match="Instance"):
        simulate({"arrival_rate": 1.0}, index=[[0.0]], **ok)
    with pytest.raises(ValueError, match="exactly one"):
        simulate(one, **ok)
    with pytest.raises(ValueError, match="split"):
        simulate(
            _instance(1.0, [1], [2.0], "constant", [1.0], rejection_cost=1),
            split=[0.5, 0.6],
            **ok,
        )
    with pytest.raises(ValueError, match="rejection_cost"):
        simulate(one, split=[0.5, 0.5], **ok)
    with pytest.raises(ValueError, match="replications"):
        simulate(one, index=[[0.0]], **{**ok, "replications": 1})
    with pytest.raises(ValueError, match="index"):
        simulate(_instance(1.0, [1, 1], [2.0, 1.0], "constant", [1.0]), index=[[0.0]], **ok)
    with pytest.raises(ValueError, match="horizon"):
        simulate(one, index=[[0.0]], **{**ok, "horizon": 0.0})
    with pytest.raises(ValueError, match="warmup"):
        simulate(one, index=[[0.0]], **{**ok, "warmup": -1.0})
    with pytest.raises(ValueError, match="seed"):
        simulate(one, index=[[0.0]], **{**ok, "seed": -1})
    # the deadline law, servers and rates are the Instance's to validate
    with pytest.raises(InstanceError, match=r"deadline\.kind"):
        Instance.from_dict({**one.to_dict(), "deadline": {"kind": "gamma", "t": 1.0}})
    with pytest.raises(InstanceError, match=r"deadline\.high"):
        Instance.from_dict({**one.to_dict(), "deadline": {"kind": "uniform", "low": 1.0}})
    with pytest.raises(InstanceError, match="servers"):
        _instance(1.0, [0], [2.0], "constant", [1.0])
    with pytest.raises(InstanceError, match=r"deadline\.on"):
        _instance(1.0, [1], [2.0], "constant", [1.0], on="service")


# -- common random numbers ---------------------------------------------------------------------
def reference_run(inst: Instance, states, t_warm, t_end, *, table=None, split=None):
    """One replication's counts by a plain loop over jobs (docs/deadlines.md#model-and-units).

    Job ``j`` (from 0) gets the ``j``-th uniform of each stream of :data:`STREAMS`: its
    inter-arrival time ``-log(1 - u)/lambda``, its work ``-log(1 - u)`` (service time
    ``work/mu_k``), its deadline (uniform ``low + (high - low) u``, exponential
    ``-mean log(1 - u)``; none drawn for a constant one) and, under Bernoulli splitting, its
    coin; whatever is decided for it. The number in cluster ``k`` seen at ``t`` is the number
    of admitted jobs there whose departure is later than ``t``; FCFS on ``m_k`` servers is
    ``start = max(t, earliest server-free time)``."""
    lam, m, mu = inst.arrival_rate, list(inst.servers), list(inst.service_rates)
    n = len(m)
    r_cost = math.inf if inst.rejection_cost is None else inst.rejection_cost
    d = inst.deadline
    size = int(3 * lam * t_end) + 100
    u_arr, u_work, u_dl, u_coin = (uniforms(states[s], size) for s in range(len(STREAMS)))
    free = [[0.0] * m[k] for k in range(n)]
    departures = [[] for _ in range(n)]
    out = {"arrivals": 0, "rejections": 0, "admissions": 0, "misses": 0, "resp": 0.0,
           "wait": 0.0, "adm_k": [0] * n, "miss_k": [0] * n}  # fmt: skip
    t = 0.0
    jd = 0  # deadline draws so far (none for a constant deadline)
    for j in range(size):
        t += -math.log(1.0 - u_arr[j]) / lam
        if t >= t_end:
            break
        if d.kind == "constant":
            tau = d.t
        else:
            u = u_dl[jd]
            jd += 1
            tau = d.low + (d.high - d.low) * u if d.kind == "uniform" else -d.mean * math.log(1 - u)
        if table is not None:
            values = []
            for k in range(n):
                x = sum(1 for dep in departures[k] if dep > t)
                values.append(table[k][x] if x < len(table[k]) else math.inf)
            dest = int(np.argmin(values))  # the first minimum: ties to the lowest k
            if values[dest] >= r_cost:
                dest = -1
        else:
            cum = np.cumsum(split)
            dest = (
                -1
                if u_coin[j] < cum[0]
                else next((k for k in range(n) if u_coin[j] < cum[k + 1]), n - 1)
            )
        counted = t >= t_warm
        out["arrivals"] += counted
        if dest < 0:
            out["rejections"] += counted
            continue
        i = int(np.argmin(free[dest]))
        start = max(t, free[dest][i])
        finish = start + -math.log(1.0 - u_work[j]) / mu[dest]
        free[dest][i] = finish
        departures[dest].append(finish)
        if counted:
            out["admissions"] += 1
            out["adm_k"][dest] += 1
            out["resp"] += finish - t
            out["wait"] += start - t
            if (start - t if d.on == "waiting" else finish - t) > tau:
                out["misses"] += 1
                out["miss_k"][dest] += 1
    return out


def kernel_run(inst: Instance, states, t_warm, t_end, *, table=None, split=None):
    """The compiled kernel's counts of one replication, as :func:`reference_run` names them."""
    n = inst.n_clusters
    kind, p1, p2 = deadline_arguments(inst.deadline)
    r_cost = math.inf if inst.rejection_cost is None else float(inst.rejection_cost)
    if table is not None:
        mode, (index, xlen), cum = 0, _index_table(table, n), np.zeros(n + 1)
    else:
        mode, index, xlen, cum = 1, np.zeros((n, 1)), np.ones(n, dtype=np.int64), np.cumsum(split)
    m = np.asarray(inst.servers, dtype=np.int64)
    mu = np.asarray(inst.service_rates, dtype=float)
    counts, adm_k, miss_k, sums = _kernel(
        inst.arrival_rate, m, mu, kind, p1, p2, inst.deadline.on == "waiting", r_cost, mode,
        index, xlen, cum, t_warm, t_end, states, MAX_JOBS_IN_CLUSTER,
    )  # fmt: skip
    return {
        "arrivals": int(counts[0]), "rejections": int(counts[1]), "admissions": int(counts[2]),
        "misses": int(counts[3]), "resp": float(sums[0]), "wait": float(sums[1]),
        "adm_k": adm_k.tolist(), "miss_k": miss_k.tolist(),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "params", "on"),
    [("constant", [1.0], "response"), ("uniform", [0.5, 2.5], "waiting"),
     ("exponential", [1.5], "response")],
)  # fmt: skip
def test_every_job_draws_its_own_numbers_whatever_the_policy(kind, params, on):
    """The kernel gives job ``j`` the ``j``-th number of every stream, routed or rejected:
    an independent event loop fed by the streams' uniforms reproduces its counts exactly, for
    index tables that reject (thresholds) and for Bernoulli splitting with rejection."""
    inst = _instance(2.2, [2, 1], [1.0, 0.7], kind, params, on=on, rejection_cost=1.5)
    states = replication_states(SEED, ("crn", kind), 3)
    before = states.copy()
    policies = {
        "thresholds": {"table": [[0.0, 0.1, 0.2, 0.3], [0.15, 0.25]]},
        "index with R": {"table": [[0.2, 0.5, 0.9, 1.6, 2.0], [0.4, 0.8, 1.7]]},
        "bernoulli": {"split": [0.2, 0.5, 0.3]},
    }
    rejected = set()
    for name, policy in policies.items():
        ref = reference_run(inst, states, 50.0, 600.0, **policy)
        got = kernel_run(inst, states, 50.0, 600.0, **policy)
        for key in ("arrivals", "rejections", "admissions", "misses", "adm_k", "miss_k"):
            assert got[key] == ref[key], (name, key, got[key], ref[key])
        for key in ("resp", "wait"):
            assert got[key] == pytest.approx(ref[key], rel=1e-12, abs=1e-12), (name, key)
        rejected.add(got["rejections"] > 0)
    assert rejected == {True}  # every policy above rejected some jobs
    np.testing.assert_array_equal(states, before)  # the kernel copies the caller's states


def test_policies_with_the_same_decisions_have_the_same_path():
    """Bernoulli splitting that sends every job to cluster 1 and an index table that always
    picks cluster 1 take the same decisions: on common random numbers their replications are
    bit-identical (the coins come from a stream of their own); on other keys they are not."""
    run = dict(horizon=2e3, warmup=100.0, replications=3, seed=SEED, keys=("same",))
    for kind, params in (("constant", [1.0]), ("exponential", [1.0])):
        for m, mu in (([2], [1.0]), ([2, 1], [1.0, 0.5])):
            inst = _instance(1.4, m, mu, kind, params)
            split = [0.0, 1.0] + [0.0] * (len(m) - 1)
            table = [[0.0] * 10**4] + [[math.inf]] * (len(m) - 1)
            a = simulate(inst, split=split, **run)
            b = simulate(inst, index=table, **run)
            for name in (
                "replication_costs",
                "replication_response_times",
                "cluster_admission_rate",
            ):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
            assert a.events == b.events
    moved = simulate(inst, index=table, **{**run, "keys": ("same", "other")})
    assert not np.array_equal(moved.replication_costs, b.replication_costs)


def test_replication_streams_are_named_and_do_not_depend_on_R():
    inst = _instance(1.5, [1, 2], [1.0, 0.7], "uniform", [0.5, 2.0], rejection_cost=0.8)
    kw = dict(index=[[0.0, 0.3, 0.6], [0.1, 0.2, 0.5, 0.9]], horizon=500.0, warmup=50.0, seed=3)
    a = simulate(inst, replications=4, keys=("k",), **kw)
    b = simulate(inst, replications=2, keys=("k",), **kw)
    np.testing.assert_array_equal(a.replication_costs[:2], b.replication_costs)
    from queue_routing.seeding import seed_sequence

    states = replication_states(3, ("k",), 1)
    for row, name in enumerate(STREAMS):
        expected = seed_sequence(3, "deadlines-sim", "k", 1, name).generate_state(4, np.uint64)
        np.testing.assert_array_equal(states[row], expected)
    assert len({tuple(r) for r in states}) == len(STREAMS)  # four distinct streams
    assert SIMULATE_KEY == "deadlines-sim"


def test_a_block_of_replications_is_the_shared_protocol():
    """The block's ``events`` and ``table_bound`` are those of
    :class:`queue_routing.stats.ReplicationBlock` (sums over its replications), and the
    unsplit result reports the same events."""
    from queue_routing import stats

    inst = _instance(1.5, [1, 2], [1.0, 0.7], "constant", [1.0], rejection_cost=0.8)
    kw = dict(index=[[0.0, 0.3], [0.1, 0.2, 0.5]], horizon=300.0, warmup=30.0, seed=5)
    block = simulate_replications(inst, [0, 2], **kw)
    assert isinstance(block, stats.ReplicationBlock)
    assert block.events == sum(block.events_per_replication) > 0
    assert block.table_bound == sum(block.table_bound_per_replication) > 0  # short rows
    whole = simulate(inst, replications=3, **kw)
    middle = simulate_replications(inst, [1], **kw)
    assert whole.events == block.events + middle.events
    assert whole.table_bound == block.table_bound + middle.table_bound
