"""The numerical study of Sec. 6 as tidy tables (what the pipeline's rules compute).

Each function returns a :class:`pandas.DataFrame` with explicit column names; units are the
model's (loads dimensionless, costs = mean holding cost per unit time).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..progress import Progress
from ..seeding import rng_for
from .exact import solve_exact
from .fixed_point import fixed_point, initial_partition
from .instances import table1, table1_initial_partitions
from .model import BOTH, DEDICATED, SHARED, Instance
from .result import Solution

__all__ = [
    "comparison_summary",
    "iteration_statistics",
    "policy_simulation_rows",
    "simulation_summary",
    "solution_rows",
    "sweep_runs",
    "switching_tables",
    "table1_load_sweep",
    "table1_solutions",
    "table1_trajectories",
    "two_class_tables",
]

log = logging.getLogger(__name__)

_SET_NAMES = {DEDICATED: "C_d", BOTH: "C_b", SHARED: "C_0"}


def _init_labels(inits: Sequence[str], random_inits: int) -> list[str]:
    labels: list[str] = []
    for kind in inits:
        if kind == "random":
            labels += [f"random-{k}" for k in range(random_inits)]
        else:
            labels.append(kind)
    return labels


def sweep_runs(
    instances: Iterable[tuple[int, Instance]],
    *,
    seed: int,
    updates: Sequence[str] = ("jacobi", "single"),
    inits: Sequence[str] = ("dedicated", "both", "shared", "random"),
    random_inits: int = 3,
    p_shared: float = 0.1,
    p_both: float = 0.3,
    paper_rounding: bool = False,
    max_iterations: int | None = None,
) -> pd.DataFrame:
    """Algorithm 1 under every update rule and initial partition, next to the exact solver.

    ``instances`` yields ``(index, instance)``. Each fixed-point run draws from the stream
    keyed by ``(seed, "multiskill-fixed-point", C, index, update, init)``.

    Columns: ``n_classes, instance, update, init, iterations, converged, status,
    cost_exact, cost, rel_gap`` (cost relative to the exact optimum; NaN if not converged),
    ``same_partition`` (final partition equals the exact one), ``n_dedicated, n_both,
    n_shared`` (sizes of the exact optimum's sets).
    """
    rows = []
    labels = _init_labels(inits, random_inits)
    for index, inst in instances:
        exact = solve_exact(inst)
        counts = np.bincount(exact.partition.labels, minlength=3)
        for update in updates:
            for label in labels:
                rng = rng_for(seed, "multiskill-fixed-point", inst.n_classes, index, update, label)
                init = initial_partition(
                    label.split("-")[0], inst.n_classes, rng, p_shared=p_shared, p_both=p_both
                )
                sol = fixed_point(
                    inst,
                    update=update,
                    init=init,
                    rng=rng,
                    paper_rounding=paper_rounding,
                    max_iterations=max_iterations,
                )
                gap = (sol.cost - exact.cost) / exact.cost if sol.converged else np.nan
                rows.append(
                    {
                        "n_classes": inst.n_classes,
                        "instance": index,
                        "update": update,
                        "init": label,
                        "iterations": sol.iterations,
                        "converged": sol.converged,
                        "status": sol.info["status"],
                        "cost_exact": exact.cost,
                        "cost": sol.cost,
                        "rel_gap": gap,
                        "same_partition": sol.partition == exact.partition,
                        "n_dedicated": int(counts[DEDICATED]),
                        "n_both": int(counts[BOTH]),
                        "n_shared": int(counts[SHARED]),
                    }
                )
    return pd.DataFrame(rows)


def iteration_statistics(
    runs: pd.DataFrame,
    by: Sequence[str] = ("n_classes", "update"),
) -> pd.DataFrame:
    """Fig. 7's statistics: iterations to convergence per group (converged runs only).

    Columns: ``*by, runs, min, median, max, mean, not_converged``; ``min..mean`` are over
    converged runs (NaN if none converged).
    """
    by = list(by)
    conv = runs[runs["converged"]]
    stats = conv.groupby(by)["iterations"].agg(["min", "median", "max", "mean"])
    total = runs.groupby(by).size().rename("runs")
    failed = (~runs["converged"]).groupby([runs[c] for c in by]).sum().rename("not_converged")
    out = pd.concat([total, stats, failed.astype(int)], axis=1).reset_index()
    return out[[*by, "runs", "min", "median", "max", "mean", "not_converged"]]


def solution_rows(sol: Solution, solver: str) -> list[dict]:
    """One row per server of a solution: load, routing probability, set of its class."""
    rows = []
    probs = sol.probabilities
    for j, load in enumerate(sol.loads):
        rows.append(
            {
                "solver": solver,
                "server": j,
                "load": float(load),
                "probability": np.nan if j == 0 else float(probs[j - 1]),
                "set": "" if j == 0 else _SET_NAMES[int(sol.partition.labels[j - 1])],
                "cost": sol.cost,
                "iterations": sol.iterations,
                "converged": sol.converged,
            }
        )
    return rows


def table1_solutions(
    generic_methods: Sequence[str] = ("L-BFGS-B", "SLSQP"),
    updates: Sequence[str] = ("jacobi", "single"),
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """Table 1's instance solved by every solver (tidy: one row per solver and server).

    Algorithm 1 runs from the all-dedicated partition, with and without the authors'
    rounding; a run that does not converge is listed with its last iterate.
    """
    from .generic import solve_generic

    inst = table1()
    rows = solution_rows(solve_exact(inst), "exact")
    for method in generic_methods:
        rows += solution_rows(solve_generic(inst, method=method), f"generic {method}")
    for update in updates:
        for rounding in (False, True):
            rng = rng_for(seed, "multiskill-table1", update, int(rounding))
            sol = fixed_point(
                inst, update=update, init="dedicated", rng=rng, paper_rounding=rounding
            )
            name = f"fixed-point {update}" + (" (paper rounding)" if rounding else "")
            rows += solution_rows(sol, name)
    df = pd.DataFrame(rows)
    # Say in the output where our optimum differs from what the paper reports (Sec. 6.3):
    # a class split between both servers with a tiny dedicated load, which the paper's
    # rounding sends to server 0 (rho_j = 0).
    tiny = (df["set"] == "C_b") & (df["load"] < 1e-2)
    df["note"] = np.where(
        tiny,
        "C_b with a tiny dedicated load: the paper reports rho = 0 here (its rounding of "
        "c/mu, delta and rho_0 puts the class in C_0)",
        "",
    )
    return df


def table1_trajectories(
    updates: Sequence[str] = ("jacobi", "single"),
    *,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 6: loads per iteration of Algorithm 1 on Table 1 from its three initial partitions.

    Returns ``(trajectories, runs)``: trajectories has columns ``init, update, paper_rounding,
    iteration, server, load``; runs has one row per run with ``iterations, converged,
    status``.
    """
    inst = table1()
    traj, runs = [], []
    for update in updates:
        for rounding in (False, True):
            for k, (label, part) in enumerate(table1_initial_partitions().items()):
                rng = rng_for(seed, "multiskill-fig6", update, int(rounding), k)
                sol = fixed_point(inst, update=update, init=part, rng=rng, paper_rounding=rounding)
                loads = sol.info["trace"].loads
                for it, row in enumerate(loads):
                    for j, load in enumerate(row):
                        traj.append(
                            {
                                "init": label,
                                "update": update,
                                "paper_rounding": rounding,
                                "iteration": it,
                                "server": j,
                                "load": float(load),
                            }
                        )
                runs.append(
                    {
                        "init": label,
                        "update": update,
                        "paper_rounding": rounding,
                        "iterations": sol.iterations,
                        "converged": sol.converged,
                        "status": sol.info["status"],
                        "cost": sol.cost,
                        "message": sol.message,
                    }
                )
    return pd.DataFrame(traj), pd.DataFrame(runs)


def comparison_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per C: how the multi-skilled optimum compares with the three other systems.

    ``table`` has one row per instance with columns ``n_classes, multiskilled, no_sharing,
    all_sharing, all_sharing_same_costs`` (NaN where a system is unstable). Relative
    differences are ``(other - multiskilled) / multiskilled``: positive means the
    multi-skilled system is cheaper.
    """
    rows = []
    for n, g in table.groupby("n_classes"):
        row = {"n_classes": int(n), "instances": len(g)}
        for other in ("no_sharing", "all_sharing", "all_sharing_same_costs"):
            rel = (g[other] - g["multiskilled"]) / g["multiskilled"]
            row[f"{other}_unstable"] = int(g[other].isna().sum())
            row[f"{other}_rel_median"] = float(rel.median()) if rel.notna().any() else np.nan
            row[f"{other}_rel_min"] = float(rel.min()) if rel.notna().any() else np.nan
            row[f"{other}_rel_max"] = float(rel.max()) if rel.notna().any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _plane(eta_max: Sequence[float], points: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid over (0, eta_max[0]] x (0, eta_max[1]] (intensities must be > 0)."""
    e1 = np.linspace(0.0, eta_max[0], points + 1)[1:]
    e2 = np.linspace(0.0, eta_max[1], points + 1)[1:]
    return e1, e2


def two_class_tables(
    mu, cost, eta_max, grid_points: int, line_eta1: float, line_points: int
) -> dict[str, pd.DataFrame]:
    """Figs 2-3: the optimal C = 2 case over the (eta_1, eta_2) plane, the closed-form case
    boundaries, and the optimal loads along ``eta_1 = line_eta1`` by the closed forms and by
    the exact solver (two independent computations, drawn as lines and markers).

    Returns ``{"case_map", "boundaries", "loads"}``; ``case`` 0 marks unstable points.
    """
    from .two_class import case_boundaries, case_map, solve_two_class

    e1, e2 = _plane(eta_max, grid_points)
    g1, g2 = np.meshgrid(e1, e2, indexing="ij")
    cases = case_map(mu, cost, g1, g2)
    case_df = pd.DataFrame(
        {"eta1": g1.ravel(), "eta2": g2.ravel(), "case": cases.ravel().astype(int)}
    )
    bounds = []
    for name, (b1, b2) in case_boundaries(mu, cost, e1).items():
        bounds.append(pd.DataFrame({"boundary": name, "eta1": b1, "eta2": b2}))
    bound_df = pd.concat(bounds, ignore_index=True)

    rows = []
    for eta2 in _plane([line_eta1, eta_max[1]], line_points)[1]:
        try:
            inst = Instance(mu=mu, cost=cost, eta=[line_eta1, eta2])
        except ValueError:
            continue  # unstable: no optimum to draw
        closed = solve_two_class(inst)
        exact = solve_exact(inst)
        for source, loads, case in (
            ("closed-form", closed.loads, closed.case),
            ("exact", exact.loads, np.nan),
        ):
            rows.append(
                {
                    "eta2": eta2,
                    "source": source,
                    "rho0": loads[0],
                    "rho1": loads[1],
                    "rho2": loads[2],
                    "case": case,
                }
            )
    return {"case_map": case_df, "boundaries": bound_df, "loads": pd.DataFrame(rows)}


def switching_tables(
    mu, cost, eta_max, grid_points: int, line_eta1: float, line_points: int
) -> dict[str, pd.DataFrame]:
    """Fig. 4 (and Fig. 5's data): costs of the three systems along ``eta_1 = line_eta1``, the
    switching point(s) on that line, the switching curve over the plane (root finding), and
    the cost difference ``all_sharing - multiskilled`` over the plane (positive where the
    multi-skilled system is cheaper; all-sharing servers charged ``c_0``).

    Returns ``{"costs", "switching_points", "switching_curve", "region"}``.
    """
    from .compare import cost_curves, cost_difference_map, switching_curve, switching_point

    e1, e2 = _plane(eta_max, grid_points)
    eta2_line = _plane([line_eta1, eta_max[1]], line_points)[1]
    costs = cost_curves(mu, cost, line_eta1, eta2_line)
    e2_range = (float(e2[0]), float(e2[-1]))
    points = switching_point(mu, cost, line_eta1, e2_range)
    curve = switching_curve(mu, cost, e1, e2_range)
    curve_rows = [
        {"eta1": e1[i], "eta2": curve[i, b], "branch": b}
        for b in range(curve.shape[1])
        for i in range(curve.shape[0])
    ]
    g1, g2 = np.meshgrid(e1, e2, indexing="ij")
    diff = -cost_difference_map(mu, cost, g1, g2)
    multi = _multiskilled_cost_grid(mu, cost, g1, g2)
    region = pd.DataFrame(
        {
            "eta1": g1.ravel(),
            "eta2": g2.ravel(),
            "multiskilled": multi.ravel(),
            "all_sharing": (multi + diff).ravel(),
            "difference": diff.ravel(),
        }
    )
    return {
        "costs": costs,
        "switching_points": pd.DataFrame({"eta1": line_eta1, "eta2": points}),
        "switching_curve": pd.DataFrame(curve_rows),
        "region": region,
    }


def _multiskilled_cost_grid(mu, cost, g1, g2) -> np.ndarray:
    """Exact multi-skilled optimum over a grid of C = 2 intensities (NaN where unstable)."""
    from .compare import multiskilled_cost_batch

    eta = np.stack([g1.ravel(), g2.ravel()], axis=1)
    out = np.asarray(multiskilled_cost_batch(mu, cost, eta), dtype=float)
    out[~np.isfinite(out)] = np.nan
    return out.reshape(g1.shape)


# -- index-policy simulations (ours, beyond the paper) -------------------------------------
def policy_simulation_rows(
    instances: Iterable[tuple[int, Instance]],
    *,
    policies: Sequence[str],
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    tag: str = "random",
    extra: dict | None = None,
) -> pd.DataFrame:
    """Simulated mean holding cost of every policy, relative to optimal Bernoulli routing.

    The baseline is the exact optimal Bernoulli cost sum_j c_j rho_j/(1 - rho_j) (no noise);
    ``relative = cost / bernoulli_exact`` and ``relative_ci95`` its 95% half-width. The
    simulated ``bernoulli`` row checks the simulator against that formula. Every policy of
    an instance simulates from the streams keyed by ``(seed, tag, C, index)`` (the policy is
    not a key: common random numbers, ``docs/multiskill.md#common-random-numbers``), so the
    rows of one instance are paired by replication; ``relative_ci95`` is each policy's own
    interval, not that of a difference
    (:func:`~queue_routing.multiskill.policy_comparison.compare_policies` gives the paired
    ones). Every replication starts from the stationary law of optimal Bernoulli routing (see
    :func:`~queue_routing.multiskill.simulation.simulate`, ``start="bernoulli"``).
    """
    from .simulation import simulate

    rows = []
    instances = list(instances)
    progress = Progress(
        len(instances) * len(policies) * int(replications), f"{tag} instances", logger=log
    )
    for index, inst in instances:
        exact = solve_exact(inst)
        base = exact.cost
        for policy in policies:
            res = simulate(
                inst,
                policy,
                horizon=horizon,
                warmup=warmup,
                replications=replications,
                seed=seed,
                keys=(tag, inst.n_classes, index),
                start="bernoulli",
                progress=progress,
            )
            rows.append(
                {
                    **(extra or {}),
                    "n_classes": inst.n_classes,
                    "instance": index,
                    "policy": policy,
                    "cost": res.cost,
                    "ci95": res.ci95,
                    "bernoulli_exact": base,
                    "relative": res.cost / base,
                    "relative_ci95": res.ci95 / base,
                    "rho0_bernoulli": float(exact.loads[0]),
                    "max_load_bernoulli": float(exact.loads.max()),
                    "replications": replications,
                    "horizon": horizon,
                }
            )
    return pd.DataFrame(rows)


def table1_load_sweep(factors: Sequence[float], **kwargs) -> pd.DataFrame:
    """:func:`policy_simulation_rows` on Table 1 with every intensity scaled by each factor.

    Factors that make the scaled instance unstable (Proposition 1) are skipped and logged in
    the ``skipped`` attribute of the returned frame.
    """
    base = table1()
    frames, skipped = [], []
    for k, f in enumerate(factors):
        try:
            inst = Instance(mu=base.mu, cost=base.cost, eta=base.eta * f, name=f"table1x{f}")
        except ValueError:
            skipped.append(f)
            continue
        frames.append(
            policy_simulation_rows(
                [(k, inst)], tag="table1-load", extra={"load_factor": float(f)}, **kwargs
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out.attrs["skipped"] = skipped
    return out


def simulation_summary(
    rows: pd.DataFrame,
    by: Sequence[str] = ("n_classes", "policy"),
) -> pd.DataFrame:
    """Per group: instances, median / min / max relative cost and the largest CI half-width;
    ``better_than_bernoulli`` counts instances whose 95% CI lies entirely below 1."""
    by = list(by)
    g = rows.groupby(by, sort=False)
    out = pd.DataFrame(
        {
            "instances": g.size(),
            "relative_median": g["relative"].median(),
            "relative_min": g["relative"].min(),
            "relative_max": g["relative"].max(),
            "relative_ci95_max": g["relative_ci95"].max(),
            "better_than_bernoulli": g.apply(
                lambda d: int(((d["relative"] + d["relative_ci95"]) < 1.0).sum()),
                include_groups=False,
            ),
        }
    ).reset_index()
    return out
