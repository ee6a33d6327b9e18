"""Simulation of a decision-table policy of Part A (the optimum, PI²) on the random numbers of
the compiled simulator (ours; ``docs/multiskill.md#the-optimal-dynamic-policy``).

A decision table (:mod:`.optimal`: flat over the states of the box ``0 <= x_j <= L_j`` in C
order, bit ``i - 1`` set routes a class-``i`` arrival to server ``i``) is not an index policy, so
:mod:`.simulation` cannot run it. This kernel simulates the same uniformised chain with the
same use of the streams of :func:`~.simulation.replication_states` as
:func:`~.simulation.simulate`'s kernel: one uniform of the ``events`` stream per step drawn
into the ``2C + 1`` events by the same alias table, one uniform of the ``start`` stream per
server for the initial geometric counts. With the same ``seed`` and ``keys`` a table policy
therefore sees, replication by replication, the event sequence and initial state that every
policy of :func:`~.simulation.simulate` sees (common random numbers: the paired comparison of
PI² against PI needs nothing more). An arrival that finds a count ``x_j`` above ``L_j`` is
decided by the table at the counts clipped to the box and counted (``table_bound``).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..errors import ArgumentError
from ..rng import next_uniform
from .model import Instance
from .optimal_kernels import chain_box, strides
from .policies import alias_table
from .replications import (
    ReplicationBlock,
    RunSpec,
    SimulationResult,
    check_args,
    replication_indices,
)
from .simulation import event_rates, replication_states

__all__ = ["simulate_table", "simulate_table_replications"]


@njit(cache=True, nogil=True)
def _table_kernel(
    n_classes, threshold, alias, mask, top, st, n_warm, n_steps, states, start_loads
):  # pragma: no cover - compiled
    """One replication under the decision table ``mask`` (the box ``top``, strides ``st``);
    returns
    ``(mean jobs (C + 1,), events, bound)`` as the simulator's kernel does for one policy."""
    ev = states[0].copy()
    init = states[2].copy()
    n = n_classes
    m = threshold.size
    x = np.zeros(n + 1, dtype=np.int64)
    for j in range(n + 1):  # one draw per server, used or not (the simulator's convention)
        u0 = next_uniform(init)
        if start_loads[j] > 0.0:
            x[j] = int(np.floor(np.log(1.0 - u0) / np.log(start_loads[j])))
    area = np.zeros(n + 1)
    last = np.zeros(n + 1, dtype=np.int64)
    events = 0
    bound = 0
    total = n_warm + n_steps
    for step in range(total):
        if step == n_warm:
            area[:] = 0.0
            last[:] = step
        u = next_uniform(ev) * m
        k = min(int(u), m - 1)
        if u - k >= threshold[k]:
            k = alias[k]
        if k < n:
            i = k + 1
            s = 0
            out = False
            for q in range(n + 1):
                xq = x[q]
                if xq > top[q]:
                    xq = top[q]
                    out = True
                s += xq * st[q]
            if out and step >= n_warm:
                bound += 1
            j = i if (mask[s] >> np.uint32(i - 1)) & np.uint32(1) else 0
            xj = x[j]
            area[j] += xj * (step + 1 - last[j])
            last[j] = step + 1
            x[j] = xj + 1
            events += 1
        else:
            j = k - n
            xj = x[j]
            if xj > 0:
                area[j] += xj * (step + 1 - last[j])
                last[j] = step + 1
                x[j] = xj - 1
                events += 1
    means = np.empty(n + 1)
    for j in range(n + 1):
        area[j] += x[j] * (total - last[j])
        means[j] = area[j] / n_steps
    return means, events, bound


def _check_table(instance: Instance, mask: np.ndarray, truncation) -> tuple:
    top = chain_box(instance.n_classes, truncation)
    mask = np.ascontiguousarray(mask, dtype=np.uint32).reshape(-1)
    need = int(np.prod(top + 1))
    if mask.size != need:
        raise ArgumentError(
            "mask",
            f"mask must have prod_j (L_j + 1) = {need} entries for the levels "
            f"{top.tolist()}, got {mask.size}",
        )
    return mask, top


def simulate_table_replications(
    instance: Instance,
    mask: np.ndarray,
    truncation,
    replications,
    *,
    name: str = "table",
    **run,
) -> ReplicationBlock:
    """Replications ``replications`` (indices) of the decision table ``mask`` on the box
    ``truncation`` (a level ``L`` for the cube, or the levels ``(L_0, ..., L_C)``), on the
    streams :func:`~.simulation.replication_states` ``(seed, keys, r)``; ``run`` as
    :func:`~.simulation.simulate_replications` takes it (``horizon``, ``warmup``, ``seed``,
    ``keys``, ``start``). The steps are those of the simulator:
    ``round(Lambda warmup)`` discarded, ``max(1, round(Lambda horizon))`` measured."""
    mask, top = _check_table(instance, mask, truncation)
    spec = RunSpec.checked(**run)
    indices = replication_indices(replications)
    lam = float(instance.eta.sum() + instance.mu.sum())
    n_steps, n_warm = max(1, round(lam * spec.horizon)), round(lam * spec.warmup)
    threshold, alias = alias_table(event_rates(instance))
    start_loads = spec.start_loads(instance)
    means = np.empty((len(indices), instance.n_classes + 1))
    events, bound = [], []
    for row, r in enumerate(indices):
        means[row], e, b = _table_kernel(
            instance.n_classes, threshold, alias, mask, top, strides(top), n_warm, n_steps,
            replication_states(spec.seed, spec.keys, r), start_loads,
        )  # fmt: skip
        events.append(e)
        bound.append(b)
    steps = len(indices) * (n_warm + n_steps)
    return ReplicationBlock.of_means(instance, name, indices, means, events, bound, steps=steps)


def simulate_table(
    instance: Instance,
    mask: np.ndarray,
    truncation,
    *,
    horizon: float,
    warmup: float | None = None,
    replications: int = 10,
    seed: int = 0,
    keys: tuple = (),
    start: str = "empty",
    name: str = "table",
) -> SimulationResult:
    """The decision table ``mask`` (on the box ``truncation``, as in
    :func:`simulate_table_replications`) simulated as
    :func:`~.simulation.simulate` simulates a policy: mean holding cost rate with a 95%
    interval, on common random numbers with the policies simulated with the same ``seed`` and
    ``keys``. ``table_bound`` counts the measured arrivals that found a count above the level.

    >>> from queue_routing.multiskill import Instance, simulate
    >>> from queue_routing.multiskill.optimal import pi2_table
    >>> inst = Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.6])
    >>> res = simulate_table(inst, pi2_table(inst, 20), 20, horizon=200.0, replications=4,
    ...                      seed=5, name="pi2")
    >>> res.policy, res.replications, res.table_bound
    ('pi2', 4, 0)
    """
    warmup = check_args(instance, horizon, warmup, replications, seed)
    t0 = time.perf_counter()
    block = simulate_table_replications(
        instance, mask, truncation, range(replications), name=name, horizon=horizon,
        warmup=warmup, seed=seed, keys=keys, start=start,
    )  # fmt: skip
    spec = RunSpec.checked(horizon=horizon, warmup=warmup, seed=seed, keys=keys, start=start)
    return SimulationResult.of_run(block, spec, wall_seconds=time.perf_counter() - t0)
