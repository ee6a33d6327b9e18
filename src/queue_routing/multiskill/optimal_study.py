"""The pipeline's study of the optimal dynamic routing (ours): a family of small instances,
each policy's exact gap to the optimum, and one optimal switching curve, as tidy tables
(``docs/multiskill.md#the-optimal-dynamic-policy``).

Instances: ``(kind, C)`` templates (:data:`TEMPLATES`) of capacities ``mu`` (work per unit
time), costs ``c`` (per job per unit time) and class weights ``w``, scaled to a total load
``rho = sum eta / sum mu``: ``eta = rho sum(mu) w / sum(w)``.

A case longer than a pipeline job may be runs in rounds (:func:`optimal_case_round`, its
state a :class:`CaseProgress` saved by :func:`save_case_round` and read back by
:func:`load_case_round`), with the rows of the uninterrupted case to the bit.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..io import atomic_path
from ..labels import POLICY_LABELS
from ..user_policy import policy_name
from .instances import TABLE1
from .model import Instance
from .optimal import (
    CHAIN_POLICIES,
    OptimalResult,
    OptimalSearch,
    compare_with_optimum,
    evaluate_beside,
    optimal_policy,
    resolve_chain_policy,
)
from .policies import policy_weights

__all__ = [
    "TEMPLATES",
    "CaseProgress",
    "case_rows",
    "finish_case_rows",
    "gap_summary",
    "gaps_markdown",
    "gaps_wide",
    "load_case_round",
    "optimal_case_round",
    "optimal_gap_rows",
    "optimal_instances",
    "progress_rows",
    "save_case_round",
    "switching_rows",
]

#: The instance templates ``kind -> (mu, cost, weights)``, each for one number of classes.
TEMPLATES = {
    "symmetric-2": ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0]),
    "costs-2": ([1.0, 1.0, 1.0], [1.0, 2.0, 4.0], [1.0, 1.0]),
    "capacities-2": ([2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [1.0, 0.5]),
    "table1-2": (TABLE1["mu"][:3], TABLE1["cost"][:3], TABLE1["eta"][:2]),
    "symmetric-3": ([1.0] * 4, [1.0] * 4, [1.0] * 3),
    "table1-3": (TABLE1["mu"][:4], TABLE1["cost"][:4], TABLE1["eta"][:3]),
}

#: Value-iteration steps allowed to PI's relative values for PI² (those of
#: :func:`~.optimal.policy_relative_values`, which :func:`~.optimal.evaluate_policy` uses).
PI_VALUES_MAX_ITER = 1_000_000
#: Gaps (percentage points) closer than this are ties (identical policies on an instance).
TIE_PCT = 1e-6
#: Policy labels of the study's tables (PI² is the study's own).
LABELS = {**POLICY_LABELS, "pi2": "PI²"}


def scaled_instance(kind: str, load: float) -> Instance:
    """The template ``kind`` of :data:`TEMPLATES` at total load ``load`` (dimensionless).

    >>> inst = scaled_instance("table1-2", 0.8)
    >>> round(float(inst.eta.sum() / inst.mu.sum()), 12), inst.n_classes
    (0.8, 2)
    """
    mu, cost, w = TEMPLATES[kind]
    mu, w = np.asarray(mu, float), np.asarray(w, float)
    return Instance(mu=mu, cost=cost, eta=load * mu.sum() * w / w.sum())


def optimal_instances(kinds: Sequence[str], loads: Sequence[float]) -> list[tuple[str, float]]:
    """``(kind, load)`` of every template in ``kinds`` at every load, in that order."""
    unknown = [k for k in kinds if k not in TEMPLATES]
    if unknown:
        raise ValueError(f"kinds: unknown templates {unknown}; choose from {list(TEMPLATES)}")
    return [(k, float(rho)) for k in kinds for rho in loads]


def optimal_gap_rows(
    cases: Sequence[tuple[str, float]],
    policies: Sequence[str] = CHAIN_POLICIES,
    *,
    rtol: float = 1e-4,
) -> pd.DataFrame:
    """One row per ``(kind, load, policy)``: the policy's exact cost on the chain and its gap
    to the optimum, with the optimum's bounds and certificate.

    Columns: ``kind, n_classes, load, policy, cost, gap_pct, truncation, levels, certified,
    boundary_mass, optimal_cost, optimal_lower, optimal_upper, optimal_truncation,
    optimal_levels, optimal_converged, optimal_boundary_mass, iterations`` (costs per unit
    time, ``gap_pct`` in percent of the optimal cost; ``truncation`` the largest level of a
    box, ``levels`` all of them, ``"L_0xL_1x...xL_C"``). No wall time: a rerun writes the
    same bytes (the pipeline's jobs log their time).

    >>> rows = optimal_gap_rows([("symmetric-2", 0.5)], ["pi", "pi2"], rtol=1e-3)
    >>> rows[["policy", "certified"]].values.tolist()
    [['pi', True], ['pi2', True]]
    >>> bool((rows["gap_pct"] > -0.2).all())
    True
    """
    out = []
    for kind, load in cases:
        inst = scaled_instance(kind, load)
        cmp = compare_with_optimum(inst, policies, rtol=rtol, strict=False)
        evaluations = {name: ev.to_dict() for name, ev in cmp.evaluations.items()}
        out += case_rows(kind, load, cmp.optimal.to_dict(), evaluations)
    return pd.DataFrame(out)


def case_rows(
    kind: str, load: float, optimal: Mapping[str, Any], evaluations: Mapping[str, Mapping]
) -> list[dict[str, Any]]:
    """The rows of :func:`optimal_gap_rows` of one case, from the JSON objects of its optimum
    (:meth:`~.optimal.OptimalResult.to_dict`) and of each policy's evaluation
    (:meth:`~.optimal.ChainEvaluation.to_dict`), in the order of ``evaluations``."""
    g = optimal["cost"]
    return [
        {
            "kind": kind,
            "n_classes": len(optimal["levels"]) - 1,
            "load": load,
            "policy": name,
            "cost": ev["cost"],
            "gap_pct": 100.0 * (ev["cost"] - g) / g,
            "truncation": ev["truncation"],
            "levels": _levels(ev["levels"]),
            "certified": ev["certified"],
            "boundary_mass": ev["boundary_mass"],
            "optimal_cost": g,
            "optimal_lower": optimal["bounds"][0],
            "optimal_upper": optimal["bounds"][1],
            "optimal_truncation": optimal["truncation"],
            "optimal_levels": _levels(optimal["levels"]),
            "optimal_converged": optimal["converged"],
            "optimal_boundary_mass": optimal["boundary_mass"],
            "iterations": optimal["iterations"],
        }
        for name, ev in evaluations.items()
    ]


@dataclass
class CaseProgress:
    """Where one case of :func:`optimal_gap_rows` stands between two rounds: the optimum's
    search, the policies evaluated (their :meth:`~.optimal.ChainEvaluation.to_dict`, in the
    order of the study's policies) and, while PI² is under way, the search of PI's relative
    values it is greedy for (:meth:`~.optimal.OptimalSearch.start` with ``policy="pi"``)."""

    search: OptimalSearch
    evaluations: dict[str, dict] = field(default_factory=dict)
    values: OptimalSearch | None = None

    def done(self, policies: Sequence[str]) -> bool:
        """The optimum found and every one of ``policies`` evaluated."""
        return bool(self.search.done and len(self.evaluations) == len(policies))


def optimal_case_round(
    kind: str,
    load: float,
    policies: Sequence[str] = CHAIN_POLICIES,
    *,
    rtol: float = 1e-4,
    seconds: float | None = None,
    progress: CaseProgress | None = None,
) -> CaseProgress:
    """One bounded round of one case of :func:`optimal_gap_rows` (a pipeline job of a case
    longer than a job may be): from ``progress`` (None: the start), the optimum's search
    advanced (:class:`~.optimal.OptimalSearch`), then the policies not yet evaluated, one
    after the other (PI²: PI's relative values by a search of their own, then its
    stationary laws), until ``seconds`` of wall time have passed (None: to the end); the
    round stops at the end of a block of value-iteration steps, a box or a policy, and does
    one at least. The rounds compute exactly what one uninterrupted case computes, so the
    :func:`case_rows` of the last round are the case's rows of :func:`optimal_gap_rows` to
    the bit.

    >>> progress = optimal_case_round("symmetric-2", 0.5, ["pi"], rtol=1e-3, seconds=0.0)
    >>> while not progress.done(["pi"]):
    ...     progress = optimal_case_round("symmetric-2", 0.5, ["pi"], rtol=1e-3, seconds=0.0,
    ...                                   progress=progress)
    >>> rows = progress_rows("symmetric-2", 0.5, progress)
    >>> rows == optimal_gap_rows([("symmetric-2", 0.5)], ["pi"], rtol=1e-3).to_dict("records")
    True
    """
    t0 = time.perf_counter()
    inst = scaled_instance(kind, load)
    if progress is None:
        progress = CaseProgress(OptimalSearch.start(inst, rtol=rtol))
    search, out = progress.search, dict(progress.evaluations)
    worked = not search.done  # a round does some work: a block, a box or an evaluation

    def left() -> float | None:
        return None if seconds is None else max(seconds - (time.perf_counter() - t0), 0.0)

    if not search.advance(seconds):
        return CaseProgress(search, out)
    opt = search.result(strict=False)
    values = progress.values
    for policy in policies:
        name = policy_name(resolve_chain_policy(policy))
        if name in out:
            continue
        if worked and left() == 0.0:
            break
        h_pi = None
        if name == "pi2":  # PI's values, solved in rounds where PI's own cost is certified
            if values is None:
                pi_levels = out["pi"]["levels"] if "pi" in out else None
                if pi_levels is None:
                    pi_levels = evaluate_beside(inst, "pi", opt, rtol=rtol).levels
                values = OptimalSearch.start(
                    inst, tuple(pi_levels), rtol=rtol / 10, max_iter=PI_VALUES_MAX_ITER, policy="pi"
                )
            worked = True
            if not values.advance(left()):
                break
            h_pi = values.policy_values()[0]
        out[name] = evaluate_beside(inst, policy, opt, rtol=rtol, h_pi=h_pi).to_dict()
        values = None if name == "pi2" else values
        worked = True
    return CaseProgress(search, out, values)


def progress_rows(kind: str, load: float, progress: CaseProgress) -> list[dict[str, Any]]:
    """:func:`case_rows` of a finished case's progress."""
    return case_rows(kind, load, progress.search.result(strict=False).to_dict(),
                     progress.evaluations)  # fmt: skip


def save_case_round(progress: CaseProgress, policies: Sequence[str], search_path,
                    evaluations_path) -> bool:  # fmt: skip
    """Write a round of :func:`optimal_case_round`: its searches (``.npz``; PI's values under
    the names ``values_*``) and a JSON object ``{"done": bool, "evaluations": {...}}``
    (floats exact), ``done`` once the case is (:meth:`CaseProgress.done`: what the pipeline
    reads to know whether another round is needed). Returns ``done``."""
    done = progress.done(policies)
    arrays = progress.search.pack()
    if progress.values is not None:
        arrays.update(progress.values.pack(prefix="values_"))
    with atomic_path(search_path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)
    with atomic_path(evaluations_path) as tmp:
        text = json.dumps({"done": done, "evaluations": progress.evaluations}, indent=1)
        tmp.write_text(text + "\n")
    return done


def load_case_round(kind: str, load: float, search_path, evaluations_path) -> CaseProgress:
    """A round written by :func:`save_case_round` for the case ``(kind, load)``."""
    inst = scaled_instance(kind, load)
    with np.load(search_path, allow_pickle=False) as data:
        search = OptimalSearch.unpack(data, inst, path=search_path)
        values = None
        if "values_meta" in data:
            values = OptimalSearch.unpack(data, inst, prefix="values_", path=search_path)
    evaluations = json.loads(Path(evaluations_path).read_text())["evaluations"]
    return CaseProgress(search, evaluations, values)


def finish_case_rows(
    kind: str, load: float, policies: Sequence[str], *, rtol: float, progress: CaseProgress
) -> pd.DataFrame:
    """The rows of :func:`optimal_gap_rows` of the case ``(kind, load)`` from its last round:
    what is left of it done, to the end."""
    progress = optimal_case_round(kind, load, policies, rtol=rtol, progress=progress)
    return pd.DataFrame(progress_rows(kind, load, progress))


def _levels(levels: Sequence[int]) -> str:
    """``"120x18x18"``: a box's levels ``L_0, ..., L_C``."""
    return "x".join(str(int(v)) for v in levels)


def gaps_wide(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per instance: its optimum (cost, bounds, level, certified, boundary mass)
    and each policy's gap in percent (columns named by the policies), plus ``best_index``,
    the index policy (JSQ, LED, IO, PI) with the least cost."""
    keys = ["kind", "n_classes", "load"]
    opt = rows.groupby(keys, sort=False).first()[
        ["optimal_cost", "optimal_lower", "optimal_upper", "optimal_truncation",
         "optimal_levels", "optimal_converged", "optimal_boundary_mass"]
    ]  # fmt: skip
    gaps = rows.pivot_table(index=keys, columns="policy", values="gap_pct", sort=False)
    gaps = gaps[list(dict.fromkeys(rows["policy"]))]
    wide = opt.join(gaps).reset_index()
    index_pols = [p for p in ("jsq", "led", "io", "pi") if p in gaps.columns]
    if index_pols:
        g = wide[index_pols].to_numpy(float)
        tied = g <= g.min(axis=1, keepdims=True) + TIE_PCT
        wide["best_index"] = ["+".join(p for p, t in zip(index_pols, row, strict=True) if t)
                              for row in tied]  # fmt: skip
    certified = rows.groupby(keys, sort=False)["certified"].all().to_numpy()
    wide["all_certified"] = certified & wide["optimal_converged"].to_numpy()
    return wide


def gaps_markdown(wide: pd.DataFrame) -> str:
    """The gap table as Markdown: an instance a row, the optimal cost with its bounds and
    box, each policy's gap in percent (2 decimals)."""
    pols = [c for c in wide.columns if c in LABELS or ":" in str(c)]
    head = ["instance", "C", "load", "optimal cost [lower, upper]", "levels", *(
        f"{LABELS.get(p, p)} gap %" for p in pols), "best index policy"]  # fmt: skip
    lines = [
        "Exact gap of each policy to the optimal dynamic routing (percent of the optimal "
        "cost), every cost solved on the truncated chain and certified to the relative "
        "tolerance rtol by raising the levels unless marked *: a gap is exact to about "
        "+-200 rtol percentage points, so a slightly negative gap is a tie. Levels: the "
        "optimum's box L_0xL_1x...xL_C (server j holds at most L_j jobs). Best index policy: "
        "the least cost among JSQ, LED, IO and PI (= for ties).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for _, r in wide.iterrows():
        mark = "" if r["all_certified"] else " *"
        cells = [
            str(r["kind"]),
            str(int(r["n_classes"])),
            f"{r['load']:g}",
            f"{r['optimal_cost']:.5g} [{r['optimal_lower']:.6g}, {r['optimal_upper']:.6g}]{mark}",
            str(r["optimal_levels"]),
            *(f"{r[p]:.2f}" for p in pols),
            " = ".join(LABELS.get(b, b) for b in str(r.get("best_index", "")).split("+")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gap_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per policy: instances, median, max and min gap (percent), on how many instances it
    is the best index policy (``best_index``, ties counted for each), and the study's
    smallest and largest total load (``min_load``, ``max_load``)."""
    wide = gaps_wide(rows)
    out = []
    for pol, grp in rows.groupby("policy", sort=False):
        g = grp["gap_pct"].to_numpy(float)
        out.append(
            {
                "policy": pol,
                "instances": len(g),
                "median_gap_pct": float(np.median(g)),
                "max_gap_pct": float(np.max(g)),
                "min_gap_pct": float(np.min(g)),
                "best_index": int(
                    sum(pol in str(b).split("+") for b in wide.get("best_index", []))
                ),
                "min_load": float(rows["load"].min()),
                "max_load": float(rows["load"].max()),
            }
        )
    return pd.DataFrame(out)


def switching_rows(
    kind: str, load: float, *, job_class: int = 1, others: Sequence[int] = (0, 2, 4),
    rtol: float = 1e-4, result: OptimalResult | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The optimal switching curve of a C = 2 instance beside PI's straight line.

    For each ``x_other`` (the count at the other dedicated server) and each ``x_0``, the
    largest ``x_i`` (``i = job_class``) at which an arriving class-``i`` job is still routed to
    its dedicated server by the optimum (``optimal``, -1 if never) and by PI (``pi``: the
    largest ``x_i`` with ``w_i (x_i + 1) <= w_0 (x_0 + 1)``), for ``x_0`` up to half the
    level (away from the truncation; the optimum is solved on cubes, ``shape="cube"``, so
    the curve is drawn as far along every axis). Columns: ``x_other, x0, optimal, pi,
    pi_slope`` (``w_0 / w_i``, the slope of PI's line ``x_i + 1 = (w_0 / w_i) (x_0 + 1)``),
    ``truncation``.
    """
    inst = scaled_instance(kind, load)
    if inst.n_classes != 2:
        raise ValueError(f"kind: the switching curve is drawn for C = 2, got {kind!r}")
    opt = (
        result
        if result is not None
        else optimal_policy(inst, rtol=rtol, strict=False, shape="cube")
    )
    d = opt.decision_table()[..., job_class - 1]
    w = policy_weights(inst, "pi")
    top = opt.truncation // 2
    out = []
    other = 3 - job_class
    for xo in others:
        for x0 in range(top + 1):
            idx = [x0, 0, 0]
            idx[other] = xo
            line = []
            for xi in range(top + 1):
                idx[job_class] = xi
                line.append(bool(d[tuple(idx)]))
            ded = [k for k, v in enumerate(line) if v]
            pi_max = math.floor(w[0] * (x0 + 1) / w[job_class] - 1 + 1e-12)
            out.append(
                {
                    "x_other": xo,
                    "x0": x0,
                    "optimal": max(ded) if ded else -1,
                    "pi": min(pi_max, top),
                    "pi_slope": w[0] / w[job_class],
                    "truncation": opt.truncation,
                }
            )
    return pd.DataFrame(out)
