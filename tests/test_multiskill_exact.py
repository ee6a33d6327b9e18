"""The exact LOAD-OPT solver against independent references.

* a generic convex solver (L-BFGS-B, SLSQP, cvxpy) on random and hand-built instances;
* the KKT conditions and flow conservation, recomputed here from the loads;
* Proposition 1 against brute force over all class subsets;
* Propositions 2-5 of the paper as properties of the exact solution;
* the batched solver against the single-instance one.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from queue_routing.multiskill import (
    BOTH,
    DEDICATED,
    SHARED,
    Instance,
    InstanceError,
    UnstableInstanceError,
    solve_exact,
    solve_exact_batch,
)
from queue_routing.multiskill.generic import (
    feasible_start,
    loads_from_probabilities,
    solve_generic,
)
from queue_routing.multiskill.instances import TABLE1, random_instance
from queue_routing.seeding import rng_for

ROOT_SEED = 2022

#: Random instances of the paper's distribution (Sec. 6.3) per number of classes C.
PAPER_COUNTS = {1: 40, 2: 40, 3: 20, 5: 40, 10: 20, 20: 15, 50: 20, 100: 8, 200: 15}


def _scaled_instance(n_classes: int, index: int) -> Instance:
    """A badly scaled random instance (ours): capacities over three decades, holding costs over
    six, class loads eta/mu from 0.05 to 3 and server 0 from 0.1% to 300% above the stability
    bound of Proposition 1, so optimal loads come within 1e-5 of 1."""
    rng = rng_for(ROOT_SEED, "test-scaled-instance", n_classes, index)
    mu = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n_classes + 1))
    cost = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n_classes + 1))
    eta = mu[1:] * np.exp(rng.uniform(np.log(0.05), np.log(3.0), n_classes))
    excess = np.clip(eta - mu[1:], 0.0, None).sum()
    if excess > 0:
        mu[0] = excess * (1.0 + np.exp(rng.uniform(np.log(1e-3), np.log(3.0))))
    return Instance(mu=mu, cost=cost, eta=eta, name=f"scaled-C{n_classes}-i{index}")


def _edge_instances() -> list[Instance]:
    """Hand-built instances at the corners of the parameter space."""
    t1 = {k: np.array(v) for k, v in TABLE1.items()}
    raw = {
        # delta_j <= 1 - eta_j/mu_j for all j: no sharing is optimal, rho_0 = 0.
        "no-sharing": ([10, 10, 10, 10], [1000, 1, 1, 1], [2, 3, 4]),
        # cheap, fast server 0 (huge delta): every class sends everything to server 0.
        "all-shared": ([1000, 10, 10], [1e-3, 50, 80], [5, 7]),
        # classes with eta_i > mu_i must share.
        "overloaded-classes": ([20, 5, 10, 8], [3, 10, 4, 7], [9, 3, 12]),
        # server 0 very expensive (tiny delta), but class 1 cannot be served alone.
        "forced-sharing": ([10, 5, 5], [1e4, 1, 1], [7, 2]),
        # Proposition 1 holds with a margin of 1e-2: optimal loads near 1.
        "near-unstable": ([2.01, 10, 10], [5, 5, 5], [12, 5]),
        # all deltas equal.
        "ties": ([10, 10, 10, 10], [5, 5, 5, 5], [8, 8, 8]),
        "one-class-overloaded": ([3, 2], [1, 4], [4]),
        "one-class-light": ([3, 2], [1, 4], [0.5]),
        "cost-spread": ([10, 5, 5, 5, 5], [1, 1e-4, 1e4, 1, 100], [4, 4, 4, 4]),
        "table1": (t1["mu"], t1["cost"], t1["eta"]),
        "table1-tiny-rates": (t1["mu"] * 1e-6, t1["cost"], t1["eta"] * 1e-6),
        "table1-huge-rates": (t1["mu"] * 1e6, t1["cost"], t1["eta"] * 1e6),
        "table1-tiny-costs": (t1["mu"], t1["cost"] * 1e-8, t1["eta"]),
    }
    out = [Instance(mu=m, cost=c, eta=e, name=k) for k, (m, c, e) in raw.items()]
    # C = 50, every class overloaded by 1 and server 0 with 2% to spare.
    mu_d = np.arange(10.0, 60.0)
    out.append(
        Instance(mu=np.r_[51.0, mu_d], cost=np.linspace(1, 90, 51), eta=mu_d + 1, name="all-over")
    )
    return out


PAPER = [random_instance(c, ROOT_SEED, k) for c, n in PAPER_COUNTS.items() for k in range(n)]
SCALED = [
    _scaled_instance(c, k)
    for c, n in {1: 12, 2: 12, 3: 12, 5: 12, 10: 12, 50: 6, 200: 3}.items()
    for k in range(n)
]
EDGES = _edge_instances()
ALL = PAPER + SCALED + EDGES
EXACT = {id(inst): solve_exact(inst) for inst in ALL}


def _exact(inst: Instance):
    return EXACT[id(inst)]


def _rel_gap(generic_cost: float, exact_cost: float) -> float:
    return (generic_cost - exact_cost) / exact_cost


def _describe(inst: Instance) -> str:
    return f"{inst.name}: mu={inst.mu.tolist()}, cost={inst.cost.tolist()}, eta={inst.eta.tolist()}"


def _labels_from_loads(inst: Instance, loads: np.ndarray) -> np.ndarray:
    """C_0 iff rho_i = 0, C_d iff rho_i = eta_i/mu_i, else C_b (read off the loads)."""
    rho = loads[1:]
    r = inst.eta / inst.mu[1:]
    labels = np.full(rho.size, BOTH, dtype=np.int8)
    labels[rho == r] = DEDICATED
    labels[rho == 0.0] = SHARED
    return labels


# -- exact vs generic ------------------------------------------------------------------------


def _check_against_generic(instances, method, max_gap, **kwargs):
    failures, worst = [], 0.0
    for inst in instances:
        exact = _exact(inst)
        gen = solve_generic(inst, method, **kwargs)
        gap = _rel_gap(gen.cost, exact.cost)
        worst = max(worst, gap)
        if not gen.converged:
            failures.append(f"{method} did not converge ({gen.message}) on {_describe(inst)}")
        elif gap < -1e-9:
            failures.append(f"{method} beats exact by {-gap:.3g} on {_describe(inst)}")
        elif gap > max_gap:
            failures.append(f"{method} gap {gap:.3g} on {_describe(inst)}")
    assert not failures, "\n".join(failures[:10])
    return worst


def test_exact_matches_lbfgsb_on_every_instance():
    assert len(ALL) >= 200 and {1, 2, 5, 50, 200} <= {i.n_classes for i in ALL}
    worst = _check_against_generic(ALL, "L-BFGS-B", 1e-6)
    assert worst < 1e-6


def test_exact_matches_slsqp_on_small_instances():
    small = [i for i in ALL if i.n_classes <= 10][::3] + EDGES
    _check_against_generic(small, "SLSQP", 1e-6)


def test_exact_matches_cvxpy_on_paper_instances():
    pytest.importorskip("cvxpy")
    some = [i for i in PAPER if i.n_classes <= 50][::12] + [i for i in PAPER if i.n_classes == 200][
        :2
    ]
    _check_against_generic(some, "cvxpy", 1e-6)


def test_no_sharing_edge_case_is_exactly_dedicated():
    inst = next(i for i in EDGES if i.name == "no-sharing")
    sol = solve_exact(inst)
    assert sol.loads[0] == 0.0
    np.testing.assert_array_equal(sol.loads[1:], inst.eta / inst.mu[1:])
    assert np.all(sol.partition.labels == DEDICATED)


def test_all_shared_edge_case():
    inst = next(i for i in EDGES if i.name == "all-shared")
    sol = solve_exact(inst)
    assert np.all(sol.loads[1:] == 0.0) and np.all(sol.partition.labels == SHARED)
    assert sol.loads[0] == pytest.approx(inst.eta.sum() / inst.mu[0], rel=1e-15)


def test_generic_start_is_feasible():
    for inst in ALL:
        rho = loads_from_probabilities(feasible_start(inst.mu, inst.eta), inst.mu, inst.eta)
        assert np.all(rho < 1.0), _describe(inst)


def test_generic_failure_is_reported():
    inst = random_instance(50, ROOT_SEED, 0)
    sol = solve_generic(inst, maxiter=1, restarts=0)
    assert not sol.converged
    assert "ITERATIONS" in sol.message.upper()


def test_generic_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        solve_generic(EDGES[0], "Nelder-Mead")


# -- KKT conditions and flow conservation ----------------------------------------------------


def test_exact_solution_satisfies_kkt_and_flow_conservation():
    """In p-space LOAD-OPT is min f(p) over [0, 1]^C with
    df/dp_i = eta_i [c_i/(mu_i (1-rho_i)^2) - c_0/(mu_0 (1-rho_0)^2)]; at the optimum the
    projected-gradient step |clip(p - g, 0, 1) - p| vanishes, with g scaled by
    eta_i c_0/(mu_0 (1-rho_0)^2)."""
    worst_kkt = worst_flow = 0.0
    for inst in ALL:
        sol = _exact(inst)
        mu, cost, eta, rho = inst.mu, inst.cost, inst.eta, sol.loads
        assert np.all(rho >= 0.0) and np.all(rho < 1.0), _describe(inst)
        assert np.all(rho[1:] <= eta / mu[1:]), _describe(inst)
        p = mu[1:] * rho[1:] / eta
        assert np.all((p >= -1e-15) & (p <= 1 + 1e-15)), _describe(inst)
        p = np.clip(p, 0.0, 1.0)
        marginal_0 = cost[0] / (mu[0] * (1.0 - rho[0]) ** 2)
        grad = eta * (cost[1:] / (mu[1:] * (1.0 - rho[1:]) ** 2) - marginal_0)
        scaled = grad / (eta * marginal_0)
        kkt = float(np.max(np.abs(np.clip(p - scaled, 0.0, 1.0) - p)))
        assert kkt < 1e-9, f"KKT residual {kkt:.3g} on {_describe(inst)}"
        flow = mu[0] * rho[0] + np.sum(mu[1:] * rho[1:])
        rel = abs(flow - eta.sum()) / eta.sum()
        assert rel < 1e-12, f"flow conservation error {rel:.3g} on {_describe(inst)}"
        worst_kkt, worst_flow = max(worst_kkt, kkt), max(worst_flow, rel)
    assert worst_kkt < 1e-9 and worst_flow < 1e-12


# -- Proposition 1 and input validation ------------------------------------------------------


def _brute_force_violations(mu, eta):
    """sum_A eta - sum_A mu - mu_0 for every non-empty A; A violates Prop. 1 iff it is >= 0."""
    n = eta.size
    out = {}
    for size in range(1, n + 1):
        for subset in itertools.combinations(range(n), size):
            idx = list(subset)
            out[tuple(i + 1 for i in subset)] = eta[idx].sum() - mu[1:][idx].sum() - mu[0]
    return out


def _proposition1_cases():
    """Integer-valued (so every subset sum is exact) instances, stable and unstable; mu_0 is
    placed below, at, just above (by 1/1024) and well above the bound sum_i (eta_i - mu_i)^+."""
    cases = []
    for n_classes in range(1, 11):
        for k in range(8):
            rng = rng_for(ROOT_SEED, "test-prop1", n_classes, k)
            mu_d = rng.integers(1, 30, n_classes).astype(float)
            eta = rng.integers(1, 40, n_classes).astype(float)
            bound = float(np.clip(eta - mu_d, 0.0, None).sum())
            offsets = [-1.0, 0.0, 1.0 / 1024, 1.0, float(rng.integers(1, 50))]
            for off in offsets:
                mu0 = bound + off
                if mu0 > 0:
                    cases.append((np.r_[mu0, mu_d], eta))
    return cases


def test_proposition1_matches_brute_force():
    n_stable = n_unstable = 0
    for mu, eta in _proposition1_cases():
        violations = _brute_force_violations(mu, eta)
        worst = max(violations.values())
        cost = np.ones_like(mu)
        if worst >= 0:
            n_unstable += 1
            with pytest.raises(UnstableInstanceError) as info:
                Instance(mu=mu, cost=cost, eta=eta)
            err = info.value
            assert err.classes in violations, (mu, eta, err.classes)
            assert violations[err.classes] >= 0
            assert err.deficit == pytest.approx(worst, rel=1e-12, abs=1e-12)
            assert isinstance(err, InstanceError)
        else:
            n_stable += 1
            Instance(mu=mu, cost=cost, eta=eta)  # must not raise
    assert n_stable > 100 and n_unstable > 50


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("mu", dict(mu=[1.0, float("nan")], cost=[1, 1], eta=[1])),
        ("mu", dict(mu=[1.0, -2.0], cost=[1, 1], eta=[1])),
        ("mu", dict(mu=[0.0, 2.0], cost=[1, 1], eta=[1])),
        ("mu", dict(mu=[1.0, 2.0, 3.0], cost=[1, 1], eta=[1])),
        ("mu", dict(mu=[1.0, float("inf")], cost=[1, 1], eta=[1])),
        ("mu", dict(mu=[[1.0, 2.0]], cost=[1, 1], eta=[1])),
        ("cost", dict(mu=[1, 2], cost=[1.0, 0.0], eta=[1])),
        ("cost", dict(mu=[1, 2], cost=[1.0, -1.0], eta=[1])),
        ("cost", dict(mu=[1, 2], cost=[1.0, float("nan")], eta=[1])),
        ("cost", dict(mu=[1, 2], cost=[1.0], eta=[1])),
        ("cost", dict(mu=[1, 2], cost=["a", 1.0], eta=[1])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=[float("nan")])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=[-1.0])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=[0.0])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=["abc"])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=[])),
        ("eta", dict(mu=[1, 2], cost=[1, 1], eta=None)),
    ],
)
def test_bad_inputs_raise_naming_the_field(field, kwargs):
    with pytest.raises(InstanceError, match=rf"^{field}(\b|_\d)") as info:
        Instance(**kwargs)
    assert not isinstance(info.value, UnstableInstanceError)


# -- Proposition 2, equations (10) and (11) --------------------------------------------------


def test_partition_follows_proposition2_and_equations_10_11():
    near_boundary = 0
    for inst in ALL:
        sol = _exact(inst)
        mu, eta, rho = inst.mu, inst.eta, sol.loads
        dlt = np.sqrt((inst.cost[1:] / mu[1:]) / (inst.cost[0] / mu[0]))
        r = eta / mu[1:]
        inv_s = 1.0 / (1.0 - rho[0])
        labels = sol.partition.labels
        # Proposition 2 in the paper's (divided) form, at the exact rho_0.
        expected = np.full(eta.size, DEDICATED, dtype=np.int8)
        expected[((1.0 - r) * inv_s < dlt) & (dlt < inv_s)] = BOTH
        expected[dlt >= inv_s] = SHARED
        edge = np.minimum(np.abs(dlt - inv_s), np.abs(dlt - (1.0 - r) * inv_s)) <= 1e-12 * dlt
        near_boundary += int(edge.sum())
        assert np.array_equal(labels[~edge], expected[~edge]), _describe(inst)
        # The labels agree with the loads.
        assert np.array_equal(labels, _labels_from_loads(inst, rho)), _describe(inst)
        # Equation (10): rho_0 from the partition.
        cb, c0 = labels == BOTH, labels == SHARED
        num = mu[0] + mu[1:][cb].sum() - eta[cb | c0].sum()
        den = mu[0] + (dlt * mu[1:])[cb].sum()
        scale = (mu[0] + mu[1:][cb].sum() + eta.sum()) / den
        assert abs((1.0 - num / den) - rho[0]) <= 1e-12 * scale, _describe(inst)
        # Equation (11) (to rounding of delta_j (1 - rho_0)) and the C_d, C_0 loads.
        eq11 = 1.0 - dlt[cb] * (1.0 - rho[0])
        assert np.all(np.abs(rho[1:][cb] - eq11) <= 4e-16 * (1.0 + dlt[cb])), _describe(inst)
        np.testing.assert_array_equal(rho[1:][labels == DEDICATED], r[labels == DEDICATED])
        np.testing.assert_array_equal(rho[1:][c0], 0.0)
    assert near_boundary <= 5


def test_partition_sets_are_all_exercised():
    seen = np.zeros(3, dtype=int)
    for inst in ALL:
        seen += np.bincount(_exact(inst).partition.labels, minlength=3)
    assert np.all(seen > 20), seen


# -- Propositions 3, 4, 5 --------------------------------------------------------------------


def _property_instances():
    paper = [random_instance(c, ROOT_SEED + 1, k) for c in (2, 3, 5, 10, 20) for k in range(60)]
    scaled = [_scaled_instance(c, 100 + k) for c in (2, 3, 5, 10) for k in range(60)]
    return paper + scaled


PROPERTY_INSTANCES = _property_instances()


def test_proposition3_orderings():
    """(a) delta_i <= delta_j and i in C_0 => j in C_0; (b) delta_i <= delta_j, i in C_b u C_0
    and eta_i/mu_i <= eta_j/mu_j => j in C_b u C_0. Sets read off the loads."""
    used_a = used_b = 0
    for inst in PROPERTY_INSTANCES:
        labels = _labels_from_loads(inst, solve_exact(inst).loads)
        dlt, r = inst.delta, inst.dedicated_loads
        for i, j in itertools.permutations(range(inst.n_classes), 2):
            if dlt[i] > dlt[j]:
                continue
            if labels[i] == SHARED:
                used_a += 1
                assert labels[j] == SHARED, (_describe(inst), i + 1, j + 1)
            if labels[i] != DEDICATED and r[i] <= r[j]:
                used_b += 1
                assert labels[j] != DEDICATED, (_describe(inst), i + 1, j + 1)
    assert used_a > 100 and used_b > 100


def _proposition4_hypothesis(inst: Instance, i: int, j: int) -> bool:
    """delta_i <= delta_j < 1 and eta_i/mu_i <= eta_j/(mu_0 + mu_j) (0-based i, j)."""
    mu, eta, dlt = inst.mu, inst.eta, inst.delta
    return dlt[i] <= dlt[j] < 1.0 and eta[i] / mu[i + 1] <= eta[j] / (mu[0] + mu[j + 1])


def test_proposition4_on_random_instances():
    """If C_b = {i, j} exactly, the hypothesis of Proposition 4 fails for (i, j) and (j, i)."""
    pairs = 0
    for inst in PROPERTY_INSTANCES:
        labels = solve_exact(inst).partition.labels
        cb = np.flatnonzero(labels == BOTH)
        if cb.size == 2:
            pairs += 1
            i, j = cb
            assert not _proposition4_hypothesis(inst, i, j), _describe(inst)
            assert not _proposition4_hypothesis(inst, j, i), _describe(inst)
    assert pairs > 50


def test_proposition4_when_its_hypothesis_holds():
    """Two-class instances drawn until the hypothesis holds: C_b is never {1, 2}."""
    rng = rng_for(ROOT_SEED, "test-prop4")
    hits = both_shared = 0
    for _ in range(20000):
        mu = rng.uniform(1.0, 40.0, 3)
        cost = rng.uniform(1.0, 90.0, 3)
        eta = rng.uniform(0.5, 40.0, 2)
        if np.clip(eta - mu[1:], 0.0, None).sum() >= mu[0]:
            continue
        inst = Instance(mu=mu, cost=cost, eta=eta)
        if not (_proposition4_hypothesis(inst, 0, 1) or _proposition4_hypothesis(inst, 1, 0)):
            continue
        hits += 1
        labels = solve_exact(inst).partition.labels
        assert not np.all(labels == BOTH), _describe(inst)
        both_shared += int(np.sum(labels == BOTH) == 1)
        if hits >= 400:
            break
    assert hits >= 400 and both_shared > 20


def test_proposition5_holding_cost_of_sojourn_times():
    """For i, j in C_b with delta_i <= delta_j: c_i E[T_i] <= c_j E[T_j], where
    E[T_i] = 1/(mu_i (1 - rho_i)) is the mean sojourn time at the dedicated server; and
    c_i E[T_i] = sqrt(c_0 c_i / (mu_0 mu_i)) / (1 - rho_0) (the proof's identity, with the
    corrected delta)."""
    pairs = 0
    for inst in PROPERTY_INSTANCES:
        sol = solve_exact(inst)
        mu, cost, rho = inst.mu, inst.cost, sol.loads
        cb = np.flatnonzero(sol.partition.labels == BOTH)
        weighted = cost[1:][cb] / (mu[1:][cb] * (1.0 - rho[1:][cb]))
        identity = np.sqrt(cost[0] * cost[1:][cb] / (mu[0] * mu[1:][cb])) / (1.0 - rho[0])
        np.testing.assert_allclose(weighted, identity, rtol=1e-9, err_msg=_describe(inst))
        dlt = inst.delta[cb]
        for a, b in itertools.permutations(range(cb.size), 2):
            if dlt[a] <= dlt[b]:
                pairs += 1
                assert weighted[a] <= weighted[b] * (1 + 1e-12), _describe(inst)
    assert pairs > 200


# -- batched solver --------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [1, 5, 50])
def test_batch_equals_single_instance_solver(n_classes):
    insts = [random_instance(n_classes, ROOT_SEED, k) for k in range(40)]
    insts += [_scaled_instance(n_classes, k) for k in range(40)] if n_classes <= 10 else []
    mu = np.stack([i.mu for i in insts])
    cost = np.stack([i.cost for i in insts])
    eta = np.stack([i.eta for i in insts])
    loads = solve_exact_batch(mu, cost, eta)
    for k, inst in enumerate(insts):
        np.testing.assert_array_equal(loads[k], solve_exact(inst).loads, err_msg=inst.name)


def test_batch_with_an_unstable_row_names_the_row():
    insts = [random_instance(5, ROOT_SEED, k) for k in range(6)]
    mu = np.stack([i.mu for i in insts])
    cost = np.stack([i.cost for i in insts])
    eta = np.stack([i.eta for i in insts])
    eta[3, [1, 4]] = mu[3, [2, 5]] + 0.5 * mu[3, 0] + 1.0  # classes 2 and 5 overload server 0
    with pytest.raises(UnstableInstanceError, match="batch row 3") as info:
        solve_exact_batch(mu, cost, eta)
    over = tuple(int(i) + 1 for i in np.flatnonzero(eta[3] > mu[3, 1:]))
    assert info.value.classes == over and {2, 5} <= set(over)
    expected = float(np.clip(eta[3] - mu[3, 1:], 0.0, None).sum() - mu[3, 0])
    assert info.value.deficit == pytest.approx(expected, rel=1e-12)
    assert math.isclose(info.value.deficit, max(_brute_force_violations(mu[3], eta[3]).values()))
