"""Part B's truncated chain: answers certified by what the truncation changes in them.

* the automatic level certifies a cost by its change as the level grows (and, for an index
  policy, by the truncation's share of the arrivals fading), not by how often the chain
  touches the level; an explicit level carries the same diagnostics, and says when they do
  not certify it;
* costs below an absolute floor (``AUTO_COST_FLOOR`` per arrival) are reported as such;
* three clusters never factor a sparse LU in the automatic path (the iterative solver);
* the optimal cost is never negative; the job-size parser's grammar is strict.

References are independent of the code under test: the closed form of one M/M/m queue
(``miss.f``, what any routing gives on one cluster in pure routing), the same chain at a
much larger level (the definition of a truncation error), a Monte Carlo run of the policy.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.cli import main as cli_main
from queue_routing.deadlines import Instance, evaluate, markov, policies
from queue_routing.deadlines.miss import f as mm_miss_rate
from queue_routing.errors import AccuracyError

README = {  # the README's clusters.json
    "arrival_rate": 3.0,
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "rejection_cost": 2.0,
    "deadline": {"kind": "constant", "t": 1.5},
}


def _inst(**changes):
    return Instance.from_dict({**README, **changes})


def _tol(cost: float, inst: Instance) -> float:
    return max(policies.AUTO_RTOL * abs(cost), policies.AUTO_COST_FLOOR * inst.arrival_rate)


# -- item 5: the level certified by what it changes -------------------------------------------
def test_heavy_pure_routing_io_is_answered_and_is_the_larger_chain():
    # load 0.974, misses near 1 in deep queues: the level changes 1e-4 of the arrivals'
    # decisions but not the cost beyond 1e-6 (e35eed8 refused: "not stable up to 499")
    inst = Instance.from_dict({"arrival_rate": 3.7, "servers": [2, 3], "service_rates":
                               [1.0, 0.6], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": 0.3}})  # fmt: skip
    res = evaluate(inst, "io")
    assert res.certified is True and res.truncation_error <= _tol(res.cost, inst)
    # reference: the same policy's chain at twice the level (its truncation error)
    big = 2 * res.truncation
    table = policies.decision_table(inst, policies.index_table(inst, "io", big))
    ref = markov.evaluate_index_policy(inst, table, big, truncation_losses=True)
    assert abs(res.cost - ref.cost) <= 10 * _tol(ref.cost, inst)


def test_an_explicit_level_of_a_transient_index_policy_is_not_certified():
    # the policy of the next test, at one level: the share of arrivals the level decides does
    # not fade from level 88 to 200 (it does not fade at any level), so no certificate
    inst = Instance.from_dict({"arrival_rate": 3.7, "servers": [2, 3], "service_rates":
                               [1.0, 0.6], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": 0.3}})  # fmt: skip
    with pytest.warns(policies.TruncationWarning):
        res = evaluate(inst, "pi", truncation=200)
    assert res.certified is False and res.truncation_rate > 0.1 * inst.arrival_rate


@pytest.mark.slow
def test_a_transient_index_policy_is_refused_not_certified_by_its_settled_cost(monkeypatch):
    # PI at load 0.974 with short deadlines lets one queue grow without bound: the truncated
    # costs settle, but a third of the arrivals stay decided by the level at every level
    monkeypatch.setattr(policies, "AUTO_START", {**policies.AUTO_START, 2: 200})
    inst = Instance.from_dict({"arrival_rate": 3.7, "servers": [2, 3], "service_rates":
                               [1.0, 0.6], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": 0.3}})  # fmt: skip
    with pytest.raises(AccuracyError, match="grows without bound") as e:
        evaluate(inst, "pi")
    assert "\n" not in str(e.value)


def test_optimal_pure_routing_is_certified_by_its_cost_as_the_level_grows():
    # the instance: optimal policy, pure routing, lambda 3, m (2, 3), mu (1, 0.6), t 2
    inst = Instance.from_dict({"arrival_rate": 3.0, "servers": [2, 3], "service_rates":
                               [1.0, 0.6], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": 2.0}})  # fmt: skip
    res = evaluate(inst, "optimal")
    assert res.certified is True
    # reference: value iteration at a level well above the automatic one
    ref = markov.optimal_policy(inst, 2 * res.truncation, 1e-10)
    assert abs(res.cost - ref.cost) <= 10 * _tol(ref.cost, inst)


def test_three_clusters_never_factor_a_sparse_lu_in_the_automatic_path(monkeypatch):
    def refuse(instance, *args, **kwargs):
        if instance.n_clusters == 3:
            raise AssertionError("sparse direct solve of a three-cluster chain")
        return direct(instance, *args, **kwargs)

    direct = markov.stationary
    monkeypatch.setattr(markov, "stationary", refuse)
    inst = Instance.from_dict({"arrival_rate": 2.0, "servers": [2, 1, 1], "service_rates":
                               [1.0, 0.8, 0.6], "rejection_cost": 1.0,
                               "deadline": {"kind": "constant", "t": 1.5}})  # fmt: skip
    res = evaluate(inst, "pi")
    assert res.certified is True
    # reference: the Monte Carlo cost of the policy itself
    sim = evaluate(inst, "pi", method="simulation", horizon=4000.0, replications=8, seed=5)
    assert abs(sim.cost - res.cost) <= 4 * sim.standard_error + 1e-9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    servers=st.integers(1, 4),
    load=st.floats(0.2, 0.95),
    t=st.floats(0.2, 4.0),
    policy=st.sampled_from(["io", "pi", "rb"]),
)
def test_one_cluster_automatic_answer_is_the_mmm_closed_form(servers, load, t, policy):
    # one cluster, pure routing: every policy sends every job to it, an M/M/m queue
    inst = Instance.from_dict({"arrival_rate": load * servers, "servers": [servers],
                               "service_rates": [1.0], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": t}})  # fmt: skip
    exact = mm_miss_rate(inst.arrival_rate, servers, 1.0, inst.deadline)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate(inst, policy)
    assert res.certified is True
    assert abs(res.cost - exact) <= 10 * _tol(exact, inst)


# -- item 6: an explicit level says whether it is certified -----------------------------------
def test_explicit_level_one_is_not_certified_in_json_and_on_stderr(tmp_path, capsys):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(README))
    code = cli_main(["deadlines", "evaluate", str(path), "--policy", "pi", "--truncation", "1"])
    out, err = capsys.readouterr()
    assert code == 0
    obj = json.loads(out)
    assert obj["truncation"] == 1 and obj["certified"] is False
    assert obj["truncation_error"] is None  # no lower level to compare
    lines = [ln for ln in err.splitlines() if "not certified" in ln]
    assert len(lines) == 1 and "level 1" in lines[0]
    # the automatic answer, which level 1 misses by a factor of four
    auto = evaluate(_inst(), "pi")
    assert abs(obj["cost"] - auto.cost) > 1.0 and auto.certified


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    servers=st.integers(1, 3),
    load=st.floats(0.3, 0.95),
    t=st.floats(0.2, 3.0),
    level=st.integers(1, 150),
)
def test_explicit_level_is_certified_only_when_it_is_the_answer(servers, load, t, level):
    # one cluster, pure routing: the untruncated answer is the M/M/m closed form; a level
    # whose result is off by more than 100 tolerances is never called certified, and one
    # called certified is within 10 tolerances
    inst = Instance.from_dict({"arrival_rate": load * servers, "servers": [servers],
                               "service_rates": [1.0], "rejection_cost": None,
                               "deadline": {"kind": "constant", "t": t}})  # fmt: skip
    exact = mm_miss_rate(inst.arrival_rate, servers, 1.0, inst.deadline)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = evaluate(inst, "io", truncation=level)
    off = abs(res.cost - exact)
    out = res.to_dict()
    assert out["truncation"] == level and out["certified"] is res.certified
    said = any(issubclass(w.category, policies.TruncationWarning) for w in caught)
    assert said is (not res.certified)
    if res.certified:
        assert off <= 10 * _tol(exact, inst)
    if off > 100 * _tol(exact, inst):
        assert not res.certified


# -- item 7: costs near zero --------------------------------------------------------------------
def test_long_uniform_deadlines_are_reported_below_the_floor():
    # cost ~ 5.6e-178; e35eed8 ran for minutes on relative changes of 1e-3 and refused
    inst = _inst(deadline={"kind": "uniform", "low": 500.0, "high": 3000.0})
    res = evaluate(inst, "pi")
    floor = policies.AUTO_COST_FLOOR * inst.arrival_rate
    assert res.certified and res.to_dict()["below_floor"] is True
    assert 0.0 <= res.cost <= floor and res.cost_floor == floor
    assert len(res.history) <= 3  # two levels suffice below the floor
    # reference: Bernoulli splitting's closed form, an upper bound of the optimal cost, is
    # itself below the floor, and the optimum is too
    assert evaluate(inst, "bs").cost <= floor
    assert evaluate(inst, "optimal").to_dict()["below_floor"] is True


def test_optimal_with_a_thousandfold_fast_cluster_converges_below_the_floor():
    # e35eed8: "relative value iteration ... did not converge" (span 5e-170 against 1e-297)
    inst = _inst(service_rates=[1.0, 1000.0])
    res = evaluate(inst, "optimal")
    assert res.certified and res.to_dict()["below_floor"] is True
    # reference: routing everything to the fast cluster (Bernoulli split) costs below it too
    assert 0.0 <= res.cost <= evaluate(inst, "bs").cost + res.cost_floor


# -- item 12: no negative optimal cost; a strict law grammar ------------------------------------
@settings(max_examples=20, deadline=None)
@given(mu=st.floats(50.0, 2000.0), level=st.integers(2, 12))
def test_optimal_cost_and_bounds_are_never_negative(mu, level):
    inst = _inst(service_rates=[1.0, mu])
    opt = markov.optimal_policy(inst, level, 1e-9)
    assert 0.0 <= opt.lower <= opt.cost <= opt.upper


def test_a_span_below_zero_is_reported_as_the_valid_bound_zero(monkeypatch):
    # value iteration can end with a span [lower, upper] around a tiny cost whose lower end
    # rounding or the tolerance puts below 0 (the issue: a cost of -2.6e-9); every cost is
    # >= 0, so 0 is a valid lower bound and the midpoint of [0, upper] is reported
    real = markov._iterate_compiled

    def shifted(*args):
        h, actions, it, _, _, ok = real(*args)
        return h, actions, it, -5.2e-9, 1e-12, ok

    monkeypatch.setattr(markov, "_iterate_compiled", shifted)
    opt = markov.optimal_policy(_inst(service_rates=[1.0, 1000.0]), 4, 1e-8)
    assert opt.lower == 0.0 and opt.upper == 1e-12 and opt.cost == 0.5e-12


@pytest.mark.parametrize("spec", ["erlang:3_0", "erlang:+3", "lognormal:1_6", "lognormal:inf",
                                  "hyperexponential:nan", "erlang: 3 0"])  # fmt: skip
def test_job_size_laws_have_a_strict_grammar(spec):
    from queue_routing.multiskill.sizes import JobSizeError, job_sizes

    with pytest.raises(JobSizeError):
        job_sizes(spec)


@pytest.mark.parametrize("spec,k", [("erlang:3", 3), ("erlang:30", 30)])
def test_erlang_orders_read_as_written(spec, k):
    from queue_routing.multiskill.sizes import job_sizes

    law = job_sizes(spec)
    assert law.k == k and math.isclose(law.scv, 1.0 / k)


def test_certificate_extrapolates_a_geometric_tail():
    # costs c_L = 1 + 0.5^k: the remaining change after level k is 0.5^k (exactly the last
    # change), the estimate is the same
    history = [(k, 1.0 + 0.5**k) for k in range(1, 8)]
    ok, err = markov.truncation_certificate(history, 1e-2)
    assert ok and err == pytest.approx(0.5**7, rel=1e-9)
    assert np.isclose(history[-1][1] - 1.0, err)
