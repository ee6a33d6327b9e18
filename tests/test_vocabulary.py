"""One vocabulary across the three parts (docs/developer-guide.md, "One vocabulary across the
parts").

Every simulation result is a :class:`queue_routing.stats.Replicated` whose ``ci95``,
``standard_error`` and ``replications`` agree with its per-replication values (recomputed here
with numpy and the Student-t quantile, independently of the mixin); every entry point returns
a result object with ``to_dict()``, whose long-run cost per unit time is ``cost``; a window is
a ``horizon`` after a ``warmup``; a bad argument is an ``ArgumentError`` naming it.
"""

import inspect
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from queue_routing import deadlines, multiskill, serverpools
from queue_routing.errors import ArgumentError
from queue_routing.stats import Replicated

TABLE1 = multiskill.table1()
CLUSTERS = deadlines.Instance.from_dict(
    {
        "arrival_rate": 3.0,
        "servers": [3, 2],
        "service_rates": [1.0, 0.8],
        "rejection_cost": 2.0,
        "deadline": {"kind": "constant", "t": 1.5},
    }
)
POOLS = serverpools.example_system("stable")


def _simulations():
    yield "multiskill", multiskill.simulate(TABLE1, "pi", horizon=20.0, replications=4, seed=3)
    yield (
        "deadlines",
        deadlines.evaluate(
            CLUSTERS, "pi", method="simulation", horizon=50.0, replications=4, seed=3
        ),
    )
    yield "serverpools", serverpools.time_average(POOLS, 200.0, horizon=5.0, replications=4, seed=3)


@pytest.fixture(scope="module")
def simulations():
    return dict(_simulations())


@pytest.mark.parametrize("part", ["multiskill", "deadlines", "serverpools"])
def test_every_simulation_result_carries_the_interval_protocol(simulations, part):
    result = simulations[part]
    assert isinstance(result, Replicated)
    values = np.asarray(result.replication_values, dtype=float)
    r = values.shape[0]
    assert result.replications == r == 4
    sd = values.std(axis=0, ddof=1)
    assert np.allclose(result.standard_error, sd / math.sqrt(r), rtol=1e-12)
    assert np.allclose(result.ci95, scipy_stats.t.ppf(0.975, r - 1) * sd / math.sqrt(r), rtol=1e-9)
    assert set(result.to_dict()) >= {"ci95"}


@pytest.mark.parametrize("part", ["multiskill", "deadlines"])
def test_a_cost_is_called_cost(simulations, part):
    result = simulations[part]
    assert "cost" in result.to_dict() and "cost_rate" not in result.to_dict()
    assert result.to_dict()["cost"] == pytest.approx(float(np.mean(result.replication_costs)))


def test_every_entry_point_returns_a_result_object_with_to_dict():
    solution = multiskill.solve(TABLE1, "exact")
    chain = deadlines.evaluate(CLUSTERS, "pi")
    analysis = serverpools.analyze(POOLS)
    for result in (solution, chain, analysis):
        out = result.to_dict()
        assert isinstance(out, dict) and out
    assert "cost" in solution.to_dict() and "cost" in chain.to_dict()


@pytest.mark.parametrize(
    "function",
    [multiskill.simulate, deadlines.simulate, deadlines.evaluate, serverpools.simulate],
    ids=["multiskill.simulate", "deadlines.simulate", "deadlines.evaluate", "serverpools.simulate"],
)
def test_a_window_is_a_horizon_after_a_warmup(function):
    parameters = inspect.signature(function).parameters
    assert {"horizon", "warmup"} <= set(parameters)
    assert not {"t_end", "burn_in", "window"} & set(parameters)


def test_confidence_is_the_one_name_of_a_confidence_level():
    for function in (
        multiskill.compare_policies,
        deadlines.compare_policies,
        serverpools.halves_test,
    ):
        parameters = set(inspect.signature(function).parameters)
        assert "confidence" in parameters and not {"alpha", "level"} & parameters


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: multiskill.simulate(TABLE1, "pi", horizon=-1.0), "horizon"),
        (lambda: deadlines.evaluate(CLUSTERS, "pi", method="simulation", horizon=0.0), "horizon"),
        (lambda: serverpools.time_average(POOLS, 100.0, horizon=5.0, warmup=-1.0), "warmup"),
        (lambda: multiskill.simulate(TABLE1, "pi", horizon=10.0, replications=1), "replications"),
    ],
)
def test_a_bad_argument_is_an_argument_error_naming_it(call, argument):
    with pytest.raises(ArgumentError) as info:
        call()
    assert info.value.argument == argument and str(info.value).startswith(argument)
