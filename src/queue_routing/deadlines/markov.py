"""The truncated Markov chain of Part B: exact evaluation of a policy and optimal control
(``docs/deadlines.md#truncated-chain`` and ``#optimal-policy``);
Niño-Mora (2012).

State ``x = (x_1..x_n)``, ``x_k`` jobs in cluster ``k`` (``0..L``), where the level ``L`` is
the ``truncation`` argument of every function here; a cluster at level ``L`` cannot admit.
Arrivals at rate ``lam`` (jobs per unit time); cluster ``k`` completes at rate
``mu_k min(x_k, m_k)``. A job routed to cluster ``k`` in state ``x`` misses its deadline with
probability ``P_k^miss(x_k)`` (decided at arrival, costs 1); a rejected job costs ``R``.

Truncation. A job the policy cannot place because of the level ``L`` is *lost* (pure
routing with every cluster full, or a Bernoulli-split job sent to a full cluster): it is not
charged and its rate is reported as ``lost_rate``. ``truncation_rate`` is the rate of arrivals
whose decision the level ``L`` changed (lost jobs included); both should be negligible for
the result to describe the untruncated system. Index tables are read like the simulator
reads them: beyond a row's last entry the cluster is treated as full (an index of ``+inf``
*within* a row is an index beyond the largest double: it loses to every finite index and
to every rejection cost, and in pure routing the job still goes to the lowest-numbered
such cluster).

With a finite ``R`` an index policy that would route a job to clusters the level ``L``
closes rejects it instead. By default such a *truncation-forced rejection* is charged ``R``
like any other (so a given level is evaluated as the chain it defines); its rate is
reported as ``forced_rejection_rate`` (part of ``rejection_rate``), and with
``truncation_losses=True`` it is counted as lost instead (not charged, part of
``lost_rate``), which is what :func:`~queue_routing.deadlines.policies.evaluate` does when it
raises the level itself: a huge ``R`` then cannot turn a stationary probability below the
solver's resolution into a cost.

Stationary distributions: ``scipy.sparse.linalg.spsolve`` on ``Q^T pi = 0`` with
``pi(0) = 1`` fixed and the balance equation of state 0 dropped (the rest is nonsingular for
an irreducible chain; a dense normalisation row would fill the LU factors), then normalised;
above :data:`DIRECT_COLAMD_STATES` states with the minimum-degree ordering of ``A^T + A``,
whose LU factors of a two-cluster grid take about half the memory and time of the default
ordering's (about 2.7 GB and 40 s at ``L = 1414``, two million states).

Certificate of a truncation (:func:`truncation_certificate`): a truncated answer is trusted
by what the level changes in it, the cost's change between levels ``L_{k-1} < L_k``, never by
how often the chain touches the level (``docs/deadlines.md#truncated-chain``).
Optimal policy: relative value iteration on the uniformised chain (rate
``Lambda = lam + sum_k m_k mu_k``), a compiled kernel over the state grid (up to three
clusters: fewer are padded with one-level clusters that never admit), stopped when the span
bounds on the average cost ``g`` are within ``tol``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import splu, spsolve

from ..checks import integer
from ..errors import AccuracyError, ArgumentError
from .miss import miss_probability
from .model import Instance
from .splitting import BernoulliSplit, optimal_split

__all__ = [
    "LOST",
    "REJECT",
    "ChainResult",
    "OptimalPolicy",
    "evaluate_actions",
    "evaluate_index_policy",
    "evaluate_split",
    "optimal_policy",
    "optimal_policy_converged",
    "optimal_policy_vectorised",
    "policy_iteration",
    "truncation_certificate",
]

#: Action codes of a decision table: reject, or lost (no admissible cluster, pure routing).
REJECT = -1
LOST = -2

#: Most states ``(L+1)^n`` of a chain solved here: level 1999 for two clusters (about 6 GB
#: for the sparse LU factors), 157 for three (the iterative solvers hold a few arrays).
MAX_STATES = 4_000_000
#: Up to this many states the sparse direct solve uses SuperLU's default column ordering
#: (every result of the study's chains, bit for bit as before); above, the minimum-degree
#: ordering of ``A^T + A`` (less fill on the grid).
DIRECT_COLAMD_STATES = 250_000
#: The compiled kernels' number of cluster axes: the most clusters of an exact chain (fewer
#: are padded with one-level clusters that never admit).
KERNEL_AXES = 3


@dataclass(frozen=True)
class ChainResult:
    """Long-run rates of one policy on the CTMC truncated at level ``L`` (per unit time).

    Attributes
    ----------
    cost:
        Long-run average cost per unit time, ``R * rejection_rate + miss_rate``
        (``miss_rate`` alone for pure routing).
    rejection_rate:
        Rejected jobs per unit time (0 for pure routing).
    miss_rate:
        ``lam sum_x pi(x) sum_k route_k(x) P_k^miss(x_k)``, missed jobs per unit time.
    cluster_miss_rate, cluster_admission_rate:
        Per cluster, shape ``(n,)``.
    lost_rate:
        Jobs lost to the truncation (not charged) per unit time.
    truncation_rate:
        Arrivals per unit time whose decision the level ``L`` changed (``>= lost_rate``).
    boundary_mass:
        Stationary probability that some cluster is at level ``L``.
    truncation:
        The truncation level ``L`` (``None``: a closed form, no truncation).
    forced_rejection_rate:
        Rejections per unit time that only the level ``L`` forced (the untruncated policy
        would have admitted the job): part of ``rejection_rate`` and charged ``R``, or part
        of ``lost_rate`` and not charged when evaluated with ``truncation_losses=True``.
    history:
        ``((L, cost), ...)`` of the levels tried when the level was raised automatically.
    truncation_error:
        Estimated ``|cost - cost of the untruncated chain|`` (cost per unit time) from the
        costs at lower levels (:func:`truncation_certificate`); ``0.0`` for a closed form,
        ``None`` when not assessed (a chain solved by the functions of this module alone) or
        when no lower level exists (``L = 1``).
    certified:
        Whether ``truncation_error`` is within the tolerance of
        :func:`~queue_routing.deadlines.policies.evaluate` (``max(1e-6 |cost|,
        cost_floor)``); ``None`` when not assessed.
    cost_floor:
        The absolute floor of that tolerance (cost per unit time, ``1e-12`` per arrival):
        a cost at or below it is certified only as being at most about the floor.
    """

    cost: float
    rejection_rate: float
    miss_rate: float
    cluster_miss_rate: np.ndarray
    cluster_admission_rate: np.ndarray
    lost_rate: float
    truncation_rate: float
    boundary_mass: float
    truncation: int | None
    forced_rejection_rate: float = 0.0
    history: tuple = ()
    truncation_error: float | None = None
    certified: bool | None = None
    cost_floor: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the CLI contract: ``{"cost", "rejection_rate", "miss_rate",
        "ci95"}`` (``ci95`` is ``None``: the chain is solved exactly), then the truncation's
        diagnostics ``truncation`` (the level ``L``, ``None`` for a closed form),
        ``truncation_error``, ``certified``, ``cost_floor`` and ``below_floor`` (the cost is
        at most ``cost_floor``)."""
        err = self.truncation_error
        return {
            "cost": float(self.cost),
            "rejection_rate": float(self.rejection_rate),
            "miss_rate": float(self.miss_rate),
            "ci95": None,
            "truncation": None if self.truncation is None else int(self.truncation),
            "truncation_error": None if err is None or not math.isfinite(err) else float(err),
            "certified": None if self.certified is None else bool(self.certified),
            "cost_floor": float(self.cost_floor),
            "below_floor": bool(abs(self.cost) <= self.cost_floor),
        }


def truncation_certificate(history, tol: float, floor: float = 0.0) -> tuple[bool, float]:
    """``(certified, error)`` of the last cost of ``history = ((L_0, c_0), ..., (L_k, c_k))``
    (levels increasing, costs per unit time): ``error`` estimates ``|c_k - c_inf|`` from the
    changes ``d_j = |c_j - c_{j-1}|`` as the level grows, and ``certified`` is
    ``error <= max(tol, floor)`` (``docs/deadlines.md#truncated-chain``).

    * ``k >= 2`` and ``d_k < d_{k-1}``: the changes shrink geometrically by
      ``q = d_k / d_{k-1}`` (the tails of the queue lengths do), so the changes still to come
      sum to ``d_k q / (1 - q)``; ``error = max(d_k, d_k q / (1 - q))``.
    * ``k >= 2`` and ``d_k >= d_{k-1}``: no trend to extrapolate; ``error = d_k + d_{k-1}``,
      certified only if both changes are themselves negligible.
    * ``k = 1``: ``error = d_1``, certified only if both costs are at most ``floor`` (a cost
      below the floor is reported as such; one change alone is no trend).
    * ``k = 0``: ``(False, inf)``.

    What the level does to the answer decides, not how often the chain touches it: a policy
    that keeps a queue at the level with probability ``1e-3`` whose cost moves by ``1e-12`` is
    certified, one whose cost still moves by ``1e-3`` is not.

    >>> truncation_certificate([(60, 1.0), (90, 0.75), (135, 0.6875)], 0.1)
    (True, 0.0625)
    >>> truncation_certificate([(60, 1.0), (90, 0.75)], 0.5)
    (False, 0.25)
    """
    costs = [float(c) for _, c in history]
    tol = max(float(tol), float(floor))
    if len(costs) < 2 or not all(math.isfinite(c) for c in costs[-3:]):
        return False, math.inf
    d = abs(costs[-1] - costs[-2])
    if len(costs) == 2:
        at_floor = max(abs(costs[-1]), abs(costs[-2])) <= floor
        return bool(at_floor and d <= tol), d
    d_prev = abs(costs[-2] - costs[-3])
    if d < d_prev:
        q = d / d_prev
        err = max(d, d * q / (1.0 - q))
    else:
        err = d + d_prev
    return bool(err <= tol), err


def check_level(instance: Instance, truncation: int) -> tuple[int, int]:
    """``(n, L)`` after checking the number of clusters and the level ``L = truncation``."""
    n = instance.n_clusters
    L = integer("truncation", truncation, 1)
    if not 1 <= n <= KERNEL_AXES:
        raise ValueError(f"exact evaluation needs 1 <= n <= {KERNEL_AXES} clusters, got {n}")
    if (int(L) + 1) ** n > MAX_STATES:
        raise ValueError(f"truncation: (L+1)^n = {(int(L) + 1) ** n} states exceeds {MAX_STATES}")
    return n, int(L)


def state_grid(n: int, L: int) -> np.ndarray:
    """All states, shape ``(N, n)``, in C order of the grid ``(L+1,)*n``."""
    return np.indices((L + 1,) * n).reshape(n, -1).T


def _miss_table(instance: Instance, L: int) -> np.ndarray:
    """``P_k^miss(x)``, shape ``(n, L+1)``."""
    dl = instance.deadline
    return np.vstack(
        [miss_probability(np.arange(L + 1), c.servers, c.rate, dl) for c in instance.clusters]
    )


def stationary(instance: Instance, truncation: int, route: np.ndarray) -> np.ndarray:
    """Stationary distribution (shape ``(N,)``) of the CTMC truncated at level
    ``L = truncation`` in which an arrival in state ``i`` joins cluster ``k`` with
    probability ``route[i, k]`` (0 where ``x_k = L``)."""
    _, L = check_level(instance, truncation)
    a = _balance_matrix(instance, L, route)
    size = a.shape[0]
    order = "COLAMD" if size <= DIRECT_COLAMD_STATES else "MMD_AT_PLUS_A"
    # pi_0 = 1, drop the balance equation of state 0 (keeps the LU factors sparse)
    rest = spsolve(a[1:, 1:], -a[1:, 0].toarray().ravel(), permc_spec=order)
    pi = np.clip(np.concatenate([[1.0], np.atleast_1d(rest)]), 0.0, None)
    return pi / pi.sum()


def _balance_matrix(instance: Instance, L: int, route: np.ndarray) -> sp.csc_matrix:
    """``Q^T`` (CSC) of the chain truncated at level ``L`` whose arrivals in state ``i`` join
    cluster ``k`` with probability ``route[i, k]``: :func:`stationary` solves ``Q^T pi = 0``
    with it, :func:`policy_iteration` also the Poisson equation ``Q h = g - c``."""
    n = instance.n_clusters
    x = state_grid(n, L)
    size = x.shape[0]
    strides = np.array([(L + 1) ** (n - 1 - k) for k in range(n)])
    lam = instance.arrival_rate
    rows, cols, vals = [], [], []
    idx = np.arange(size)
    for k, c in enumerate(instance.clusters):
        up = route[:, k] > 0
        rows.append(idx[up])
        cols.append(idx[up] + strides[k])
        vals.append(lam * route[up, k])
        down = x[:, k] > 0
        rows.append(idx[down])
        cols.append(idx[down] - strides[k])
        vals.append(c.rate * np.minimum(x[down, k], c.servers))
    r, cc, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    out = np.bincount(r, weights=v, minlength=size)
    q = sp.coo_matrix(
        (np.concatenate([v, -out]), (np.concatenate([r, idx]), np.concatenate([cc, idx]))),
        shape=(size, size),
    )
    return q.T.tocsc()


def _evaluate(
    instance: Instance,
    truncation: int,
    route: np.ndarray,
    reject: np.ndarray,
    lost: np.ndarray,
    changed: np.ndarray,
    forced: np.ndarray | None = None,
    solver: Callable[..., np.ndarray] | None = None,
) -> ChainResult:
    n, L = check_level(instance, truncation)
    x = state_grid(n, L)
    pi = stationary(instance, L, route) if solver is None else solver(instance, L, route, reject)
    lam = instance.arrival_rate
    pm = _miss_table(instance, L)
    miss_k = np.array([lam * np.dot(pi, route[:, k] * pm[k, x[:, k]]) for k in range(n)])
    adm_k = lam * (pi @ route)
    rej = lam * float(np.dot(pi, reject))
    r_cost = instance.rejection_cost
    cost = float(miss_k.sum()) + (0.0 if r_cost is None else r_cost * rej)
    return ChainResult(
        cost=cost,
        rejection_rate=rej,
        miss_rate=float(miss_k.sum()),
        cluster_miss_rate=miss_k,
        cluster_admission_rate=adm_k,
        lost_rate=lam * float(np.dot(pi, lost)),
        truncation_rate=lam * float(np.dot(pi, changed)),
        boundary_mass=float(pi[np.any(x == L, axis=1)].sum()),
        truncation=L,
        forced_rejection_rate=0.0 if forced is None else lam * float(np.dot(pi, forced)),
    )


def _decide(instance: Instance, values: np.ndarray, blocked: np.ndarray) -> tuple[np.ndarray, ...]:
    """Index decisions for ``values[i, k] = nu_k(x_k)`` where ``blocked[i, k]`` is False
    (a cluster that is full or beyond its row): ``(route, reject, lost)``.

    Reject iff the smallest index is ``>= R``; else route to the smallest, ties to the
    lowest ``k``; an index ``+inf`` (beyond the doubles) is chosen only in pure routing when
    every open cluster has it. Pure routing with every cluster blocked: lost."""
    n = instance.n_clusters
    size = values.shape[0]
    r_cost = math.inf if instance.rejection_cost is None else instance.rejection_cost
    key = np.where(blocked, np.inf, values)
    best = key.min(axis=1)
    k = np.argmin(key, axis=1)  # ties: lowest k
    usable = ~blocked
    open_any = usable.any(axis=1)
    k = np.where(np.isinf(best) & open_any, np.argmax(usable, axis=1), k)
    admit = open_any & (best < r_cost) if not math.isinf(r_cost) else open_any
    route = np.zeros((size, n))
    route[np.flatnonzero(admit), k[admit]] = 1.0
    lost = ~open_any & math.isinf(r_cost)
    reject = ~admit & ~lost
    return route, reject.astype(float), lost.astype(float)


def evaluate_index_policy(
    instance: Instance,
    table,
    truncation: int,
    *,
    truncation_losses: bool = False,
    solver: Callable[..., np.ndarray] | None = None,
) -> ChainResult:
    """Exact rates of the index policy ``table[k][x]`` on the chain truncated at level
    ``L = truncation`` (rows may differ in length; beyond a row and at level ``L`` the
    cluster is closed): reject iff ``min_k nu_k(x_k) >= R``, else route to the smallest
    index, ties to the lowest ``k``. A rejection only the level forced is charged ``R``
    (rate ``forced_rejection_rate``), or lost with ``truncation_losses=True`` (module
    docstring). ``solver(instance, L, route, reject)`` replaces the sparse direct
    :func:`stationary` (e.g. the compiled iterative one of :mod:`.three_cluster`)."""
    n, L = check_level(instance, truncation)
    rows = [np.asarray(r, dtype=float).ravel() for r in table]
    if len(rows) != n:
        raise ValueError(f"table must have one row per cluster ({n}), got {len(rows)}")
    for k, row in enumerate(rows):
        if np.isnan(row).any():
            raise ValueError(f"table: the row of cluster {k + 1} contains NaN")
    x = state_grid(n, L)
    free = np.empty((x.shape[0], n))
    beyond = np.empty((x.shape[0], n), dtype=bool)
    for k, row in enumerate(rows):
        padded = np.full(L + 1, np.inf)
        w = min(row.size, L + 1)
        padded[:w] = row[:w]
        free[:, k] = padded[x[:, k]]
        beyond[:, k] = x[:, k] >= row.size
    route, reject, lost = _decide(instance, free, beyond | (x == L))
    route0, reject0, _ = _decide(instance, free, beyond)
    changed = np.any(route != route0, axis=1) | (reject != reject0)
    forced = reject * (1.0 - reject0)
    if truncation_losses:
        reject, lost = reject - forced, np.maximum(lost, forced)
    return _evaluate(instance, L, route, reject, lost, changed.astype(float), forced, solver)


def evaluate_split(
    instance: Instance,
    truncation: int,
    split: BernoulliSplit | None = None,
    *,
    solver: Callable[..., np.ndarray] | None = None,
) -> ChainResult:
    """Exact rates of Bernoulli splitting (default: :func:`optimal_split`) on the chain
    truncated at level ``L = truncation``: a job sent to a cluster at level ``L`` is lost.
    ``solver`` as in :func:`evaluate_index_policy`."""
    n, L = check_level(instance, truncation)
    split = optimal_split(instance) if split is None else split
    p = np.asarray(split.probabilities, dtype=float)
    x = state_grid(n, L)
    full = x == L
    route = np.where(full, 0.0, p[None, :])
    lost = np.where(full, p[None, :], 0.0).sum(axis=1)
    reject = np.full(x.shape[0], split.rejection_probability)
    return _evaluate(instance, L, route, reject, lost, lost > 0, solver=solver)


def evaluate_actions(
    instance: Instance,
    actions: np.ndarray,
    truncation: int,
    *,
    solver: Callable[..., np.ndarray] | None = None,
) -> ChainResult:
    """Exact rates of a deterministic decision table ``actions`` of shape ``(L+1,)*n``
    (``L = truncation``): ``k`` (route to cluster ``k``), :data:`REJECT` or :data:`LOST`.
    ``solver`` as in :func:`evaluate_index_policy`."""
    n, L = check_level(instance, truncation)
    route, reject, lost = _action_arrays(n, L, actions)
    return _evaluate(instance, L, route, reject, lost, lost, solver=solver)


def _action_arrays(n: int, L: int, actions: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(route, reject, lost)`` of a decision table (as :func:`evaluate_actions` reads it):
    ``route[i, k] = 1`` where state ``i`` routes to cluster ``k``, reject and lost 0/1."""
    a = np.asarray(actions).reshape(-1)
    x = state_grid(n, L)
    route = np.zeros((x.shape[0], n))
    ok = a >= 0
    route[np.flatnonzero(ok), a[ok]] = 1.0
    if np.any(route[x == L] > 0):
        raise ValueError("actions route to a cluster at level L")
    return route, (a == REJECT).astype(float), (a == LOST).astype(float)


# ---------------------------------------------------------------------------------------
# optimal policy: relative value iteration
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptimalPolicy:
    """Average-cost optimal policy of the MDP truncated at level ``L``.

    Attributes
    ----------
    cost:
        Optimal long-run average cost per unit time (midpoint of the span bounds).
    lower, upper:
        Span bounds ``Lambda min(Th - h)``, ``Lambda max(Th - h)`` at the last iteration.
    actions:
        Decision table, shape ``(L+1,)*n``: cluster ``k``, :data:`REJECT` or :data:`LOST`.
    relative_values:
        ``h`` with ``h(0) = 0`` (cost units).
        From :func:`policy_iteration`: ``cost`` is the exact gain of ``actions``, ``upper``
        the same (a cost attained), ``lower`` the one-step bound on its relative values.
    iterations, converged, seconds:
        RVI iterations (policy evaluations for :func:`policy_iteration`), whether
        ``upper - lower <= tol`` was reached, wall time (s); from
        :func:`optimal_policy_converged`, iterations and seconds of every level tried.
    truncation:
        The truncation level ``L``.
    history:
        ``((L, cost), ...)`` of the truncation check (only from
        :func:`optimal_policy_converged`).
    method:
        ``"value_iteration"`` or ``"policy_iteration"`` (at the final level).
    """

    cost: float
    lower: float
    upper: float
    actions: np.ndarray = field(repr=False)
    relative_values: np.ndarray = field(repr=False)
    iterations: int
    converged: bool
    seconds: float
    truncation: int
    history: tuple = ()
    method: str = "value_iteration"

    def to_dict(self) -> dict[str, Any]:
        """A JSON object: ``cost``, its bounds ``lower`` and ``upper`` (cost per unit
        time), ``truncation``, ``iterations``, ``converged``, ``seconds``, ``history`` (a
        list of ``[L, cost]``) and ``method``; the decision table and the relative values
        are arrays of ``(L+1)^n`` entries and stay attributes."""
        return {
            "cost": float(self.cost),
            "lower": float(self.lower),
            "upper": float(self.upper),
            "truncation": int(self.truncation),
            "iterations": int(self.iterations),
            "converged": bool(self.converged),
            "seconds": float(self.seconds),
            "history": [[int(level), float(cost)] for level, cost in self.history],
            "method": self.method,
        }


def _shift(h: np.ndarray, axis: int, step: int) -> np.ndarray:
    """``h`` at ``x + step e_axis`` (edge values where out of range; callers mask those)."""
    n = h.shape[axis]
    idx = np.clip(np.arange(n) + step, 0, n - 1)
    return np.take(h, idx, axis=axis)


#: Iterations per call of the value-iteration kernel: progress reports and Python's signal
#: handlers (Ctrl-C, SIGTERM of a cluster job) run between calls.
_KERNEL_BLOCK = 1000


def padded_grid(instance: Instance, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The kernels' arguments for the grid ``{0..L}^n``: ``(dims, miss, dep, pad)``, grid
    sizes ``(KERNEL_AXES,)`` (a padding axis has size 1), miss probabilities and departure
    rates ``mu_k min(x, m_k)`` of shape ``(KERNEL_AXES, L+1)``; real cluster ``k`` is axis
    ``pad + k``."""
    n = instance.n_clusters
    pad = KERNEL_AXES - n
    dims = np.ones(KERNEL_AXES, dtype=np.int64)
    dims[pad:] = L + 1
    miss = np.zeros((KERNEL_AXES, L + 1))
    miss[pad:] = _miss_table(instance, L)
    dep = np.zeros((KERNEL_AXES, L + 1))
    x = np.arange(L + 1)
    for k, c in enumerate(instance.clusters):
        dep[pad + k] = c.rate * np.minimum(x, c.servers)
    return dims, miss, dep, pad


def uniformisation_rate(instance: Instance) -> float:
    """``Lambda = lam + sum_k m_k mu_k``, the rate of the uniformised chain."""
    return instance.arrival_rate + sum(c.capacity for c in instance.clusters)


@njit(cache=True, nogil=True, inline="always")
def span_open():  # pragma: no cover - compiled
    """``(lo, hi)`` at the start of one value-iteration step, before any state: the empty
    span ``(+inf, -inf)`` that :func:`span_widen` widens."""
    return np.inf, -np.inf


@njit(cache=True, nogil=True, inline="always")
def span_widen(lo, hi, diff):  # pragma: no cover - compiled
    """``(lo, hi)`` widened to hold ``diff = (Th)(x) - h(x)`` of one state: the span of one
    value-iteration step (``docs/deadlines.md#optimal-policy``)."""
    if diff < lo:
        lo = diff
    if diff > hi:
        hi = diff
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def span_close(h, th, lo, hi, big_lam):  # pragma: no cover - compiled
    """End of one value-iteration step over every state: ``h <- Th - (Th)(0)`` in place, and
    the span bounds ``(Lambda lo, Lambda hi)`` on the average cost per unit time."""
    ref = th[0]
    for i in range(h.size):
        h[i] = th[i] - ref
    return big_lam * lo, big_lam * hi


@njit(cache=True, nogil=True)
def _rvi_kernel(
    h, dims, miss, dep, lam, big_lam, rcost, losses, tol, max_iter
):  # pragma: no cover - compiled
    """Relative value iteration in place on ``h`` (flat, C order of ``dims``); returns
    ``(iterations, lower, upper, converged)``. ``rcost = inf``: no rejection. ``losses``:
    a job finding every cluster at its last level is lost, not rejected."""
    d0, d1, d2 = dims[0], dims[1], dims[2]
    s0, s1 = d1 * d2, d2
    size = d0 * d1 * d2
    th = np.empty(size)
    inf = np.inf
    lower = np.nan
    upper = np.nan
    for it in range(1, max_iter + 1):
        lo, hi = span_open()
        for a in range(d0):
            for b in range(d1):
                for c in range(d2):
                    i = (a * d1 + b) * d2 + c
                    hi_ = h[i]
                    best = inf
                    if a < d0 - 1:
                        q = miss[0, a] + h[i + s0]
                        if q < best:
                            best = q
                    if b < d1 - 1:
                        q = miss[1, b] + h[i + s1]
                        if q < best:
                            best = q
                    if c < d2 - 1:
                        q = miss[2, c] + h[i + 1]
                        if q < best:
                            best = q
                    full = a == d0 - 1 and b == d1 - 1 and c == d2 - 1
                    if rcost < inf and not (losses and full):
                        q = rcost + hi_
                        if q < best:
                            best = q
                    if best == inf:
                        best = hi_  # lost job: the state does not change
                    r0, r1, r2 = dep[0, a], dep[1, b], dep[2, c]
                    stay = big_lam - lam - (r0 + r1 + r2)
                    t = lam * best + stay * hi_
                    if a > 0:
                        t += r0 * h[i - s0]
                    if b > 0:
                        t += r1 * h[i - s1]
                    if c > 0:
                        t += r2 * h[i - 1]
                    t /= big_lam
                    th[i] = t
                    lo, hi = span_widen(lo, hi, t - hi_)
        lower, upper = span_close(h, th, lo, hi, big_lam)
        if upper - lower <= tol:
            return it, lower, upper, True
    return max_iter, lower, upper, False


@njit(cache=True, nogil=True)
def _greedy_actions(h, dims, miss, rcost, losses):  # pragma: no cover - compiled
    """The greedy decision of every state for ``h``: axis (ties to the lowest), ``-1``
    reject (after every cluster on ties), ``-2`` lost."""
    d0, d1, d2 = dims[0], dims[1], dims[2]
    s0, s1 = d1 * d2, d2
    out = np.empty(d0 * d1 * d2, dtype=np.int64)
    inf = np.inf
    for a in range(d0):
        for b in range(d1):
            for c in range(d2):
                i = (a * d1 + b) * d2 + c
                best = inf
                act = -2
                if a < d0 - 1:
                    q = miss[0, a] + h[i + s0]
                    if q < best:
                        best, act = q, 0
                if b < d1 - 1:
                    q = miss[1, b] + h[i + s1]
                    if q < best:
                        best, act = q, 1
                if c < d2 - 1:
                    q = miss[2, c] + h[i + 1]
                    if q < best:
                        best, act = q, 2
                full = a == d0 - 1 and b == d1 - 1 and c == d2 - 1
                if rcost < inf and not (losses and full):
                    if rcost + h[i] < best:
                        act = -1
                out[i] = act
    return out


def optimal_policy(
    instance: Instance,
    truncation: int,
    tol: float = 1e-9,
    *,
    max_iter: int = 200_000,
    h0: np.ndarray | None = None,
    progress: Callable[..., Any] | None = None,
    truncation_losses: bool = False,
    vectorised: bool = False,
) -> OptimalPolicy:
    """Relative value iteration (uniformised, rate ``Lambda = lam + sum m_k mu_k``) on the
    state space ``{0..L}^n`` truncated at level ``L = truncation`` (n <= 3), actions reject
    (if ``R`` is finite) or route to a cluster below level ``L``; in pure routing a job
    finding every cluster at ``L`` is lost (cost 0), and so it is with ``truncation_losses``
    when ``R`` is finite (instead of a rejection charged ``R``: the module docstring).
    Stops when ``upper - lower <= tol`` (cost per unit time) or after ``max_iter``
    iterations. ``h0`` warm-starts the relative values (any shape ``(L'+1,)*n``;
    cropped/edge-padded). ``progress(iterations, extra=...)`` is called between blocks of
    iterations.

    The iteration is a compiled kernel over the flat state grid; with ``vectorised`` it is
    the same iteration in numpy, vectorised over the grid, with the arithmetic in the same
    order, so the two agree bit for bit (a test checks it): the reference implementation of
    the kernel and the baseline of ``benchmarks/deadlines.py``, about 10x slower at two
    clusters (``docs/deadlines.md#optimal-policy``).

    The optimal policy beats optimal Bernoulli splitting, and the exact evaluation of its
    decision table gives back its cost:

    >>> from queue_routing.deadlines import Instance, evaluate_actions, evaluate_split
    >>> inst = Instance.from_dict({"arrival_rate": 2.5, "servers": [2, 1],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> opt = optimal_policy(inst, 20)
    >>> opt.converged, opt.actions.shape
    (True, (21, 21))
    >>> bool(opt.cost < evaluate_split(inst, 20).cost)
    True
    >>> bool(abs(evaluate_actions(inst, opt.actions, 20).cost - opt.cost) < 1e-8)
    True
    """
    n, L = check_level(instance, truncation)
    t0 = time.perf_counter()
    shape = (L + 1,) * n
    iterate = _iterate_vectorised if vectorised else _iterate_compiled
    h, actions, iterations, lower, upper, converged = iterate(
        instance, L, _initial_values(h0, shape), tol, max_iter, progress, bool(truncation_losses)
    )
    # every cost is >= 0, so is g*: 0 is a lower bound as valid as the span's, and rounding
    # cannot turn a tiny optimal cost into a negative midpoint
    lower = max(float(lower), 0.0)
    upper = max(float(upper), lower)
    return OptimalPolicy(
        cost=0.5 * (lower + upper),
        lower=float(lower),
        upper=float(upper),
        actions=actions.reshape(shape),
        relative_values=h.reshape(shape),
        iterations=int(iterations),
        converged=bool(converged),
        seconds=time.perf_counter() - t0,
        truncation=L,
    )


def optimal_policy_vectorised(
    instance: Instance, truncation: int, tol: float = 1e-9, **options: Any
) -> OptimalPolicy:
    """:func:`optimal_policy` with ``vectorised=True`` (the other keyword arguments the
    same): the iteration in numpy, the reference implementation of the compiled kernel."""
    return optimal_policy(instance, truncation, tol, vectorised=True, **options)


def _initial_values(h0: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """Relative values to start from: zeros, or ``h0`` cropped / edge-padded to ``shape``."""
    if h0 is None:
        return np.zeros(shape)
    h0 = np.asarray(h0, dtype=float)
    L1, n = shape[0], len(shape)
    return np.pad(h0[tuple(slice(0, L1) for _ in range(n))],
                  [(0, max(0, L1 - h0.shape[k])) for k in range(n)], mode="edge")  # fmt: skip


def _iterate_compiled(
    instance: Instance, L: int, h0: np.ndarray, tol: float, max_iter: int, progress, losses: bool
) -> tuple:
    """Relative value iteration of :func:`optimal_policy` by the compiled kernel, from the
    relative values ``h0`` (shape ``(L+1,)*n``): ``(h, actions, iterations, lower, upper,
    converged)``, ``h`` and ``actions`` flat (C order of the grid)."""
    dims, miss, dep, pad = padded_grid(instance, L)
    h = np.ascontiguousarray(h0, dtype=float).reshape(-1).copy()
    r_cost = instance.rejection_cost
    rcost = math.inf if r_cost is None else float(r_cost)
    big_lam = uniformisation_rate(instance)
    lam = instance.arrival_rate
    # The kernel's only state is h (updated in place), so running it in blocks of
    # iterations is the uninterrupted iteration.
    block = _KERNEL_BLOCK
    it, lower, upper, converged = 0, math.nan, math.nan, False
    while it < max_iter and not converged:
        done, lower, upper, converged = _rvi_kernel(
            h, dims, miss, dep, lam, big_lam, rcost, losses, float(tol),
            min(block, int(max_iter) - it),
        )  # fmt: skip
        it += int(done)
        if progress is not None:
            progress(int(done), extra=f"truncation {L}, span {upper - lower:.3g} (tol {tol:g})")
    act = _greedy_actions(h, dims, miss, rcost, losses)
    return h, np.where(act >= 0, act - pad, act), it, lower, upper, converged


def _iterate_vectorised(
    instance: Instance, L: int, h: np.ndarray, tol: float, max_iter: int, progress, losses: bool
) -> tuple:
    """:func:`_iterate_compiled` in numpy, vectorised over the state grid (``h`` and the
    actions of shape ``(L+1,)*n``): the same operator with the arithmetic in the same order."""
    n = instance.n_clusters
    lam = instance.arrival_rate
    r_cost = instance.rejection_cost
    shape = h.shape
    grids = np.indices(shape)
    pm = _miss_table(instance, L)
    big_lam = uniformisation_rate(instance)
    dep = [c.rate * np.minimum(grids[k], c.servers) for k, c in enumerate(instance.clusters)]
    stay = big_lam - lam - sum(dep)
    miss = [pm[k][grids[k]] for k in range(n)]
    full = [grids[k] == L for k in range(n)]
    all_full = np.logical_and.reduce(full) if losses else np.zeros(shape, dtype=bool)
    q = np.empty((n + 1, *shape))
    lower = upper = math.nan
    it = 0
    converged = False
    for it in range(1, max_iter + 1):
        for k in range(n):
            q[k] = np.where(full[k], np.inf, miss[k] + _shift(h, k, 1))
        q[n] = np.inf if r_cost is None else np.where(all_full, np.inf, r_cost + h)
        best = q.min(axis=0)
        best = np.where(np.isinf(best), h, best)  # lost job (pure routing or losses, all full)
        th = lam * best + stay * h
        for k in range(n):
            th += dep[k] * _shift(h, k, -1)
        th /= big_lam
        diff = th - h
        lower, upper = big_lam * float(diff.min()), big_lam * float(diff.max())
        h = th - th.flat[0]
        if progress is not None and it % 100 == 0:
            progress(100, extra=f"truncation {L}, span {upper - lower:.3g} (tol {tol:g})")
        if upper - lower <= tol:
            converged = True
            break
    for k in range(n):
        q[k] = np.where(full[k], np.inf, miss[k] + _shift(h, k, 1))
    q[n] = np.inf if r_cost is None else np.where(all_full, np.inf, r_cost + h)
    best_k = np.argmin(q, axis=0)
    actions = np.where(best_k == n, REJECT, best_k)
    actions = np.where(np.isinf(q.min(axis=0)), LOST, actions)
    return h, actions, it, lower, upper, converged


#: The highest level :func:`optimal_policy_converged` raises the truncation to by default,
#: per number of clusters (``(L+1)^n`` states of two arrays each: 161 601 at two clusters,
#: 1 771 561 at three).
DEFAULT_MAX_LEVEL = {1: 400, 2: 400, 3: 120}


def optimal_policy_converged(
    instance: Instance,
    truncation: int,
    tol: float = 1e-6,
    *,
    factor: float = 1.5,
    max_level: int | None = None,
    rvi_tol: float | None = None,
    progress: Callable[..., Any] | None = None,
    rtol: float = 0.0,
    truncation_losses: bool = False,
    max_iter: int = 200_000,
    certificate: Callable[[list], bool] | None = None,
    method: str = "value_iteration",
    actions0: np.ndarray | None = None,
) -> OptimalPolicy:
    """The optimal policy of ``n <= 3`` clusters with the level raised until the truncation no
    longer decides its cost (``docs/deadlines.md#optimal-policy``).

    Relative value iteration (:func:`optimal_policy`, to ``rvi_tol``, default ``tol / 100``)
    at the levels ``L0 = truncation, ceil(factor L0), ...``, each warm-started from the last
    one's relative values, until the optimal cost moves by less than ``max(tol, rtol * cost)``
    (cost per unit time) between two levels. Returns the policy at the final level, with the
    ``history`` ``((L, cost), ...)`` of the levels tried and its ``iterations`` and
    ``seconds`` summed over them. ``progress`` is called between blocks of iterations, as by
    :func:`optimal_policy`. With ``certificate`` (a function of the history list returning
    whether its last cost is certified, e.g. :func:`truncation_certificate` with its
    tolerances) that function decides when to stop instead of the change between two levels.

    ``method="policy_iteration"`` solves every level by :func:`policy_iteration` instead (to
    ``rvi_tol``, warm-started from ``actions0`` at the first level, e.g. an index policy's
    decision table, and from the last level's relative values, continued linearly, above):
    near capacity value iteration needs 10^5 iterations and more per level, policy
    iteration tens of evaluations (about ``L / 8`` at load 0.96), each a sparse LU of the
    chain (two clusters; three fill the factors).

    Raises :class:`~queue_routing.errors.AccuracyError` (a ``ValueError``) past
    ``max_level`` (default :data:`DEFAULT_MAX_LEVEL` of the number of clusters: 400 for one
    or two, 120 for three) or when value iteration does not converge in ``max_iter``
    iterations at a level (policy iteration: its bounds do not meet in
    :data:`PI_MAX_ITER` evaluations).

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 2.0, "servers": [2, 1, 1],
    ...     "service_rates": [1.0, 0.8, 0.6], "rejection_cost": 1.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> opt = optimal_policy_converged(inst, 6, 1e-6)
    >>> [level for level, _ in opt.history], opt.truncation, opt.actions.shape
    ([6, 9], 9, (10, 10, 10))
    >>> bool(abs(opt.history[-1][1] - opt.history[-2][1]) < 1e-6)
    True
    """
    rvi_tol = tol / 100.0 if rvi_tol is None else rvi_tol
    if method not in ("value_iteration", "policy_iteration"):
        raise ArgumentError("method", f"method must be value_iteration or policy_iteration, "
                                      f"got {method!r}")  # fmt: skip
    if max_level is None:
        max_level = DEFAULT_MAX_LEVEL[check_level(instance, truncation)[0]]
    level = int(truncation)
    howard = method == "policy_iteration"
    run = {"progress": progress, "truncation_losses": truncation_losses}

    def solve(level: int, h0: np.ndarray | None) -> OptimalPolicy:
        if howard:
            start = actions0 if h0 is None else None
            res = policy_iteration(instance, level, rvi_tol, h0=h0, actions0=start, **run)
        else:
            res = optimal_policy(instance, level, rvi_tol, h0=h0, max_iter=max_iter, **run)
        check_converged(res)
        return res

    res = solve(level, None)
    history = [(level, res.cost)]
    iterations, seconds = res.iterations, res.seconds
    while True:
        nxt = max(level + 1, math.ceil(factor * level))
        if nxt > max_level:
            raise AccuracyError(
                f"truncation: optimal cost not stable to {max(tol, rtol * abs(res.cost)):.3g} "
                f"below level {max_level} (last levels and costs {history[-3:]})"
            )
        new = solve(nxt, res.relative_values)
        history.append((nxt, new.cost))
        iterations += new.iterations
        seconds += new.seconds
        if certificate is not None:
            stop = certificate(history)
        else:
            stop = abs(new.cost - res.cost) < max(tol, rtol * abs(new.cost))
        if stop:
            return replace(new, history=tuple(history), iterations=iterations, seconds=seconds)
        level, res = nxt, new


def check_converged(res: OptimalPolicy) -> None:
    """:class:`~queue_routing.errors.AccuracyError` if relative value iteration stopped at
    ``max_iter`` before its span bounds met the tolerance (or policy iteration before its
    bounds did)."""
    if not res.converged and res.method == "policy_iteration":
        raise AccuracyError(
            f"truncation: policy iteration at level {res.truncation} stopped after "
            f"{res.iterations} evaluations with the optimal cost bounded only to "
            f"[{res.lower:.9g}, {res.upper:.9g}]"
        )
    if not res.converged:
        raise AccuracyError(
            f"truncation: relative value iteration at level {res.truncation} did not converge "
            f"in {res.iterations} iterations (span {res.upper - res.lower:.3g})"
        )


# ---------------------------------------------------------------------------------------
# optimal policy: policy iteration
# ---------------------------------------------------------------------------------------
#: Most policy evaluations of :func:`policy_iteration` at one level.
PI_MAX_ITER = 100


def policy_iteration(
    instance: Instance,
    truncation: int,
    tol: float = 1e-9,
    *,
    max_iter: int = PI_MAX_ITER,
    h0: np.ndarray | None = None,
    actions0: np.ndarray | None = None,
    progress: Callable[..., Any] | None = None,
    truncation_losses: bool = False,
) -> OptimalPolicy:
    """The optimal policy of the MDP of :func:`optimal_policy` (the same actions, costs and
    truncation ``L = truncation``) by policy iteration (Howard;
    ``docs/deadlines.md#optimal-policy``): exact where relative value iteration is slow, as
    near capacity, where its span contracts by ``1 - O((1 - rho)^2)`` per step.

    * Evaluation: the gain ``g`` (cost per unit time) and relative values ``h`` (``h(0) =
      0``, cost units) of the current decision table solve ``Q^T pi = 0`` and the Poisson
      equation ``Q h = g - c`` (``c`` the cost rate of each state's decision), both with one
      sparse LU of the generator (:func:`stationary`'s system, the equation of state 0
      dropped).
    * Bounds: one Bellman step on ``h`` (the value-iteration kernel) gives
      ``lower = Lambda min(Th - h) <= g*``; ``g`` itself is the cost of a policy,
      ``g* <= g``. Stops when ``g - lower <= tol`` (``converged``), or when no state can
      improve its decision by more than ``tol / (4 lam)`` per arrival (then ``converged``
      says whether the bounds met).
    * Improvement: the greedy decision of every state for ``h``
      (:func:`_greedy_actions`), taken only where it beats the incumbent by more than that
      margin (ties and rounding keep the incumbent: no cycling).

    Starts from ``actions0`` (a decision table of any shape ``(L'+1,)*n``, cropped or
    edge-padded; entries not admissible at this level replaced) or else from the greedy
    decisions for ``h0`` (cropped/edge-padded; zeros: the individually optimal routing).
    ``max_iter`` bounds the evaluations; ``progress(1, extra=...)`` is called after each.
    Memory and time are those of :func:`stationary` per evaluation (two clusters: about
    0.15 GB and 2 s at ``L = 450``); three clusters fill the LU factors.

    It agrees with relative value iteration, and its table's exact cost is its cost:

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 2.5, "servers": [2, 1],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> pi, vi = policy_iteration(inst, 20), optimal_policy(inst, 20)
    >>> pi.converged, bool(abs(pi.cost - vi.cost) < 1e-8), bool(pi.lower <= pi.cost)
    (True, True, True)
    >>> bool(abs(evaluate_actions(inst, pi.actions, 20).cost - pi.cost) < 1e-10)
    True
    """
    n, L = check_level(instance, truncation)
    max_iter = integer("max_iter", max_iter, 1)
    t0 = time.perf_counter()
    shape = (L + 1,) * n
    dims, miss, dep, pad = padded_grid(instance, L)
    r_cost = instance.rejection_cost
    rcost = math.inf if r_cost is None else float(r_cost)
    lam, big_lam = instance.arrival_rate, uniformisation_rate(instance)
    losses = bool(truncation_losses)
    h = np.ascontiguousarray(_extrapolated_values(h0, shape), dtype=float).reshape(-1)
    act = _greedy_actions(h, dims, miss, rcost, losses)
    if actions0 is not None:
        given = _initial_actions(actions0, shape, pad)
        act = np.where(_admissible(given, dims, rcost, losses), given, act)
    margin = float(tol) / (4.0 * lam)
    g = lower = math.nan
    it = 0
    while it < max_iter:
        it += 1
        g, h = _policy_values(instance, L, np.where(act >= 0, act - pad, act))
        _, lower, _, _ = _rvi_kernel(
            h.copy(), dims, miss, dep, lam, big_lam, rcost, losses, 0.0, 1
        )  # one Bellman step: the bound on g*; h itself is left as evaluated
        greedy = _greedy_actions(h, dims, miss, rcost, losses)
        better = _arrival_values(h, dims, miss, rcost, greedy) < (
            _arrival_values(h, dims, miss, rcost, act) - margin
        )
        if progress is not None:
            gap, moves = g - lower, int(better.sum())
            progress(1, extra=f"truncation {L}, policy iteration {it}: cost {g:.9g}, bound "
                              f"{gap:.3g} (tol {tol:g}), {moves} states improve")  # fmt: skip
        if g - lower <= tol or not better.any():
            break
        act = np.where(better, greedy, act)
    # every cost is >= 0, so is g*; a lower bound above the policy's cost is rounding
    lower = min(max(float(lower), 0.0), float(g))
    return OptimalPolicy(
        cost=float(g),
        lower=lower,
        upper=float(g),
        actions=np.where(act >= 0, act - pad, act).reshape(shape),
        relative_values=h.reshape(shape),
        iterations=it,
        converged=bool(g - lower <= tol),
        seconds=time.perf_counter() - t0,
        truncation=L,
        method="policy_iteration",
    )


def _policy_values(instance: Instance, L: int, actions: np.ndarray) -> tuple[float, np.ndarray]:
    """``(g, h)`` of a decision table (flat, real cluster codes) on the chain truncated at
    ``L``: the gain (cost per unit time) from ``Q^T pi = 0`` and the relative values
    (``h(0) = 0``) from ``Q h = g - c``, with one LU factorisation of ``Q^T`` without the
    row and column of state 0."""
    n = instance.n_clusters
    route, reject, _ = _action_arrays(n, L, actions)
    a = _balance_matrix(instance, L, route)
    order = "COLAMD" if a.shape[0] <= DIRECT_COLAMD_STATES else "MMD_AT_PLUS_A"
    lu = splu(a[1:, 1:].tocsc(), permc_spec=order)
    pi = np.clip(np.concatenate([[1.0], lu.solve(-a[1:, 0].toarray().ravel())]), 0.0, None)
    pi /= pi.sum()
    x = state_grid(n, L)
    per_arrival = (route * _miss_table(instance, L)[np.arange(n), x]).sum(axis=1)
    if instance.rejection_cost is not None:
        per_arrival += instance.rejection_cost * reject
    c = instance.arrival_rate * per_arrival
    g = float(pi @ c)
    h = np.zeros(a.shape[0])
    h[1:] = lu.solve(g - c[1:], trans="T")  # (Q^T)^T = Q, the rows and columns of 1..N-1
    return g, h


def _extrapolated_values(h0: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """Relative values to start policy iteration from: zeros, or ``h0`` cropped to ``shape``
    and continued linearly along each axis beyond its last level (edge values, as value
    iteration starts from, are flat there: their greedy decisions would feed the longest
    queue, a policy whose relative values are astronomically large and cancel in double
    precision)."""
    if h0 is None:
        return np.zeros(shape)
    h = np.asarray(h0, dtype=float)[tuple(slice(0, s) for s in shape)]
    for k, size in enumerate(shape):
        have = h.shape[k]
        if have >= size:
            continue
        last = np.take(h, [have - 1], axis=k)
        slope = last - np.take(h, [have - 2], axis=k) if have >= 2 else np.zeros_like(last)
        steps = np.arange(1, size - have + 1, dtype=float).reshape(
            [-1 if j == k else 1 for j in range(h.ndim)]
        )
        h = np.concatenate([h, last + steps * slope], axis=k)
    return h


def _initial_actions(actions: np.ndarray, shape: tuple[int, ...], pad: int) -> np.ndarray:
    """A decision table (real cluster codes) cropped/edge-padded to ``shape``, flat, in the
    kernels' axis codes (cluster ``k`` is axis ``pad + k``)."""
    a = np.asarray(actions, dtype=np.int64)
    if a.ndim != len(shape):
        raise ValueError(f"actions0 must have {len(shape)} axes, got shape {a.shape}")
    widths = [(0, max(0, shape[0] - a.shape[k])) for k in range(len(shape))]
    a = np.pad(a[tuple(slice(0, shape[0]) for _ in shape)], widths, mode="edge")
    return np.where(a >= 0, a + pad, a).reshape(-1)


def _grid_coordinates(dims: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kernels' flat state grid: the coordinate along each axis of every state."""
    return np.unravel_index(np.arange(int(np.prod(dims))), tuple(int(d) for d in dims))


def _admissible(act: np.ndarray, dims: np.ndarray, rcost: float, losses: bool) -> np.ndarray:
    """Whether each decision (axis codes) is an action of the MDP: route to an axis below its
    last level; reject if ``R`` is finite (not with ``losses`` when every axis is full);
    lost only when every axis is full and rejection is not an action."""
    coords = _grid_coordinates(dims)
    open_ = np.stack([coords[k] < dims[k] - 1 for k in range(len(dims))])
    any_open = open_.any(axis=0)
    ok = np.zeros(act.size, dtype=bool)
    route = np.flatnonzero(act >= 0)
    ok[route] = open_[np.minimum(act[route], len(dims) - 1), route] & (act[route] < len(dims))
    reject_ok = math.isfinite(rcost) & (any_open | (not losses))
    ok |= (act == REJECT) & reject_ok
    ok |= (act == LOST) & ~any_open & (not math.isfinite(rcost) or losses)
    return ok


def _arrival_values(
    h: np.ndarray, dims: np.ndarray, miss: np.ndarray, rcost: float, act: np.ndarray
) -> np.ndarray:
    """``P_k^miss(x_k) + h(x + e_k)``, ``R + h(x)`` or ``h(x)`` (lost) of each state's
    decision ``act`` (axis codes): the part of the Bellman operator a decision changes, in
    the arithmetic order of :func:`_greedy_actions`."""
    coords = _grid_coordinates(dims)
    strides = (int(dims[1] * dims[2]), int(dims[2]), 1)
    q = h.copy()
    rej = act == REJECT
    q[rej] = rcost + h[rej]
    for k in range(len(dims)):
        i = np.flatnonzero(act == k)
        q[i] = miss[k, coords[k][i]] + h[i + strides[k]]
    return q
