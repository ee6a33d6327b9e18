"""The numerical study of Sec. 6 as tidy tables (what the pipeline's rules compute).

Each function returns a :class:`pandas.DataFrame` with explicit column names; units are the
model's (loads dimensionless, costs = mean holding cost per unit time).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import AccuracyError
from ..progress import Progress
from ..seeding import rng_for
from ..user_policy import resolve_policies
from .exact import solve_exact
from .fixed_point import fixed_point, initial_partition
from .instances import table1, table1_initial_partitions
from .model import BOTH, DEDICATED, SHARED, Instance
from .policies import POLICIES
from .result import Solution
from .simulation import simulate_policies

__all__ = [
    "JOB_SIZES_TAG",
    "NOT_SEPARATED",
    "REPLICATION_COLUMNS",
    "TABLE1_TAG",
    "comparison_summary",
    "iteration_statistics",
    "job_sizes_markdown",
    "job_sizes_rows",
    "job_sizes_summary",
    "load_sweep_markdown",
    "policy_comparison_from_costs",
    "policy_comparison_rows",
    "policy_replication_costs",
    "simulation_markdown",
    "simulation_summary",
    "solution_rows",
    "sweep_runs",
    "switching_tables",
    "table1_instances",
    "table1_load_sweep",
    "table1_load_sweep_from_costs",
    "table1_solutions",
    "table1_trajectories",
    "two_class_tables",
    "verdict_summary",
]

log = logging.getLogger(__name__)

_SET_NAMES = {DEDICATED: "C_d", BOTH: "C_b", SHARED: "C_0"}


def init_labels(inits: Sequence[str], random_inits: int) -> list[str]:
    """Labels of the initial partitions of Algorithm 1 as the runs write them: each kind,
    with ``random`` expanded to ``random-0 .. random-(random_inits - 1)``.

    >>> init_labels(["dedicated", "random"], 2)
    ['dedicated', 'random-0', 'random-1']
    """
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
    labels = init_labels(inits, random_inits)
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
#: The verdict of a comparison whose leader is not separated from every other policy.
NOT_SEPARATED = "not separated"
#: The stream tag of Table 1's load sweep (the random instances use ``"random"``).
TABLE1_TAG = "table1-load"


def policy_comparison_rows(
    instances: Iterable[tuple[int, Instance]],
    *,
    policies: Sequence[str],
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    tag: str = "random",
    extra: dict | None = None,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paired comparison of the routing policies on every instance: ``(rows, differences)``.

    Each instance is one :func:`~queue_routing.multiskill.policy_comparison.compare_policies`
    run on the streams keyed by ``(seed, tag, C, index)`` (common random numbers across its
    policies, ``docs/multiskill.md#common-random-numbers``), every replication started from
    the stationary law of optimal Bernoulli routing, whose simulated cost is the control
    variate of every ratio (``docs/multiskill.md#paired-policy-comparisons``).

    ``rows``, one per (instance, policy): ``cost`` and ``ci95`` (plain mean cost per unit
    time over the replications and its 95% half-width: the simulated Bernoulli row checks
    the simulator against the exact cost), ``bernoulli_exact`` (the exact optimal Bernoulli
    cost ``B``), ``ratio`` and ``ratio_ci95`` (the control-variate estimate of
    ``E[cost] / B`` and its 95% half-width; exactly 1 and 0 for Bernoulli), ``rank`` (1 =
    lowest ratio), ``best`` (the instance's verdict: the policy separated from every other
    after Holm's correction at family-wise confidence ``confidence``, i.e. level ``1 -
    confidence``, or :data:`NOT_SEPARATED`), and
    ``leader_p`` (Holm-adjusted p-value of "the leader is not better than this policy"; empty
    on the leader's own row).

    ``differences``, one per (instance, pair ``a`` before ``b`` in ``policies``):
    ``difference`` and ``ci95`` (the paired control-variate estimate of ``E[cost_a -
    cost_b]``, cost per unit time), the same divided by ``B`` (``relative_difference``,
    ``relative_ci95``), the Holm-adjusted one-sided p-values ``p_a_lower`` and ``p_b_lower``,
    and ``verdict``: ``"a < b"``, ``"b < a"`` or :data:`NOT_SEPARATED` at level ``1 -
    confidence``.
    """
    from .policy_comparison import compare_policies

    rows, diffs = [], []
    instances = list(instances)
    simulated = len(policies) + ("bernoulli" not in policies)
    progress = Progress(
        len(instances) * simulated * int(replications), f"{tag} instances", logger=log
    )
    for index, inst in instances:
        exact = solve_exact(inst)
        res = compare_policies(
            inst,
            policies,
            horizon=horizon,
            warmup=warmup,
            replications=replications,
            seed=seed,
            keys=(tag, inst.n_classes, index),
            confidence=confidence,
            progress=progress,
        )
        _comparison_rows(res, inst, index, exact, extra, confidence, rows, diffs)
    return pd.DataFrame(rows), pd.DataFrame(diffs)


def _comparison_rows(res, inst, index, exact, extra, confidence, rows, diffs) -> None:
    """Append the rows and differences of one instance's comparison (the tables'
    columns, :func:`policy_comparison_rows`)."""
    alpha = 1.0 - confidence  # the family-wise level of the verdicts, as in select_best
    base = res.baseline_cost
    leader = res.ranking[0]
    adjusted = res.selection.adjusted_p_values
    common = {**(extra or {}), "n_classes": inst.n_classes, "instance": index}
    for policy, e in res.policies.items():
        rows.append(
            {
                **common,
                "policy": policy,
                "cost": e.cost,
                "ci95": e.ci95,
                "bernoulli_exact": base,
                "ratio": e.ratio,
                "ratio_ci95": e.ratio_ci95,
                "rank": res.ranking.index(policy) + 1,
                "best": res.best or NOT_SEPARATED,
                "leader_p": np.nan if policy == leader else adjusted[leader, policy],
                "rho0_bernoulli": float(exact.loads[0]),
                "max_load_bernoulli": float(exact.loads.max()),
                "replications": int(res.replications),
                "horizon": float(res.horizon),
                "warmup": float(res.warmup),
            }
        )
    for (a, b), d in res.differences.items():
        p_a, p_b = adjusted[a, b], adjusted[b, a]
        verdict = f"{a} < {b}" if p_a <= alpha else f"{b} < {a}" if p_b <= alpha else None
        diffs.append(
            {
                **common,
                "policy_a": a,
                "policy_b": b,
                "difference": d.estimate,
                "ci95": d.ci95,
                "relative_difference": d.estimate / base,
                "relative_ci95": d.ci95 / base,
                "p_a_lower": p_a,
                "p_b_lower": p_b,
                "verdict": verdict or NOT_SEPARATED,
            }
        )


#: Columns of :func:`policy_replication_costs` (after the ``extra`` columns).
REPLICATION_COLUMNS = [
    "n_classes",
    "instance",
    "policy",
    "replication",
    "cost",
    "events",
    "martingale",
    "initial_state",
]


def policy_replication_costs(
    instances: Iterable[tuple[int, Instance]],
    *,
    policies: Sequence[str],
    horizon: float,
    warmup: float,
    replications: Iterable[int],
    seed: int,
    tag: str = "random",
    extra: dict | None = None,
) -> pd.DataFrame:
    """One chunk of a split :func:`policy_comparison_rows`: the cost of every replication.

    Simulates replications ``replications`` (indices, e.g. ``range(10, 20)``) of Bernoulli
    routing (the control, even if not in ``policies``) and of every policy on each instance
    (in lockstep, :func:`~.simulation.simulate_policies`), on the streams keyed by ``(seed,
    tag, C, index)`` and the replication index -- the
    streams of the unsplit study, so :func:`policy_comparison_from_costs` of the chunks'
    rows reassembled is bit for bit :func:`policy_comparison_rows`.

    Why the split keeps instances whole in the statistics but not in the jobs: the paired
    estimators (control variate, pairwise differences, Holm) need every replication of an
    instance together, so a job can't finish an instance's comparison if it holds only a
    block of its replications; it writes the replications' costs (cost per unit time, the
    sufficient data of :func:`~.policy_comparison.paired_comparison`) and the aggregation
    does the statistics. Blocks of whole instances are the common case (the chunks of
    :func:`queue_routing.workflow.chunks.plan_chunks` keep an instance's replications together while
    they fit a job); replication blocks serve instances too long for one job.

    Columns: the ``extra`` keys, then :data:`REPLICATION_COLUMNS`: ``n_classes, instance,
    policy, replication, cost`` (cost per unit time), ``events`` (real transitions of the
    replication, warm-up included), ``martingale`` and ``initial_state`` (the replication's
    controls of known mean 0, :func:`~.policy_comparison.known_mean_controls`), one row per
    (instance, policy, replication), Bernoulli first.

    ``policies`` may hold user policies (``"path.py:name"``, named so in the rows;
    ``docs/README.md#your-own-policy``): an arrival that finds a server beyond a user
    policy's index table (``table_size`` jobs, default 400) raises
    :class:`~queue_routing.errors.AccuracyError`, as an unsplit comparison does.
    """
    from .policy_comparison import BASELINE, known_mean_controls

    resolved = resolve_policies(policies, POLICIES)
    policies = tuple(resolved)
    indices = list(replications)
    instances = list(instances)
    simulated = (BASELINE, *[p for p in policies if p != BASELINE])
    progress = Progress(
        len(instances) * len(simulated) * len(indices), f"{tag} instances", logger=log
    )
    rows = []
    for index, inst in instances:
        blocks = simulate_policies(
            inst,
            [resolved.get(p, p) for p in simulated],
            indices,
            horizon=horizon,
            warmup=warmup,
            seed=seed,
            keys=(tag, inst.n_classes, index),
            start="bernoulli",
            progress=progress,
        )
        for policy, block in blocks.items():
            if block.table_bound:
                raise AccuracyError(
                    f"{tag} instance {index}: {block.table_bound} measured arrivals under "
                    f"{policy} found a server beyond the index table; raise table_size"
                )
            controls = known_mean_controls(inst, block)
            per_replication = zip(
                block.indices,
                block.costs,
                block.events_per_replication,
                controls["martingale"],
                controls["initial_state"],
                strict=True,
            )
            for r, cost, events, martingale, initial in per_replication:
                rows.append(
                    {
                        **(extra or {}),
                        "n_classes": inst.n_classes,
                        "instance": index,
                        "policy": policy,
                        "replication": r,
                        "cost": float(cost),
                        "events": int(events),
                        "martingale": float(martingale),
                        "initial_state": float(initial),
                    }
                )
    columns = [*(extra or {}), *REPLICATION_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def policy_comparison_from_costs(
    instances: Iterable[tuple[int, Instance]],
    costs: pd.DataFrame,
    *,
    policies: Sequence[str],
    horizon: float,
    warmup: float,
    seed: int,
    tag: str = "random",
    extra: dict | None = None,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`policy_comparison_rows` from the replications' costs of its chunks.

    ``costs`` holds the rows of :func:`policy_replication_costs` of every chunk (any order,
    any split) for these instances; each instance must have the same replications
    ``0..R-1`` for every policy simulated. The tables are those of the unsplit run, bit for
    bit (same streams, same costs, same arithmetic,
    :func:`~.policy_comparison.paired_comparison` on the instance's
    :func:`~.policy_comparison.default_controls`).
    """
    from .policy_comparison import BASELINE, default_controls, paired_comparison

    policies = tuple(resolve_policies(policies, POLICIES))
    rows, diffs = [], []
    by_instance = {int(k): g for k, g in costs.groupby("instance", sort=False)}
    for index, inst in instances:
        group = by_instance.get(int(index))
        if group is None:
            raise ValueError(f"{tag} instance {index}: no replication costs")
        samples, martingales = {}, {}
        for policy in (BASELINE, *policies):
            g = group[group["policy"] == policy].sort_values("replication", kind="stable")
            reps = g["replication"].to_numpy()
            if len(reps) == 0 or not np.array_equal(reps, np.arange(len(reps))):
                raise ValueError(
                    f"{tag} instance {index}, {policy}: replications {reps.tolist()[:5]}... "
                    "are not 0..R-1 (a chunk is missing or repeated)"
                )
            samples[policy] = g["cost"].to_numpy(dtype=float)
            martingales[policy] = g["martingale"].to_numpy(dtype=float)
            if policy == BASELINE:
                initial_state = g["initial_state"].to_numpy(dtype=float)
        exact = solve_exact(inst)
        res = paired_comparison(
            float(exact.cost),
            samples,
            policies,
            confidence=confidence,
            horizon=horizon,
            warmup=warmup,
            seed=seed,
            keys=(tag, inst.n_classes, index),
            martingales=martingales,
            initial_state=initial_state,
            controls=default_controls(inst, warmup, exact),
        )
        _comparison_rows(res, inst, index, exact, extra, confidence, rows, diffs)
    return pd.DataFrame(rows), pd.DataFrame(diffs)


def table1_instances(
    factors: Sequence[float], indices: Sequence[int] | None = None
) -> tuple[list[tuple[int, Instance]], list[float]]:
    """Table 1 with every intensity scaled by each factor: ``([(k, instance), ...], skipped)``,
    ``k`` the factor's index (the instance key of the load sweep): its position in
    ``factors``, or ``indices[position]`` when the factors are a chunk's share of a longer
    list (:mod:`queue_routing.workflow.chunks`). Factors that make the instance unstable
    (Proposition 1) are skipped and returned in ``skipped``."""
    base = table1()
    keys = range(len(factors)) if indices is None else [int(k) for k in indices]
    if len(keys) != len(factors):
        raise ValueError(f"{len(factors)} load factors but {len(keys)} indices")
    instances, skipped = [], []
    for k, f in zip(keys, factors, strict=True):
        try:
            inst = Instance(mu=base.mu, cost=base.cost, eta=base.eta * f, name=f"table1x{f}")
        except ValueError:
            skipped.append(f)
            continue
        instances.append((k, inst))
    return instances, skipped


def table1_load_sweep(factors: Sequence[float], **kwargs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`policy_comparison_rows` on Table 1 with every intensity scaled by each factor
    (an extra column ``load_factor``; the factor's index in ``factors`` is the instance key).

    Factors that make the scaled instance unstable (Proposition 1) are skipped and logged in
    the ``skipped`` attribute of the returned rows.
    """
    instances, skipped = table1_instances(factors)
    frames, diff_frames = [], []
    for k, inst in instances:
        rows, diffs = policy_comparison_rows(
            [(k, inst)], tag=TABLE1_TAG, extra={"load_factor": float(factors[k])}, **kwargs
        )
        frames.append(rows)
        diff_frames.append(diffs)
    out = pd.concat(frames, ignore_index=True)
    out.attrs["skipped"] = skipped
    return out, pd.concat(diff_frames, ignore_index=True)


def table1_load_sweep_from_costs(
    factors: Sequence[float], costs: pd.DataFrame, **kwargs
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`table1_load_sweep` from the replication costs of its chunks
    (:func:`policy_replication_costs` with ``tag=TABLE1_TAG``, instance ``k`` = the factor's
    index, an extra column ``load_factor``), bit for bit; unstable factors are skipped as
    there (attribute ``skipped``)."""
    instances, skipped = table1_instances(factors)
    frames, diff_frames = [], []
    for k, inst in instances:
        rows, diffs = policy_comparison_from_costs(
            [(k, inst)],
            costs[costs["instance"] == k],
            tag=TABLE1_TAG,
            extra={"load_factor": float(factors[k])},
            **kwargs,
        )
        frames.append(rows)
        diff_frames.append(diffs)
    out = pd.concat(frames, ignore_index=True)
    out.attrs["skipped"] = skipped
    return out, pd.concat(diff_frames, ignore_index=True)


def _spread(g, value: str, ci95: str, names: Sequence[str]) -> dict[str, pd.Series]:
    """Per group of ``g`` (a ``DataFrameGroupBy``): the median, min and max of column
    ``value`` over the instances, then the median and max of its 95% half-width ``ci95``,
    as the columns ``names`` (in that order)."""
    median, low, high, ci_median, ci_max = names
    return {
        median: g[value].median(),
        low: g[value].min(),
        high: g[value].max(),
        ci_median: g[ci95].median(),
        ci_max: g[ci95].max(),
    }


def simulation_summary(
    rows: pd.DataFrame,
    by: Sequence[str] = ("n_classes", "policy"),
) -> pd.DataFrame:
    """Per group of :func:`policy_comparison_rows`: instances, median / min / max of the
    paired ratio to the exact Bernoulli cost, the median and largest 95% half-width of it,
    ``below_bernoulli`` (instances whose ratio interval lies entirely below 1) and
    ``separated_best`` (instances on which the policy is the Holm-separated best)."""
    by = list(by)
    rows = rows.assign(
        _below=(rows["ratio"] + rows["ratio_ci95"]) < 1.0, _best=rows["best"] == rows["policy"]
    )
    g = rows.groupby(by, sort=False)
    names = ("ratio_median", "ratio_min", "ratio_max", "ratio_ci95_median", "ratio_ci95_max")
    out = pd.DataFrame(
        {
            "instances": g.size(),
            **_spread(g, "ratio", "ratio_ci95", names),
            "below_bernoulli": g["_below"].sum().astype(int),
            "separated_best": g["_best"].sum().astype(int),
        }
    ).reset_index()
    return out


def verdict_summary(rows: pd.DataFrame, by: Sequence[str] = ("n_classes",)) -> pd.DataFrame:
    """Per group of :func:`policy_comparison_rows`: instances, how many have each policy as
    the Holm-separated best (a column per policy, in the order of the rows) and how many are
    :data:`NOT_SEPARATED`."""
    by = list(by)
    per_instance = rows.drop_duplicates([*by, "instance"])
    verdicts = [*dict.fromkeys(rows["policy"]), NOT_SEPARATED]
    counts = (
        per_instance.groupby(by, sort=False)["best"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=verdicts, fill_value=0)
    )
    counts.columns.name = None
    counts.insert(0, "instances", counts.sum(axis=1))
    return counts.reset_index()


def simulation_markdown(
    summary: pd.DataFrame, verdicts: pd.DataFrame, *, confidence: float = 0.95
) -> str:
    """The Markdown page of the policy comparisons on the random instances: the
    :func:`simulation_summary` table and the :func:`verdict_summary` table (Holm-separated
    best per instance at family-wise level ``1 - confidence``)."""
    level = f"{1.0 - confidence:g}"
    return (
        "# Routing policies relative to optimal Bernoulli routing (random instances)\n\n"
        "Paired ratio to the exact optimal Bernoulli cost (common random numbers, the "
        "simulated Bernoulli cost as control variate), per C over the instances.\n\n"
        + summary.to_markdown(index=False, floatfmt=".4g")
        + f"\n\n## Best policy per instance (Holm-separated at family-wise level {level})\n\n"
        + verdicts.to_markdown(index=False)
        + "\n"
    )


#: Columns of Table 1's load sweep in its Markdown page (:func:`load_sweep_markdown`).
LOAD_SWEEP_MARKDOWN_COLUMNS = [
    "load_factor", "policy", "ratio", "ratio_ci95", "rank", "best", "cost", "ci95",
]  # fmt: skip
#: Columns of its paired differences there (then ``verdict``).
LOAD_SWEEP_DIFFERENCE_COLUMNS = [
    "load_factor", "policy_a", "policy_b", "relative_difference", "relative_ci95",
]  # fmt: skip


def load_sweep_markdown(
    rows: pd.DataFrame, differences: pd.DataFrame, *, confidence: float = 0.95
) -> str:
    """The Markdown page of Table 1's load sweep (:func:`table1_load_sweep`): each policy's
    paired ratio to the exact optimal Bernoulli cost at each load, its rank and the
    Holm-separated best (family-wise level ``1 - confidence``), then the pairs' relative
    differences with their verdicts."""
    level = f"{1.0 - confidence:g}"
    return (
        "# Routing policies on Table 1 with intensities scaled by s\n\n"
        "Paired ratio to the exact optimal Bernoulli cost at the same s; `best` is the "
        f"policy separated from every other (Holm, family-wise level {level}), "
        "else 'not separated'.\n\n"
        + rows[LOAD_SWEEP_MARKDOWN_COLUMNS].to_markdown(index=False, floatfmt=".4g")
        + "\n\n## Paired differences (cost_a - cost_b) / Bernoulli cost\n\n"
        + differences[[*LOAD_SWEEP_DIFFERENCE_COLUMNS, "verdict"]].to_markdown(
            index=False, floatfmt=".4g"
        )
        + "\n"
    )


# -- general job sizes (ours, beyond the paper) --------------------------------------------
#: The stream tag of the job-size study (keys ``(JOB_SIZES_TAG, sample, C, index)``).
JOB_SIZES_TAG = "job-sizes"
#: Columns of :func:`job_sizes_summary`.
JOB_SIZES_SUMMARY_COLUMNS = [
    "sample", "job_sizes", "law", "scv", "policy", "instances", "gain", "gain_ci95",
    "gain_min", "gain_max", "gain_ci95_max", "better", "worse", "not_separated",
    "separated_best", "replications", "horizon", "warmup",
]  # fmt: skip


def job_sizes_rows(
    instances: Iterable[tuple[int, Instance]],
    *,
    laws: Sequence[str],
    policies: Sequence[str],
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
    sample: str,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`policy_comparison_rows` under every job-size law of ``laws``: ``(rows, diffs)``.

    For each law (a spec of :func:`~.sizes.job_sizes`, mean 1) and instance, one
    :func:`~.policy_comparison.compare_policies` run with ``job_sizes=law`` (the uniformised
    simulator for ``exponential``, the event-driven one otherwise;
    ``docs/multiskill.md#general-job-sizes``) on the streams keyed by ``(seed,
    JOB_SIZES_TAG, sample, C, index)``: common random numbers across the policies of one law
    (and the same arrival stream under every law; the law is not a key). Every replication
    starts from the stationary law of optimal Bernoulli routing, whose simulated cost is the
    control variate of every ratio (``B`` does not depend on the law: PS is insensitive).

    The tables have the columns of :func:`policy_comparison_rows` and, first, ``sample``,
    ``job_sizes`` (the spec), ``law`` (its kind) and ``scv`` (its squared coefficient of
    variation, dimensionless).
    """
    from .policy_comparison import compare_policies
    from .sizes import job_sizes

    rows, diffs = [], []
    instances = list(instances)
    parsed = [job_sizes(law) for law in laws]
    simulated = len(policies) + ("bernoulli" not in policies)
    progress = Progress(
        len(parsed) * len(instances) * simulated * int(replications),
        f"{sample} job sizes",
        logger=log,
    )
    for law in parsed:
        extra = {"sample": sample, "job_sizes": law.spec, "law": law.kind, "scv": law.scv}
        for index, inst in instances:
            res = compare_policies(
                inst,
                policies,
                horizon=horizon,
                warmup=warmup,
                replications=replications,
                seed=seed,
                keys=(JOB_SIZES_TAG, sample, inst.n_classes, index),
                confidence=confidence,
                progress=progress,
                job_sizes=law,
            )
            _comparison_rows(res, inst, index, solve_exact(inst), extra, confidence, rows, diffs)
    return pd.DataFrame(rows), pd.DataFrame(diffs)


def _verdict_vs_bernoulli(diffs: pd.DataFrame) -> pd.DataFrame:
    """Per (sample, job_sizes, instance, policy): the Holm verdict of the policy against
    Bernoulli routing, ``"better"``, ``"worse"`` or :data:`NOT_SEPARATED`."""
    keys = ["sample", "job_sizes", "instance"]
    out = []
    for _, d in diffs.iterrows():
        a, b = d["policy_a"], d["policy_b"]
        if "bernoulli" not in (a, b) or a == b:
            continue
        policy = b if a == "bernoulli" else a
        if d["verdict"] == f"{policy} < bernoulli":
            v = "better"
        elif d["verdict"] == f"bernoulli < {policy}":
            v = "worse"
        else:
            v = NOT_SEPARATED
        out.append({**{k: d[k] for k in keys}, "policy": policy, "vs_bernoulli": v})
    return pd.DataFrame(out, columns=[*keys, "policy", "vs_bernoulli"])


def job_sizes_summary(rows: pd.DataFrame, diffs: pd.DataFrame) -> pd.DataFrame:
    """Per (sample, law, policy other than Bernoulli) of :func:`job_sizes_rows`: the gain
    over optimal Bernoulli routing, ``gain = 1 - ratio`` (fraction of the exact Bernoulli
    cost saved; negative: costlier), with

    * ``gain`` and ``gain_ci95``: the median gain over the instances and the median 95%
      half-width (on one instance, e.g. Table 1: its gain and interval);
    * ``gain_min``, ``gain_max``, ``gain_ci95_max``: the range and the widest half-width;
    * ``better`` / ``worse`` / ``not_separated``: instances on which the policy is
      Holm-separated below / above Bernoulli routing, or neither (the pairwise verdicts of
      :func:`policy_comparison_rows`, family-wise level ``1 - confidence`` over all pairs);
    * ``separated_best``: instances on which it is the Holm-separated best of all policies.
    """
    verdicts = _verdict_vs_bernoulli(diffs)
    r = rows[rows["policy"] != "bernoulli"].merge(
        verdicts, on=["sample", "job_sizes", "instance", "policy"], how="left"
    )
    r = r.assign(_gain=1.0 - r["ratio"], _best=r["best"] == r["policy"])
    by = ["sample", "job_sizes", "law", "scv", "policy"]
    g = r.groupby(by, sort=False)
    names = ("gain", "gain_min", "gain_max", "gain_ci95", "gain_ci95_max")
    out = pd.DataFrame(
        {
            "instances": g.size(),
            **_spread(g, "_gain", "ratio_ci95", names),
            "better": g["vs_bernoulli"].apply(lambda s: int((s == "better").sum())),
            "worse": g["vs_bernoulli"].apply(lambda s: int((s == "worse").sum())),
            "not_separated": g["vs_bernoulli"].apply(lambda s: int((s == NOT_SEPARATED).sum())),
            "separated_best": g["_best"].sum().astype(int),
            "replications": g["replications"].first(),
            "horizon": g["horizon"].first(),
            "warmup": g["warmup"].first(),
        }
    ).reset_index()
    return out[JOB_SIZES_SUMMARY_COLUMNS]


_VERDICT_MARK = {"better": "<", "worse": ">"}


def job_sizes_markdown(summary: pd.DataFrame, rows: pd.DataFrame) -> str:
    """The Markdown page of the job-size study: per sample, a table of the gains over optimal
    Bernoulli routing (percent of the exact Bernoulli cost, ± the 95% half-width on Table 1;
    median [min, max] over the instances otherwise), a column per job-size law, and the
    Holm-separated best policy per law."""
    parts = [
        "# Routing policies under general job sizes (ours)\n\n"
        "Gain over optimal Bernoulli routing, `1 - cost / B` in percent of the exact optimal "
        "Bernoulli cost `B` (insensitive to the size law), by paired control-variate "
        "estimates (common random numbers across the policies of one law; each replication "
        "starts in the stationary law of optimal Bernoulli routing). Job sizes have mean 1; "
        "SCV = squared coefficient of variation. `(<)`: Holm-separated below Bernoulli "
        "(better), `(>)`: above (worse), no mark: not separated; family-wise level 0.05 over "
        "all pairs of policies of one instance and law.\n"
    ]
    laws = list(dict.fromkeys(summary["job_sizes"]))
    for sample, sel in summary.groupby("sample", sort=False):
        first = sel.iloc[0]
        n = int(first["instances"])
        budget = (
            f"{int(first['replications'])} paired replications of {first['horizon']:g} time "
            f"units after a warm-up of {first['warmup']:g}"
        )
        title = "Table 1" if sample == "table1" else f"{n} random instances"
        parts.append(f"\n## {title} ({budget})\n\n")
        header = ["policy", *[f"{law} (SCV {sel[sel['job_sizes'] == law]['scv'].iloc[0]:g})"
                              for law in laws if law in set(sel["job_sizes"])]]  # fmt: skip
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for policy, grp in sel.groupby("policy", sort=False):
            cells = [policy]
            for law in laws:
                r = grp[grp["job_sizes"] == law]
                if r.empty:
                    continue
                r = r.iloc[0]
                if n == 1:
                    mark = next((f" ({m})" for v, m in _VERDICT_MARK.items() if r[v]), "")
                    cells.append(f"{100 * r['gain']:+.1f} ± {100 * r['gain_ci95']:.1f}{mark}")
                else:
                    cells.append(
                        f"{100 * r['gain']:+.1f} [{100 * r['gain_min']:+.1f}, "
                        f"{100 * r['gain_max']:+.1f}] {int(r['better'])}<, {int(r['worse'])}>"
                    )
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines) + "\n")
        if n > 1:
            parts.append(
                f"\nMedian [min, max] gain over the {n} instances; `k<`, `k>`: instances on "
                "which the policy is Holm-separated below / above Bernoulli routing.\n"
            )
        best = rows[(rows["sample"] == sample)].drop_duplicates(["job_sizes", "instance"])
        counts = best.groupby("job_sizes", sort=False)["best"].agg(
            lambda b: ", ".join(f"{k} {v}" for k, v in b.value_counts().items())
        )
        parts.append(
            "\nHolm-separated best policy (instances): "
            + "; ".join(f"{law}: {counts[law]}" for law in laws if law in counts)
            + "\n"
        )
    return "".join(parts)
