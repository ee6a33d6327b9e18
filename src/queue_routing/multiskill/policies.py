"""The routing policies of Part A on an :class:`~queue_routing.multiskill.model.Instance`.

Model and policies: ``docs/multiskill.md#index-policy-simulations``. This module is the one
translation from a policy to what the simulators (:mod:`.simulation`, :mod:`.general`) and
the exact chain (:mod:`.markov`) take: the catalogue :data:`POLICIES`, the resolution of a
name or a user policy (:func:`resolve`, ``docs/README.md#your-own-policy``), optimal
Bernoulli routing's probabilities and arrival rates, the index weights, and the kernels'
arrays of a policy (:func:`policy_arrays`, :func:`table_index`, :func:`alias_table`). Part
B's counterpart is :mod:`queue_routing.deadlines.policies`.

Every index policy sends an arriving class-``i`` job to ``argmin_{j in {i, 0}} w_j (x_j +
1)`` with a per-server weight ``w`` (:func:`policy_weights`), ties to the dedicated server; a
user policy's index is tabulated for ``x_j = 0..table_size`` jobs, and an arrival that finds
a compared server beyond the table is counted and reported (:func:`warn_table_bound`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numba import njit

from ..checks import nonnegative_int
from ..errors import ArgumentError, TableBoundWarning
from ..user_policy import DEFAULT_TABLE_SIZE, UserPolicy, resolve_policy
from .exact import solve_exact
from .model import Instance

__all__ = [
    "POLICIES",
    "POLICY_DESCRIPTIONS",
    "TableBoundWarning",
    "alias_table",
    "arrival_rates",
    "bernoulli_probabilities",
    "policy_arrays",
    "policy_weights",
]

#: The routing policies (``docs/multiskill.md#index-policy-simulations``).
POLICIES = ("bernoulli", "jsq", "led", "io", "pi")
#: One line on each policy (the CLI's help shows them).
POLICY_DESCRIPTIONS = {
    "bernoulli": "optimal Bernoulli routing (the exact solver's probabilities)",
    "jsq": "join the shorter of the two queues",
    "led": "least expected delay, index (x_j + 1)/mu_j",
    "io": "the job's own holding cost, index c_j (x_j + 1)/mu_j",
    "pi": "one policy-improvement step from optimal Bernoulli, index "
    "c_j (x_j + 1)/(mu_j - lambda_j*)",
}

#: Most entries of a user policy's index table (80 MB of doubles).
MAX_TABLE_ENTRIES = 10**7


def warn_table_bound(block: Any, table_size: int) -> None:
    """A :class:`~queue_routing.errors.TableBoundWarning` naming how many measured arrivals
    of ``block`` (a replication block of a user policy, with ``policy`` and
    ``table_bound``) found a server beyond its index table of ``table_size`` jobs; the
    warning points at the caller of the simulator that calls this."""
    warnings.warn(
        f"table_size: {block.table_bound} measured arrivals under {block.policy} found a "
        f"server beyond the index table (x > {table_size}; decided as if it were +inf); "
        "raise table_size",
        TableBoundWarning,
        stacklevel=3,
    )


def check_policy(policy: str) -> str:
    """``policy`` if it is a name of :data:`POLICIES`, else an
    :class:`~queue_routing.errors.ArgumentError` naming the choices."""
    if policy not in POLICIES:
        raise ArgumentError(
            "policy", f"policy must be one of {', '.join(POLICIES)}; got {policy!r}"
        )
    return policy


def resolve(policy: Any) -> str | UserPolicy:
    """A built-in name of :data:`POLICIES` or a :class:`~queue_routing.user_policy.UserPolicy`
    (from ``"path.py:name"``, a callable or a ``UserPolicy``;
    :func:`~queue_routing.user_policy.resolve_policy`)."""
    return resolve_policy(policy, POLICIES)


def bernoulli_probabilities(instance: Instance) -> np.ndarray:
    """``p_i`` (shape ``(C,)``): fraction of class ``i`` routed to server ``i`` at the optimum.

    The optimal static routing of LOAD-OPT (exact solver, ``Solution.probabilities``).
    """
    return np.asarray(solve_exact(instance).probabilities, dtype=float)


def arrival_rates(instance: Instance, probabilities: np.ndarray | None = None) -> np.ndarray:
    """Arrival rates ``lambda_j`` (jobs per unit time, shape ``(C + 1,)``) under Bernoulli routing.

    ``lambda_i = eta_i p_i`` for ``i >= 1`` and ``lambda_0 = sum_i eta_i (1 - p_i)``; with
    ``probabilities=None`` the optimal ``p`` (:func:`bernoulli_probabilities`), i.e. the
    ``lambda*`` of the PI index.
    """
    p = bernoulli_probabilities(instance) if probabilities is None else np.asarray(probabilities)
    lam = np.empty(instance.n_classes + 1)
    lam[1:] = instance.eta * p
    lam[0] = float(np.sum(instance.eta * (1.0 - p)))
    return lam


def policy_weights(instance: Instance, policy: str) -> np.ndarray:
    """Per-server index weights ``w_j`` (shape ``(C + 1,)``) of an index policy.

    An arriving class-``i`` job goes to server ``i`` iff ``w_i (x_i + 1) <= w_0 (x_0 + 1)``
    (ties to the dedicated server), else to server 0. ``w_j (x_j + 1)`` is

    * ``jsq``: ``x_j + 1`` (``w = 1``, jobs);
    * ``led``: ``(x_j + 1)/mu_j``, the expected time the job would spend at server ``j``
      under FCFS (``w = 1/mu``, time per job);
    * ``io``: ``c_j (x_j + 1)/mu_j``, the job's own expected holding cost (``w = c/mu``);
    * ``pi``: ``c_j (x_j + 1)/(mu_j - lambda_j*)`` (``w = c/(mu - lambda*)``): the increment
      ``h_j(x_j + 1) - h_j(x_j)`` of the relative value ``h_j(x) = c_j x (x + 1) /
      (2 (mu_j - lambda_j*))`` of server ``j`` as an M/M/1 queue under optimal Bernoulli
      routing, so routing by it is one policy-improvement step from that routing and its
      cost is never higher.

    ``bernoulli`` is not an index policy: use :func:`bernoulli_probabilities`.
    """
    check_policy(policy)
    mu, cost = instance.mu, instance.cost
    if policy == "jsq":
        w = np.ones_like(mu)
    elif policy == "led":
        w = 1.0 / mu
    elif policy == "io":
        w = cost / mu
    elif policy == "pi":
        w = cost / (mu - arrival_rates(instance))
        if not np.all(np.isfinite(w) & (w > 0)):  # pragma: no cover - optimum is stable
            raise ValueError("pi: optimal Bernoulli routing leaves a server with load >= 1")
    else:
        raise ValueError("bernoulli is not an index policy; use bernoulli_probabilities()")
    return np.ascontiguousarray(w, dtype=float)


def policy_arrays(
    instance: Instance, policy: Any, table_size: int = DEFAULT_TABLE_SIZE
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(mode, probabilities, weights)`` for the kernels, the one translation of a policy.

    * mode 0, Bernoulli: ``probabilities`` the ``p_i`` (shape ``(C,)``), ``weights`` unused;
    * mode 1, a built-in index policy: ``weights`` the ``w_j`` of :func:`policy_weights`
      (shape ``(C + 1,)``), the rule ``w_i (x_i + 1) <= w_0 (x_0 + 1)``;
    * mode 2, a user policy (:mod:`queue_routing.user_policy`): ``weights`` the index table
      ``table[j, x]``, ``x = 0..table_size``, flattened row by row (shape ``((C + 1)
      (table_size + 1),)``; :func:`table_index` reads it), the rule ``table[i, x_i] <=
      table[0, x_0]`` with ``+inf`` beyond the table.

    The three modes have the same argument types, so a kernel takes any policy through the
    same signature. ``table_size`` matters for mode 2 only (at least 1, and at most
    :data:`MAX_TABLE_ENTRIES` entries in all).
    """
    policy = resolve(policy)
    if isinstance(policy, UserPolicy):
        table_size = nonnegative_int("table_size", table_size)
        if table_size < 1:
            raise ArgumentError("table_size", f"table_size must be >= 1, got {table_size}")
        entries = (instance.n_classes + 1) * (table_size + 1)
        if entries > MAX_TABLE_ENTRIES:
            raise ArgumentError(
                "table_size",
                f"table_size: {instance.n_classes + 1} servers x {table_size + 1} job counts "
                f"= {entries} index entries exceeds {MAX_TABLE_ENTRIES}",
            )
        table = policy.index_table(instance.n_classes + 1, table_size, instance)
        return 2, np.zeros(instance.n_classes), np.ascontiguousarray(table.ravel())
    if policy == "bernoulli":
        return 0, np.ascontiguousarray(bernoulli_probabilities(instance)), np.ones_like(instance.mu)
    return 1, np.zeros(instance.n_classes), policy_weights(instance, policy)


@njit(cache=True, nogil=True, inline="always")
def table_index(weight, width, j, xj):  # pragma: no cover - compiled
    """Mode 2's index of server ``j`` holding ``xj`` jobs: ``table[j, xj]`` of the table
    flattened into ``weight`` (rows of ``width`` entries), ``+inf`` beyond it."""
    if xj >= width:
        return np.inf
    return weight[j * width + xj]


def alias_table(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table (Vose's construction) for drawing ``k`` w.p. ``rates_k / sum(rates)``.

    Returns ``(threshold, alias)``, both of shape ``(m,)``: draw ``u ~ U(0, m)``, ``k =
    floor(u)``; the answer is ``k`` if ``u - k < threshold[k]`` else ``alias[k]``. O(1) per
    draw after an O(m) construction. Deterministic (no randomness), exact up to rounding.
    """
    rates = np.asarray(rates, dtype=float)
    m = rates.size
    scaled = rates * (m / rates.sum())
    threshold = np.ones(m)
    alias = np.arange(m, dtype=np.int64)
    small = [k for k in range(m) if scaled[k] < 1.0]
    large = [k for k in range(m) if scaled[k] >= 1.0]
    while small and large:
        s, big = small.pop(), large.pop()
        threshold[s] = scaled[s]
        alias[s] = big
        scaled[big] -= 1.0 - scaled[s]
        (small if scaled[big] < 1.0 else large).append(big)
    # Leftovers (rounding) keep threshold 1: they are drawn with their own index.
    return threshold, alias
