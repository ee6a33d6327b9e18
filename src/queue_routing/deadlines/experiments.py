"""Numerical study of Part B (ours): Niño-Mora (2012), ``docs/deadlines.md#numerical-study``,
"Numerical study (ours)". The paper's Sec. 6 is missing from our source, so the instances,
sweeps and tables are ours, built the way the paper describes its study.

Every function returns a tidy :class:`pandas.DataFrame`; nothing is written here. Policies
are built and evaluated through :mod:`.policies` (exact: :mod:`.markov`, simulated:
:mod:`.simulation`). Units: rates in jobs per unit time, deadlines in time units, costs per
unit time, gaps in %.

* :func:`two_cluster_sweep`: exact costs (truncated CTMC) of BS, IO, PI, RB and the optimal
  cost (relative value iteration with a truncation check) on a two-cluster base instance, one
  parameter varied at a time; gap (%) ``= 100 (cost - optimal) / optimal``.
* :func:`gap_table`: mean and max gap per policy and sweep.
* :func:`index_functions`: the indices ``nu^IO, nu^PI, nu^RB`` vs ``x`` on the base instance.
* :func:`large_system`: simulated costs on ``n`` random clusters, relative to PI.
* :func:`three_cluster_sweep`, :func:`three_cluster_gap_table`: the exact optimum of three
  clusters against the heuristics, side by side with the matched two-cluster system.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..progress import Progress
from ..seeding import rng_for
from . import markov, policies, splitting, three_cluster
from . import policies as _policies  # where a parameter is named policies
from .indices import IndexabilityWarning
from .model import Instance

__all__ = [
    "HEURISTICS",
    "LARGE_REPLICATION_COLUMNS",
    "POLICY_LABELS",
    "SWEEPS",
    "THREE_CLUSTER_SWEEPS",
    "base_instance",
    "deadline_dict",
    "evaluate_point",
    "gap_table",
    "index_functions",
    "large_instance",
    "large_system",
    "large_system_from_replications",
    "large_system_replications",
    "three_cluster_gap_table",
    "three_cluster_instance",
    "three_cluster_sweep",
    "two_cluster_sweep",
]

#: Heuristic policies benchmarked against the optimal one.
log = logging.getLogger(__name__)

HEURISTICS = ("bs", "io", "pi", "rb")
POLICY_LABELS = {"bs": "BS", "io": "IO", "pi": "PI", "rb": "RB", "optimal": "optimal"}
#: Sweeps of :func:`two_cluster_sweep` (``distribution`` is crossed with the arrival rates).
SWEEPS = ("arrival_rate", "rejection_cost", "mean_deadline", "distribution", "pure_routing")


def deadline_dict(kind: str, mean: float, uniform_spread: float) -> dict[str, Any]:
    """Deadline law of mean ``mean`` (time units): constant ``t = mean``, uniform on
    ``mean (1 -+ uniform_spread)``, or exponential with mean ``mean``."""
    if kind == "constant":
        return {"kind": "constant", "t": float(mean)}
    if kind == "uniform":
        return {
            "kind": "uniform",
            "low": float(mean * (1.0 - uniform_spread)),
            "high": float(mean * (1.0 + uniform_spread)),
        }
    if kind == "exponential":
        return {"kind": "exponential", "mean": float(mean)}
    raise ValueError(f"deadline kind must be constant, uniform or exponential, got {kind!r}")


def base_instance(base: Mapping[str, Any], **changes: Any) -> Instance:
    """The two-cluster base instance of the config block ``base`` with ``changes`` applied
    (keys of ``base``: servers, service_rates, arrival_rate, rejection_cost, deadline,
    mean_deadline, uniform_spread)."""
    b = {**base, **changes}
    return Instance.from_dict(
        {
            "arrival_rate": float(b["arrival_rate"]),
            "servers": [int(m) for m in b["servers"]],
            "service_rates": [float(mu) for mu in b["service_rates"]],
            "rejection_cost": None if b["rejection_cost"] is None else float(b["rejection_cost"]),
            "deadline": deadline_dict(b["deadline"], b["mean_deadline"], b["uniform_spread"]),
        }
    )


def _heuristic(instance: Instance, policy: str, truncation: int) -> markov.ChainResult:
    """Exact evaluation of a heuristic at the level ``truncation`` (indexability unchecked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexabilityWarning)
        return policies.evaluate(instance, policy, method="exact", truncation=truncation)


def evaluate_point(instance: Instance, *, truncation: int, tol: float) -> dict[str, Any]:
    """Optimal cost (RVI, level raised until the cost moves < ``tol``) and the exact cost of
    every heuristic at the optimal's level ``L``; a heuristic whose cost moves by more than
    ``tol`` between ``L`` and ``ceil(1.5 L)`` is flagged ``bound_<p>`` (its cost is decided by
    the truncation, e.g. IO above capacity: it never rejects when R > 1)."""
    opt = markov.optimal_policy_converged(instance, truncation, tol)
    L = int(opt.truncation)
    row: dict[str, Any] = {"L": L, "cost_optimal": float(opt.cost)}
    for p in HEURISTICS:
        res = _heuristic(instance, p, L)
        bound = False
        if res.truncation_rate > tol:
            bigger = _heuristic(instance, p, math.ceil(1.5 * L))
            bound = abs(bigger.cost - res.cost) > max(tol, 1e-6 * res.cost)
        row[f"cost_{p}"] = float(res.cost)
        row[f"rejection_{p}"] = float(res.rejection_rate)
        row[f"truncation_{p}"] = float(res.truncation_rate)
        row[f"bound_{p}"] = bool(bound)
    for p in HEURISTICS:
        row[f"gap_{p}_pct"] = 100.0 * (row[f"cost_{p}"] - row["cost_optimal"]) / row["cost_optimal"]
    return row


def _points(base: Mapping[str, Any], sweeps: Mapping[str, Any], sweep: str) -> list[dict]:
    if sweep == "arrival_rate":
        return [{"arrival_rate": v} for v in sweeps["arrival_rate"]]
    if sweep == "rejection_cost":
        return [{"rejection_cost": v} for v in sweeps["rejection_cost"]]
    if sweep == "mean_deadline":
        return [{"mean_deadline": v} for v in sweeps["mean_deadline"]]
    if sweep == "distribution":
        return [
            {"deadline": kind, "arrival_rate": v}
            for kind in sweeps["distribution"]
            for v in sweeps["arrival_rate"]
        ]
    if sweep == "pure_routing":
        return [{"arrival_rate": v, "rejection_cost": None} for v in sweeps["pure_routing"]]
    raise ValueError(f"sweep must be one of {SWEEPS}, got {sweep!r}")


_VARIED = {
    "arrival_rate": "arrival_rate",
    "rejection_cost": "rejection_cost",
    "mean_deadline": "mean_deadline",
    "distribution": "arrival_rate",
    "pure_routing": "arrival_rate",
}


def two_cluster_sweep(
    base: Mapping[str, Any],
    sweeps: Mapping[str, Any],
    sweep: str,
    *,
    truncation: int,
    tol: float,
) -> pd.DataFrame:
    """One row per point of ``sweep``: the instance's parameters, ``load = lam / sum m mu``,
    the optimal cost and level ``L``, and per heuristic ``cost_<p>``, ``gap_<p>_pct``,
    ``rejection_<p>`` (jobs per unit time), ``truncation_<p>`` and ``bound_<p>``.
    ``rejection_cost`` is NaN for pure routing (R = infinity)."""
    rows = []
    points = _points(base, sweeps, sweep)
    progress = Progress(len(points), f"{sweep} sweep", unit="point", logger=log)
    for change in points:
        b = {**base, **change}
        inst = base_instance(base, **change)
        row = {
            "sweep": sweep,
            "parameter": _VARIED[sweep],
            "value": float(b[_VARIED[sweep]]),
            "distribution": b["deadline"],
            "arrival_rate": float(b["arrival_rate"]),
            "rejection_cost": math.nan
            if b["rejection_cost"] is None
            else float(b["rejection_cost"]),
            "mean_deadline": float(b["mean_deadline"]),
            "uniform_spread": float(b["uniform_spread"]),
            "servers": " ".join(str(int(m)) for m in b["servers"]),
            "service_rates": " ".join(f"{float(mu):g}" for mu in b["service_rates"]),
            "load": float(inst.arrival_rate / inst.capacity),
        }
        row.update(evaluate_point(inst, truncation=truncation, tol=tol))
        rows.append(row)
        progress.advance(extra=f"optimal cost {row['cost_optimal']:.6g} at truncation {row['L']}")
    return pd.DataFrame(rows)


def gap_table(sweeps: pd.DataFrame) -> pd.DataFrame:
    """Mean and max gap (%) per sweep and heuristic over the points whose cost the truncation
    does not decide (``n_bound`` points excluded), with ``best`` marking the smallest mean gap
    of each sweep."""
    rows = []
    for sweep, g in sweeps.groupby("sweep", sort=False):
        part = []
        for p in HEURISTICS:
            ok = ~g[f"bound_{p}"].astype(bool)
            gaps = g.loc[ok, f"gap_{p}_pct"]
            part.append(
                {
                    "sweep": sweep,
                    "policy": POLICY_LABELS[p],
                    "mean_gap_pct": float(gaps.mean()) if len(gaps) else math.nan,
                    "max_gap_pct": float(gaps.max()) if len(gaps) else math.nan,
                    "n_points": int(ok.sum()),
                    "n_bound": int((~ok).sum()),
                }
            )
        best = min(
            part, key=lambda r: np.inf if math.isnan(r["mean_gap_pct"]) else r["mean_gap_pct"]
        )
        for r in part:
            r["best"] = r is best
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


def large_instance(
    seed: int,
    n: int,
    *,
    servers_range: Sequence[int],
    rate_range: Sequence[float],
    load: float,
    rejection_cost: float,
    deadline: Mapping[str, Any],
) -> Instance:
    """``n`` clusters drawn by ``rng_for(seed, "deadlines-large", n)``: ``m_k`` uniform on the
    integers of ``servers_range``, ``mu_k`` uniform on ``rate_range``; ``lam = load sum m mu``."""
    rng = rng_for(seed, "deadlines-large", n)
    m = rng.integers(int(servers_range[0]), int(servers_range[1]) + 1, n)
    mu = rng.uniform(float(rate_range[0]), float(rate_range[1]), n)
    return Instance.from_dict(
        {
            "arrival_rate": float(load * np.sum(m * mu)),
            "servers": m.tolist(),
            "service_rates": mu.tolist(),
            "rejection_cost": float(rejection_cost),
            "deadline": dict(deadline),
        }
    )


def configured_large_instance(
    seed: int,
    n: int,
    large: Mapping[str, Any],
    *,
    rejection_cost: float,
    deadline: str,
    mean_deadline: float,
    uniform_spread: float,
) -> Instance:
    """:func:`large_instance` from the config's ``deadlines.large`` block (``servers_range``,
    ``rate_range``, ``load``) and the base instance's rejection cost and deadline law
    (:func:`deadline_dict`): the instance every job of the large-system study rebuilds."""
    return large_instance(
        seed,
        n,
        servers_range=large["servers_range"],
        rate_range=large["rate_range"],
        load=large["load"],
        rejection_cost=rejection_cost,
        deadline=deadline_dict(deadline, mean_deadline, uniform_spread),
    )


def large_system(
    instance: Instance,
    *,
    table_size: int,
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    keys: tuple = (),
    alpha: float = 0.05,
    policies: Sequence[str] = HEURISTICS,
) -> pd.DataFrame:
    """Paired comparison of ``policies`` (default BS, IO, PI and RB; user index policies
    ``path.py:name`` too, ``docs/README.md#your-own-policy``) on ``instance``, one row per
    policy (PI, the baseline of the ratios, is simulated even when not listed).

    One :func:`~queue_routing.deadlines.policy_comparison.compare_policies` comparison: every
    policy on the same jobs in replication ``r`` (common random numbers,
    ``docs/deadlines.md#common-random-numbers``); ``cost_rate`` and ``ci95`` are the plain
    mean cost per unit time and its 95% half-width; ``ratio`` and ``ratio_ci95`` the paired
    ratio of means to PI with its delta-method 95% half-width
    (``docs/deadlines.md#paired-policy-comparisons``); ``rank`` (1 = cheapest) and ``best``
    (the policy separated from every other by one-sided paired tests with Holm's correction
    at family-wise level ``alpha``, or ``"not separated"``); ``leader_p`` the Holm-adjusted
    p-value of "the leader is not cheaper than this policy". Index tables cover ``x =
    0..table_size``; a nonzero ``table_bound`` counts the measured arrivals whose decision the
    end of the policy's table may have changed: the row is then the cost of the truncated
    policy (logged as a warning, and marked in the table and the figure).

    The same as :func:`large_system_from_replications` of :func:`large_system_replications`
    over ``range(replications)``, which is how the pipeline computes it in chunks.
    """
    reps = large_system_replications(
        instance,
        table_size=table_size,
        horizon=horizon,
        warmup=warmup,
        replications=range(int(replications)),
        seed=seed,
        keys=keys,
        policies=policies,
    )
    return large_system_from_replications(
        instance,
        reps,
        table_size=table_size,
        horizon=horizon,
        warmup=warmup,
        seed=seed,
        keys=keys,
        alpha=alpha,
        policies=policies,
    )


#: Columns of :func:`large_system_replications`.
LARGE_REPLICATION_COLUMNS = [
    "clusters",
    "policy",
    "replication",
    "cost_rate",
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
    ``pi``, ``rb``), ``replication``, ``cost_rate``, ``rejection_rate``, ``miss_rate`` (per
    unit time), ``table_bound`` (measured arrivals decided by the end of the index table),
    ``events`` (arrivals plus departures, warm-up included).
    """
    from .policy_comparison import BASELINE, _resolve_policies

    resolved = _resolve_policies(policies)
    simulated = (BASELINE, *[q for q in resolved if q != BASELINE])
    indices = list(replications)
    progress = Progress(
        len(simulated) * len(indices), f"n={instance.n_clusters} clusters", logger=log
    )
    split = splitting.optimal_split(instance)  # as compare_policies: BS's split, PI's base
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
                instance,
                resolved.get(p, p),
                indices,
                horizon=horizon,
                warmup=warmup,
                seed=seed,
                keys=tuple(keys),
                table_size=table_size,
                progress=progress,
                **given,
            )
        for k, r in enumerate(block.indices):
            rows.append(
                {
                    "clusters": instance.n_clusters,
                    "policy": p,
                    "replication": r,
                    "cost_rate": float(block.costs[k]),
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
    alpha: float = 0.05,
    policies: Sequence[str] = HEURISTICS,
) -> pd.DataFrame:
    """:func:`large_system`'s rows from the rows of :func:`large_system_replications` of every
    chunk (any order, any split; each policy needs replications ``0..R-1``), bit for bit.
    A user policy's row is labelled by its name as given (``path.py:name``)."""
    from .policy_comparison import BASELINE, _resolve_policies, paired_comparison

    resolved = _resolve_policies(policies)
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
        samples[p] = np.ascontiguousarray(g["cost_rate"].to_numpy(dtype=float))
        rejection[p] = np.ascontiguousarray(g["rejection_rate"].to_numpy(dtype=float))
        miss[p] = np.ascontiguousarray(g["miss_rate"].to_numpy(dtype=float))
        bound[p] = int(g["table_bound"].sum())
    res = paired_comparison(
        samples,
        policies,
        alpha=alpha,
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
                "cost_rate": float(e.cost),
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


# -- three clusters: the exact optimum against the heuristics (issue 14) ------------------
#: Sweeps of :func:`three_cluster_sweep` (``distribution`` is crossed with the loads of
#: ``distribution_loads``).
THREE_CLUSTER_SWEEPS = ("load", "rejection_cost", "distribution", "pure_routing")


#: A heuristic whose decisions the truncation level changes for more than this fraction of
#: the arrivals is flagged ``bound`` by :func:`evaluate_point_3` without a second solve.
BOUND_FRACTION = 1e-3


def three_cluster_instance(block: Mapping[str, Any], clusters: int, **changes: Any) -> Instance:
    """The instance of the config block ``deadlines.three_cluster`` (keys ``servers``,
    ``service_rates``, ``load``, ``rejection_cost``, ``deadline``, ``mean_deadline``,
    ``uniform_spread``) with ``changes`` applied, on its first ``clusters`` clusters (2: the
    matched two-cluster system; 3: all three), at arrival rate
    ``lam = load * sum_{k <= clusters} m_k mu_k`` (jobs per unit time): the two systems of a
    point share the load, the rejection cost and the deadline law."""
    b = {**block, **changes}
    m = [int(v) for v in b["servers"]][:clusters]
    mu = [float(v) for v in b["service_rates"]][:clusters]
    return Instance.from_dict(
        {
            "arrival_rate": float(b["load"]) * float(np.dot(m, mu)),
            "servers": m,
            "service_rates": mu,
            "rejection_cost": None if b["rejection_cost"] is None else float(b["rejection_cost"]),
            "deadline": deadline_dict(b["deadline"], b["mean_deadline"], b["uniform_spread"]),
        }
    )


def _heuristic_3(
    instance: Instance, policy: str, truncation: int, tol: float
) -> markov.ChainResult:
    """Exact evaluation of a heuristic on three clusters at level ``truncation``, as
    :func:`_heuristic` (an index policy by its decision table up to the level, a rejection
    the level forces charged ``R``), the stationary law by the compiled solver to ``tol``."""
    if policy == "bs":
        return three_cluster.evaluate_3(instance, "bs", truncation, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexabilityWarning)
        table = policies.index_table(instance, policy, truncation)
    keys = policies.decision_table(instance, table)
    return three_cluster.evaluate_3(instance, "index", truncation, table=keys, tol=tol)


def evaluate_point_3(instance: Instance, *, truncation: int, tol: float) -> dict[str, Any]:
    """:func:`evaluate_point` for three clusters, compiled
    (:mod:`~queue_routing.deadlines.three_cluster`): the optimal cost by relative value
    iteration with the level raised until the cost moves < ``tol`` (RVI to ``tol / 100``),
    BS's cost in closed form (independent M/M/m_k queues, no truncation), every index
    policy's exact cost at the final level ``L`` (stationary law to ``tol / 10``),
    flagged ``bound_<p>`` if it moves by more than ``tol`` between ``L`` and
    ``ceil(1.5 L)``, or, without that second solve, if the level decides the decision of
    more than :data:`BOUND_FRACTION` of the arrivals (its cost at ``L`` is then set by the
    truncation, not by the policy); also the value iteration's ``states`` and
    ``iterations`` (all levels; its wall time is not a column, so that reruns are
    byte-identical: ``benchmarks/deadlines.py`` times it)."""
    opt = three_cluster.optimal_policy_3_converged(instance, truncation, tol)
    L = int(opt.truncation)
    row: dict[str, Any] = {
        "L": L,
        "cost_optimal": float(opt.cost),
        "states": (L + 1) ** instance.n_clusters,
        "iterations": int(opt.iterations),
    }
    for p in HEURISTICS:
        if p == "bs":  # the untruncated closed form
            res = policies.evaluate(instance, "bs")
            row.update(cost_bs=float(res.cost), rejection_bs=float(res.rejection_rate),
                       truncation_bs=0.0, bound_bs=False)  # fmt: skip
            continue
        res = _heuristic_3(instance, p, L, tol / 10.0)
        bound = res.truncation_rate > BOUND_FRACTION * instance.arrival_rate
        if tol < res.truncation_rate and not bound:
            bigger = _heuristic_3(instance, p, math.ceil(1.5 * L), tol / 10.0)
            bound = abs(bigger.cost - res.cost) > max(tol, 1e-6 * res.cost)
        row[f"cost_{p}"] = float(res.cost)
        row[f"rejection_{p}"] = float(res.rejection_rate)
        row[f"truncation_{p}"] = float(res.truncation_rate)
        row[f"bound_{p}"] = bool(bound)
    for p in HEURISTICS:
        row[f"gap_{p}_pct"] = 100.0 * (row[f"cost_{p}"] - row["cost_optimal"]) / row["cost_optimal"]
    return row


def _points_3(block: Mapping[str, Any], sweep: str) -> list[dict]:
    sweeps = block["sweeps"]
    if sweep == "load":
        return [{"load": v} for v in sweeps["load"]]
    if sweep == "rejection_cost":
        return [{"rejection_cost": v} for v in sweeps["rejection_cost"]]
    if sweep == "distribution":
        return [
            {"deadline": kind, "load": v}
            for kind in sweeps["distribution"]
            for v in sweeps["distribution_loads"]
        ]
    if sweep == "pure_routing":
        return [{"load": v, "rejection_cost": None} for v in sweeps["pure_routing"]]
    raise ValueError(f"sweep must be one of {THREE_CLUSTER_SWEEPS}, got {sweep!r}")


_VARIED_3 = {
    "load": "load",
    "rejection_cost": "rejection_cost",
    "distribution": "load",
    "pure_routing": "load",
}


def three_cluster_sweep(block: Mapping[str, Any], sweep: str) -> pd.DataFrame:
    """Two rows per point of ``sweep`` (:data:`THREE_CLUSTER_SWEEPS`), ``clusters`` 2 and 3
    (:func:`three_cluster_instance`: the same load, rejection cost and deadline law), with
    the columns of :func:`two_cluster_sweep` plus ``load`` (``lam / sum m_k mu_k``),
    ``states`` and ``iterations`` of the optimal policy's value iteration (all levels; not
    counted for two clusters). Two clusters: :func:`evaluate_point` (:mod:`.markov`); three:
    :func:`evaluate_point_3`; BS in closed form for both; both start at level
    ``block["truncation"]`` with tolerance ``block["tol"]`` (cost per unit time)."""
    rows = []
    points = _points_3(block, sweep)
    progress = Progress(len(points), f"three-cluster {sweep} sweep", unit="point", logger=log)
    truncation, tol = int(block["truncation"]), float(block["tol"])
    for change in points:
        b = {**block, **change}
        for n in (2, 3):
            inst = three_cluster_instance(block, n, **change)
            row = {
                "sweep": sweep,
                "parameter": _VARIED_3[sweep],
                "value": float(b[_VARIED_3[sweep]]),
                "clusters": n,
                "distribution": b["deadline"],
                "load": float(b["load"]),
                "arrival_rate": float(inst.arrival_rate),
                "rejection_cost": math.nan
                if b["rejection_cost"] is None
                else float(b["rejection_cost"]),
                "mean_deadline": float(b["mean_deadline"]),
                "uniform_spread": float(b["uniform_spread"]),
                "servers": " ".join(str(int(m)) for m in inst.servers),
                "service_rates": " ".join(f"{float(mu):g}" for mu in inst.service_rates),
            }
            if n == 2:
                res = evaluate_point(inst, truncation=truncation, tol=tol)
                res = {"states": (res["L"] + 1) ** 2, "iterations": math.nan, **res}
                bs = policies.evaluate(inst, "bs")  # closed form, as for three clusters
                res.update(cost_bs=float(bs.cost), rejection_bs=float(bs.rejection_rate),
                           truncation_bs=0.0, bound_bs=False)  # fmt: skip
                res["gap_bs_pct"] = 100.0 * (bs.cost - res["cost_optimal"]) / res["cost_optimal"]
            else:
                res = evaluate_point_3(inst, truncation=truncation, tol=tol)
            row.update(res)
            rows.append(row)
        progress.advance(extra=f"optimal cost {row['cost_optimal']:.6g} at truncation {row['L']}")
    return pd.DataFrame(rows)


def three_cluster_gap_table(sweeps: pd.DataFrame) -> pd.DataFrame:
    """PI's question side by side: per sweep (and ``all`` sweeps together) and heuristic, the
    mean and max gap (%) to the optimum on two clusters and on three, over the matched points
    (same load, rejection cost and deadline law) whose cost the truncation decides for
    neither system (``n_bound`` points excluded); ``best_3`` marks the smallest mean
    three-cluster gap of each sweep. Rows with the same (sweep, value, distribution,
    rejection cost) are a matched pair."""
    key = ["sweep", "value", "distribution", "load", "rejection_cost"]
    two = sweeps[sweeps["clusters"] == 2].set_index(key)
    three = sweeps[sweeps["clusters"] == 3].set_index(key)
    if not two.index.equals(three.index):
        raise ValueError("three-cluster table: the two- and three-cluster points do not match")
    groups = [(s, two.index.get_level_values("sweep") == s) for s in dict.fromkeys(sweeps["sweep"])]
    groups.append(("all", np.ones(len(two), dtype=bool)))
    rows = []
    for sweep, sel in groups:
        part = []
        for p in HEURISTICS:
            b2 = two[f"bound_{p}"].astype(bool).to_numpy()
            b3 = three[f"bound_{p}"].astype(bool).to_numpy()
            ok = sel & ~b2 & ~b3
            g2 = two[f"gap_{p}_pct"].to_numpy()[ok]
            g3 = three[f"gap_{p}_pct"].to_numpy()[ok]
            part.append(
                {
                    "sweep": sweep,
                    "policy": POLICY_LABELS[p],
                    "mean_gap_2_pct": float(g2.mean()) if g2.size else math.nan,
                    "max_gap_2_pct": float(g2.max()) if g2.size else math.nan,
                    "mean_gap_3_pct": float(g3.mean()) if g3.size else math.nan,
                    "max_gap_3_pct": float(g3.max()) if g3.size else math.nan,
                    "n_points": int(ok.sum()),
                    "n_bound": int((sel & (b2 | b3)).sum()),
                }
            )
        best = min(
            part, key=lambda r: np.inf if math.isnan(r["mean_gap_3_pct"]) else r["mean_gap_3_pct"]
        )
        for r in part:
            r["best_3"] = r is best
        rows += part
    return pd.DataFrame(rows)
