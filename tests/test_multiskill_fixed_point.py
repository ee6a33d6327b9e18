"""Algorithm 1 (fixed-point algorithm) against the exact solver and hand-checked cases."""

import itertools

import numpy as np
import pytest

from queue_routing.multiskill import (
    BOTH,
    DEDICATED,
    SHARED,
    Instance,
    InstanceError,
    Partition,
    solve_exact,
)
from queue_routing.multiskill.fixed_point import fixed_point, initial_partition
from queue_routing.multiskill.instances import random_instance, table1, table1_initial_partitions
from queue_routing.seeding import rng_for

INITS = ("dedicated", "both", "shared", "random")


def _cases():
    for n in (1, 2, 3, 5, 10, 30, 100):
        for k in range(6):
            yield n, k


@pytest.mark.parametrize("update", ["jacobi", "single"])
def test_converged_runs_reach_the_exact_optimum(update):
    """Whenever Algorithm 1 (no rounding) stops, its partition and loads are the optimum's."""
    converged = 0
    for n, k in _cases():
        inst = random_instance(n, 7, k)
        exact = solve_exact(inst)
        for init in INITS:
            sol = fixed_point(inst, update=update, init=init, rng=rng_for(7, n, k, init))
            if not sol.converged:
                continue
            converged += 1
            assert sol.partition == exact.partition, (n, k, init)
            np.testing.assert_allclose(sol.loads, exact.loads, rtol=0, atol=1e-12)
            assert sol.cost == pytest.approx(exact.cost, rel=1e-12)
    assert converged > 0.8 * 4 * len(list(_cases()))


def test_iterations_count_partition_changes():
    inst = random_instance(40, 3, 0)
    sol = fixed_point(inst, update="single", init="dedicated", seed=5)
    parts = sol.info["trace"].partitions
    changes = sum(p != q for p, q in itertools.pairwise(parts))
    assert sol.iterations == changes == len(parts) - 1
    # single update: exactly one class moves per iteration
    moved = [int(np.sum(p.labels != q.labels)) for p, q in itertools.pairwise(parts)]
    assert set(moved) == {1}
    assert sol.info["trace"].loads.shape == (len(parts), 41)


def test_trajectory_starts_at_the_initial_partition():
    inst = table1()
    init = table1_initial_partitions()["C_d={1,3,4}, C_b={2,5}"]
    sol = fixed_point(inst, update="jacobi", init=init)
    trace = sol.info["trace"]
    assert trace.partitions[0] == init
    # rho_0 of the initial partition by equation (10), computed here by hand
    mu, eta, d = inst.mu, inst.eta, inst.delta
    b = [1, 4]  # classes 2 and 5 (0-based)
    rho0 = 1 - (mu[0] + mu[1:][b].sum() - eta[b].sum()) / (mu[0] + (d[b] * mu[1:][b]).sum())
    assert trace.loads[0, 0] == pytest.approx(rho0, rel=1e-14)
    assert trace.loads[0, 1] == pytest.approx(eta[0] / mu[1], rel=1e-14)
    assert trace.loads[0, 2] == pytest.approx(1 - d[1] * (1 - rho0), rel=1e-14)


def _cycling_instance():
    # One class with delta = sqrt(5) > 1 and eta_1/mu_1 = 0.75 < 1: from C_d, rho_0 = 0 sends
    # the class to C_0; there rho_0 = eta_1/mu_0 = 1.5 (clipped to 1) sends it back to C_d.
    return Instance(mu=[1.0, 2.0], cost=[1.0, 10.0], eta=[1.5])


def test_constructed_cycle_is_reported_not_converged():
    inst = _cycling_instance()
    sol = fixed_point(inst, update="jacobi", init="dedicated")
    assert not sol.converged
    assert sol.info["status"] == "cycle"
    cycle = sol.info["trace"].cycle
    assert set(cycle) == {Partition.from_sets(1, dedicated=[1]), Partition.from_sets(1, shared=[1])}
    assert "cycle" in sol.message
    # the optimum exists and lies strictly inside C_b: a genuine failure of Algorithm 1
    assert solve_exact(inst).partition == Partition.from_sets(1, both=[1])


def test_single_update_stops_at_the_cap_when_it_cannot_settle():
    sol = fixed_point(_cycling_instance(), update="single", init="shared", max_iterations=25)
    assert not sol.converged
    assert sol.info["status"] == "cap"
    assert sol.iterations == 25
    assert sol.info["trace"].revisits > 0


def test_random_instances_can_cycle_under_jacobi_from_all_dedicated():
    """The jacobi reading is not what the paper ran: on Table 1 it cycles from all-C_d."""
    sol = fixed_point(table1(), update="jacobi", init="dedicated")
    assert not sol.converged and sol.info["status"] == "cycle"
    # the single-class update (the authors' code) converges from the same start
    assert fixed_point(table1(), update="single", init="dedicated", seed=1).converged


def test_paper_rounding_reproduces_the_papers_rho4_equal_zero():
    """The paper reports rho_4* = 0 on Table 1; the exact optimum is tiny but positive."""
    exact = solve_exact(table1())
    assert exact.partition.labels[3] == BOTH and 0 < exact.loads[4] < 1e-3
    rounded = fixed_point(table1(), update="single", init="dedicated", seed=1, paper_rounding=True)
    assert rounded.converged
    assert rounded.partition.labels[3] == SHARED and rounded.loads[4] == 0.0
    assert rounded.cost > exact.cost  # rounding costs a little optimality


def test_random_initial_partition_frequencies():
    part = initial_partition("random", 200_000, np.random.default_rng(0), p_shared=0.1, p_both=0.3)
    freq = np.bincount(part.labels, minlength=3) / part.labels.size
    assert freq[SHARED] == pytest.approx(0.1, abs=0.005)
    assert freq[BOTH] == pytest.approx(0.3, abs=0.005)
    assert freq[DEDICATED] == pytest.approx(0.6, abs=0.005)


def test_seeded_runs_are_reproducible():
    inst = random_instance(60, 11, 2)
    a = fixed_point(inst, update="single", init="random", seed=9)
    b = fixed_point(inst, update="single", init="random", seed=9)
    assert a.iterations == b.iterations
    np.testing.assert_array_equal(a.info["trace"].loads, b.info["trace"].loads)


def test_bad_arguments():
    inst = table1()
    with pytest.raises(InstanceError, match="update rule"):
        fixed_point(inst, update="gauss")
    with pytest.raises(InstanceError, match="initial partition"):
        fixed_point(inst, init="everything")
    with pytest.raises(InstanceError, match="3 classes"):
        fixed_point(inst, init=Partition.from_sets(3))
