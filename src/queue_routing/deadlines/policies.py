"""The policies of Part B on an :class:`~queue_routing.deadlines.model.Instance`.

This module is the one translation from an instance to what the solvers and the simulator
take: the Bernoulli-splitting probabilities (:func:`split_probabilities`), the index tables
(:func:`index_table`, :func:`index_function`), a simulation of one named policy
(:func:`simulate_policy`), and the library entry point :func:`evaluate` (exact evaluation on
the truncated chain of :mod:`.markov`, or simulation by :mod:`.simulation`).

Errors in the arguments of this layer are :class:`PolicyError` (a ``ValueError``) with a
one-line message that starts with the argument's name.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .indices import (
    IndexabilityCheck,
    IndexabilityWarning,
    check_indexable,
    io_index,
    pi_index,
    rb_index,
)
from .markov import (
    ChainResult,
    evaluate_actions,
    evaluate_index_policy,
    evaluate_split,
    optimal_policy_converged,
)
from .model import Instance
from .simulation import SimulationResult, simulate
from .splitting import BernoulliSplit, optimal_split

__all__ = [
    "INDEX_POLICIES",
    "METHODS",
    "POLICIES",
    "POLICY_DESCRIPTIONS",
    "IndexTable",
    "PolicyError",
    "evaluate",
    "index_function",
    "index_table",
    "simulate_policy",
    "split_probabilities",
]

#: Every policy of Part B:
#:
#: * ``"bs"``: optimal Bernoulli splitting, static random rejection and routing (Sec. 4);
#: * ``"io"``: index policy with the individually optimal index ``nu(x) = P^miss(x)``;
#: * ``"pi"``: index policy of one policy-improvement step from Bernoulli splitting;
#: * ``"rb"``: index policy of the restless-bandit marginal productivity index;
#: * ``"optimal"``: the average-cost optimal policy of the truncated chain (relative value
#:   iteration; exact evaluation of two clusters only).
POLICIES = ("bs", "io", "pi", "rb", "optimal")
#: One line on each policy (the CLI's help shows them).
POLICY_DESCRIPTIONS = {
    "bs": "optimal Bernoulli splitting (static random rejection and routing)",
    "io": "index policy, index = the job's own miss probability",
    "pi": "index policy of one policy-improvement step from Bernoulli splitting",
    "rb": "index policy of the restless-bandit (Whittle-type) index",
    "optimal": "the optimal policy of the truncated chain (two clusters, exact only)",
}
#: The policies given by an index table.
INDEX_POLICIES = ("io", "pi", "rb")
#: How :func:`evaluate` evaluates a policy.
METHODS = ("exact", "simulation")

_SATURATION = 1e-6  # PI clamps a BS-saturated cluster's rate to (1 - this) m_k mu_k


class PolicyError(ValueError):
    """A bad argument of the policy layer; ``argument`` names it, and so does the message."""

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(message)


def _check_policy(policy: Any, allowed: tuple[str, ...] = POLICIES) -> str:
    if policy not in allowed:
        raise PolicyError("policy", f"policy must be one of {', '.join(allowed)}; got {policy!r}")
    return policy


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
        note = f"cluster {k}: BS rate saturated, PI uses lam_k = {lam_k:.9g}"
    return pi_index(c, dl, lam_k, upto), note


def _warn_not_indexable(policy: str, k: int, chk: IndexabilityCheck) -> None:
    warnings.warn(
        f"{policy} index of cluster {k} is not nondecreasing at x = "
        f"{list(chk.violations)[:10]} (max drop {chk.max_drop:.3g})",
        IndexabilityWarning,
        stacklevel=3,
    )


def index_table(instance: Instance, policy: str, upto: int) -> IndexTable:
    """Index table of ``policy`` in :data:`INDEX_POLICIES` for every cluster of ``instance``.

    PI uses the rates of :func:`~queue_routing.deadlines.splitting.optimal_split`; a cluster
    that BS saturates (``lam_k = m_k mu_k``) has no stationary relative values, so its rate is
    clamped to ``(1 - 1e-6) m_k mu_k`` (recorded in ``notes``). RB feeds every cluster the
    whole stream ``lam``. A row failing the indexability check raises an
    :class:`~queue_routing.deadlines.indices.IndexabilityWarning` and is reported in
    ``checks`` (never hidden).
    """
    _check_policy(policy, INDEX_POLICIES)
    rates = np.zeros(0)
    if policy == "pi":
        rates = np.array(optimal_split(instance).rates, dtype=float)
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


def index_function(instance: Instance, policy: str, cluster: int, upto: int) -> np.ndarray:
    """``nu(0..upto)`` of one cluster under the index policy ``policy`` (in
    :data:`INDEX_POLICIES`); ``cluster`` is the cluster's number from 1 to ``n``.

    The row equals that of :func:`index_table` (only this cluster's row is computed; PI
    still solves the instance's Bernoulli splitting for the cluster's rate), with the same
    :class:`~queue_routing.deadlines.indices.IndexabilityWarning` if it is not monotone.

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
    _check_policy(policy, INDEX_POLICIES)
    n = instance.n_clusters
    if (
        isinstance(cluster, bool)
        or not isinstance(cluster, int | np.integer)
        or not 1 <= cluster <= n
    ):
        raise PolicyError("cluster", f"cluster must be in 1..{n}, got {cluster!r}")
    if isinstance(upto, bool) or not isinstance(upto, int | np.integer) or upto < 0:
        raise PolicyError("upto", f"upto must be an integer >= 0, got {upto!r}")
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
    table_size: int = 400,
    table: IndexTable | None = None,
) -> SimulationResult:
    """Simulate ``policy`` (``"bs"`` or one of :data:`INDEX_POLICIES`) on ``instance`` with
    :func:`~queue_routing.deadlines.simulation.simulate`.

    BS routes by :func:`split_probabilities`; an index policy by its :func:`index_table`
    over ``x = 0..table_size`` (beyond it a cluster is treated as full), or by ``table`` if
    given (an index table of this policy already computed, e.g. for its indexability).
    ``warmup`` defaults to ``0.1 * horizon``; ``seed`` and ``keys`` seed the replications.
    """
    _check_policy(policy, ("bs", *INDEX_POLICIES))
    if warmup is None:
        warmup = 0.1 * horizon
    run = {
        "horizon": horizon,
        "warmup": warmup,
        "replications": replications,
        "seed": seed,
        "keys": tuple(keys),
    }
    if policy == "bs":
        return simulate(instance, split=split_probabilities(instance), **run)
    if table is None:
        table = index_table(instance, policy, table_size)
    elif table.policy != policy:
        raise PolicyError("table", f"table is an index table of {table.policy!r}, not {policy!r}")
    return simulate(instance, index=table.table, **run)


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
    table_size: int = 400,
    seed: int = 0,
    keys: tuple = (),
) -> ChainResult | SimulationResult:
    """Cost, rejection and miss rates of ``policy`` (one of :data:`POLICIES`) on ``instance``.

    ``method="exact"`` (at most 3 clusters) solves the chain truncated at level
    ``truncation`` (default 60 for up to 2 clusters, 30 for 3): BS by
    :func:`~queue_routing.deadlines.markov.evaluate_split`, an index policy by its
    :func:`index_table` up to the truncation level, and ``"optimal"`` (2 clusters only) by
    relative value iteration with the level raised until the cost is stable
    (:func:`~queue_routing.deadlines.markov.optimal_policy_converged`), then the exact
    evaluation of its decision table; returns a
    :class:`~queue_routing.deadlines.markov.ChainResult`.

    ``method="simulation"`` (not for ``"optimal"``) runs :func:`simulate_policy`:
    ``replications`` runs of ``warmup`` (default ``0.1 * horizon``) plus ``horizon`` time
    units, index tables over ``x = 0..table_size``, streams from ``seed`` and ``keys``;
    returns a :class:`~queue_routing.deadlines.simulation.SimulationResult`.

    Both results' ``to_dict()`` give ``{"cost_rate", "rejection_rate", "miss_rate",
    "ci95"}`` (``ci95`` is ``None`` for the exact method). Bad arguments raise a
    ``ValueError`` (:class:`PolicyError` for the dispatch) whose message names the argument.

    The optimal policy is never beaten, and simulation agrees with the exact chain:

    >>> from queue_routing.deadlines import Instance
    >>> inst = Instance.from_dict({"arrival_rate": 2.5, "servers": [3, 2],
    ...     "service_rates": [1.0, 0.8], "rejection_cost": 2.0,
    ...     "deadline": {"kind": "constant", "t": 1.5}})
    >>> exact = {p: evaluate(inst, p, truncation=20) for p in ("bs", "pi", "optimal")}
    >>> bool(exact["optimal"].cost <= exact["pi"].cost <= exact["bs"].cost)
    True
    >>> out = exact["pi"].to_dict()
    >>> sorted(out), out["ci95"]
    (['ci95', 'cost_rate', 'miss_rate', 'rejection_rate'], None)
    >>> bool(abs(out["cost_rate"] - (2.0 * out["rejection_rate"] + out["miss_rate"])) < 1e-12)
    True
    >>> sim = evaluate(inst, "pi", method="simulation", horizon=2000.0, table_size=60)
    >>> bool(abs(sim.cost - exact["pi"].cost) < 3 * sim.ci95), sim.replications
    (True, 10)
    """
    _check_policy(policy)
    n = instance.n_clusters
    if method == "exact":
        if n > 3:
            raise PolicyError(
                "method", f"method exact handles at most 3 clusters, got {n}; use simulation"
            )
        level = (60 if n <= 2 else 30) if truncation is None else truncation
        if policy == "optimal":
            if n != 2:
                raise PolicyError(
                    "policy", f"policy optimal is implemented for 2 clusters, got {n}"
                )
            opt = optimal_policy_converged(instance, level)
            return evaluate_actions(instance, opt.actions, opt.truncation)
        if policy == "bs":
            return evaluate_split(instance, level)
        table = index_table(instance, policy, level).table
        return evaluate_index_policy(instance, table, level)
    if method == "simulation":
        if policy == "optimal":
            raise PolicyError(
                "policy", "policy optimal is evaluated exactly only (use method exact)"
            )
        return simulate_policy(
            instance,
            policy,
            horizon=horizon,
            warmup=warmup,
            replications=replications,
            seed=seed,
            keys=keys,
            table_size=table_size,
        )
    raise PolicyError("method", f"method must be one of {', '.join(METHODS)}; got {method!r}")
