"""The paper's fixed-point algorithm (Algorithm 1, Sec. 4.2, reconstructed).

State: a partition (C_d, C_b, C_0). One iteration computes rho_0 from the partition by
equation (10), clips it to [0, 1] (an overloaded server 0 counts as load 1, i.e.
1/(1 - rho_0) = inf), reclassifies every class by Proposition 2 at that rho_0 and updates the
partition. The update rule is ambiguous in the paper, so both readings are implemented:

``jacobi``
    every misclassified class moves to its new set at once (deterministic);
``single``
    one misclassified class, drawn uniformly at random, moves per iteration (as in the
    authors' code).

``iterations`` counts partition changes; the algorithm stops when no class moves. Under
``jacobi`` a revisited partition proves an endless cycle, which is reported (never hidden)
as ``converged=False`` with the cycle. Under ``single`` a revisit is not proof (the next draw
may differ), so the run stops at ``max_iterations`` instead and reports the revisits.

With exact arithmetic a fixed point of the algorithm is the optimum: its rho_0 solves the
linear piece of the flow equation of its own partition (see :mod:`.exact`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..seeding import rng_for
from .model import BOTH, DEDICATED, SHARED, Instance, InstanceError, Partition, partition_at
from .result import Solution

__all__ = [
    "INITIAL_PARTITIONS",
    "UPDATE_RULES",
    "FixedPointTrace",
    "fixed_point",
    "initial_partition",
    "loads_of_partition",
    "rho0_of_partition",
]

UPDATE_RULES = ("jacobi", "single")
INITIAL_PARTITIONS = ("dedicated", "both", "shared", "random")

Update = Literal["jacobi", "single"]


def rho0_of_partition(
    labels: np.ndarray, mu: np.ndarray, eta: np.ndarray, delta: np.ndarray
) -> float:
    """Equation (10): rho_0 = 1 - (mu_0 + sum_{C_b} mu_j - sum_{C_b u C_0} eta_j)
    / (mu_0 + sum_{C_b} delta_j mu_j), unclipped (dimensionless)."""
    b = labels == BOTH
    z = labels == SHARED
    num = mu[0] + mu[1:][b].sum() - eta[b | z].sum()
    den = mu[0] + (delta[b] * mu[1:][b]).sum()
    return float(1.0 - num / den)


def loads_of_partition(
    labels: np.ndarray, rho0: float, mu: np.ndarray, eta: np.ndarray, delta: np.ndarray
) -> np.ndarray:
    """Loads implied by a partition at a given rho_0 (Proposition 2 and equation (11)):
    eta_j/mu_j on C_d, 1 - delta_j (1 - rho_0) on C_b, 0 on C_0. Not clipped: a
    misclassified class can show a load outside [0, eta_j/mu_j], as in Fig. 6."""
    r = eta / mu[1:]
    dedicated = np.where(labels == DEDICATED, r, 0.0)
    both = np.where(labels == BOTH, 1.0 - delta * (1.0 - rho0), 0.0)
    return np.concatenate([[rho0], dedicated + both])


def initial_partition(
    kind: str | Partition,
    n_classes: int,
    rng: np.random.Generator | None = None,
    *,
    p_shared: float = 0.1,
    p_both: float = 0.3,
) -> Partition:
    """The initial partitions of Algorithm 1 (``docs/multiskill.md#fixed-point-algorithm``).

    ``"dedicated"`` (all in C_d), ``"both"`` (all in C_b), ``"shared"`` (all in C_0), an explicit
    :class:`Partition`, or ``"random"``: each class to C_0 with probability ``p_shared``, to C_b
    with probability ``p_both``, else to C_d (needs ``rng``).
    """
    if isinstance(kind, Partition):
        if kind.labels.size != n_classes:
            raise InstanceError(
                f"initial partition has {kind.labels.size} classes, instance has {n_classes}"
            )
        return kind
    fixed = {"dedicated": DEDICATED, "both": BOTH, "shared": SHARED}
    if kind in fixed:
        return Partition(np.full(n_classes, fixed[kind], dtype=np.int8))
    if kind == "random":
        if rng is None:
            raise ValueError("a random initial partition needs an rng")
        if not (0 <= p_shared and 0 <= p_both and p_shared + p_both <= 1):
            raise ValueError(
                "random partition: need p_shared, p_both >= 0 and p_shared + p_both <= 1, "
                f"got {p_shared}, {p_both}"
            )
        u = rng.random(n_classes)
        labels = np.where(u < p_shared, SHARED, np.where(u < p_shared + p_both, BOTH, DEDICATED))
        return Partition(labels.astype(np.int8))
    raise InstanceError(f"unknown initial partition {kind!r}; use one of {INITIAL_PARTITIONS}")


@dataclass(frozen=True)
class FixedPointTrace:
    """Per-iteration record of Algorithm 1.

    ``partitions[k]`` is the partition after k changes (``partitions[0]`` the initial one);
    ``loads[k]`` the loads it implies at its rho_0 (equation (10), clipped to [0, 1]), shape
    ``(iterations + 1, C + 1)``; ``cycle`` the partitions of a detected cycle (empty if none).
    """

    partitions: tuple[Partition, ...]
    loads: np.ndarray
    cycle: tuple[Partition, ...] = ()
    revisits: int = 0


def _round_half_up(x, decimals: int):
    """Rounding as the authors' code did it (to the given number of decimals)."""
    return np.round(np.asarray(x, dtype=float), decimals)


def fixed_point(
    instance: Instance,
    *,
    update: Update = "jacobi",
    init: str | Partition = "dedicated",
    seed: int | None = 0,
    rng: np.random.Generator | None = None,
    paper_rounding: bool = False,
    max_iterations: int | None = None,
    p_shared: float = 0.1,
    p_both: float = 0.3,
) -> Solution:
    """Run Algorithm 1 on ``instance``.

    Parameters
    ----------
    update:
        ``"jacobi"`` or ``"single"`` (see the module docstring).
    init:
        Initial partition: ``"dedicated"``, ``"both"``, ``"shared"``, ``"random"`` or a
        :class:`Partition`.
    seed, rng:
        Randomness for ``init="random"`` and ``update="single"``: ``rng`` if given, else a
        stream keyed by ``seed``.
    paper_rounding:
        Round c/mu and delta to 2 decimals and rho_0 to 3 decimals, as the authors' code did.
        Off by default; with it a fixed point can differ from the exact optimum.
    max_iterations:
        Cap on partition changes (default ``50 * C + 100``).

    Returns
    -------
    Solution
        ``method="fixed-point"``; ``iterations`` = number of partition changes;
        ``converged`` is False on a cycle or at the cap, with ``message`` saying which;
        ``info["trace"]`` is the :class:`FixedPointTrace`; loads are those of the final
        partition (the optimum when converged without rounding).

    Examples
    --------
    On Table 1, all classes moved at once from the all-dedicated partition cycle (reported, not
    hidden); one class at a time converges to the exact optimum:

    >>> from queue_routing.multiskill import fixed_point, solve_exact, table1
    >>> jac = fixed_point(table1(), update="jacobi", init="dedicated")
    >>> jac.converged, jac.info["status"]
    (False, 'cycle')
    >>> one = fixed_point(table1(), update="single", init="dedicated", seed=3)
    >>> one.converged, one.partition == solve_exact(table1()).partition
    (True, True)
    """
    if update not in UPDATE_RULES:
        raise InstanceError(f"unknown update rule {update!r}; use one of {UPDATE_RULES}")
    n = instance.n_classes
    if rng is None:
        rng = rng_for(0 if seed is None else seed, "multiskill-fixed-point")
    cap = 50 * n + 100 if max_iterations is None else int(max_iterations)
    mu, eta, cost = instance.mu, instance.eta, instance.cost
    if paper_rounding:
        c_over_mu = _round_half_up(cost / mu, 2)
        dlt = _round_half_up(np.sqrt(c_over_mu[1:] / c_over_mu[0]), 2)
    else:
        dlt = instance.delta
    r = eta / mu[1:]

    def rho0_clipped(labels: np.ndarray) -> float:
        rho0 = min(max(rho0_of_partition(labels, mu, eta, dlt), 0.0), 1.0)
        return float(_round_half_up(rho0, 3)) if paper_rounding else rho0

    labels = initial_partition(init, n, rng, p_shared=p_shared, p_both=p_both).labels.copy()
    seen: dict[bytes, int] = {labels.tobytes(): 0}
    history = [labels.copy()]
    rho0 = rho0_clipped(labels)
    traj = [loads_of_partition(labels, rho0, mu, eta, dlt)]
    status, cycle, revisits = "cap", (), 0
    changes = 0
    while True:
        target = partition_at(np.asarray(1.0 - rho0), dlt, r)
        wrong = np.flatnonzero(target != labels)
        if wrong.size == 0:
            status = "converged"
            break
        if changes >= cap:
            break
        if update == "jacobi":
            labels = target
        else:
            i = wrong[rng.integers(wrong.size)]
            labels = labels.copy()
            labels[i] = target[i]
        changes += 1
        key = labels.tobytes()
        rho0 = rho0_clipped(labels)
        history.append(labels.copy())
        traj.append(loads_of_partition(labels, rho0, mu, eta, dlt))
        if key in seen:
            revisits += 1
            if update == "jacobi":
                start = seen[key]
                cycle = tuple(Partition(p) for p in history[start:-1])
                status = "cycle"
                break
        else:
            seen[key] = changes

    final = Partition(labels)
    loads = traj[-1].copy()
    if status == "converged":
        message = f"converged after {changes} partition changes"
    elif status == "cycle":
        message = (
            f"no fixed point: the jacobi update cycles through {len(cycle)} partitions "
            f"({' -> '.join(map(repr, cycle))})"
        )
    else:
        message = f"not converged within {cap} partition changes ({revisits} revisits)"
    trace = FixedPointTrace(
        partitions=tuple(Partition(p) for p in history),
        loads=np.array(traj),
        cycle=cycle,
        revisits=revisits,
    )
    return Solution(
        instance=instance,
        loads=loads,
        partition=final,
        method="fixed-point",
        iterations=changes,
        converged=status == "converged",
        message=message,
        info={"trace": trace, "update": update, "paper_rounding": paper_rounding, "status": status},
    )
