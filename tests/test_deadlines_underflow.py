"""Part B when the indices underflow: deadlines of hundreds of service times make
``P^miss = e^{-mu t}`` and the indices built on it fall below the smallest double. Two
clusters' indices that are both 0 in double precision used to tie, and the tie went to the
lowest cluster whatever the true order: a different policy, silently. The policies now order
such indices by their logarithms (``docs/deadlines.md#index-policies``).

References: the miss probabilities and the RB index from their definitions in mpmath
(``test_deadlines_precision``), the M/M/m queue in closed form.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from test_deadlines_precision import p_reference, rb_reference

from queue_routing.deadlines import (
    Cluster,
    Deadline,
    Instance,
    evaluate,
    evaluate_index_policy,
    index_table,
)
from queue_routing.deadlines.indices import io_log_index, rb_log_index
from queue_routing.deadlines.policies import decision_table
from queue_routing.errors import AccuracyError

UNDERFLOWING = [
    {"kind": "constant", "t": 10.0},
    {"kind": "constant", "t": 10.0, "on": "waiting"},
    {"kind": "uniform", "low": 9.0, "high": 11.0},
]


# the references compute 1 - P(j, m mu t) (regularised lower gamma) with m mu t up to
# 3300: values down to e^{-3300} need ~1450 digits to keep 40
DPS = 1500


def _log_ref(values, dps=DPS):
    with mp.workdps(dps):
        return [float(mp.log(v)) if v > 0 else -math.inf for v in values]


def _assert_logs(got, ref, what):
    for x, (g, r) in enumerate(zip(got, ref, strict=True)):
        if math.isinf(r):
            assert g == r, (what, x, g, r)
        else:  # a few ulps of the log itself: ~1e-13 relative on the index
            assert abs(g - r) <= 1e-12 * max(1.0, abs(r)), (what, x, g, r)


@pytest.mark.parametrize("spec", UNDERFLOWING, ids=lambda s: f"{s['kind']}-{s.get('on', 'r')}")
@pytest.mark.parametrize(("m", "mu"), [(3, 100.0), (2, 80.0)])
def test_log_indices_match_the_definitions_where_the_indices_underflow(spec, m, mu):
    dl = Deadline.from_dict(spec)
    upto = 20
    with mp.workdps(DPS):
        p = [p_reference(x, m, mu, dl) for x in range(upto + 2)]
    assert float(p[m]) < 1e-290  # the double underflows: the case at hand
    _assert_logs(io_log_index(Cluster(m, mu), dl, upto), _log_ref(p[: upto + 1]), "io")
    if dl.on == "response":
        lam = 300.0  # the arrival rate of HUGE_DEADLINES: loads 1 and 1.875
        ref = rb_reference(tuple(p), m, mu, lam, upto, DPS)
        _assert_logs(rb_log_index(Cluster(m, mu), dl, lam, upto), _log_ref(ref), "rb")


def _instance(lam, servers, rates, t=10.0, r=2.0):
    return Instance.from_dict(
        {
            "arrival_rate": lam,
            "servers": servers,
            "service_rates": rates,
            "rejection_cost": r,
            "deadline": {"kind": "constant", "t": t},
        }
    )


@pytest.mark.parametrize("policy", ["io", "rb"])
def test_underflowing_indices_are_ordered_not_tied(policy):
    """Cluster 2 (``e^{-1000}``) beats cluster 1 (``e^{-800}``) until it holds ~500 jobs, so
    at load 1/3 on cluster 2 nearly every job goes there; the old tie of zeros sent them to
    cluster 1. References: a decision table of the mpmath logarithms of the definitions (any
    increasing transform of the indices decides alike; all are below log R), and the
    closed form ``lam`` on cluster 2."""
    inst = _instance(100.0, [2, 3], [80.0, 100.0])
    level = 40
    nu = index_table(inst, policy, level).table
    assert (nu[:, :3] == 0.0).all()  # the doubles tie
    with mp.workdps(DPS):
        rows = []
        for c in inst.clusters:
            p = [p_reference(x, c.servers, c.rate, inst.deadline) for x in range(level + 2)]
            if policy == "rb":
                p = rb_reference(tuple(p), c.servers, c.rate, inst.arrival_rate, level, DPS)
            rows.append(_log_ref(p[: level + 1]))
    ref = evaluate_index_policy(inst, np.array(rows), level)
    got = evaluate(inst, policy, truncation=level)
    np.testing.assert_allclose(got.cluster_admission_rate, ref.cluster_admission_rate, rtol=1e-12)
    # cluster 1 only when cluster 2 holds >= `level` jobs: P(x_2 >= 40) of M/M/3 at rho 1/3
    assert got.cluster_admission_rate[1] == pytest.approx(100.0, rel=1e-15)
    auto = evaluate(inst, policy)  # the automatic truncation is stable now
    assert auto.cluster_admission_rate[1] == pytest.approx(100.0, rel=1e-12)
    assert auto.rejection_rate == 0.0 and 0.0 <= auto.cost < 1e-290


#: Deadlines of 1000 and 800 mean service times (t = 10 on clusters of 3 x 100 and 2 x 80,
#: R = 2): the indices of both clusters underflow below ~500 jobs.
HUGE_DEADLINES = (300.0, [3, 2], [100.0, 80.0])


def test_huge_deadlines_io_queues_beyond_the_chain_and_is_simulated():
    """Deadlines of ~1000 service times: IO keeps cluster 1 (``e^{-1000}`` per job) busy until
    it holds ~496 jobs (where its index passes cluster 2's ``e^{-800}``: mpmath, by bisection on the
    nondecreasing ``P``), at the exact chain's largest level for two clusters (499). The
    simulation with a table beyond the queues answers: nothing rejected (every index <= 1 <
    R), no miss (a routed job's miss probability is at most cluster 1's ``P(x_1)`` with
    ``x_1 <= 1000`` inside the table, below ``e^{-590}``: the counted misses are 0)."""
    inst = _instance(*HUGE_DEADLINES)
    with mp.workdps(DPS):
        lo, hi = 3, 2000  # P(lo) <= e^{-800} < P(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (
                (mid, hi)
                if p_reference(mid, 3, 100.0, inst.deadline) <= mp.exp(-800)
                else (lo, mid)
            )
        assert 480 <= hi <= 499  # the queue reaches the exact chain's largest level
        assert p_reference(1000, 3, 100.0, inst.deadline) < mp.exp(-590)
    sim = evaluate(inst, "io", method="simulation", horizon=50.0, replications=2, table_size=1000)
    assert sim.rejection_rate == 0.0 and sim.cost == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("io", r"^truncation: .* use method simulation"),
        ("rb", r"^truncation: .* use method simulation"),
        ("pi", r"^pi: the indices of clusters 1, 2 fall below 1e-290"),
    ],
)
def test_huge_deadlines_are_refused_precisely_by_the_exact_method(policy, message):
    """The automatic truncation reaches level 499 with the policy's queue still at it (IO:
    the test above; RB likewise): one error line saying so (seconds: slow). PI's indices of
    both clusters underflow here, and PI has no log-space evaluation: refused before any
    level, one line saying why."""
    with pytest.raises(AccuracyError, match=message):
        evaluate(_instance(*HUGE_DEADLINES), policy)


def test_pi_indices_underflowing_at_two_clusters_are_refused():
    inst = _instance(100.0, [3, 3], [100.0, 100.0])
    with pytest.raises(AccuracyError, match=r"^pi: the indices of clusters 1, 2 fall below"):
        evaluate(inst, "pi", truncation=20)
    table = index_table(inst, "pi", 20)  # the table itself is still shown
    assert np.isfinite(table.table).all()
    assert (decision_table(inst, index_table(inst, "io", 20)) >= 0).all()
