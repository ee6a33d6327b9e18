"""Stationary time averages of one system at one scale (``queue-routing serverpools simulate``).

:func:`time_average` runs independent replications of the r-th system under LQFS-LB
(:func:`~.simulation.simulate`), each started at the nominal point r x*, discards a warm-up
(by default :func:`~.stationarity.derived_warmup` from the leading eigenvalue of A_u and r),
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
from typing import Any, ClassVar

import numpy as np

from ..checks import integer, nonnegative_int, positive, replication_count, time_length
from ..errors import ArgumentError
from ..stats import Replicated
from .errors import NotUnderloadedError, ServerPoolError
from .linear import stability_verdict
from .model import ServerPoolSystem, SPPSolution
from .simulation import simulate
from .spp import solve_spp
from .stationarity import (
    DEFAULT_STATIONARITY_CONFIDENCE,
    DEFAULT_WARMUP_MARGIN,
    StationarityCheck,
    derived_warmup,
    halves_test,
    mean_interval,
)

__all__ = ["MAX_SIMULATED_EVENTS", "TimeAverageEstimate", "time_average"]

#: Most events (arrivals plus service completions, expected) one call may simulate: about
#: 20 minutes of the compiled kernel.
MAX_SIMULATED_EVENTS = 10**10


@dataclass(frozen=True)
class TimeAverageEstimate(Replicated):
    """Stationary time average of the diffusion-scaled deviation (:func:`time_average`).

    ``diffusion_deviation``: mean over the replications of the time average of
    |X^r(t) - r x*|/sqrt(r) over ``[warmup, warmup + horizon]``; ``ci95``: half-width of its
    95% Student-t interval; ``fluid_deviation``: the same for |X^r(t)/r - x*|
    (= diffusion_deviation / sqrt(r)); ``stationary``: the window passes the first-half /
    second-half test (``stationarity``); ``events``: simulated over all replications;
    ``replication_deviations``: each replication's time average, shape ``(R,)``
    (:attr:`replication_field`; ``replications`` and ``standard_error`` follow from it,
    :class:`~queue_routing.stats.Replicated`).
    """

    replication_field: ClassVar[str] = "replication_deviations"

    r: float
    horizon: float
    warmup: float
    diffusion_deviation: float
    ci95: float
    fluid_deviation: float
    stationary: bool
    stationarity: StationarityCheck
    events: int
    replication_deviations: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``queue-routing serverpools simulate``."""
        return {
            "diffusion_deviation": float(self.diffusion_deviation),
            "ci95": float(self.ci95),
            "fluid_deviation": float(self.fluid_deviation),
            "stationary": bool(self.stationary),
            "warmup": float(self.warmup),
            "events": int(self.events),
        }


def smallest_scale(pool_sizes: np.ndarray) -> float:
    """A scale r, shown to three significant digits, that gives every pool a server:
    ``round(r beta_j) >= 1`` needs ``r beta_j > 1/2`` (``round`` takes a half to the even 0),
    i.e. ``r > 1 / (2 min_j beta_j)``; the three-digit number above that bound.

    >>> smallest_scale(np.array([0.02, 1.0]))  # the bound 25 itself gives 0.5: no server
    25.1
    """
    bound = 0.5 / float(np.min(pool_sizes))
    step = 10.0 ** (math.floor(math.log10(bound)) - 2)
    r = float(f"{(math.floor(bound / step) + 1) * step:.3g}")
    while np.any(np.rint(r * pool_sizes) < 1):  # a bound just below a three-digit number
        r = float(f"{r + step:.3g}")
    return r


def time_average(
    system: ServerPoolSystem | SPPSolution,
    r: float,
    *,
    horizon: float = 100.0,
    warmup: float | None = None,
    replications: int = 5,
    seed: int = 0,
    keys: tuple = ("cli",),
    batches: int = 10,
    stationarity_confidence: float = DEFAULT_STATIONARITY_CONFIDENCE,
    margin: float = DEFAULT_WARMUP_MARGIN,
    progress: Any = None,
) -> TimeAverageEstimate:
    """Stationary time average of |X^r - r x*|/sqrt(r) of an underloaded system at scale r.

    ``horizon``: the measured window after the warm-up (time units); ``warmup``: default
    :func:`~.stationarity.derived_warmup` of A_u's leading real part, r and ``margin``;
    ``replications`` (>= 2) independent runs, run k drawing from the streams
    ``(seed, (*keys, int(r), k))``; the window is cut into ``batches`` for the stationarity
    test at ``stationarity_confidence`` (a stationary window is flagged with probability
    1 - stationarity_confidence). ``progress``: a callable advanced once per replication (a
    :class:`~queue_routing.progress.Progress` also shows how far the replication under way
    is); ``None``: silent. Raises :class:`~.errors.NotUnderloadedError` for rho >= 1
    (there is no underloaded equilibrium r x* to measure from),
    :class:`~queue_routing.errors.ArgumentError` for a bad argument (also when ``r beta_j``
    rounds to no server or the run would exceed :data:`MAX_SIMULATED_EVENTS`; ``scale`` names
    r), and :class:`~.errors.ServerPoolError` for a malformed system.

    One class, one pool (an M/M/N queue whose stationary law is nearly Poisson(r psi*)):

    >>> est = time_average(ServerPoolSystem([1.2], [3.0], [[0.8]]), 200, horizon=50.0,
    ...                    replications=3, seed=1)
    >>> sorted(est.to_dict())
    ['ci95', 'diffusion_deviation', 'events', 'fluid_deviation', 'stationary', 'warmup']
    >>> est.stationary, round(est.warmup, 3)  # ln(1000) / (2 * 0.8)
    (True, 4.317)
    >>> est.replications, est.standard_error > 0
    (3, True)
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
    r = positive("scale", r)
    horizon = time_length("horizon", horizon)
    replications = replication_count(replications)
    seed = nonnegative_int("seed", seed)
    batches = integer("batches", batches, 4)
    servers = np.rint(r * solution.system.pool_sizes)
    if np.any(servers < 1):
        j = int(np.argmin(servers))
        raise ArgumentError(
            "scale",
            f"scale r = {r:g} gives pool {j + 1} no server (r beta_{j + 1} = "
            f"{r * solution.system.pool_sizes[j]:.3g} rounds to 0); use r >= "
            f"{smallest_scale(solution.system.pool_sizes):.3g}",
        )
    gamma = stability_verdict(solution).max_real_underloaded
    if warmup is None:
        if gamma == 0:
            raise ArgumentError(
                "warmup", "warmup cannot be derived (A_u has a zero leading real part): set it"
            )
        warmup = derived_warmup(gamma, r, margin=margin)
    else:
        warmup = time_length("warmup", warmup, allow_zero=True)
    t_end = warmup + horizon
    expected = 2.0 * r * float(solution.system.arrival_rates.sum()) * t_end * replications
    if expected > MAX_SIMULATED_EVENTS:
        raise ArgumentError(
            "scale",
            f"scale, horizon and replications ask for about {expected:.2g} events (limit "
            f"{MAX_SIMULATED_EVENTS:.0e}): lower --scale, --horizon or --replications",
        )
    values, batch, events = [], [], 0
    for k in range(replications):
        run = simulate(
            solution,
            r,
            horizon=horizon,
            warmup=warmup,
            record_every=max(horizon / 100.0, 1e-3),
            seed=seed,
            keys=(*keys, int(r), k),
            batches=batches,
            progress=progress,
        )
        if progress is not None:
            progress()
        values.append(run.mean_norm)
        batch.append(run.batch_mean_norm)
        events += run.events
    iv = mean_interval(values, confidence=0.95)
    check = halves_test(np.array(batch), confidence=stationarity_confidence)
    return TimeAverageEstimate(
        r=r,
        horizon=horizon,
        warmup=float(warmup),
        diffusion_deviation=iv.mean,
        ci95=iv.half_width,
        fluid_deviation=iv.mean / math.sqrt(r),
        stationary=check.stationary,
        stationarity=check,
        events=int(events),
        replication_deviations=tuple(float(v) for v in values),
    )
