"""Policy iteration for Part B's optimal policy (``markov.policy_iteration``) against
independent references.

References: brute-force enumeration of every deterministic stationary policy on a tiny
truncation, each evaluated by a dense least-squares solve of its stationary law written here;
relative value iteration (``markov.optimal_policy``, another algorithm, where it converges);
the index policies evaluated exactly on the same truncated chain (feasible policies of the
same MDP, so never below its optimum).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.deadlines import Instance, markov, policies
from queue_routing.deadlines.markov import LOST, REJECT, policy_iteration
from queue_routing.deadlines.miss import miss_probability
from queue_routing.errors import ArgumentError


def _inst(lam, r_cost, servers=(2, 1), rates=(1.0, 0.8), t=1.5):
    return Instance.from_dict({"arrival_rate": lam, "servers": list(servers),
                               "service_rates": list(rates), "rejection_cost": r_cost,
                               "deadline": {"kind": "constant", "t": t}})  # fmt: skip


def _dense_cost(inst, L, actions):
    """Average cost of the decision table ``actions`` (state -> cluster / REJECT / LOST) by a
    dense least-squares solve of ``pi Q = 0, sum pi = 1``."""
    n = inst.n_clusters
    states = list(itertools.product(range(L + 1), repeat=n))
    where = {x: i for i, x in enumerate(states)}
    q = np.zeros((len(states), len(states)))
    cost = np.zeros(len(states))
    lam = inst.arrival_rate
    for x in states:
        i, a = where[x], actions[x]
        if a >= 0:
            y = list(x)
            y[a] += 1
            q[i, where[tuple(y)]] += lam
            c = inst.clusters[a]
            cost[i] = lam * float(miss_probability(np.array([x[a]]), c.servers, c.rate,
                                                   inst.deadline)[0])  # fmt: skip
        elif a == REJECT:
            cost[i] = lam * inst.rejection_cost
        for k, c in enumerate(inst.clusters):
            if x[k] > 0:
                y = list(x)
                y[k] -= 1
                q[i, where[tuple(y)]] += c.rate * min(x[k], c.servers)
    q -= np.diag(q.sum(axis=1))
    a_mat = np.vstack([q.T, np.ones(len(states))])
    b = np.zeros(len(states) + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a_mat, b, rcond=None)[0]
    return float(pi @ cost)


def _all_policies(inst, L, losses):
    """Every deterministic policy of the truncated MDP: a cluster below ``L`` or reject (finite
    R); a full system rejects (finite R, or is lost with ``losses``), or loses the job (pure
    routing)."""
    n = inst.n_clusters
    states = list(itertools.product(range(L + 1), repeat=n))
    choices = []
    for x in states:
        opts = [k for k in range(n) if x[k] < L]
        if inst.rejection_cost is not None and (opts or not losses):
            opts.append(REJECT)
        choices.append(opts or [LOST])
    for combo in itertools.product(*choices):
        yield dict(zip(states, combo, strict=True))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    load=st.floats(0.2, 1.5),
    r_cost=st.one_of(st.none(), st.floats(0.1, 3.0)),
    t=st.floats(0.3, 3.0),
    losses=st.booleans(),
)
def test_policy_iteration_is_the_best_deterministic_policy_by_enumeration(load, r_cost, t, losses):
    # L = 2, two clusters: 3^4 2^4 = 1296 policies with rejection (16 in pure routing)
    load = load if r_cost is not None else min(load, 0.95)
    inst = _inst(load * 2.8, r_cost, t=t)
    best = min(_dense_cost(inst, 2, a) for a in _all_policies(inst, 2, losses))
    res = policy_iteration(inst, 2, 1e-12, truncation_losses=losses)
    assert res.converged and res.method == "policy_iteration"
    assert abs(res.cost - best) <= 1e-9 * max(1.0, best)
    table = {x: int(res.actions[x]) for x in itertools.product(range(3), repeat=2)}
    assert abs(_dense_cost(inst, 2, table) - best) <= 1e-9 * max(1.0, best)
    assert res.lower <= best + 1e-9 and res.upper >= best - 1e-9


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    load=st.floats(0.3, 1.3),
    r_cost=st.one_of(st.none(), st.floats(0.2, 4.0)),
    level=st.integers(4, 25),
    losses=st.booleans(),
)
def test_policy_iteration_agrees_with_value_iteration(load, r_cost, level, losses):
    load = load if r_cost is not None else min(load, 0.9)
    inst = _inst(load * 2.8, r_cost, t=1.2)
    vi = markov.optimal_policy(inst, level, 1e-10, truncation_losses=losses)
    assert vi.converged
    res = policy_iteration(inst, level, 1e-10, truncation_losses=losses)
    assert res.converged
    # both bracket the optimum g*: value iteration's span, policy iteration's bound and gain
    assert max(vi.lower, res.lower) <= min(vi.upper, res.upper) + 1e-9
    assert abs(res.cost - vi.cost) <= 2e-10
    # the gain is the exact cost of the table (the sparse direct evaluation of the module)
    assert abs(markov.evaluate_actions(inst, res.actions, level).cost - res.cost) <= 1e-9


def test_warm_starts_reach_the_same_optimum():
    inst = _inst(2.6, None, servers=(3, 2), rates=(1.0, 0.8))
    cold = policy_iteration(inst, 30, 1e-10, truncation_losses=True)
    table = policies.decision_table(inst, policies.index_table(inst, "pi", 30))
    # the index policy PI as a start (its decisions: the open cluster of smallest index), and
    # a lower level's relative values
    x = np.indices((31, 31))
    nu = np.stack([np.where(x[k] < 30, table[k][x[k]], np.inf) for k in range(2)])
    keys = np.where(np.isinf(nu.min(axis=0)), LOST, np.argmin(nu, axis=0))
    from_pi = policy_iteration(inst, 30, 1e-10, actions0=keys, truncation_losses=True)
    low = policy_iteration(inst, 20, 1e-10, truncation_losses=True)
    from_low = policy_iteration(inst, 30, 1e-10, h0=low.relative_values, truncation_losses=True)
    for res in (from_pi, from_low):
        assert res.converged and abs(res.cost - cold.cost) <= 1e-10
    assert from_pi.iterations <= cold.iterations


def test_converged_by_policy_iteration_is_the_value_iteration_sequence():
    inst = _inst(2.0, 1.0, servers=(2, 1, 1), rates=(1.0, 0.8, 0.6))
    vi = markov.optimal_policy_converged(inst, 6, 1e-6)
    pi = markov.optimal_policy_converged(inst, 6, 1e-6, method="policy_iteration")
    assert [lv for lv, _ in pi.history] == [lv for lv, _ in vi.history]
    for (_, a), (_, b) in zip(pi.history, vi.history, strict=True):
        assert abs(a - b) <= 2e-8  # each level solved to tol / 100
    assert pi.method == "policy_iteration" and pi.to_dict()["method"] == "policy_iteration"
    with pytest.raises(ArgumentError, match=r"^method"):
        markov.optimal_policy_converged(inst, 6, 1e-6, method="howard")


@pytest.mark.parametrize("policy", ["io", "pi", "rb"])
def test_optimum_near_capacity_is_below_every_index_policy(policy):
    # load 0.957, pure routing (the instance value iteration converges on too slowly): the
    # truncated optimum at level 60 is at most each index policy's cost on the same chain
    inst = _inst(4.4, None, servers=(3, 2), rates=(1.0, 0.8))
    opt = policy_iteration(inst, 60, 1e-9, truncation_losses=True)
    assert opt.converged and opt.cost - opt.lower <= 1e-9
    table = policies.decision_table(inst, policies.index_table(inst, policy, 60))
    heuristic = markov.evaluate_index_policy(inst, table, 60, truncation_losses=True)
    assert opt.cost <= heuristic.cost + 1e-12


@pytest.mark.slow
def test_near_capacity_level_203_agrees_with_value_iteration():
    # about a minute: value iteration needs ~10^5 sweeps at this level, policy iteration ~27
    # evaluations; the two certify the same optimum
    inst = _inst(4.4, None, servers=(3, 2), rates=(1.0, 0.8))
    res = policy_iteration(inst, 203, 1e-8, truncation_losses=True)
    vi = markov.optimal_policy(inst, 203, 1e-8, truncation_losses=True)
    assert res.converged and vi.converged
    assert abs(res.cost - vi.cost) <= 2e-8
