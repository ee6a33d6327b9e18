"""Part A at the edges: near capacity, over wide scales, with honest convergence flags.

References: a 60-digit (mpmath) evaluation of the optimum (bisection on the flow residual
H(s) of the spare capacity s, with the loads of Proposition 2), written here independently of
the package's solver; the KKT conditions of LOAD-OPT as a property.
"""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_routing.errors import AccuracyError, PrecisionWarning
from queue_routing.multiskill import Instance, compare, random_instance, solve
from queue_routing.multiskill.result import PRECISION_WARN, kkt_residual
from queue_routing.seeding import rng_for


def near_critical(k: int, gap: float, n_classes: int = 10) -> Instance:
    """A stable instance whose total intensity is ``(1 - gap)`` of the total capacity: class
    i gets ``(1 - gap) (mu_i + w_i mu_0)`` with random weights w summing to 1, so every class
    set A has sum_A (eta_i - mu_i) < mu_0 (Proposition 1)."""
    base = random_instance(n_classes, 2022, k)
    w = rng_for(1, "test-near-critical", n_classes, k).dirichlet(np.ones(n_classes))
    return Instance(mu=base.mu, cost=base.cost, eta=(1 - gap) * (base.mu[1:] + base.mu[0] * w))


def optimum_60_digits(inst: Instance) -> mpmath.mpf:
    """The optimal cost of ``inst`` (its double inputs taken exactly) to about 60 digits."""
    with mpmath.workdps(70):
        mu = [mpmath.mpf(float(x)) for x in inst.mu]
        c = [mpmath.mpf(float(x)) for x in inst.cost]
        eta = [mpmath.mpf(float(x)) for x in inst.eta]
        dlt = [mpmath.sqrt((c[i + 1] / mu[i + 1]) / (c[0] / mu[0])) for i in range(len(eta))]

        def loads(s):
            return [1 - s] + [
                min(max(1 - dlt[i] * s, 0), eta[i] / mu[i + 1]) for i in range(len(eta))
            ]

        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(260):  # H(s) = sum mu_j rho_j(s) - sum eta is decreasing in s
            mid = (lo + hi) / 2
            if sum(m * r for m, r in zip(mu, loads(mid), strict=True)) > sum(eta):
                lo = mid
            else:
                hi = mid
        rho = loads((lo + hi) / 2)
        return sum(cj * r / (1 - r) for cj, r in zip(c, rho, strict=True))


@pytest.mark.parametrize("gap", [1e-3, 1e-6, 1e-9, 1e-12])
@pytest.mark.parametrize("k", range(4))
def test_exact_cost_within_its_stated_precision(k, gap):
    inst = near_critical(k, gap)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = solve(inst)
    ref = optimum_60_digits(inst)
    error = float(abs(mpmath.mpf(sol.cost) - ref) / ref)
    assert error <= sol.precision_limit, (error, sol.precision_limit)
    warned = [w for w in caught if issubclass(w.category, PrecisionWarning)]
    assert bool(warned) == (sol.precision_limit > PRECISION_WARN)
    for w in warned:
        assert "\n" not in str(w.message) and "relative accuracy" in str(w.message)


def test_compare_warns_where_rounding_can_reorder_the_models():
    # 1e-12 from capacity the all-sharing model with equal costs (never worse, it contains the
    # multi-skilled one) can come out above the multi-skilled cost by rounding: warned, and
    # by no more than the stated accuracy.
    for k in range(8):
        inst = near_critical(k, 1e-12)
        with pytest.warns(PrecisionWarning, match="relative accuracy"):
            costs = compare(inst)
        excess = costs["all_sharing_same_costs"] / costs["multiskilled"] - 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrecisionWarning)
            limit = solve(inst).precision_limit
        assert excess <= 2 * limit, (excess, limit)  # both costs within their accuracy


@pytest.mark.parametrize("k", range(8))
def test_generic_converged_means_optimal(k):
    """Near capacity the optimisers stop early; ``converged`` must then be False, and when it
    is True the cost is optimal (60-digit reference) to 1e-6."""
    for gap in (1e-3, 1e-6):
        inst = near_critical(k, gap)
        sol = solve(inst, "generic")
        ref = float(optimum_60_digits(inst))
        if sol.converged:
            assert sol.kkt_residual <= 1e-3 and sol.flow_residual <= 1e-9
            assert abs(sol.cost - ref) / ref < 1e-6, (gap, sol.cost / ref - 1)
        else:
            assert "not optimal" in sol.message or "load >= 1" in sol.message
            assert not (sol.kkt_residual <= 1e-3 and np.all(sol.loads < 1))


def test_the_reported_counterexample_is_no_longer_called_converged():
    inst = near_critical(2, 1e-6)  # L-BFGS-B stops 0.37% above the optimum here
    sol = solve(inst, "generic")
    ref = float(optimum_60_digits(inst))
    if abs(sol.cost - ref) / ref > 1e-6:
        assert not sol.converged and "KKT residual" in sol.message


# -- properties over wide scales -------------------------------------------------------------
@st.composite
def instances(draw):
    """Stable instances with rates and costs over 1e-6..1e6 and total load up to 1 - 1e-9."""
    n = draw(st.integers(1, 12))
    logs = st.floats(-6, 6, allow_nan=False)
    mu = np.array([10.0 ** draw(logs) for _ in range(n + 1)])
    cost = np.array([10.0 ** draw(logs) for _ in range(n + 1)])
    w = np.array([draw(st.floats(0.01, 1.0)) for _ in range(n)])
    w /= w.sum()
    load = 1.0 - 10.0 ** draw(st.floats(-9, -0.05))
    dedicated = np.array([draw(st.floats(0.0, 1.0)) for _ in range(n)])
    eta = load * (dedicated * mu[1:] + w * mu[0])
    eta = np.maximum(eta, 1e-300)
    return Instance(mu=mu, cost=cost, eta=eta)


@settings(max_examples=150, deadline=None)
@given(instances())
def test_exact_solution_is_feasible_and_kkt_over_wide_scales(inst):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        try:
            sol = solve(inst)
        except AccuracyError as exc:  # refused, in one line, rather than answered wrongly
            assert "\n" not in str(exc) and "double precision" in str(exc)
            return
    assert np.all(np.isfinite(sol.loads)) and np.all((sol.loads >= 0) & (sol.loads < 1))
    assert np.isfinite(sol.cost) and sol.cost > 0
    assert sol.flow_residual <= 1e-9
    assert kkt_residual(inst, sol.loads) <= max(1e-9, 1e3 * sol.precision_limit)
    assert np.all(sol.probabilities >= 0) and np.all(sol.probabilities <= 1)


# -- inputs the model refuses, with one line naming the field -------------------------------
@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        (dict(mu=[1, 2], cost=[True, 1], eta=[1]), "cost_0 must be a number, got True"),
        (dict(mu=[1, 2], cost=["1", 1], eta=[1]), "cost_0 must be a number, got '1'"),
        (dict(mu=[1, 2], cost=[1, 1], eta=[10**400]), "eta holds an integer too large"),
        (dict(mu=[1e308, 1e308], cost=[1, 1], eta=[1e308]), "sum of mu overflows"),
        (dict(mu=[1, 2], cost=[1e308, 1e-308], eta=[1]), "class 1: cost-per-capacity ratio"),
        (dict(mu=[1, 2], cost=[1, 1], eta=[1e-320]), "class 1: eta_i/mu_i"),
        (dict(mu=[1e300, 2e300], cost=[1e-300, 1e-300], eta=[1e300]), "ratio nan"),
        (dict(mu=[1e300, 2e300], cost=[7.0, 7.0], eta=[1e300]), None),  # scaled rates: fine
    ],
)
def test_unrepresentable_inputs_are_refused_by_name(kwargs, needle):
    from queue_routing.multiskill import InstanceError

    if needle is None:
        inst = Instance(**kwargs)  # ratios representable: eta_1/mu_1 = 0.5, delta_1^2 = 0.5
        sol = solve(inst)
        assert np.isfinite(sol.cost) and sol.flow_residual <= 1e-12
        return
    with pytest.raises(InstanceError) as info:
        Instance(**kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


@st.composite
def extreme_inputs(draw):
    n = draw(st.integers(1, 4))
    value = st.floats(1e-308, 1e308, allow_nan=False, allow_infinity=False)
    return (
        [draw(value) for _ in range(n + 1)],
        [draw(value) for _ in range(n + 1)],
        [draw(value) for _ in range(n)],
    )


@settings(max_examples=200, deadline=None)
@given(extreme_inputs())
def test_any_finite_input_gives_a_finite_answer_or_one_clear_error(args):
    from queue_routing.multiskill import InstanceError

    mu, cost, eta = args
    try:
        inst = Instance(mu=mu, cost=cost, eta=eta)
    except InstanceError as exc:
        assert "\n" not in str(exc)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        try:
            sol = solve(inst)
        except AccuracyError as exc:  # refused, and said why, in one line
            assert "\n" not in str(exc) and "double precision" in str(exc)
            return
    assert np.all(np.isfinite(sol.loads)) and np.all((sol.loads >= 0) & (sol.loads <= 1))
    assert sol.flow_residual <= max(1e-9, sol.precision_limit)
    assert sol.precision_limit <= 0.1


@settings(max_examples=60, deadline=None)
@given(instances())
def test_stated_accuracy_holds_against_60_digits(inst):
    """The accuracy the solver states (and warns about) bounds its actual error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        try:
            sol = solve(inst)
        except AccuracyError:
            return
    ref = optimum_60_digits(inst)
    error = float(abs(mpmath.mpf(sol.cost) - ref) / ref)
    assert error <= sol.precision_limit, (error, sol.precision_limit)
