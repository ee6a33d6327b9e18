"""Numerical study of Part B (ours): Niño-Mora (2012), ``docs/deadlines.md#numerical-study``,
"Numerical study (ours)". The paper's Sec. 6 is missing from our source, so the instances,
sweeps and tables are ours, built the way the paper describes its study.

Every function returns a tidy :class:`pandas.DataFrame`; nothing is written here. The
instances are those of :mod:`.instances`; policies are built and evaluated through
:mod:`.policies` (exact: :mod:`.markov` and, for three clusters, :mod:`.three_cluster`;
simulated: :mod:`.simulation`). Units: rates in jobs per unit time, deadlines in time units,
costs per unit time, gaps in %.

* :func:`evaluate_point`: on one instance of ``n <= 3`` clusters, the optimal cost (relative
  value iteration, the level raised until the cost is stable) and the exact cost of BS, IO,
  PI and RB at the optimal's level; gap (%) ``= 100 (cost - optimal) / optimal``.
* :func:`cluster_sweep`: :func:`evaluate_point` along one sweep of a config block, one
  parameter varied at a time, on the block's clusters (the two-cluster study) or on its
  first ``n`` clusters for each ``n`` of ``clusters``, side by side (two and three clusters).
* :func:`gap_table`: mean and max gap per policy and sweep, the systems side by side.
* :func:`index_functions`: the indices ``nu^IO, nu^PI, nu^RB`` vs ``x`` on the base instance.
* :func:`large_system`: simulated costs on ``n`` random clusters, relative to PI.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..labels import POLICY_LABELS
from ..progress import Progress
from ..user_policy import resolve_policies
from . import markov, policies, splitting, three_cluster
from . import policies as _policies  # where a parameter is named policies
from .indices import IndexabilityWarning
from .instances import (  # the study's instances: their names are importable here too
    HEURISTICS,
    base_instance,
    deadline_dict,
    large_instance,
    study_instance,
    sweep_points,
    three_cluster_instance,
)
from .model import Instance
from .policy_comparison import BASELINE, COMPARED_POLICIES, paired_comparison

__all__ = [
    "BOUND_FRACTION",
    "HEURISTICS",
    "LARGE_REPLICATION_COLUMNS",
    "SWEEPS",
    "SWEEP_COLUMNS",
    "THREE_CLUSTER_SWEEPS",
    "THREE_CLUSTER_SWEEP_COLUMNS",
    "base_instance",
    "cluster_sweep",
    "deadline_dict",
    "evaluate_point",
    "gap_table",
    "index_functions",
    "large_instance",
    "large_system",
    "large_system_from_replications",
    "large_system_replications",
    "sweep_points",
    "three_cluster_instance",
]

log = logging.getLogger(__name__)

#: Sweeps of the two-cluster block ``deadlines.base`` (the arrival rate varies;
#: ``distribution`` is crossed with the arrival rates).
SWEEPS = ("arrival_rate", "rejection_cost", "mean_deadline", "distribution", "pure_routing")
#: Sweeps of the three-cluster block ``deadlines.three_cluster`` (the load varies;
#: ``distribution`` is crossed with the loads of ``distribution_loads``).
THREE_CLUSTER_SWEEPS = ("load", "rejection_cost", "distribution", "pure_routing")

#: For three clusters, a heuristic whose decisions the truncation level changes for more
#: than this fraction of the arrivals is flagged ``bound`` by :func:`evaluate_point` without
#: the second, costlier solve at ``ceil(1.5 L)``.
BOUND_FRACTION = 1e-3

#: The columns of :func:`evaluate_point` after ``L`` and the optimal cost: per heuristic.
_POLICY_COLUMNS = [
    f"{what}_{p}" for p in HEURISTICS for what in ("cost", "rejection", "truncation", "bound")
] + [f"gap_{p}_pct" for p in HEURISTICS]
#: The table of :func:`cluster_sweep` of one system per point (``clusters=None``).
SWEEP_COLUMNS = [
    "sweep", "parameter", "value", "distribution", "arrival_rate", "rejection_cost",
    "mean_deadline", "uniform_spread", "servers", "service_rates", "load", "L",
    "cost_optimal", *_POLICY_COLUMNS,
]  # fmt: skip
#: The table of :func:`cluster_sweep` of several systems per point (``clusters=(2, 3)``).
THREE_CLUSTER_SWEEP_COLUMNS = [
    "sweep", "parameter", "value", "clusters", "distribution", "load", "arrival_rate",
    "rejection_cost", "mean_deadline", "uniform_spread", "servers", "service_rates",
    "states", "iterations", "L", "cost_optimal", *_POLICY_COLUMNS,
]  # fmt: skip


def _heuristic(
    instance: Instance, policy: str, truncation: int, solver_tol: float
) -> markov.ChainResult:
    """Exact evaluation of a heuristic at the level ``truncation`` (indexability unchecked;
    an index policy by its decision table up to the level, a rejection the level forces
    charged ``R``): the stationary law by the sparse direct solve for up to two clusters, by
    the compiled iterative solver to ``solver_tol`` (cost per unit time) for three."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexabilityWarning)
        if instance.n_clusters < 3:
            return policies.evaluate(instance, policy, method="exact", truncation=truncation)
        if policy == "bs":
            return three_cluster.evaluate_3(instance, "bs", truncation, tol=solver_tol)
        table = policies.index_table(instance, policy, truncation)
    keys = policies.decision_table(instance, table)
    return three_cluster.evaluate_3(instance, "index", truncation, table=keys, tol=solver_tol)


def evaluate_point(
    instance: Instance, *, truncation: int, tol: float, closed_form_bs: bool = False
) -> dict[str, Any]:
    """The optimal cost and the exact cost of every heuristic on ``instance`` (``n <= 3``
    clusters).

    The optimum is :func:`~queue_routing.deadlines.markov.optimal_policy_converged` from the
    level ``truncation``, raised until its cost moves by less than ``tol`` (cost per unit
    time; relative value iteration to ``tol / 100``). Every heuristic is evaluated exactly on
    the chain at the optimum's final level ``L`` (three clusters: the compiled iterative
    solver to ``tol / 10``); BS in closed form instead with ``closed_form_bs`` (independent
    M/M/m_k queues, no truncation). A heuristic whose cost moves by more than
    ``max(tol, 1e-6 cost)`` between ``L`` and ``ceil(1.5 L)`` is flagged ``bound_<p>``: its
    cost is decided by the truncation (e.g. IO above capacity: it never rejects when
    R > 1); for three clusters also, without that second solve, one whose decisions the
    level changes for more than :data:`BOUND_FRACTION` of the arrivals.

    Returns ``L``, ``cost_optimal``, ``states`` (``(L+1)^n``) and ``iterations`` (of the
    value iteration, all levels), then per heuristic ``p`` ``cost_<p>``, ``rejection_<p>``
    (jobs per unit time), ``truncation_<p>`` (arrivals per unit time the level decides),
    ``bound_<p>``, and ``gap_<p>_pct``. The value iteration's wall time is not returned, so
    that tables are byte-identical on reruns (``benchmarks/deadlines.py`` times it).
    """
    n = instance.n_clusters
    opt = markov.optimal_policy_converged(instance, truncation, tol)
    L = int(opt.truncation)
    row: dict[str, Any] = {
        "L": L,
        "cost_optimal": float(opt.cost),
        "states": (L + 1) ** n,
        "iterations": int(opt.iterations),
    }
    for p in HEURISTICS:
        if p == "bs" and closed_form_bs:  # the untruncated closed form
            res = policies.evaluate(instance, "bs")
            row.update(cost_bs=float(res.cost), rejection_bs=float(res.rejection_rate),
                       truncation_bs=0.0, bound_bs=False)  # fmt: skip
            continue
        res = _heuristic(instance, p, L, tol / 10.0)
        bound = n >= 3 and res.truncation_rate > BOUND_FRACTION * instance.arrival_rate
        if res.truncation_rate > tol and not bound:
            bigger = _heuristic(instance, p, math.ceil(1.5 * L), tol / 10.0)
            bound = abs(bigger.cost - res.cost) > max(tol, 1e-6 * res.cost)
        row[f"cost_{p}"] = float(res.cost)
        row[f"rejection_{p}"] = float(res.rejection_rate)
        row[f"truncation_{p}"] = float(res.truncation_rate)
        row[f"bound_{p}"] = bool(bound)
    for p in HEURISTICS:
        row[f"gap_{p}_pct"] = 100.0 * (row[f"cost_{p}"] - row["cost_optimal"]) / row["cost_optimal"]
    return row


def _rate(family: Mapping[str, Any]) -> str:
    """The parameter that sets a block's arrival rate: ``arrival_rate``, or ``load``."""
    return "arrival_rate" if "arrival_rate" in family else "load"


def cluster_sweep(
    family: Mapping[str, Any],
    sweeps: Mapping[str, Sequence],
    sweep: str,
    *,
    truncation: int,
    tol: float,
    clusters: Sequence[int] | None = None,
) -> pd.DataFrame:
    """:func:`evaluate_point` at every point of ``sweep`` (:func:`sweep_points`) of the
    config block ``family`` (:func:`~queue_routing.deadlines.instances.study_instance`: the
    arrival rate set by ``arrival_rate``, or by ``load``), from the level ``truncation`` with
    tolerance ``tol`` (cost per unit time).

    * ``clusters=None``: one system per point, all the block's clusters (the two-cluster
      study of ``deadlines.base``): one row per point, :data:`SWEEP_COLUMNS`;
      ``load = lam / sum m mu``; BS evaluated on the chain at the optimum's level.
    * ``clusters=(2, 3)``: the systems of the block's first ``n`` clusters for each ``n``,
      sharing the load, rejection cost and deadline law (the three-cluster study of
      ``deadlines.three_cluster``): one row per point and ``n``,
      :data:`THREE_CLUSTER_SWEEP_COLUMNS`, with ``clusters``, and ``states`` and
      ``iterations`` of the value iteration (all levels; counted for three clusters only,
      NaN for two); BS in closed form for every ``n``.

    Every row has the point's parameters (``parameter`` and ``value``: the one varied;
    ``rejection_cost`` NaN for pure routing, R = infinity), ``L``, the optimal cost and per
    heuristic ``cost_<p>``, ``gap_<p>_pct``, ``rejection_<p>`` (jobs per unit time),
    ``truncation_<p>`` and ``bound_<p>``.
    """
    rate = _rate(family)
    varied, points = sweep_points(sweeps, sweep, rate=rate)
    systems = [None] if clusters is None else [int(n) for n in clusters]
    label = f"{sweep} sweep" + ("" if clusters is None else f" on {list(systems)} clusters")
    progress = Progress(len(points), label, unit="point", logger=log)
    rows = []
    for change in points:
        b = {**family, **change}
        for n in systems:
            inst = study_instance(family, n, **change)
            load = b["load"] if rate == "load" else inst.arrival_rate / inst.capacity
            row = {
                "sweep": sweep,
                "parameter": varied,
                "value": float(b[varied]),
                "clusters": inst.n_clusters,
                "distribution": b["deadline"],
                "load": float(load),
                "arrival_rate": float(inst.arrival_rate),
                "rejection_cost": math.nan
                if b["rejection_cost"] is None
                else float(b["rejection_cost"]),
                "mean_deadline": float(b["mean_deadline"]),
                "uniform_spread": float(b["uniform_spread"]),
                "servers": " ".join(str(int(m)) for m in inst.servers),
                "service_rates": " ".join(f"{float(mu):g}" for mu in inst.service_rates),
            }
            row.update(
                evaluate_point(inst, truncation=truncation, tol=tol, closed_form_bs=n is not None)
            )
            if n is not None and n < 3:
                row["iterations"] = math.nan
            rows.append(row)
        progress.advance(extra=f"optimal cost {row['cost_optimal']:.6g} at truncation {row['L']}")
    columns = SWEEP_COLUMNS if clusters is None else THREE_CLUSTER_SWEEP_COLUMNS
    return pd.DataFrame(rows, columns=columns)


def gap_table(
    sweeps: pd.DataFrame, *, clusters: Sequence[int] | None = None, overall: bool = False
) -> pd.DataFrame:
    """Mean and max gap (%) to the optimum per sweep and heuristic, over the points whose
    cost the truncation decides for none of the systems (``n_bound`` points excluded), from
    the rows of :func:`cluster_sweep`.

    * ``clusters=None``: one system per point; columns ``mean_gap_pct``, ``max_gap_pct``,
      and ``best``, the smallest mean gap of each sweep.
    * ``clusters=(2, 3)``: the systems side by side, matched by (sweep, value, distribution,
      load, rejection cost); columns ``mean_gap_<n>_pct``, ``max_gap_<n>_pct`` for each
      ``n``, and ``best_<n>`` for the last ``n``.

    With ``overall``, a last sweep ``all`` takes every point together.
    """
    key = ["sweep", "value", "distribution", "load", "rejection_cost"]
    if clusters is None:
        systems = {"": sweeps.reset_index(drop=True)}
        names = systems[""]["sweep"].to_numpy()
    else:
        systems = {f"_{n}": sweeps[sweeps["clusters"] == n].set_index(key) for n in clusters}
        first = systems[f"_{clusters[0]}"]
        if any(not s.index.equals(first.index) for s in systems.values()):
            raise ValueError("gap table: the points of the systems do not match")
        names = first.index.get_level_values("sweep").to_numpy()
    groups = [(s, names == s) for s in dict.fromkeys(sweeps["sweep"])]
    if overall:
        groups.append(("all", np.ones(len(names), dtype=bool)))
    last = list(systems)[-1]
    rows = []
    for sweep, sel in groups:
        part = []
        for p in HEURISTICS:
            bound = np.zeros(len(names), dtype=bool)
            for frame in systems.values():
                bound |= frame[f"bound_{p}"].astype(bool).to_numpy()
            ok = sel & ~bound
            row = {"sweep": sweep, "policy": POLICY_LABELS[p]}
            for suffix, frame in systems.items():
                gaps = frame[f"gap_{p}_pct"].to_numpy()[ok]
                row[f"mean_gap{suffix}_pct"] = float(gaps.mean()) if gaps.size else math.nan
                row[f"max_gap{suffix}_pct"] = float(gaps.max()) if gaps.size else math.nan
            row["n_points"] = int(ok.sum())
            row["n_bound"] = int((sel & bound).sum())
            part.append(row)
        mean = f"mean_gap{last}_pct"
        best = min(part, key=lambda r: np.inf if math.isnan(r[mean]) else r[mean])
        for r in part:
            r[f"best{last}"] = r is best
        rows += part
    return pd.DataFrame(rows)


def index_functions(base: Mapping[str, Any], upto: int) -> pd.DataFrame:
    """``nu^IO, nu^PI, nu^RB`` (cost per job) for ``x = 0..upto`` and every cluster of the base
    instance, with the BS rate ``lam_k*`` used by PI and the indexability check."""
    inst = base_instance(base)
    rows = []
    for p in ("io", "pi", "rb"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IndexabilityWarning)
            tab = policies.index_table(inst, p, upto)
        rates = splitting.optimal_split(inst).rates
        for k, c in enumerate(inst.clusters):
            for x in range(upto + 1):
                rows.append(
                    {
                        "policy": POLICY_LABELS[p],
                        "cluster": k + 1,
                        "servers": c.servers,
                        "service_rate": c.rate,
                        "x": x,
                        "index": float(tab.table[k, x]),
                        "indexable": bool(tab.checks[k].indexable),
                        "bs_rate": float(rates[k]),
                        "arrival_rate": inst.arrival_rate,
                        "rejection_cost": inst.rejection_cost,
                    }
                )
    return pd.DataFrame(rows)


def large_system(
    instance: Instance,
    *,
    table_size: int,
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    keys: tuple = (),
    confidence: float = 0.95,
    policies: Sequence[str] = HEURISTICS,
) -> pd.DataFrame:
    """Paired comparison of ``policies`` (default BS, IO, PI and RB; user index policies
    ``path.py:name`` too, ``docs/README.md#your-own-policy``) on ``instance``, one row per
    policy (PI, the baseline of the ratios, is simulated even when not listed).

    One :func:`~queue_routing.deadlines.policy_comparison.compare_policies` comparison: every
    policy on the same jobs in replication ``r`` (common random numbers,
    ``docs/deadlines.md#common-random-numbers``); ``cost`` and ``ci95`` are the plain
    mean cost per unit time and its 95% half-width; ``ratio`` and ``ratio_ci95`` the paired
    ratio of means to PI with its delta-method 95% half-width
    (``docs/deadlines.md#paired-policy-comparisons``); ``rank`` (1 = cheapest) and ``best``
    (the policy separated from every other by one-sided paired tests with Holm's correction
    at family-wise level ``1 - confidence``, or ``"not separated"``); ``leader_p`` the Holm-adjusted
    p-value of "the leader is not cheaper than this policy". Index tables cover ``x =
    0..table_size``; a nonzero ``table_bound`` counts the measured arrivals whose decision the
    end of the policy's table may have changed: the row is then the cost of the truncated
    policy (logged as a warning, and marked in the table and the figure).

    The same as :func:`large_system_from_replications` of :func:`large_system_replications`
    over ``range(replications)``, which is how the pipeline computes it in chunks.
    """
    run = {
        "table_size": table_size,
        "horizon": horizon,
        "warmup": warmup,
        "seed": seed,
        "keys": keys,
        "policies": policies,
    }
    reps = large_system_replications(instance, replications=range(int(replications)), **run)
    return large_system_from_replications(instance, reps, confidence=confidence, **run)


#: Columns of :func:`large_system_replications`.
LARGE_REPLICATION_COLUMNS = [
    "clusters",
    "policy",
    "replication",
    "cost",
    "rejection_rate",
    "miss_rate",
    "table_bound",
    "events",
]


def large_system_replications(
    instance: Instance,
    *,
    table_size: int,
    horizon: float,
    warmup: float,
    replications: Iterable[int],
    seed: int,
    keys: tuple = (),
    policies: Sequence[str] = HEURISTICS,
) -> pd.DataFrame:
    """One chunk of :func:`large_system`: replications ``replications`` (indices, e.g.
    ``range(10, 20)``) of PI and ``policies`` (default BS, IO, PI and RB, user index
    policies ``path.py:name`` too), one row per (policy, replication).

    Each replication runs on the streams ``(seed, keys, r)`` of the unsplit comparison, with
    the same index tables (built on the optimal split, as
    :func:`~queue_routing.deadlines.policy_comparison.compare_policies` builds them), so the
    rows of any split, reassembled, are those of the whole study. The paired statistics need
    every replication of the instance together; they are computed afterwards by
    :func:`large_system_from_replications`.

    Columns (:data:`LARGE_REPLICATION_COLUMNS`): ``clusters, policy`` (``bs``, ``io``,
    ``pi``, ``rb``), ``replication``, ``cost``, ``rejection_rate``, ``miss_rate`` (per
    unit time), ``table_bound`` (measured arrivals decided by the end of the index table),
    ``events`` (arrivals plus departures, warm-up included).
    """
    resolved = resolve_policies(policies, COMPARED_POLICIES)
    simulated = (BASELINE, *[q for q in resolved if q != BASELINE])
    indices = list(replications)
    progress = Progress(
        len(simulated) * len(indices), f"n={instance.n_clusters} clusters", logger=log
    )
    split = splitting.optimal_split(instance)  # as compare_policies: BS's split, PI's base
    run = {
        "horizon": horizon,
        "warmup": warmup,
        "seed": seed,
        "keys": tuple(keys),
        "table_size": table_size,
        "progress": progress,
    }
    rows = []
    for p in simulated:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IndexabilityWarning)  # reported in its column
            if p == "bs":
                given = {"split": split}
            elif p in HEURISTICS:
                given = {"table": _policies.index_table(instance, p, table_size, split=split)}
            else:  # a user policy: tabulated by simulate_policy_replications
                given = {}
            block = _policies.simulate_policy_replications(
                instance, resolved.get(p, p), indices, **given, **run
            )
        for k, r in enumerate(block.indices):
            rows.append(
                {
                    "clusters": instance.n_clusters,
                    "policy": p,
                    "replication": r,
                    "cost": float(block.costs[k]),
                    "rejection_rate": float(block.rejection_rates[k]),
                    "miss_rate": float(block.miss_rates[k]),
                    "table_bound": int(block.table_bound_per_replication[k]),
                    "events": int(block.events_per_replication[k]),
                }
            )
    return pd.DataFrame(rows, columns=LARGE_REPLICATION_COLUMNS)


def large_system_from_replications(
    instance: Instance,
    replications: pd.DataFrame,
    *,
    table_size: int,
    horizon: float,
    warmup: float,
    seed: int,
    keys: tuple = (),
    confidence: float = 0.95,
    policies: Sequence[str] = HEURISTICS,
) -> pd.DataFrame:
    """:func:`large_system`'s rows from the rows of :func:`large_system_replications` of every
    chunk (any order, any split; each policy needs replications ``0..R-1``), bit for bit.
    A user policy's row is labelled by its name as given (``path.py:name``)."""
    resolved = resolve_policies(policies, COMPARED_POLICIES)
    policies = tuple(resolved)
    samples, rejection, miss, bound = {}, {}, {}, {}
    for p in (BASELINE, *[q for q in policies if q != BASELINE]):
        g = replications[replications["policy"] == p].sort_values("replication", kind="stable")
        reps = g["replication"].to_numpy()
        if len(reps) == 0 or not np.array_equal(reps, np.arange(len(reps))):
            raise ValueError(
                f"n={instance.n_clusters}, {p}: replications {reps.tolist()[:5]}... are not "
                "0..R-1 (a chunk is missing or repeated)"
            )
        samples[p] = np.ascontiguousarray(g["cost"].to_numpy(dtype=float))
        rejection[p] = np.ascontiguousarray(g["rejection_rate"].to_numpy(dtype=float))
        miss[p] = np.ascontiguousarray(g["miss_rate"].to_numpy(dtype=float))
        bound[p] = int(g["table_bound"].sum())
    res = paired_comparison(
        samples,
        policies,
        confidence=confidence,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=tuple(keys),
        table_size=table_size,
        table_bound=bound,
    )
    indexable = {}
    for p in policies:
        if p == "bs":
            indexable[p] = True
        elif p in HEURISTICS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IndexabilityWarning)
                indexable[p] = _policies.index_table(instance, p, table_size).indexable
        else:
            table = _policies.user_index_table(instance, resolved[p], table_size)
            indexable[p] = table.indexable
    leader = res.ranking[0]
    rows = []
    for p, e in res.policies.items():
        if res.table_bound[p]:
            log.warning(
                "n=%d, %s: the end of the index table (x <= %d) may have decided %d measured "
                "arrivals; the row is the cost of the truncated policy",
                instance.n_clusters,
                POLICY_LABELS.get(p, p),
                table_size,
                res.table_bound[p],
            )
        rows.append(
            {
                "clusters": instance.n_clusters,
                "policy": POLICY_LABELS.get(p, p),
                "cost": float(e.cost),
                "ci95": float(e.ci95),
                "ratio": float(e.ratio),
                "ratio_ci95": float(e.ratio_ci95),
                "rank": res.ranking.index(p) + 1,
                "best": POLICY_LABELS.get(res.best, res.best) if res.best else "not separated",
                "leader_p": np.nan if p == leader else res.selection.adjusted_p_values[leader, p],
                "rejection_rate": float(rejection[p].mean()),
                "miss_rate": float(miss[p].mean()),
                "indexable": bool(indexable[p]),
                "arrival_rate": float(instance.arrival_rate),
                "capacity": float(instance.capacity),
                "servers": " ".join(str(int(v)) for v in instance.servers),
                "service_rates": " ".join(f"{float(v):.4g}" for v in instance.service_rates),
                "horizon": float(res.horizon),
                "replications": int(res.replications),
                "table_bound": int(res.table_bound[p]),
            }
        )
    return pd.DataFrame(rows)
