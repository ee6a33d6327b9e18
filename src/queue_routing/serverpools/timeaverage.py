"""Stationary time averages of one system at one scale (``queue-routing serverpools simulate``).

:func:`time_average` runs independent replications of the r-th system under LQFS-LB
(:func:`~.simulation.simulate`), each started at the nominal point r x*, discards a burn-in
(by default :func:`~.stationarity.derived_burn_in` from the leading eigenvalue of A_u and r),
averages the diffusion-scaled deviation |X^r(t) - r x*|/sqrt(r) over the next ``horizon``
time units, and tests the window with the first-half / second-half test
(:func:`~.stationarity.halves_test`). ``docs/serverpools.md``, "Stationarity, intervals and
the verdict".

Units: times in units of 1/mu; ``diffusion_deviation`` in customers / sqrt(r),
``fluid_deviation`` = diffusion_deviation / sqrt(r) in customers per unit r.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import NotUnderloadedError, ServerPoolError
from .linear import stability_verdict
from .model import ServerPoolSystem, SPPSolution
from .simulation import simulate
from .spp import solve_spp
from .stationarity import (
    DEFAULT_BURN_IN_MARGIN,
    DEFAULT_LEVEL,
    StationarityCheck,
    derived_burn_in,
    halves_test,
    mean_interval,
)

__all__ = ["MAX_SIMULATED_EVENTS", "SimulateArgumentError", "TimeAverageEstimate", "time_average"]

#: Most events (arrivals plus service completions, expected) one call may simulate: about
#: 20 minutes of the compiled kernel.
MAX_SIMULATED_EVENTS = 10**10


class SimulateArgumentError(ServerPoolError):
    """A bad argument of :func:`time_average`; ``argument`` names it and the message starts
    with its name (the CLI reports it as a usage error of that option)."""

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(message)


@dataclass(frozen=True)
class TimeAverageEstimate:
    """Stationary time average of the diffusion-scaled deviation (:func:`time_average`).

    ``diffusion_deviation``: mean over the replications of the time average of
    |X^r(t) - r x*|/sqrt(r) over ``[burn_in, burn_in + horizon]``; ``ci95``: half-width of its
    95% Student-t interval; ``fluid_deviation``: the same for |X^r(t)/r - x*|
    (= diffusion_deviation / sqrt(r)); ``stationary``: the window passes the first-half /
    second-half test (``stationarity``); ``events``: simulated over all replications;
    ``per_replication``: each replication's time average.
    """

    r: float
    horizon: float
    burn_in: float
    replications: int
    diffusion_deviation: float
    ci95: float
    fluid_deviation: float
    stationary: bool
    stationarity: StationarityCheck
    events: int
    per_replication: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``queue-routing serverpools simulate``."""
        return {
            "diffusion_deviation": float(self.diffusion_deviation),
            "ci95": float(self.ci95),
            "fluid_deviation": float(self.fluid_deviation),
            "stationary": bool(self.stationary),
            "burn_in": float(self.burn_in),
            "events": int(self.events),
        }


def _finite(value: Any, name: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise SimulateArgumentError(name, f"{name} must be a number, got {value!r:.40}")
    value = float(value)
    ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
    if not ok:
        rule = "> 0" if positive else ">= 0"
        raise SimulateArgumentError(name, f"{name} must be finite and {rule}, got {value:g}")
    return value


def time_average(
    system: ServerPoolSystem | SPPSolution,
    r: float,
    *,
    horizon: float = 100.0,
    burn_in: float | None = None,
    replications: int = 5,
    seed: int = 0,
    keys: tuple = ("cli",),
    batches: int = 10,
    level: float = DEFAULT_LEVEL,
    margin: float = DEFAULT_BURN_IN_MARGIN,
) -> TimeAverageEstimate:
    """Stationary time average of |X^r - r x*|/sqrt(r) of an underloaded system at scale r.

    ``horizon``: the measured window after the burn-in (time units); ``burn_in``: default
    :func:`~.stationarity.derived_burn_in` of A_u's leading real part, r and ``margin``;
    ``replications`` (>= 2) independent runs, run k drawing from the streams
    ``(seed, (*keys, int(r), k))``; the window is cut into ``batches`` for the stationarity
    test at ``level``. Raises :class:`~.errors.NotUnderloadedError` for rho >= 1 (there is
    no underloaded equilibrium r x* to measure from), :class:`SimulateArgumentError` for a
    bad argument (also when ``r beta_j`` rounds to no server or the run would exceed
    :data:`MAX_SIMULATED_EVENTS`), and :class:`~.errors.ServerPoolError` for a malformed
    system.

    One class, one pool (an M/M/N queue whose stationary law is nearly Poisson(r psi*)):

    >>> est = time_average(ServerPoolSystem([1.2], [3.0], [[0.8]]), 200, horizon=50.0,
    ...                    replications=3, seed=1)
    >>> sorted(est.to_dict())
    ['burn_in', 'ci95', 'diffusion_deviation', 'events', 'fluid_deviation', 'stationary']
    >>> est.stationary, round(est.burn_in, 3)  # ln(1000) / (2 * 0.8)
    (True, 4.317)
    """
    solution = system if isinstance(system, SPPSolution) else None
    if solution is None:
        if not isinstance(system, ServerPoolSystem):
            raise ServerPoolError(
                f"expected a ServerPoolSystem or SPPSolution, got {type(system).__name__}"
            )
        solution = solve_spp(system)
    if not solution.underloaded:
        raise NotUnderloadedError(
            solution.rho,
            "simulate measures deviations from the underloaded equilibrium r x*, which exists "
            "only for rho < 1",
        )
    r = _finite(r, "scale", positive=True)
    horizon = _finite(horizon, "horizon", positive=True)
    if isinstance(replications, bool) or not isinstance(replications, int | np.integer):
        raise SimulateArgumentError("replications", "replications must be an integer >= 2")
    if replications < 2:
        raise SimulateArgumentError(
            "replications", f"replications must be >= 2 (an interval needs two), got {replications}"
        )
    servers = np.rint(r * solution.system.pool_sizes)
    if np.any(servers < 1):
        j = int(np.argmin(servers))
        raise SimulateArgumentError(
            "scale",
            f"scale r = {r:g} gives pool {j + 1} no server (r beta_{j + 1} = "
            f"{r * solution.system.pool_sizes[j]:.3g} rounds to 0); use r >= "
            f"{0.5 / solution.system.pool_sizes[j]:.3g}",
        )
    gamma = stability_verdict(solution).max_real_underloaded
    if burn_in is None:
        if gamma == 0:
            raise SimulateArgumentError(
                "burn_in", "burn_in cannot be derived (A_u has a zero leading real part): set it"
            )
        burn_in = derived_burn_in(gamma, r, margin=margin)
    else:
        burn_in = _finite(burn_in, "burn_in", positive=False)
    t_end = burn_in + horizon
    expected = 2.0 * r * float(solution.system.arrival_rates.sum()) * t_end * int(replications)
    if expected > MAX_SIMULATED_EVENTS:
        raise SimulateArgumentError(
            "scale",
            f"scale, horizon and replications ask for about {expected:.2g} events (limit "
            f"{MAX_SIMULATED_EVENTS:.0e}): lower --scale, --horizon or --replications",
        )
    values, batch, events = [], [], 0
    for k in range(int(replications)):
        run = simulate(
            solution,
            r,
            t_end,
            max(horizon / 100.0, 1e-3),
            int(seed),
            (*keys, int(r), k),
            warmup=burn_in,
            batches=int(batches),
        )
        values.append(run.mean_norm)
        batch.append(run.batch_mean_norm)
        events += run.events
    iv = mean_interval(values, confidence=0.95)
    check = halves_test(np.array(batch), level=level)
    return TimeAverageEstimate(
        r=r,
        horizon=horizon,
        burn_in=float(burn_in),
        replications=int(replications),
        diffusion_deviation=iv.mean,
        ci95=iv.half_width,
        fluid_deviation=iv.mean / math.sqrt(r),
        stationary=check.stationary,
        stationarity=check,
        events=int(events),
        per_replication=tuple(float(v) for v in values),
    )
