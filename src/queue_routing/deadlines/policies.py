"""The policies of Part B on an :class:`~queue_routing.deadlines.model.Instance`.

This module is the one translation from an instance to what the solvers and the simulator
take: the Bernoulli-splitting probabilities (:func:`split_probabilities`), the index tables
(:func:`index_table`, :func:`index_function`), a simulation of one named policy
(:func:`simulate_policy`), and the library entry point :func:`evaluate` (exact evaluation on
the truncated chain of :mod:`.markov`, or simulation by :mod:`.simulation`).

Errors in the arguments of this layer are :class:`~queue_routing.errors.ArgumentError` (a
``ValueError``; :class:`PolicyError` is the same class under its former name) with a
one-line message that starts with the argument's name; an answer the code cannot trust (a
truncation or an index table that still decides the result) raises
:class:`~queue_routing.errors.AccuracyError` instead of being returned.

Limits (each refused with an :class:`~queue_routing.errors.ArgumentError`): index functions
and simulation tables up to :data:`~queue_routing.deadlines.indices.MAX_UPTO` jobs per
cluster; an explicit truncation level with at most 2 000 000 states; simulations of at most
:data:`MAX_SIMULATED_ARRIVALS` arrivals per replication.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..checks import integer, is_int, show, time_length
from ..errors import AccuracyError, ArgumentError, TableBoundWarning
from ..user_policy import DEFAULT_TABLE_SIZE, UserPolicy, resolve_policy
from .indices import (
    MAX_UPTO,
    UNDERFLOW,
    IndexabilityCheck,
    IndexabilityWarning,
    check_indexable,
    io_index,
    io_log_index,
    pi_index,
    rb_index,
    rb_log_index,
)
from .markov import (
    MAX_STATES,
    ChainResult,
    check_converged,
    evaluate_actions,
    evaluate_index_policy,
    evaluate_split,
    optimal_policy,
    optimal_policy_converged,
    truncation_certificate,
)
from .miss import f as miss_rate_of
from .model import Instance
from .simulation import ReplicationBlock, SimulationResult, simulate, simulate_replications
from .splitting import BernoulliSplit, optimal_split
from .three_cluster import stationary_3

__all__ = [
    "AUTO_COST_FLOOR",
    "AUTO_FACTOR",
    "AUTO_FADE",
    "AUTO_MAX_ITERATIONS",
    "AUTO_MAX_LEVEL",
    "AUTO_MAX_STATES",
    "AUTO_RTOL",
    "AUTO_START",
    "AUTO_TRUNCATION_TOL",
    "INDEX_POLICIES",
    "MAX_SIMULATED_ARRIVALS",
    "METHODS",
    "POLICIES",
    "POLICY_DESCRIPTIONS",
    "IndexTable",
    "PolicyError",
    "TableBoundWarning",
    "TruncationWarning",
    "decision_table",
    "evaluate",
    "index_function",
    "index_table",
    "simulate_policy",
    "simulate_policy_replications",
    "split_probabilities",
    "user_index_table",
]

#: Every policy of Part B:
#:
#: * ``"bs"``: optimal Bernoulli splitting, static random rejection and routing (Sec. 4);
#: * ``"io"``: index policy with the individually optimal index ``nu(x) = P^miss(x)``;
#: * ``"pi"``: index policy of one policy-improvement step from Bernoulli splitting;
#: * ``"rb"``: index policy of the restless-bandit marginal productivity index;
#: * ``"optimal"``: the average-cost optimal policy of the truncated chain (relative value
#:   iteration; exact evaluation only, up to three clusters).
POLICIES = ("bs", "io", "pi", "rb", "optimal")
#: One line on each policy (the CLI's help shows them).
POLICY_DESCRIPTIONS = {
    "bs": "optimal Bernoulli splitting (static random rejection and routing)",
    "io": "index policy, index = the job's own miss probability",
    "pi": "index policy of one policy-improvement step from Bernoulli splitting",
    "rb": "index policy of the restless-bandit (Whittle-type) index",
    "optimal": "the optimal policy of the truncated chain (up to three clusters, exact only)",
}
#: The policies given by an index table.
INDEX_POLICIES = ("io", "pi", "rb")
#: How :func:`evaluate` evaluates a policy.
METHODS = ("exact", "simulation")

_SATURATION = 1e-6  # PI clamps a BS-saturated cluster's rate to (1 - this) m_k mu_k

#: Automatic truncation of ``evaluate(..., method="exact", truncation=None)``: the level
#: starts at ``AUTO_START[n]`` and grows by ``AUTO_FACTOR`` until the cost's change as the
#: level grows certifies it (:func:`~queue_routing.deadlines.markov.truncation_certificate`)
#: to ``max(AUTO_RTOL |cost|, AUTO_COST_FLOOR lam)``; the level stays within
#: ``AUTO_MAX_STATES`` states and ``AUTO_MAX_LEVEL`` jobs per cluster (1999 for two clusters,
#: 157 for three, 20 000 for one), beyond which :class:`~queue_routing.errors.AccuracyError`.
AUTO_START = {1: 60, 2: 60, 3: 30}
AUTO_FACTOR = 1.5
AUTO_RTOL = 1e-6
#: The absolute floor of the tolerance, per arrival: a cost rate at or below
#: ``AUTO_COST_FLOOR * lam`` (fewer than one charged job in 10^12 arrivals) is certified as
#: being that small, not to six relative digits (``below_floor`` in the result's JSON).
AUTO_COST_FLOOR = 1e-12
#: An index policy's truncation must also fade as the level grows: the rate of arrivals
#: whose decision the level changes is at most ``AUTO_TRUNCATION_TOL lam`` or at most
#: ``AUTO_FADE`` times its value at the level before. A policy under which a queue grows
#: without bound (a transient chain) keeps a fixed share of the arrivals at the level,
#: however large: its truncated costs converge, but to the cost of the truncated system,
#: not of the policy (``docs/deadlines.md#truncated-chain``).
AUTO_TRUNCATION_TOL = 1e-8
AUTO_FADE = 0.5
AUTO_MAX_STATES = MAX_STATES
AUTO_MAX_LEVEL = 20_000
#: Relative value iteration (policy ``"optimal"``) at one automatic level stops here.
AUTO_MAX_ITERATIONS = 200_000
#: Most arrivals (``lam * (warmup + horizon)``) one simulated replication may have.
MAX_SIMULATED_ARRIVALS = 10**10


class TruncationWarning(UserWarning):
    """A result of :func:`evaluate` at an explicit truncation level that the costs at lower
    levels do not certify (its ``certified`` is false): returned as the truncated chain
    stands, and said so."""


#: The error of a bad argument of the policy layer, under its former name: the shared
#: :class:`~queue_routing.errors.ArgumentError` itself (``argument`` names the argument, and
#: so does the message). :class:`TableBoundWarning` is likewise the shared
#: :class:`~queue_routing.errors.TableBoundWarning`.
PolicyError = ArgumentError


def _check_policy(policy: Any, allowed: tuple[str, ...] = POLICIES) -> str:
    if not isinstance(policy, str) or policy not in allowed:
        raise ArgumentError(
            "policy", f"policy must be one of {', '.join(allowed)}; got {show(policy)}"
        )
    return policy


def policy_or_user(policy: Any, allowed: tuple[str, ...]) -> str | UserPolicy:
    """A name of ``allowed``, or a user index policy (``"path.py:name"``, a callable
    ``index(server, jobs, instance)`` or a :class:`~queue_routing.user_policy.UserPolicy`;
    :mod:`queue_routing.user_policy`); an :class:`~queue_routing.errors.ArgumentError` naming
    the choices otherwise."""
    if isinstance(policy, str) and (policy in allowed or ":" not in policy):
        return _check_policy(policy, allowed)
    return resolve_policy(policy, allowed)


def user_index_table(instance: Instance, policy: UserPolicy, upto: int) -> IndexTable:
    """The :class:`IndexTable` of a user policy, ``table[k, x] = index(k, x, instance)``
    for cluster ``k`` (from 0) and ``x = 0..upto`` jobs (cost per job, compared with ``R``;
    ``docs/README.md#your-own-policy``). Its rows' indexability is checked and recorded in
    ``checks`` but not warned about: a user policy need not be monotone. The policy decides
    by this table as it stands (:func:`decision_table` leaves it unchanged)."""
    upto = integer("upto", upto, 0, MAX_UPTO)
    table = policy.index_table(instance.n_clusters, upto, instance)
    checks = tuple(check_indexable(r) for r in table)
    return IndexTable(policy=policy.name, table=table, checks=checks)


def _table_of(instance, policy, upto, split=None) -> IndexTable:
    """:func:`index_table` of a built-in index policy, :func:`user_index_table` of a user's."""
    if isinstance(policy, UserPolicy):
        return user_index_table(instance, policy, upto)
    return index_table(instance, policy, upto, split=split)


def check_instance(instance: Any) -> Instance:
    """``instance`` if it is an :class:`~queue_routing.deadlines.model.Instance`; an
    :class:`~queue_routing.errors.ArgumentError` naming ``instance`` otherwise."""
    if not isinstance(instance, Instance):
        raise ArgumentError(
            "instance", f"instance must be an Instance, got {type(instance).__name__}"
        )
    return instance


# -- Bernoulli splitting -------------------------------------------------------------------
def split_probabilities(instance: Instance, split: BernoulliSplit | None = None) -> np.ndarray:
    """``(p_0, p_1, ..., p_n)``: reject with ``p_0``, else route to cluster ``k`` with ``p_k``,
    of the Bernoulli split ``split`` (default :func:`optimal_split`), renormalised to sum to 1.

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 1.5, "servers": [2, 2],
    ...     "service_rates": [1.0, 1.0], "rejection_cost": None,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> split_probabilities(inst).round(9).tolist()
    [0.0, 0.5, 0.5]
    """
    split = optimal_split(instance) if split is None else split
    probs = np.concatenate([[split.rejected_rate], split.rates]) / instance.arrival_rate
    return probs / probs.sum()


# -- index tables --------------------------------------------------------------------------
@dataclass(frozen=True)
class IndexTable:
    """Index table ``table[k, x]``, ``x = 0..upto``, of one policy on one instance.

    Attributes
    ----------
    policy:
        ``"io"``, ``"pi"`` or ``"rb"``.
    table:
        Shape ``(n, upto + 1)`` (cost per job).
    checks:
        Indexability check of every row (all rows, whatever the policy).
    rates:
        PI: the Bernoulli-splitting rates ``lam_k*`` used (jobs per unit time); else empty.
    notes:
        Anything the caller should know (e.g. a saturated cluster's clamped rate).
    """

    policy: str
    table: np.ndarray
    checks: tuple[IndexabilityCheck, ...]
    rates: np.ndarray = field(default_factory=lambda: np.zeros(0))
    notes: tuple[str, ...] = ()

    @property
    def indexable(self) -> bool:
        return all(c.indexable for c in self.checks)


def _index_row(
    instance: Instance, policy: str, k: int, upto: int, rates: np.ndarray
) -> tuple[np.ndarray, str | None]:
    """``nu(0..upto)`` of cluster ``k`` (from 0) under ``policy``, and a note or ``None``.

    PI uses the BS rate ``rates[k]``, clamped below a saturated cluster's capacity."""
    c, dl = instance.clusters[k], instance.deadline
    if policy == "io":
        return io_index(c, dl, upto), None
    if policy == "rb":
        return rb_index(c, dl, instance.arrival_rate, upto), None
    lam_k = float(rates[k])
    note = None
    if lam_k >= c.capacity * (1 - _SATURATION):
        lam_k = c.capacity * (1 - _SATURATION)
        note = f"cluster {k + 1}: BS rate saturated, PI uses lam_k = {lam_k:.9g}"
    return pi_index(c, dl, lam_k, upto), note


def _warn_not_indexable(policy: str, k: int, chk: IndexabilityCheck) -> None:
    warnings.warn(
        f"{policy} index of cluster {k + 1} is not nondecreasing at x = "
        f"{list(chk.violations)[:10]} (max drop {chk.max_drop:.3g})",
        IndexabilityWarning,
        stacklevel=3,
    )


def index_table(
    instance: Instance, policy: str, upto: int, *, split: BernoulliSplit | None = None
) -> IndexTable:
    """Index table of ``policy`` in :data:`INDEX_POLICIES` for every cluster of ``instance``.

    PI uses the rates of :func:`~queue_routing.deadlines.splitting.optimal_split`; a cluster
    that BS saturates (``lam_k = m_k mu_k``) has no stationary relative values, so its rate is
    clamped to ``(1 - 1e-6) m_k mu_k`` (recorded in ``notes``; clusters numbered from 1).
    RB feeds every cluster the whole stream ``lam``. A row failing the indexability check
    raises an :class:`~queue_routing.deadlines.indices.IndexabilityWarning` and is reported
    in ``checks`` (never hidden). ``upto`` is at most
    :data:`~queue_routing.deadlines.indices.MAX_UPTO`; ``split`` reuses a PI split.
    """
    check_instance(instance)
    _check_policy(policy, INDEX_POLICIES)
    upto = integer("upto", upto, 0, MAX_UPTO)
    rates = np.zeros(0)
    if policy == "pi":
        split = optimal_split(instance) if split is None else split
        rates = np.array(split.rates, dtype=float)
    rows, notes = [], []
    for k in range(instance.n_clusters):
        row, note = _index_row(instance, policy, k, upto, rates)
        rows.append(row)
        if note is not None:
            notes.append(note)
    checks = tuple(check_indexable(r) for r in rows)
    for k, chk in enumerate(checks):
        if not chk.indexable:
            _warn_not_indexable(policy, k, chk)
    table = np.vstack(rows)
    table.setflags(write=False)
    return IndexTable(policy=policy, table=table, checks=checks, rates=rates, notes=tuple(notes))


def decision_table(instance: Instance, table: IndexTable) -> np.ndarray:
    """The table an index policy decides by: ``table.table`` with its entries below
    :data:`~queue_routing.deadlines.indices.UNDERFLOW` (``1e-290``: underflowing doubles,
    e.g. ``P^miss = e^{-mu t}`` with ``mu t > 745``) replaced, when two clusters have such
    entries, by ``UNDERFLOW / (1 + log(UNDERFLOW / nu))`` with ``log nu`` computed in log
    space: increasing in ``nu``, below every larger index and every rejection cost, so the
    decisions are those of the exact indices (``docs/deadlines.md#index-policies``) and not
    ties of zeros broken to the lowest cluster.

    PI's index has no log-space evaluation: two clusters with PI indices below ``1e-290``
    raise :class:`~queue_routing.errors.AccuracyError`. A user policy's table (a policy not
    in :data:`INDEX_POLICIES`) is returned as it stands: its values are the user's.
    """
    nu = np.asarray(table.table, dtype=float)
    if table.policy not in INDEX_POLICIES:
        return nu
    low = nu < UNDERFLOW
    rows = np.flatnonzero(low.any(axis=1))
    if rows.size < 2:
        return nu
    if table.policy == "pi":
        raise AccuracyError(
            f"pi: the indices of clusters {', '.join(str(k + 1) for k in rows)} fall below "
            f"{UNDERFLOW:g} (e.g. e^(-mu t) with mu t > 745), where double precision cannot "
            "order them; the pi policy is not resolved (io and rb are)"
        )
    upto = nu.shape[1] - 1
    keys = nu.copy()
    for k in rows:
        c, dl = instance.clusters[k], instance.deadline
        if table.policy == "io":
            log_nu = io_log_index(c, dl, upto)
        else:
            log_nu = rb_log_index(c, dl, instance.arrival_rate, upto)
        sel = low[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            key = UNDERFLOW / (
                1.0 + (math.log(UNDERFLOW) - np.minimum(log_nu[sel], math.log(UNDERFLOW)))
            )
        keys[k, sel] = np.where(np.isneginf(log_nu[sel]), 0.0, key)
    keys.setflags(write=False)
    return keys


def index_function(instance: Instance, policy: str, cluster: int, upto: int) -> np.ndarray:
    """``nu(0..upto)`` of one cluster under the index policy ``policy`` (in
    :data:`INDEX_POLICIES`); ``cluster`` is the cluster's number from 1 to ``n``.

    The row equals that of :func:`index_table` (only this cluster's row is computed, in
    ``O(upto)``; PI still solves the instance's Bernoulli splitting for the cluster's rate),
    with the same :class:`~queue_routing.deadlines.indices.IndexabilityWarning` if it is not
    monotone. ``upto`` is at most :data:`~queue_routing.deadlines.indices.MAX_UPTO` (100 000
    jobs; :class:`~queue_routing.errors.ArgumentError` beyond).

    A job finding a free server misses a response deadline ``t`` iff its service outlasts
    ``t``, so IO's index is ``e^{-mu t}`` below ``m`` jobs (here ``m = 3``, ``mu = 1``):

    >>> import math
    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 3.5, "servers": [3, 2],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> nu = index_function(inst, "io", 1, 4)
    >>> len(nu), all(abs(v - math.exp(-1.5)) < 1e-15 for v in nu[:3]), bool(nu[3] < nu[4])
    (5, True, True)
    >>> bool((index_function(inst, "pi", 2, 4) == index_table(inst, "pi", 4).table[1]).all())
    True
    """
    check_instance(instance)
    _check_policy(policy, INDEX_POLICIES)
    n = instance.n_clusters
    if not is_int(cluster) or not 1 <= cluster <= n:
        raise ArgumentError("cluster", f"cluster must be in 1..{n}, got {show(cluster)}")
    upto = integer("upto", upto, 0, MAX_UPTO)
    rates = np.array(optimal_split(instance).rates, dtype=float) if policy == "pi" else None
    row, _ = _index_row(instance, policy, int(cluster) - 1, int(upto), rates)
    chk = check_indexable(row)
    if not chk.indexable:
        _warn_not_indexable(policy, int(cluster) - 1, chk)
    return np.asarray(row, dtype=float)


# -- simulation of one policy --------------------------------------------------------------
def simulate_policy(
    instance: Instance,
    policy: str,
    *,
    horizon: float,
    warmup: float | None = None,
    replications: int,
    seed: int,
    keys: tuple = (),
    table_size: int = DEFAULT_TABLE_SIZE,
    table: IndexTable | None = None,
    split: BernoulliSplit | None = None,
    progress: Callable[..., Any] | None = None,
) -> SimulationResult:
    """Simulate ``policy`` (``"bs"`` or one of :data:`INDEX_POLICIES`) on ``instance`` with
    :func:`~queue_routing.deadlines.simulation.simulate`.

    BS routes by :func:`split_probabilities`; an index policy by its :func:`index_table`
    over ``x = 0..table_size`` (``1 <= table_size <= MAX_UPTO``; beyond it a cluster is
    treated as full), or by ``table`` if given (an index table of this policy already
    computed, e.g. for its indexability); BS reuses ``split`` if given (the optimal split
    already solved). ``warmup`` defaults to ``0.1 * horizon``; ``seed``
    and ``keys`` seed the replications.

    If the end of the table may have changed the decision of any measured arrival (a
    cluster beyond its table whose last index is not above the chosen index or ``R``), the
    result is that of the truncated policy: the count is the result's ``table_bound`` and a
    :class:`TableBoundWarning` says so (:func:`evaluate` raises
    :class:`~queue_routing.errors.AccuracyError` instead).

    ``policy`` may also be a user index policy (``"path.py:name"``, a callable
    ``index(server, jobs, instance)`` or a :class:`~queue_routing.user_policy.UserPolicy`;
    ``docs/README.md#your-own-policy``), tabulated by :func:`user_index_table` over ``x =
    0..table_size``, with the same rule and the same table-bound report.
    """
    policy, run = _simulation_run(instance, policy, horizon, warmup, seed, keys, replications)
    routing, table = _routing(instance, policy, table_size, table, split)
    res = simulate(instance, **routing, **run, progress=progress)
    if res.table_bound:
        message = table_bound_message(res.table_bound, table.table.shape[1] - 1)
        warnings.warn(message, TableBoundWarning, stacklevel=2)
    return res


def _simulation_run(
    instance, policy, horizon, warmup, seed, keys, replications=None
) -> tuple[str | UserPolicy, dict[str, Any]]:
    """The checked arguments of :func:`simulate_policy` (with ``replications``, a count) and
    :func:`simulate_policy_replications` (without): ``(policy, run)``, ``policy`` a name or
    a :class:`~queue_routing.user_policy.UserPolicy` and ``run`` the simulator's keyword
    arguments ``horizon``, ``warmup`` (default ``0.1 * horizon``), ``replications``,
    ``seed`` and ``keys`` (a tuple)."""
    check_instance(instance)
    policy = policy_or_user(policy, ("bs", *INDEX_POLICIES))
    horizon = time_length("horizon", horizon)
    warmup = 0.1 * horizon if warmup is None else time_length("warmup", warmup, allow_zero=True)
    run = {"horizon": horizon, "warmup": warmup}
    if replications is not None:
        run["replications"] = integer("replications", replications, 2)
    run["seed"] = integer("seed", seed, 0)
    if not isinstance(keys, tuple | list):
        raise ArgumentError("keys", f"keys must be a tuple, got {type(keys).__name__}")
    run["keys"] = tuple(keys)
    arrivals = instance.arrival_rate * (warmup + horizon)
    if arrivals > MAX_SIMULATED_ARRIVALS:
        raise ArgumentError(
            "horizon",
            f"horizon: arrival_rate * (warmup + horizon) = {arrivals:.3g} arrivals per "
            f"replication exceeds {MAX_SIMULATED_ARRIVALS:.0e}",
        )
    return policy, run


def _routing(instance, policy, table_size, table, split):
    """``({"split": ...} or {"index": ...}, index table or None)`` of ``policy`` (a name or
    a :class:`~queue_routing.user_policy.UserPolicy`)."""
    if isinstance(policy, str) and policy == "bs":
        return {"split": split_probabilities(instance, split)}, None
    name = policy.name if isinstance(policy, UserPolicy) else policy
    if table is None:
        size = integer("table_size", table_size, 1, MAX_UPTO)
        table = _table_of(instance, policy, size)
    elif not isinstance(table, IndexTable):
        raise ArgumentError("table", f"table must be an IndexTable, got {type(table).__name__}")
    elif table.policy != name:
        raise ArgumentError(
            "table", f"table is an index table of {table.policy!r}, not {show(name)}"
        )
    return {"index": decision_table(instance, table)}, table


def simulate_policy_replications(
    instance: Instance,
    policy: str,
    replications: Iterable[int],
    *,
    horizon: float,
    warmup: float | None = None,
    seed: int,
    keys: tuple = (),
    table_size: int = DEFAULT_TABLE_SIZE,
    table: IndexTable | None = None,
    split: BernoulliSplit | None = None,
    progress: Callable[..., Any] | None = None,
) -> ReplicationBlock:
    """The replications with the given indices (any non-empty set) of :func:`simulate_policy`,
    per replication and without statistics
    (:func:`~queue_routing.deadlines.simulation.simulate_replications`): replication ``r`` is
    bit for bit replication ``r`` of the unsplit run, so a study split into replication
    blocks (:mod:`queue_routing.workflow.chunks`) reassembles exactly. No
    :class:`TableBoundWarning`: the block's ``table_bound_per_replication`` holds the counts."""
    policy, run = _simulation_run(instance, policy, horizon, warmup, seed, keys)
    routing, _ = _routing(instance, policy, table_size, table, split)
    return simulate_replications(instance, replications, **routing, **run, progress=progress)


def table_bound_message(table_bound: int, table_size: int, policy: str | None = None) -> str:
    """What a simulation says when the end of an index table over ``x = 0..table_size``
    (of ``policy``, if given) may have decided ``table_bound`` measured arrivals."""
    of = "" if policy is None else f" of {policy}"
    return (
        f"table_size: the end of the index table{of} (x <= {table_size}) may have decided "
        f"{table_bound} measured arrivals (a cluster beyond it counts as full); raise table_size"
    )


def check_simulation(
    res: SimulationResult, table_size: int, *, policy: str | None = None, table_bound: bool = True
) -> SimulationResult:
    """``res`` if its cost is finite and, with ``table_bound``, the end of no index table
    over ``x = 0..table_size`` may have decided a measured arrival; otherwise an
    :class:`~queue_routing.errors.AccuracyError` (naming ``policy``, if given): a result that
    is not the policy's (:func:`table_bound_message`)."""
    if table_bound and res.table_bound:
        raise AccuracyError(table_bound_message(res.table_bound, table_size, policy))
    if not math.isfinite(res.cost):
        of = "" if policy is None else f" of {policy}"
        raise AccuracyError(f"the simulated cost rate{of} is not finite ({res.cost})")
    return res


# -- the library entry point ---------------------------------------------------------------
def evaluate(
    instance: Instance,
    policy: str,
    *,
    method: str = "exact",
    truncation: int | None = None,
    horizon: float = 20000.0,
    warmup: float | None = None,
    replications: int = 10,
    table_size: int = DEFAULT_TABLE_SIZE,
    seed: int = 0,
    keys: tuple = (),
    progress: Callable[..., Any] | None = None,
    certify: bool = True,
) -> ChainResult | SimulationResult:
    """Cost, rejection and miss rates of ``policy`` (one of :data:`POLICIES`) on ``instance``.

    ``method="exact"`` (at most 3 clusters):

    * with ``truncation=None`` (the default) the answer does not depend on a truncation:
      BS is its closed form ``R lam_0 + sum_k f_k(lam_k)`` (no chain, ``truncation`` None);
      an index policy and ``"optimal"`` are solved on the chain truncated at
      levels ``AUTO_START[n]`` (60, or 30 for three clusters), times :data:`AUTO_FACTOR`,
      ... until the cost's change as the level grows certifies it
      (:func:`~queue_routing.deadlines.markov.truncation_certificate`: the last change, or
      its geometric extrapolation over the last three levels, within
      ``max(AUTO_RTOL |cost|, AUTO_COST_FLOOR lam)``; how often the chain touches the level
      does not decide); jobs the truncation turns away are counted as lost (not charged
      ``R``: see :mod:`.markov`). ``"optimal"`` is
      :func:`~queue_routing.deadlines.markov.optimal_policy_converged` (relative value
      iteration, each level warm-started from the last, at most
      :data:`AUTO_MAX_ITERATIONS` iterations per level) with that certificate, its decision
      table then evaluated on the chain. Three clusters use the compiled iterative solver
      :func:`~queue_routing.deadlines.three_cluster.stationary_3`. The level stays within
      :data:`AUTO_MAX_STATES` states (1999 for two clusters, 157 for three) and
      :data:`AUTO_MAX_LEVEL`; if the cost is not certified there,
      :class:`~queue_routing.errors.AccuracyError` gives the level reached and the last
      change. The result's ``history`` lists ``(level, cost)``, ``truncation_error`` the
      estimated error, ``certified`` is true; a cost at most ``cost_floor``
      (:data:`AUTO_COST_FLOOR` per arrival) is certified as being that small.
    * with an explicit ``truncation`` (an integer >= 1, at most 4 000 000 states) the chain
      is solved at that level as it stands: an index policy by its
      :func:`index_table` up to the level (a rejection the level forces is charged ``R`` and
      reported as ``forced_rejection_rate``), BS by
      :func:`~queue_routing.deadlines.markov.evaluate_split`, ``"optimal"`` by relative value
      iteration at the level; the result carries the diagnostics ``truncation_rate``,
      ``lost_rate``, ``boundary_mass``, ``forced_rejection_rate``, and those of the
      automatic path (``history``, ``truncation_error``, ``certified``, ``cost_floor``)
      from the same chain solved at up to two lower levels (``L / 1.5``, ``L / 2.25``);
      an uncertified result also raises a :class:`TruncationWarning`. With
      ``certify=False`` the lower levels are not solved (``certified`` and
      ``truncation_error`` are ``None``: not assessed), for a caller that judges the level
      itself (about 40% less work at two clusters).

    Returns a :class:`~queue_routing.deadlines.markov.ChainResult`.

    ``method="simulation"`` (not for ``"optimal"``) runs :func:`simulate_policy`:
    ``replications`` runs of ``warmup`` (default ``0.1 * horizon``) plus ``horizon`` time
    units, index tables over ``x = 0..table_size`` (an :class:`AccuracyError` if the end of
    the table decided a measured arrival), streams from ``seed`` and ``keys``; returns a
    :class:`~queue_routing.deadlines.simulation.SimulationResult`.

    Both results' ``to_dict()`` give ``{"cost", "rejection_rate", "miss_rate", "ci95"}``
    (``ci95`` is ``None`` for the exact method, whose ``to_dict()`` adds the truncation's
    diagnostics: :meth:`~queue_routing.deadlines.markov.ChainResult.to_dict`). Bad arguments
    raise an :class:`~queue_routing.errors.ArgumentError` whose message starts with the
    argument's name.

    The optimal policy is never beaten, and simulation agrees with the exact chain:

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 2.5, "servers": [3, 2],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> exact = {p: evaluate(inst, p, truncation=20) for p in ("bs", "pi", "optimal")}
    >>> bool(exact["optimal"].cost <= exact["pi"].cost <= exact["bs"].cost)
    True
    >>> out = exact["pi"].to_dict()
    >>> out["ci95"], out["truncation"], out["certified"]
    (None, 20, False)
    >>> bool(abs(out["cost"] - (2.0 * out["rejection_rate"] + out["miss_rate"])) < 1e-12)
    True
    >>> sim = evaluate(inst, "pi", method="simulation", horizon=2000.0, table_size=60)
    >>> bool(abs(sim.cost - exact["pi"].cost) < 3 * sim.ci95), sim.replications
    (True, 10)
    >>> auto = evaluate(inst, "pi")  # the level raised until the cost is stable
    >>> auto.truncation > 60, bool(abs(auto.cost - exact["pi"].cost) < 1e-3)
    (True, True)

    ``policy`` may also be a user index policy (``"path.py:name"``, a callable
    ``index(server, jobs, instance)`` or a :class:`~queue_routing.user_policy.UserPolicy`;
    ``docs/README.md#your-own-policy``), evaluated like a built-in index policy: exactly on
    the chain from its table up to each level (:func:`user_index_table`), or by simulation.
    """
    check_instance(instance)
    policy = policy_or_user(policy, POLICIES)
    if not isinstance(method, str) or method not in METHODS:
        raise ArgumentError(
            "method", f"method must be one of {', '.join(METHODS)}; got {show(method)}"
        )
    n = instance.n_clusters
    if method == "exact":
        if n > 3:
            raise ArgumentError(
                "method", f"method exact handles at most 3 clusters, got {n}; use simulation"
            )
        if truncation is None:
            return _evaluate_auto(instance, policy, progress)
        level = integer("truncation", truncation, 1)
        if (level + 1) ** n > MAX_STATES:
            raise ArgumentError(
                "truncation",
                f"truncation: (truncation + 1)^{n} = {(level + 1) ** n:.3g} states exceeds "
                f"{MAX_STATES}",
            )
        if not certify:
            return replace(
                _at_level(instance, policy, level, progress), cost_floor=cost_floor(instance)
            )
        return _evaluate_explicit(instance, policy, level, progress)
    if policy == "optimal":
        raise ArgumentError("policy", "policy optimal is evaluated exactly only (use method exact)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TableBoundWarning)
        res = simulate_policy(
            instance,
            policy,
            horizon=horizon,
            warmup=warmup,
            replications=replications,
            seed=seed,
            keys=keys,
            table_size=table_size,
            progress=progress,
        )
    return check_simulation(res, table_size)


def _at_level(instance: Instance, policy, level: int, progress) -> ChainResult:
    """The chain at one explicit level, as it stands (``evaluate(..., truncation=level)``)."""
    if policy == "optimal":
        opt = optimal_policy(instance, level, progress=progress)
        check_converged(opt)
        return _finite(evaluate_actions(instance, opt.actions, level))
    if policy == "bs":
        return _finite(evaluate_split(instance, level))
    table = decision_table(instance, _table_of(instance, policy, level))
    return _finite(evaluate_index_policy(instance, table, level))


def _lower_levels(level: int) -> list[int]:
    """``[L_2, L_1, L]``: the explicit level and up to two below it, each about the previous
    divided by :data:`AUTO_FACTOR` (the automatic sequence read backwards), levels >= 1."""
    levels = [level]
    while len(levels) < 3:
        below = math.floor(levels[0] / AUTO_FACTOR)
        if below < 1 or below >= levels[0]:
            break
        levels.insert(0, below)
    return levels


def _fading(rates: list[float], lam: float) -> bool:
    """Whether the truncation's share of the arrivals fades as the level grows
    (:data:`AUTO_FADE`, :data:`AUTO_TRUNCATION_TOL`); ``rates`` per level, per unit time."""
    if rates[-1] <= AUTO_TRUNCATION_TOL * lam:
        return True
    return len(rates) >= 2 and rates[-1] <= AUTO_FADE * rates[-2]


def cost_floor(instance: Instance) -> float:
    """``AUTO_COST_FLOOR * lam``: the absolute floor (cost per unit time) of the truncation
    tolerance of :func:`evaluate`."""
    return AUTO_COST_FLOOR * instance.arrival_rate


def _evaluate_explicit(instance: Instance, policy, level: int, progress) -> ChainResult:
    """``evaluate(..., truncation=level)``: the chain at ``level`` as it stands, with the
    diagnostics of the automatic path from the same chain at up to two lower levels
    (:func:`_lower_levels`); a :class:`TruncationWarning` when they do not certify it."""
    floor = cost_floor(instance)
    history: list[tuple[int, float]] = []
    rates: list[float] = []
    res = None
    for lv in _lower_levels(level):
        try:
            res = _at_level(instance, policy, lv, progress)
        except AccuracyError:
            if lv == level:
                raise
            continue  # a lower level that cannot be solved certifies nothing
        history.append((lv, float(res.cost)))
        rates.append(float(res.truncation_rate))
    ok, err = truncation_certificate(history, AUTO_RTOL * abs(res.cost), floor)
    if len(history) < 2 or history[-1][0] != level:
        ok, err = False, math.inf
    if policy != "optimal" and not _fading(rates, instance.arrival_rate):
        ok = False
    if not ok:
        change = "has no lower level to compare"
        change = change if not math.isfinite(err) else f"changes it by ~{err:.3g}"
        warnings.warn(
            f"truncation: the cost at level {level} ({res.cost:.9g}) is not certified: the "
            f"truncation {change} (tolerance "
            f"{max(AUTO_RTOL * abs(res.cost), floor):.3g}; levels {[lv for lv, _ in history]}); "
            "omit truncation to let the level grow until it is",
            TruncationWarning,
            stacklevel=3,
        )
    return replace(
        res, truncation_error=err, certified=ok, cost_floor=floor, history=tuple(history)
    )


def _finite(res: ChainResult) -> ChainResult:
    if not math.isfinite(res.cost):
        raise AccuracyError(f"truncation: the cost rate at level {res.truncation} is {res.cost}")
    return res


def _max_level(n: int) -> int:
    """Largest automatic level: ``(L + 1)^n <= AUTO_MAX_STATES`` and ``L <= AUTO_MAX_LEVEL``."""
    level = round(AUTO_MAX_STATES ** (1.0 / n)) + 1
    while (level + 1) ** n > AUTO_MAX_STATES:
        level -= 1
    return min(level, AUTO_MAX_LEVEL)


def _levels(n: int):
    level, top = AUTO_START[n], _max_level(n)
    while True:
        yield level
        if level >= top:
            return
        level = min(top, max(level + 1, math.ceil(AUTO_FACTOR * level)))


def _stable(old: float, new: float) -> bool:
    return abs(new - old) <= AUTO_RTOL * max(abs(new), abs(old))


def _split_result(instance: Instance) -> ChainResult:
    """The BS cost in closed form (independent M/M/m queues; no truncation)."""
    split = optimal_split(instance)
    lam_k = np.asarray(split.rates, dtype=float)
    miss_k = np.array(
        [
            miss_rate_of(float(min(r, c.capacity)), c.servers, c.rate, instance.deadline)
            for r, c in zip(lam_k, instance.clusters, strict=True)
        ]
    )
    rejected = float(split.rejected_rate)
    r_cost = instance.rejection_cost
    miss = float(miss_k.sum())
    cost = miss + (0.0 if r_cost is None else r_cost * rejected)
    return _finite(
        ChainResult(
            cost=cost,
            rejection_rate=rejected,
            miss_rate=miss,
            cluster_miss_rate=miss_k,
            cluster_admission_rate=lam_k.copy(),
            lost_rate=0.0,
            truncation_rate=0.0,
            boundary_mass=0.0,
            truncation=None,
        )
    )


def _evaluate_auto(instance: Instance, policy: str, progress) -> ChainResult:
    """``evaluate(..., method="exact", truncation=None)`` (see :func:`evaluate`)."""
    floor = cost_floor(instance)
    if policy == "bs":
        return replace(_split_result(instance), truncation_error=0.0, certified=True,
                       cost_floor=floor)  # fmt: skip
    n = instance.n_clusters

    def certified(history) -> bool:
        return truncation_certificate(history, AUTO_RTOL * abs(history[-1][1]), floor)[0]

    # the stationary solvers' tolerance: relative to the BS cost (an upper bound of the
    # optimal cost, the scale of every policy's), never below a tenth of the floor
    tol = max(AUTO_RTOL * _split_result(instance).cost, floor)
    # three clusters: the compiled iterative solver (a sparse LU of (L+1)^3 states fills)
    solver = None if n < 3 else functools.partial(stationary_3, tol=tol / 10.0)
    if policy == "optimal":
        opt = optimal_policy_converged(
            instance,
            AUTO_START[n],
            tol,
            max_level=_max_level(n),
            rvi_tol=tol / 10.0,
            rtol=AUTO_RTOL,
            progress=progress,
            truncation_losses=True,
            max_iter=AUTO_MAX_ITERATIONS,
            certificate=certified,
        )
        res = evaluate_actions(instance, opt.actions, opt.truncation, solver=solver)
        _, err = truncation_certificate(opt.history, AUTO_RTOL * abs(opt.cost), floor)
        gap = abs(res.cost - opt.cost)
        if gap > max(AUTO_RTOL * abs(opt.cost), floor):
            raise AccuracyError(
                f"truncation: at level {opt.truncation} the decision table's exact cost "
                f"{res.cost:.9g} differs from value iteration's {opt.cost:.9g} by {gap:.3g}"
            )
        return _finite(replace(res, history=tuple(opt.history), truncation_error=err + gap,
                               certified=True, cost_floor=floor))  # fmt: skip
    split = optimal_split(instance) if policy == "pi" else None
    user = isinstance(policy, UserPolicy)
    name = policy.name if user else policy
    history: list[tuple[int, float]] = []
    rates: list[float] = []
    stuck = 0
    for level in _levels(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IndexabilityWarning)
            table = _table_of(instance, policy, level, split=split)
        keys = decision_table(instance, table)
        res = evaluate_index_policy(instance, keys, level, truncation_losses=True, solver=solver)
        history.append((level, float(res.cost)))
        if progress is not None:
            progress(1, extra=f"truncation {level}, cost {res.cost:.9g}")
        rates.append(float(res.truncation_rate))
        ok, err = truncation_certificate(history, AUTO_RTOL * abs(res.cost), floor)
        fading = _fading(rates, instance.arrival_rate)
        # settled but not fading at two levels in a row: a transient queue, refused now
        stuck = stuck + 1 if ok and not fading else 0
        if stuck >= 2:
            break
        if ok and fading:
            for k, chk in enumerate(table.checks):  # as index_table warns, at the final level
                if not chk.indexable and not user:
                    _warn_not_indexable(policy, k, chk)
            return _finite(replace(res, history=tuple(history), truncation_error=err,
                                   certified=True, cost_floor=floor))  # fmt: skip
    change = abs(history[-1][1] - history[-2][1]) / max(abs(history[-1][1]), 1e-300)
    if ok:  # the cost settled, the truncation's share of the arrivals did not fade
        raise AccuracyError(
            f"truncation: the cost of {name} settles but the level still decides "
            f"{rates[-1] / instance.arrival_rate:.3g} of the arrivals at level "
            f"{history[-1][0]} (at {history[-2][0]}: {rates[-2] / instance.arrival_rate:.3g}): "
            "a queue grows without bound under this policy, and the truncated chain is not "
            "the policy; use method simulation to see it"
        )
    raise AccuracyError(
        f"truncation: the cost of {name} is not stable up to level {history[-1][0]} "
        f"(last relative change {change:.2g}, estimated error {err:.3g}; tolerance "
        f"{AUTO_RTOL:g} relative, {floor:.3g} absolute): a cluster is at that level with "
        f"probability {res.boundary_mass:.3g}; use method simulation with a table_size "
        "above its queues"
    )
