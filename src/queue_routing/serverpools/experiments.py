"""Part C's experiments as tidy tables (what the pipeline's rules compute; all ours).

Stolyar & Yudovina (2013) has no numerical examples, tables or figures; these experiments
illustrate its claims on our instances (:mod:`.instances`):

* :func:`search_tables` -- a seeded search over random activity trees for unstable
  equilibria (the paper: instability once the tree is "not too small");
* :func:`example_rows`, :func:`instance_table` -- SPP solution, duals and spectra of the
  example instances, with the simulation verdict;
* :func:`boundary_scan`, :func:`boundary_crossings` -- the largest real part of the spectra of
  A_u and A_c over a one-parameter family, and where it crosses zero (root finding);
* :func:`fluid_rows` -- the full fluid model from a perturbed equilibrium next to its
  linearisation (Theorems 3.1-3.2);
* :func:`stochastic_runs`, :func:`time_average_table`, :func:`scaling_verdicts` -- the
  diffusion-scaled deviation of the stochastic system after the derived warm-up
  (:func:`stochastic_warmup`), the stationarity test of each window, and whether the time
  average stays bounded in r (tight) or grows like sqrt(r) (escaping), read off slope
  intervals (:mod:`.stationarity`);
* :func:`fluid_limit_start`, :func:`fluid_limit_runs`, :func:`fluid_limit_table`,
  :func:`fluid_limit_slopes` -- the sup-distance between X^r/r and the fluid solution on a
  fixed window, against r (the fluid limit, directly);
* :func:`covariance_table` -- the stable instance's simulated stationary covariance against the
  Lyapunov solution of its diffusion limit;
* :func:`policy_runs`, :func:`lap_time_averages`, :func:`lap_ou_table`,
  :func:`price_of_stability` -- what to do instead: LQFS-LB, Leaf Activity Priority
  (:mod:`.lap`) and static routing side by side, each centred on its own equilibrium; LAP's
  level against its limiting OU law; customers per unit r and sojourn times.

Units: time in units of 1/mu; rates per unit time; eigenvalues per unit time; fluid states per
unit r; diffusion-scaled deviations ``(X^r - r x*)/sqrt(r)`` in customers / sqrt(r).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from ..progress import Progress
from ..seeding import rng_for
from .diffusion import stationary_covariance
from .fluid import fluid_trajectory, linearised_deviation
from .instances import heterogeneity_family
from .lap import analyze_lap, static_drift
from .linear import eigenvalue_text, stability_verdict
from .model import ServerPoolSystem, SPPSolution
from .search import SearchResult, SizeSummary, search_settings, search_size
from .simulation import simulate
from .spp import solve_spp
from .stationarity import (
    DEFAULT_STATIONARITY_CONFIDENCE,
    derived_warmup,
    halves_test,
    mean_interval,
    slope_interval,
)

__all__ = [
    "LAP_POLICIES",
    "boundary_crossings",
    "boundary_scan",
    "covariance_from_replications",
    "covariance_replications",
    "covariance_table",
    "example_rows",
    "fluid_limit_level",
    "fluid_limit_runs",
    "fluid_limit_slopes",
    "fluid_limit_start",
    "fluid_limit_table",
    "fluid_rows",
    "gaussian_mean_norm",
    "growing_examples",
    "instance_table",
    "lap_ou_table",
    "lap_stationary_covariance",
    "lap_time_averages",
    "lqfs_lb_rows",
    "policy_centre",
    "policy_runs",
    "policy_warmup",
    "price_of_stability",
    "scaling_verdicts",
    "search_chunk",
    "search_sizes",
    "search_tables",
    "search_tables_from_chunks",
    "stochastic_runs",
    "stochastic_warmup",
    "summarise_examples",
    "time_average_table",
]

log = logging.getLogger(__name__)

FLUID_KEY = "serverpools-fluid"
STOCHASTIC_KEY = "stochastic"
COVARIANCE_KEY = "covariance"
FLUID_LIMIT_KEY = "fluid-limit"


def _brentq(*args, **kwargs):
    """:func:`scipy.optimize.brentq`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import brentq

    return brentq(*args, **kwargs)


# -- 1. instability search -------------------------------------------------------------------
def search_sizes(max_classes: int, max_pools: int) -> list[tuple[int, int]]:
    """Every size (I, J) with 1 <= I <= max_classes and 1 <= J <= max_pools, by I + J, then I."""
    if max_classes < 1 or max_pools < 1:
        raise ValueError(f"need max_classes, max_pools >= 1, got ({max_classes}, {max_pools})")
    sizes = [(i, j) for i in range(1, max_classes + 1) for j in range(1, max_pools + 1)]
    return sorted(sizes, key=lambda s: (s[0] + s[1], s[0]))


def _search_one(args) -> SizeSummary:
    seed, size, samples, mu_range, flow_range, rho, tol = args
    return search_size(
        seed, size, samples, mu_range=mu_range, flow_range=flow_range, rho=rho, tol=tol
    )


def search_chunk(
    seed: int,
    sizes: Sequence[tuple[int, int]],
    samples: range,
    *,
    mu_range: Sequence[float] = (0.1, 10.0),
    flow_range: Sequence[float] = (0.1, 1.0),
    rho: float = 0.9,
    tol: float = 1e-9,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """One chunk of the instability search: samples ``samples`` (a block of sample indices,
    :mod:`queue_routing.workflow.chunks`) of every size in ``sizes``, one
    :meth:`~.search.SizeSummary.to_dict` per size (JSON-ready, with the block's first sample
    under ``"first_sample"``).

    Sample ``k`` of size (I, J) has its own stream ``(seed, "serverpools-search", I, J, k)``,
    so the chunks' summaries merged (:func:`search_tables_from_chunks`) are those of the
    unsplit search. ``workers > 1`` searches the sizes in that many processes.
    """
    sizes = [(int(i), int(j)) for i, j in sizes]
    args = [(int(seed), s, samples, tuple(mu_range), tuple(flow_range), rho, tol) for s in sizes]
    if workers > 1 and len(sizes) > 1:
        # Largest trees first: they take longest.
        order = sorted(range(len(sizes)), key=lambda k: -(sizes[k][0] + sizes[k][1]))
        with ProcessPoolExecutor(max_workers=int(workers)) as pool:
            done = dict(zip(order, pool.map(_search_one, [args[k] for k in order]), strict=True))
        summaries = [done[k] for k in range(len(sizes))]
    else:
        summaries = [_search_one(a) for a in args]
    return [{**s.to_dict(), "first_sample": samples.start} for s in summaries]


def search_tables(
    seed: int,
    sizes: Sequence[tuple[int, int]],
    samples_per_size: int,
    *,
    workers: int = 1,
    **settings: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The seeded instability search (:func:`.search.instability_search`) over ``sizes``:
    :func:`search_chunk` of all samples merged by :func:`search_tables_from_chunks`.

    ``settings``: the sampling settings ``mu_range, flow_range, rho, tol`` of
    :func:`search_chunk` (the same defaults). Each size is searched separately (optionally in
    ``workers`` processes); since sample k of size (I, J) uses its own stream ``(seed,
    "serverpools-search", I, J, k)``, the result does not depend on ``workers``, nor on a
    split into chunks of sizes and sample blocks (:func:`search_chunk`,
    :func:`search_tables_from_chunks`).

    Returns ``(summary, record)``. ``summary`` columns: ``n_classes, n_pools, samples,
    unstable_underloaded, unstable_critical`` (counts), ``fraction_unstable_underloaded``,
    ``max_real_underloaded, max_real_critical`` (largest real parts found, per unit time; A_c
    without its structural zero, NaN when I = 1). ``record`` is the JSON-ready search result
    (settings, sizes searched with an example system per outcome, the smallest unstable
    sizes for A_u and A_c, by I + J then I, or None; the seed under the key ``root_seed``).
    """
    sizes = [(int(i), int(j)) for i, j in sizes]
    if not sizes:
        raise ValueError("no sizes to search")
    part = search_chunk(seed, sizes, range(int(samples_per_size)), workers=workers, **settings)
    return search_tables_from_chunks(seed, sizes, samples_per_size, [part], **settings)


def search_tables_from_chunks(
    seed: int,
    sizes: Sequence[tuple[int, int]],
    samples_per_size: int,
    chunks: Iterable[Sequence[Mapping[str, Any]]],
    *,
    mu_range: Sequence[float] = (0.1, 10.0),
    flow_range: Sequence[float] = (0.1, 1.0),
    rho: float = 0.9,
    tol: float = 1e-9,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`search_tables` from the outputs of :func:`search_chunk` (any split of the sizes
    and the samples ``0..samples_per_size-1``, any order), bit for bit: per size, the blocks'
    counts are added, the largest real parts maximised and each example taken from the
    block of lowest samples that has one (the first sample with it, as unsplit)."""
    sizes = [(int(i), int(j)) for i, j in sizes]
    if not sizes:
        raise ValueError("no sizes to search")
    blocks: dict[tuple[int, int], list[Mapping[str, Any]]] = {s: [] for s in sizes}
    for chunk in chunks:
        for d in chunk:
            size = (int(d["n_classes"]), int(d["n_pools"]))
            if size not in blocks:
                raise ValueError(f"a search chunk holds size {size}, not one of the sizes")
            blocks[size].append(d)
    summaries = []
    for size in sizes:
        parts = sorted(blocks[size], key=lambda d: int(d["first_sample"]))
        merged = SizeSummary.merge([SizeSummary.from_dict(d) for d in parts])
        if merged.samples != int(samples_per_size):
            raise ValueError(
                f"size {size}: the chunks hold {merged.samples} samples, not "
                f"{samples_per_size} (a chunk is missing or repeated)"
            )
        summaries.append(merged)
    settings = search_settings(
        sizes, samples_per_size, mu_range=mu_range, flow_range=flow_range, rho=rho, tol=tol
    )
    result = SearchResult.from_summaries(seed, settings, summaries)
    summary = pd.DataFrame(
        [
            {
                "n_classes": s.n_classes,
                "n_pools": s.n_pools,
                "samples": s.samples,
                "unstable_underloaded": s.unstable_underloaded,
                "unstable_critical": s.unstable_critical,
                "fraction_unstable_underloaded": s.unstable_underloaded / s.samples,
                "max_real_underloaded": s.max_real_underloaded,
                "max_real_critical": (
                    s.max_real_critical if np.isfinite(s.max_real_critical) else np.nan
                ),
            }
            for s in summaries
        ]
    )
    record = result.to_dict()
    record["sizes_searched"] = [list(s) for s in sizes]
    record["samples_total"] = int(samples_per_size) * len(sizes)
    return summary, record


# -- 2. example instances ----------------------------------------------------------------------
def _row(example, quantity, value, *, cls=None, pool=None, index=None, imag=np.nan, unit=""):
    return {
        "example": example,
        "quantity": quantity,
        "class": cls,
        "pool": pool,
        "index": index,
        "value": float(value),
        "imag": float(imag),
        "unit": unit,
    }


def _class_rows(example, quantity, values, unit) -> list[dict[str, Any]]:
    """One :func:`_row` per class (numbered from 1) of a per-class ``values``."""
    return [_row(example, quantity, v, cls=i + 1, unit=unit) for i, v in enumerate(values)]


def _pool_rows(example, quantity, values, unit) -> list[dict[str, Any]]:
    """One :func:`_row` per pool (numbered from 1) of a per-pool ``values``."""
    return [_row(example, quantity, v, pool=j + 1, unit=unit) for j, v in enumerate(values)]


def example_rows(name: str, system: ServerPoolSystem) -> pd.DataFrame:
    """SPP solution, duals, spectra and linear verdicts of one example, one value per row.

    Columns: ``example, quantity, class, pool, index`` (classes, pools and eigenvalue indices
    numbered from 1; empty where not applicable), ``value`` (real part for eigenvalues),
    ``imag`` (imaginary part of eigenvalues, else NaN), ``unit``. Quantities: ``rho``,
    ``arrival_rate``, ``pool_size``, ``service_rate`` (every activity), ``flow`` and
    ``occupancy`` (basic activities), ``class_dual``, ``pool_dual``,
    ``eigenvalue_underloaded``, ``eigenvalue_critical`` (A_c including its structural zero),
    ``max_real_underloaded``, ``max_real_critical`` (without the structural zero),
    ``stable_underloaded``, ``stable_critical`` (1 = stable, 0 = not).
    """
    solution = solve_spp(system)
    verdict = stability_verdict(solution)
    rows = [_row(name, "rho", solution.rho, unit="busy fraction")]
    rows += _class_rows(
        name, "arrival_rate", system.arrival_rates, "customers per unit time per unit r"
    )
    rows += _pool_rows(name, "pool_size", system.pool_sizes, "servers per unit r")
    rows += [
        _row(name, "service_rate", system.rates[i, j], cls=i + 1, pool=j + 1, unit="per unit time")
        for i, j in system.activities
    ]
    for quantity, values, unit in (
        ("flow", solution.flows, "customers per unit time per unit r"),
        ("occupancy", solution.occupancy, "busy servers per unit r"),
    ):
        rows += [
            _row(name, quantity, values[i, j], cls=i + 1, pool=j + 1, unit=unit)
            for i, j in solution.basic
        ]
    rows += _class_rows(name, "class_dual", solution.class_duals, "workload per customer")
    rows += _pool_rows(name, "pool_dual", solution.pool_duals, "workload per server per unit time")
    for quantity, eig in (
        ("eigenvalue_underloaded", verdict.eigenvalues_underloaded),
        ("eigenvalue_critical", verdict.eigenvalues_critical),
    ):
        rows += [
            _row(name, quantity, w.real, index=k + 1, imag=w.imag, unit="per unit time")
            for k, w in enumerate(eig)
        ]
    max_c = verdict.max_real_critical if np.isfinite(verdict.max_real_critical) else np.nan
    rows += [
        _row(name, "max_real_underloaded", verdict.max_real_underloaded, unit="per unit time"),
        _row(name, "max_real_critical", max_c, unit="per unit time"),
        _row(name, "stable_underloaded", float(verdict.stable_underloaded)),
        _row(name, "stable_critical", float(verdict.stable_critical)),
    ]
    df = pd.DataFrame(rows)
    for col in ("class", "pool", "index"):
        df[col] = df[col].astype("Int64")
    return df


def _eigenvalues(rows: pd.DataFrame) -> str:
    """Eigenvalue rows (``value``, ``imag``) as text, 4 significant digits."""
    return eigenvalue_text(rows["value"], rows["imag"], digits=4)


def instance_table(examples: pd.DataFrame, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per example: SPP solution, rho, duals, spectra and the simulation verdict.

    ``examples``: rows of :func:`example_rows` (one or more examples); ``verdicts``: the
    table of :func:`scaling_verdicts` (optional; examples it lacks get no verdict). Text
    columns list values in class / pool / activity order (numbered from 1).
    """
    rows = []
    for name, df in examples.groupby("example", sort=False):

        def part(quantity, df=df):
            return df[df["quantity"] == quantity]

        def scalar(quantity, df=df):
            return float(part(quantity)["value"].iloc[0])

        flows = part("flow")
        row = {
            "example": name,
            "classes": int(part("arrival_rate").shape[0]),
            "pools": int(part("pool_size").shape[0]),
            "rho": scalar("rho"),
            "flows lambda_ij": ", ".join(
                f"({int(c)},{int(p)}): {v:.4g}"
                for c, p, v in zip(flows["class"], flows["pool"], flows["value"], strict=True)
            ),
            "class duals nu_i": ", ".join(f"{v:.4g}" for v in part("class_dual")["value"]),
            "pool duals alpha_j": ", ".join(f"{v:.4g}" for v in part("pool_dual")["value"]),
            "eigenvalues A_u": _eigenvalues(part("eigenvalue_underloaded")),
            "eigenvalues A_c": _eigenvalues(part("eigenvalue_critical")),
            "max Re A_u": scalar("max_real_underloaded"),
            "max Re A_c": scalar("max_real_critical"),
            "fluid equilibrium (rho < 1)": (
                "stable" if scalar("stable_underloaded") else "unstable"
            ),
        }
        if verdicts is not None:
            v = verdicts[verdicts["example"] == name]
            if len(v):
                v = v.iloc[0]
                row["slope of log time-average vs log r (top decade)"] = float(v["slope"])
                row["slope interval"] = (
                    f"[{float(v['slope_low']):.3g}, {float(v['slope_high']):.3g}]"
                )
                row["simulation verdict"] = str(v["verdict"])
        rows.append(row)
    return pd.DataFrame(rows)


# -- 3. stability boundary ----------------------------------------------------------------
def _family_point(theta: float, base: str) -> dict[str, float]:
    system = heterogeneity_family(theta, base)
    solution = solve_spp(system)
    verdict = stability_verdict(solution)
    lead = verdict.eigenvalues_underloaded[0]
    beta = system.pool_sizes
    mu = system.rates[system.rates > 0]
    return {
        "theta": float(theta),
        "mu_spread": float(mu.max() / mu.min()),
        "beta_spread": float(beta.max() / beta.min()),
        "rho": float(solution.rho),
        "max_real_underloaded": verdict.max_real_underloaded,
        "imag_underloaded": float(abs(lead.imag)),
        "max_real_critical": verdict.max_real_critical,
        "stable_underloaded": bool(verdict.stable_underloaded),
        "stable_critical": bool(verdict.stable_critical),
    }


def boundary_scan(thetas: Sequence[float], base: str = "unstable") -> pd.DataFrame:
    """Largest real parts of the spectra of A_u and A_c over :func:`heterogeneity_family`.

    Columns: ``theta`` (heterogeneity exponent), ``mu_spread, beta_spread`` (max/min of the
    rates and pool sizes), ``rho``, ``max_real_underloaded`` and ``imag_underloaded`` (real
    part and |imaginary part| of the leading eigenvalue of A_u, per unit time),
    ``max_real_critical`` (A_c without its structural zero), ``stable_underloaded``,
    ``stable_critical``.
    """
    return pd.DataFrame([_family_point(float(t), base) for t in thetas])


def boundary_crossings(
    scan: pd.DataFrame, *, base: str = "unstable", xtol: float = 1e-12
) -> pd.DataFrame:
    """Where the largest real parts of :func:`boundary_scan` cross zero (Brent's method).

    Every sign change between consecutive scan points is refined with
    :func:`scipy.optimize.brentq` on the exact spectrum. Columns: ``matrix`` (``A_u`` or
    ``A_c``), ``found``, ``theta_low, theta_high`` (the bracket), ``theta_crossing``,
    ``mu_spread, beta_spread`` at the crossing, ``frequency`` (|Im| of the crossing
    eigenvalue of A_u, per unit time; NaN for A_c), ``direction`` (``stable->unstable`` as
    theta grows, or the reverse). A matrix without a sign change gets one row with
    ``found = False``.
    """
    scan = scan.sort_values("theta")
    rows = []
    for matrix, column in (("A_u", "max_real_underloaded"), ("A_c", "max_real_critical")):
        theta = scan["theta"].to_numpy(float)
        value = scan[column].to_numpy(float)

        def f(t, column=column):
            return _family_point(t, base)[column]

        found = False
        for k in range(len(theta) - 1):
            a, b = value[k], value[k + 1]
            if not (np.isfinite(a) and np.isfinite(b)) or a * b > 0 or (a == 0 and b == 0):
                continue
            if b == 0 and k + 2 < len(theta):  # counted at the next bracket
                continue
            root = (
                _brentq(f, theta[k], theta[k + 1], xtol=xtol)
                if a * b < 0
                else (theta[k] if a == 0 else theta[k + 1])
            )
            point = _family_point(root, base)
            rows.append(
                {
                    "matrix": matrix,
                    "found": True,
                    "theta_low": theta[k],
                    "theta_high": theta[k + 1],
                    "theta_crossing": float(root),
                    "mu_spread": point["mu_spread"],
                    "beta_spread": point["beta_spread"],
                    "frequency": point["imag_underloaded"] if matrix == "A_u" else np.nan,
                    "direction": "stable->unstable" if a < b else "unstable->stable",
                }
            )
            found = True
        if not found:
            rows.append(
                {
                    "matrix": matrix,
                    "found": False,
                    "theta_low": float(theta.min()),
                    "theta_high": float(theta.max()),
                    "theta_crossing": np.nan,
                    "mu_spread": np.nan,
                    "beta_spread": np.nan,
                    "frequency": np.nan,
                    "direction": "",
                }
            )
    return pd.DataFrame(rows)


# -- 4. fluid trajectories -------------------------------------------------------------------
def _perturbation(solution: SPPSolution, size: float, rng: np.random.Generator) -> np.ndarray:
    """``size * v * psi*`` on the basic tree (shape ``(I, J)``, 0 off it, per unit r), v a
    random direction drawn from ``rng`` (one normal per basic activity) scaled to max
    |v_e| = 1: generically off the load-balanced manifold."""
    edges = solution.basic
    v = rng.normal(size=len(edges))
    v /= np.abs(v).max()
    pert = np.zeros_like(solution.occupancy)
    pert[edges[:, 0], edges[:, 1]] = size * v * solution.occupancy[edges[:, 0], edges[:, 1]]
    return pert


def fluid_rows(
    example: str,
    solution: SPPSolution,
    *,
    perturbation: float,
    t_end: float,
    points: int,
    seed: int,
) -> pd.DataFrame:
    """The fluid model from a perturbed equilibrium next to its linearisation.

    The start is ``psi* + perturbation * v * psi*`` on the basic tree, with v a seeded random
    direction (stream ``(seed, "serverpools-fluid", example)``) scaled to max |v_e| = 1,
    so generically off the load-balanced manifold. The output has ``points`` times on
    ``[0, t_end]``. The linearised prediction is ``exp(A_u t) (x(0) - x*)`` in class totals
    (Theorem 3.1).

    Columns (one row per output time): ``example, time``, ``norm_fluid, norm_linear``
    (Euclidean norms of x(t) - x*, per unit r), ``load_spread`` (max - min pool load),
    ``queue_total`` (sum of queues, per unit r), ``fluid_class_i`` and ``linear_class_i``
    (x_i(t) - x*_i for i = 1..I).
    """
    pert = _perturbation(solution, perturbation, rng_for(seed, FLUID_KEY, example))
    traj = fluid_trajectory(solution, pert, t_end, points)
    linear = linearised_deviation(solution, traj.deviation[0], traj.times)
    out = {
        "example": example,
        "time": traj.times,
        "norm_fluid": traj.norm,
        "norm_linear": np.linalg.norm(linear, axis=1),
        "load_spread": np.ptp(traj.loads, axis=1),
        "queue_total": traj.queues.sum(axis=1),
    }
    for i in range(solution.system.n_classes):
        out[f"fluid_class_{i + 1}"] = traj.deviation[:, i]
    for i in range(solution.system.n_classes):
        out[f"linear_class_{i + 1}"] = linear[:, i]
    return pd.DataFrame(out)


def growing_examples(fluid: pd.DataFrame) -> set[str]:
    """The examples of :func:`fluid_rows` whose fluid ``norm_fluid`` ends above where it
    starts: the unstable ones, whose fluid grows into a limit cycle."""
    out = set()
    for name, df in fluid.groupby("example"):
        norm = df.sort_values("time")["norm_fluid"]
        if norm.iloc[-1] > norm.iloc[0]:
            out.add(str(name))
    return out


def fluid_limit_level(fluid: pd.DataFrame, tail_fraction: float) -> dict[str, float]:
    """Per example, the time average of ``norm_fluid`` over the last ``tail_fraction`` of time.

    For an unstable example that has reached its persistent oscillation this is the fluid
    amplitude a: the diffusion-scaled deviation then grows like a sqrt(r).
    """
    if not 0 < tail_fraction <= 1:
        raise ValueError(f"tail_fraction must be in (0, 1], got {tail_fraction}")
    out = {}
    for name, df in fluid.groupby("example", sort=False):
        t = df["time"].to_numpy(float)
        cut = t.max() - tail_fraction * (t.max() - t.min())
        out[str(name)] = float(df.loc[df["time"] >= cut, "norm_fluid"].mean())
    return out


# -- 5. stochastic system --------------------------------------------------------------------
def stochastic_warmup(solution: SPPSolution, r: float, *, margin: float) -> float:
    """The derived warm-up of a run of ``solution`` at scale r (:func:`.derived_warmup`).

    Uses the leading real part of the spectrum of A_u (per unit time) and r; time units 1/mu.
    """
    gamma = stability_verdict(solution).max_real_underloaded
    return derived_warmup(gamma, r, margin=margin)


def _batch_columns(df: pd.DataFrame) -> list[str]:
    cols = [c for c in df.columns if c.startswith("batch_")]
    return sorted(cols, key=lambda c: int(c.rsplit("_", 1)[1]))


def stochastic_runs(
    example: str,
    solution: SPPSolution,
    r: float,
    *,
    horizon: float,
    warmup: float,
    record_every: float,
    replications: int | Iterable[int],
    seed: int,
    batches: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Independent exact simulations of the r-th system started at the nominal point r psi*.

    Each replication runs on ``[0, warmup + horizon]`` and averages over the window
    ``[warmup, warmup + horizon]`` (the pipeline sets ``warmup`` to the derived warm-up,
    :func:`stochastic_warmup`); replication k draws from the streams
    :func:`~.simulation.replication_states` ``(seed, ("stochastic", example, int(r), k))``
    (``docs/README.md#random-numbers``). ``replications`` is their number ``R``
    (replications ``0..R-1``) or the indices to run (a block of a split study,
    :mod:`queue_routing.workflow.chunks`: the rows of the blocks, concatenated in index order, are
    those of the unsplit run). Returns ``(trace, summary)``:

    * ``trace``: ``example, r, replication, time, norm`` (|deviation|) and
      ``deviation_class_i``, the diffusion-scaled deviation ``(X_i(t) - r x*_i)/sqrt(r)`` on
      the recording grid;
    * ``summary``: one row per replication, ``example, r, replication, t_end`` (the end
      of the run, ``warmup + horizon``), ``warmup``, ``events, mean_norm`` (time average of
      |deviation| over the measured window), ``rms_norm``, ``mean_class_i, rms_class_i``,
      ``queued_fraction`` (arrivals that waited) and, with ``batches`` = B > 0,
      ``batch_1 .. batch_B``: the time averages of |deviation| over B equal consecutive
      batches of the window (for :func:`.halves_test`).
    """
    traces, summaries = [], []
    indices = _replication_indices(replications)
    progress = Progress(len(indices), f"{example} r={r:g}", logger=log)
    for rep in indices:
        run = simulate(
            solution,
            r,
            horizon=horizon,
            warmup=warmup,
            record_every=record_every,
            seed=seed,
            keys=(STOCHASTIC_KEY, example, int(r), rep),
            batches=int(batches),
            progress=progress,
        )
        progress.advance(
            extra=f"{run.events} events in {run.wall_seconds:.2f} s, "
            f"time-averaged |deviation| {run.mean_norm:.4g}"
        )
        trace = {
            "example": example,
            "r": float(r),
            "replication": rep,
            "time": run.times,
            "norm": run.norm,
        }
        for i in range(run.deviation.shape[1]):
            trace[f"deviation_class_{i + 1}"] = run.deviation[:, i]
        traces.append(pd.DataFrame(trace))
        row = {
            "example": example,
            "r": float(r),
            "replication": rep,
            "t_end": run.t_end,
            "warmup": run.warmup,
            "events": run.events,
            "mean_norm": run.mean_norm,
            "rms_norm": run.rms_norm,
        }
        for i in range(run.mean.size):
            row[f"mean_class_{i + 1}"] = float(run.mean[i])
        for i in range(run.mean.size):
            row[f"rms_class_{i + 1}"] = float(np.sqrt(run.second_moment[i, i]))
        row["queued_fraction"] = run.queued / max(int(run.arrivals.sum()), 1)
        for b, value in enumerate(run.batch_mean_norm):
            row[f"batch_{b + 1}"] = float(value)
        summaries.append(row)
    return pd.concat(traces, ignore_index=True), pd.DataFrame(summaries)


def time_average_table(
    summary: pd.DataFrame,
    *,
    stationarity_confidence: float = DEFAULT_STATIONARITY_CONFIDENCE,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per (example, r): the time averages over replications, intervals and stationarity.

    ``summary``: the per-replication rows of :func:`stochastic_runs` (with batch columns).
    Columns: ``example, r, replications, t_end, warmup`` (the run's end ``warmup + horizon``
    and the warm-up, as in :func:`stochastic_runs`), ``horizon`` (the measured window,
    ``t_end - warmup``), ``events``
    (total over replications), ``mean_norm, mean_norm_se, mean_norm_ci`` (mean of the
    replications' time averages of |deviation|, its SE and the half-width of its t interval
    at ``confidence``), ``rms_norm, rms_norm_se``, then the first-half / second-half test
    of :func:`.halves_test` at ``stationarity_confidence`` on the batch means: ``first_half,
    second_half,
    stationarity_t, stationarity_p, stationary`` (True unless the window is flagged).
    """
    batch_cols = _batch_columns(summary)
    if len(batch_cols) < 4:
        raise ValueError(
            "summary has no batch means (batch_1 .. batch_B, B >= 4): simulate with batches"
        )
    rows = []
    for (name, r), df in summary.groupby(["example", "r"], sort=True):
        n = len(df)
        t_end, warmup = float(df["t_end"].iloc[0]), float(df["warmup"].iloc[0])
        row = {
            "example": name,
            "r": float(r),
            "replications": n,
            "t_end": t_end,
            "warmup": warmup,
            "horizon": t_end - warmup,
            "events": int(df["events"].sum()),
        }
        iv = mean_interval(df["mean_norm"].to_numpy(float), confidence=confidence)
        row["mean_norm"], row["mean_norm_se"], row["mean_norm_ci"] = iv.mean, iv.se, iv.half_width
        rms = mean_interval(df["rms_norm"].to_numpy(float), confidence=confidence)
        row["rms_norm"], row["rms_norm_se"] = rms.mean, rms.se
        check = halves_test(df[batch_cols].to_numpy(float), confidence=stationarity_confidence)
        row["first_half"], row["second_half"] = check.first_half, check.second_half
        row["stationarity_t"], row["stationarity_p"] = check.statistic, check.p_value
        row["stationary"] = check.stationary
        rows.append(row)
    return pd.DataFrame(rows)


def _slope_fields(prefix: str, r, values, confidence: float) -> tuple[dict[str, Any], str]:
    """``{prefix, prefix_se, prefix_low, prefix_high}`` of :func:`.slope_interval` and its
    verdict; NaN and ``undetermined`` with fewer than two scales or replications."""
    if len(r) < 2 or values.shape[0] < 2:
        nan = float("nan")
        fields = {prefix: nan, f"{prefix}_se": nan, f"{prefix}_low": nan, f"{prefix}_high": nan}
        return fields, "undetermined"
    fit = slope_interval(r, values, confidence=confidence)
    fields = {
        prefix: fit.slope,
        f"{prefix}_se": fit.se,
        f"{prefix}_low": fit.low,
        f"{prefix}_high": fit.high,
    }
    return fields, fit.verdict


def scaling_verdicts(
    summary: pd.DataFrame,
    averages: pd.DataFrame,
    *,
    decades: float = 1.0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Tight or escaping, from the interval of the slope of log time average against log r.

    ``summary``: per-replication rows of :func:`stochastic_runs`; ``averages``:
    :func:`time_average_table` (its ``stationary`` flags). Per example the slope of
    log10(time-averaged |deviation|) against log10(r) is fitted over the top ``decades`` of
    its scales (r >= r_max / 10^decades) and, for reference, over all of them, using only
    scales whose windows pass the stationarity test (flagged ones are listed in
    ``excluded`` and left out). Slopes and t intervals come from the per-replication slopes
    (:func:`.slope_interval`); the verdict is :func:`.slope_verdict` of the top-decade
    interval: ``tight`` (contains 0, not 1/2), ``escaping`` (contains 1/2, not 0),
    ``growing, slower / faster than sqrt(r)`` (entirely in (0, 1/2) / above 1/2), or
    ``undetermined`` (also when fewer than two stationary scales remain).

    Columns: ``example, r_min, r_max, n_r`` (the scales of the top-decade fit),
    ``excluded`` (flagged scales, comma-separated, or empty), ``slope, slope_se, slope_low,
    slope_high, confidence, verdict``, and ``slope_all, slope_all_se, slope_all_low,
    slope_all_high, r_min_all`` (all stationary scales).
    """
    if not decades > 0:
        raise ValueError(f"decades must be > 0, got {decades}")
    flags = averages.set_index(["example", "r"])["stationary"]
    rows = []
    for name, df in summary.groupby("example", sort=True):
        scales = np.sort(df["r"].unique().astype(float))
        ok = [r for r in scales if bool(flags.get((name, r), False))]
        bad = [r for r in scales if r not in ok]
        top = [r for r in ok if r >= scales.max() / 10.0**decades * (1 - 1e-9)]

        def values(rs, df=df):
            if not rs:
                return np.zeros((0, 0))
            by_r = [df[df["r"] == r].sort_values("replication")["mean_norm"] for r in rs]
            k = min(len(v) for v in by_r)
            return np.column_stack([v.to_numpy(float)[:k] for v in by_r])

        fit, verdict = _slope_fields("slope", top, values(top), confidence)
        full, _ = _slope_fields("slope_all", ok, values(ok), confidence)
        rows.append(
            {
                "example": name,
                "r_min": float(min(top)) if top else float("nan"),
                "r_max": float(max(top)) if top else float("nan"),
                "n_r": len(top),
                "excluded": ", ".join(f"{r:g}" for r in bad),
                **fit,
                "confidence": float(confidence),
                "verdict": verdict,
                **full,
                "r_min_all": float(min(ok)) if ok else float("nan"),
            }
        )
    return pd.DataFrame(rows)


# -- 5b. fluid limit ----------------------------------------------------------------------------
def fluid_limit_start(
    example: str, solution: SPPSolution, *, perturbation: float, settle: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The fluid-scaled initial condition ``(psi(0) (I, J), q(0) (I,))`` of the fluid-limit test.

    ``psi* + perturbation * v * psi*`` on the basic tree, v a seeded direction (stream
    ``(seed, "fluid-limit", example)``, max |v_e| = 1); if ``settle`` > 0, the state the fluid
    model (:func:`.fluid_trajectory`) reaches from there after ``settle`` time units -- for an
    unstable equilibrium a point on its limit cycle. Per unit r.
    """
    pert = _perturbation(solution, perturbation, rng_for(seed, FLUID_LIMIT_KEY, example))
    if settle > 0:
        traj = fluid_trajectory(solution, pert, float(settle), 2)
        return traj.psi[-1].copy(), traj.queues[-1].copy()
    return solution.occupancy + pert, np.zeros(solution.system.n_classes)


def fluid_limit_runs(
    example: str,
    solution: SPPSolution,
    r: float,
    *,
    psi0,
    queues0,
    t_end: float,
    record_every: float,
    replications: int,
    seed: int,
    max_step: float,
) -> pd.DataFrame:
    """Sup-distance between X^r(t)/r and the fluid solution x(t) on ``[0, t_end]``.

    Each replication starts the r-th system at ``round(r psi0)``, ``round(r queues0)``
    (:func:`fluid_limit_start`) and records the class totals on the grid
    ``0, record_every, ..`` up to t_end; the fluid model is integrated from the same state
    with step ``max_step`` and, to bound its own error, with ``max_step / 2``. Replication
    k draws from the streams ``(seed, ("fluid-limit", example, int(r), k))``. The fluid
    limit (the paper's Theorems 3.1-3.2 rest on it) says the distance is O(r^(-1/2))
    on a fixed window (``docs/serverpools.md``, "Fluid limit").

    Columns (one row per replication): ``example, r, replication, t_end, sup_distance``
    (max over the grid of the Euclidean norm of X^r(t)/r - x(t), customers per unit r),
    ``sup_time`` (where it is attained), ``scaled_distance`` (sqrt(r) sup_distance),
    ``fluid_error`` (max over the grid of |x_h(t) - x_(h/2)(t)|, per unit r), ``events``.
    """
    n_steps = t_end / record_every
    if not (n_steps >= 1 and abs(n_steps - round(n_steps)) < 1e-9 * n_steps):
        raise ValueError(
            f"t_end = {t_end:g} must be a whole multiple of record_every = {record_every:g}"
        )
    points = round(n_steps) + 1
    pert = np.asarray(psi0, dtype=float) - solution.occupancy
    fluid = fluid_trajectory(solution, pert, t_end, points, queues=queues0, max_step=max_step)
    finer = fluid_trajectory(solution, pert, t_end, points, queues=queues0, max_step=max_step / 2.0)
    fluid_error = float(np.linalg.norm(fluid.totals - finer.totals, axis=1).max())
    rows = []
    progress = Progress(int(replications), f"fluid limit {example} r={r:g}", logger=log)
    for rep in range(int(replications)):
        run = simulate(
            solution,
            r,
            horizon=t_end,
            record_every=record_every,
            seed=seed,
            keys=(FLUID_LIMIT_KEY, example, int(r), rep),
            initial_psi=psi0,
            initial_queues=queues0,
            progress=progress,
        )
        if run.times.size != points:
            raise RuntimeError(f"recording grid has {run.times.size} points, expected {points}")
        gap = np.linalg.norm(run.deviation / np.sqrt(r) - finer.deviation, axis=1)
        k = int(np.argmax(gap))
        progress.advance(extra=f"{run.events} events, sup distance {gap[k]:.4g}")
        rows.append(
            {
                "example": example,
                "r": float(r),
                "replication": rep,
                "t_end": float(t_end),
                "sup_distance": float(gap[k]),
                "sup_time": float(run.times[k]),
                "scaled_distance": float(gap[k] * np.sqrt(r)),
                "fluid_error": fluid_error,
                "events": int(run.events),
            }
        )
    return pd.DataFrame(rows)


def fluid_limit_table(rows: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per (example, r): mean sup-distance over replications with its t interval.

    ``rows``: :func:`fluid_limit_runs`. Columns: ``example, r, replications, t_end,
    sup_distance, sup_distance_se, sup_distance_ci`` (half-width), ``scaled_distance``
    (mean of sqrt(r) sup), ``fluid_error`` (the fluid solution's own error bound), ``events``
    (total).
    """
    out = []
    for (name, r), df in rows.groupby(["example", "r"], sort=True):
        iv = mean_interval(df["sup_distance"].to_numpy(float), confidence=confidence)
        out.append(
            {
                "example": name,
                "r": float(r),
                "replications": len(df),
                "t_end": float(df["t_end"].iloc[0]),
                "sup_distance": iv.mean,
                "sup_distance_se": iv.se,
                "sup_distance_ci": iv.half_width,
                "scaled_distance": float(df["scaled_distance"].mean()),
                "fluid_error": float(df["fluid_error"].max()),
                "events": int(df["events"].sum()),
            }
        )
    return pd.DataFrame(out)


def fluid_limit_slopes(rows: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per example: slope of log10(sup-distance) against log10(r) with its t interval.

    ``rows``: :func:`fluid_limit_runs` (replication k at every r). The fluid limit with
    Gaussian fluctuations predicts -1/2. Columns: ``example, r_min, r_max, n_r, slope,
    slope_se, slope_low, slope_high, confidence, contains_minus_half``.
    """
    out = []
    for name, df in rows.groupby("example", sort=True):
        rs = np.sort(df["r"].unique().astype(float))
        by_r = [df[df["r"] == r].sort_values("replication")["sup_distance"] for r in rs]
        k = min(len(v) for v in by_r)
        values = np.column_stack([v.to_numpy(float)[:k] for v in by_r])
        fit = slope_interval(rs, values, confidence=confidence)
        out.append(
            {
                "example": name,
                "r_min": float(rs.min()),
                "r_max": float(rs.max()),
                "n_r": len(rs),
                "slope": fit.slope,
                "slope_se": fit.se,
                "slope_low": fit.low,
                "slope_high": fit.high,
                "confidence": float(confidence),
                "contains_minus_half": bool(fit.low <= -0.5 <= fit.high),
            }
        )
    return pd.DataFrame(out)


# -- 6. diffusion covariance ------------------------------------------------------------------
def covariance_replications(
    example: str,
    solution: SPPSolution,
    *,
    r: float,
    horizon: float,
    warmup: float,
    replications: int | Iterable[int],
    seed: int,
) -> pd.DataFrame:
    """The time-averaged covariance of the scaled class totals of each replication: one
    chunk of :func:`covariance_table` (``replications``: their number ``R`` or the indices of
    a block, :mod:`queue_routing.workflow.chunks`).

    Replication ``k`` runs on ``[0, warmup + horizon]``, draws from the streams
    :func:`~.simulation.replication_states` ``(seed, ("covariance", example, int(r), k))``
    and averages over the window ``[warmup, warmup + horizon]``. Columns: ``example, r,
    replication, class_i, class_k`` (numbered from 1, every ordered pair), ``covariance``
    (per unit r), ``events``.
    """
    indices = _replication_indices(replications)
    progress = Progress(len(indices), f"covariance {example} r={r:g}", logger=log)
    rows = []
    for rep in indices:
        run = simulate(
            solution,
            r,
            horizon=horizon,
            warmup=warmup,
            record_every=max((warmup + horizon) / 100.0, 1e-3),
            seed=seed,
            keys=(COVARIANCE_KEY, example, int(r), rep),
            progress=progress,
        )
        progress.advance(extra=f"{run.events} events")
        n = run.covariance.shape[0]
        for i in range(n):
            for k in range(n):
                rows.append(
                    {
                        "example": example,
                        "r": float(r),
                        "replication": int(rep),
                        "class_i": i + 1,
                        "class_k": k + 1,
                        "covariance": float(run.covariance[i, k]),
                        "events": int(run.events),
                    }
                )
    return pd.DataFrame(rows)


def covariance_table(
    example: str,
    solution: SPPSolution,
    *,
    r: float,
    horizon: float,
    warmup: float,
    replications: int,
    seed: int,
) -> pd.DataFrame:
    """Simulated stationary covariance of the scaled class totals vs the Lyapunov solution.

    ``replications`` independent runs on ``[0, warmup + horizon]`` (run k draws from the
    streams :func:`~.simulation.replication_states` ``(seed, ("covariance", example, int(r),
    k))``) each give the time-averaged covariance over the window [warmup, warmup +
    horizon]; the table compares their
    mean (with SE = std / sqrt(n)) with Sigma solving ``A_u Sigma + Sigma A_u^T + 2
    diag(lambda) = 0``. The same as :func:`covariance_from_replications` of
    :func:`covariance_replications`.

    Columns: ``example, r, replications, class_i, class_k`` (numbered from 1, i <= k),
    ``lyapunov, simulated, se, z`` ((simulated - lyapunov)/se), ``relative_difference``
    ((simulated - lyapunov) / sqrt(Sigma_ii Sigma_kk)).
    """
    if replications < 2:
        raise ValueError(f"need >= 2 replications for standard errors, got {replications}")
    runs = covariance_replications(
        example,
        solution,
        r=r,
        horizon=horizon,
        warmup=warmup,
        replications=replications,
        seed=seed,
    )
    return covariance_from_replications(example, solution, runs, r=r)


def covariance_from_replications(
    example: str, solution: SPPSolution, runs: pd.DataFrame, *, r: float
) -> pd.DataFrame:
    """:func:`covariance_table` from the rows of :func:`covariance_replications` of every
    chunk (any order, any split; replications ``0..R-1``, ``R >= 2``), bit for bit."""
    sigma = stationary_covariance(solution)
    n = sigma.shape[0]
    runs = runs.sort_values(["replication", "class_i", "class_k"], kind="stable")
    reps = runs["replication"].unique()
    if len(reps) < 2 or not np.array_equal(np.sort(reps), np.arange(len(reps))):
        raise ValueError(
            f"covariance {example}: replications {reps.tolist()[:5]}... are not 0..R-1 with "
            "R >= 2 (a chunk is missing or repeated)"
        )
    covs = np.ascontiguousarray(runs["covariance"].to_numpy(dtype=float).reshape(len(reps), n, n))
    replications = len(reps)
    mean = covs.mean(axis=0)
    se = covs.std(axis=0, ddof=1) / np.sqrt(len(covs))
    scale = np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    rows = []
    for i in range(n):
        for k in range(i, n):
            rows.append(
                {
                    "example": example,
                    "r": float(r),
                    "replications": int(replications),
                    "class_i": i + 1,
                    "class_k": k + 1,
                    "lyapunov": float(sigma[i, k]),
                    "simulated": float(mean[i, k]),
                    "se": float(se[i, k]),
                    "z": float((mean[i, k] - sigma[i, k]) / se[i, k]),
                    "relative_difference": float((mean[i, k] - sigma[i, k]) / scale[i, k]),
                }
            )
    return pd.DataFrame(rows)


def _replication_indices(replications: int | Iterable[int]) -> list[int]:
    """``range(R)`` for a count ``R``, else the given indices (non-empty, each >= 0)."""
    if isinstance(replications, int | np.integer) and not isinstance(replications, bool):
        indices = list(range(int(replications)))
    else:
        indices = [int(k) for k in replications]
    if not indices or min(indices) < 0:
        raise ValueError(f"replications must be >= 1 or indices >= 0, got {replications!r}")
    return indices


def summarise_examples(
    examples: Mapping[str, ServerPoolSystem],
) -> pd.DataFrame:
    """:func:`example_rows` of several examples, concatenated."""
    return pd.concat([example_rows(n, s) for n, s in examples.items()], ignore_index=True)


# -- 6. what to do instead: LAP and static routing beside LQFS-LB -----------------------------
#: The disciplines of the side-by-side study, in table order.
LAP_POLICIES = ("lqfs-lb", "lap", "static")


def policy_centre(solution: SPPSolution, policy: str) -> np.ndarray:
    """The fluid equilibrium x* (class totals per unit r) a run of ``policy`` is centred on:
    psi*_I of the SPP for LQFS-LB and static routing, LAP's own (:func:`.analyze_lap`)."""
    if policy == "lap":
        return np.asarray(analyze_lap(solution).equilibrium.class_totals)
    return np.asarray(solution.class_occupancy)


def policy_warmup(solution: SPPSolution, policy: str, r: float, *, margin: float) -> float:
    """The derived warm-up of ``policy`` at scale r (:func:`.derived_warmup`, time units 1/mu):
    the leading real part of A_u (LQFS-LB, :func:`stochastic_warmup`), of LAP's drift
    (:func:`.analyze_lap`) or of static routing's, -min mu over the basic activities."""
    if policy == "lqfs-lb":
        return stochastic_warmup(solution, r, margin=margin)
    if policy == "lap":
        gamma = float(analyze_lap(solution).eigenvalues.real.max())
    else:
        gamma = float(np.diag(static_drift(solution)).max())
    return derived_warmup(gamma, r, margin=margin)


def policy_runs(
    example: str,
    solution: SPPSolution,
    policy: str,
    r: float,
    *,
    horizon: float,
    warmup_margin: float,
    replications: int | Iterable[int],
    seed: int,
    batches: int,
) -> pd.DataFrame:
    """Stationary runs of one discipline at one scale, one row per replication.

    Each replication starts at the policy's own equilibrium r x* (:func:`policy_centre`),
    discards :func:`policy_warmup` and averages over ``horizon``; replication k draws from the
    streams ``(seed, ("stochastic", example, int(r), k))``, those of :func:`stochastic_runs`,
    so the three disciplines and the LQFS-LB runs of the stochastic study share their clock
    and event streams replication by replication (common random numbers).

    Columns: those of :func:`stochastic_runs`' summary (``example, r, replication, t_end,
    warmup, events, mean_norm, rms_norm, mean_class_i, rms_class_i, queued_fraction,
    batch_b``) plus ``policy``, ``customers`` (the time average of sum_i X_i / r, customers
    per unit r: sum x* + sum_i mean_class_i / sqrt(r)) and ``cov_i_k`` (i <= k, the time
    covariance of the scaled deviation over the window, customers^2 per unit r).
    """
    rows = []
    warmup = policy_warmup(solution, policy, r, margin=warmup_margin)
    centre = policy_centre(solution, policy)
    indices = _replication_indices(replications)
    progress = Progress(len(indices), f"{example} {policy} r={r:g}", logger=log)
    for rep in indices:
        run = simulate(
            solution,
            r,
            horizon=horizon,
            warmup=warmup,
            record_every=horizon,
            seed=seed,
            keys=(STOCHASTIC_KEY, example, int(r), rep),
            batches=int(batches),
            policy=policy,
            progress=progress,
        )
        progress.advance(
            extra=f"replication {rep}: {run.events} events in {run.wall_seconds:.2f} s, "
            f"time-averaged |deviation| {run.mean_norm:.4g}"
        )
        row = {
            "example": example,
            "policy": policy,
            "r": float(r),
            "replication": rep,
            "t_end": run.t_end,
            "warmup": run.warmup,
            "events": run.events,
            "mean_norm": run.mean_norm,
            "rms_norm": run.rms_norm,
            "customers": float(centre.sum() + run.mean.sum() / np.sqrt(r)),
        }
        n = run.mean.size
        for i in range(n):
            row[f"mean_class_{i + 1}"] = float(run.mean[i])
        for i in range(n):
            row[f"rms_class_{i + 1}"] = float(np.sqrt(run.second_moment[i, i]))
        for i in range(n):
            for k in range(i, n):
                row[f"cov_{i + 1}_{k + 1}"] = float(run.covariance[i, k])
        row["queued_fraction"] = run.queued / max(int(run.arrivals.sum()), 1)
        for b, value in enumerate(run.batch_mean_norm):
            row[f"batch_{b + 1}"] = float(value)
        rows.append(row)
    return pd.DataFrame(rows)


def lqfs_lb_rows(runs: pd.DataFrame, solution: SPPSolution, example: str, r) -> pd.DataFrame:
    """The stochastic study's LQFS-LB rows of ``example`` at the scales ``r``, with the
    columns of :func:`policy_runs` that it can fill (``policy``, ``customers``)."""
    df = runs[(runs["example"] == example) & runs["r"].isin([float(v) for v in r])].copy()
    means = df[[c for c in df.columns if c.startswith("mean_class_")]].to_numpy(float)
    df.insert(1, "policy", "lqfs-lb")
    df["customers"] = solution.class_occupancy.sum() + means.sum(axis=1) / np.sqrt(df["r"])
    return df.reset_index(drop=True)


def gaussian_mean_norm(sigma: np.ndarray) -> float:
    """E|Y| for Y ~ N(0, sigma) (``sigma`` (n, n) positive semi-definite), by one quadrature:
    with W = |Y|^2 = sum_k s_k Z_k^2 (s_k the eigenvalues), E sqrt(W) =
    (2 sqrt(pi))^-1 int_0^inf (1 - prod_k (1 + 2 t s_k)^-1/2) t^-3/2 dt.

    >>> round(gaussian_mean_norm(np.eye(1)), 10)  # E|Z| = sqrt(2 / pi)
    0.7978845608
    >>> round(gaussian_mean_norm(np.eye(2)), 10)  # Rayleigh: sqrt(pi / 2)
    1.2533141373
    """
    from scipy.integrate import quad

    s = np.clip(np.linalg.eigvalsh(np.asarray(sigma, dtype=float)), 0.0, None)
    top = float(s.max())
    if top == 0.0:
        return 0.0
    s = s / top

    def integrand(u: float) -> float:  # t = u^2 / (1 - u)^2 maps (0, 1) onto (0, inf)
        t = (u / (1.0 - u)) ** 2
        dt = 2.0 * u / (1.0 - u) ** 3
        tail = -np.expm1(-0.5 * np.log1p(2.0 * t * s).sum())
        return tail * t**-1.5 * dt

    value, _ = quad(integrand, 0.0, 1.0, limit=400, epsabs=0.0, epsrel=1e-11)
    return float(value / (2.0 * np.sqrt(np.pi)) * np.sqrt(top))


def lap_stationary_covariance(solution: SPPSolution) -> np.ndarray:
    """Sigma of LAP's limiting Ornstein-Uhlenbeck process: A Sigma + Sigma A^T + 2 diag
    lambda = 0 with A LAP's drift (:func:`.analyze_lap`), customers^2 per unit r
    (:func:`.stationary_covariance`)."""
    return stationary_covariance(solution, analyze_lap(solution).drift)


def lap_time_averages(
    runs: pd.DataFrame,
    *,
    stationarity_confidence: float = DEFAULT_STATIONARITY_CONFIDENCE,
    confidence: float = 0.95,
    decades: float = 1.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(averages, verdicts)`` per discipline: :func:`time_average_table` and
    :func:`scaling_verdicts` of each policy's rows (:func:`policy_runs`,
    :func:`lqfs_lb_rows`), with a ``policy`` column after ``example``."""
    averages, verdicts = [], []
    for policy in [p for p in LAP_POLICIES if p in set(runs["policy"])]:
        df = runs[runs["policy"] == policy]
        av = time_average_table(
            df, stationarity_confidence=stationarity_confidence, confidence=confidence
        )
        ve = scaling_verdicts(df, av, decades=decades, confidence=confidence)
        av.insert(1, "policy", policy)
        ve.insert(1, "policy", policy)
        averages.append(av)
        verdicts.append(ve)
    return pd.concat(averages, ignore_index=True), pd.concat(verdicts, ignore_index=True)


def lap_ou_table(
    runs: pd.DataFrame, solutions: Mapping[str, SPPSolution], *, confidence: float = 0.95
) -> pd.DataFrame:
    """LAP's simulated level against its limiting OU law N(0, Sigma), per (example, r).

    Rows per quantity: ``mean_norm`` (E|Y|, :func:`gaussian_mean_norm`), ``rms_norm``
    (sqrt(tr Sigma)) and every entry ``cov_i_k`` (Sigma_ik): ``simulated`` (mean over
    replications of the per-window values), its ``ci`` half-width at ``confidence``,
    ``predicted`` and ``within`` (|simulated - predicted| <= ci). Columns ``example, r,
    quantity, simulated, ci, replications, predicted, within``.
    """
    rows = []
    lap = runs[runs["policy"] == "lap"]
    for (example, r), df in lap.groupby(["example", "r"], sort=True):
        sigma = lap_stationary_covariance(solutions[example])
        n = sigma.shape[0]
        predicted = {
            "mean_norm": gaussian_mean_norm(sigma),
            "rms_norm": float(np.sqrt(np.trace(sigma))),
        }
        for i in range(n):
            for k in range(i, n):
                predicted[f"cov_{i + 1}_{k + 1}"] = float(sigma[i, k])
        for quantity, value in predicted.items():
            iv = mean_interval(df[quantity].to_numpy(float), confidence=confidence)
            rows.append(
                {
                    "example": example,
                    "r": float(r),
                    "quantity": quantity,
                    "simulated": iv.mean,
                    "ci": iv.half_width,
                    "replications": iv.n,
                    "predicted": value,
                    "within": bool(abs(iv.mean - value) <= iv.half_width),
                }
            )
    return pd.DataFrame(rows)


def price_of_stability(
    runs: pd.DataFrame, solutions: Mapping[str, SPPSolution], *, confidence: float = 0.95
) -> pd.DataFrame:
    """Mean customers per unit r and mean sojourn time (Little's law) of each discipline at
    each example's largest common scale, with paired differences from LQFS-LB.

    Per (example, policy): ``equilibrium`` (sum x*, the fluid value), ``customers`` (the mean
    over replications of the time-averaged sum_i X_i / r) with its ``customers_ci``,
    ``sojourn_time`` and ``sojourn_time_ci`` (customers / sum lambda, time units 1/mu), and
    ``difference``, ``difference_ci``, ``p_holm`` (the paired difference of customers from
    LQFS-LB over replications run on the same streams, Holm-adjusted over the example's
    comparisons; empty for LQFS-LB itself). Intervals at ``confidence``.
    """
    from ..paired import holm, mean_estimate

    rows = []
    for example, df in runs.groupby("example", sort=False):
        common = set.intersection(*(set(g["r"]) for _, g in df.groupby("policy")))
        r = max(common)
        at = df[df["r"] == r]
        lam = float(solutions[example].system.arrival_rates.sum())
        base = at[at["policy"] == "lqfs-lb"].set_index("replication")["customers"]
        example_rows = []
        for policy in [p for p in LAP_POLICIES if p in set(at["policy"])]:
            own = at[at["policy"] == policy].set_index("replication")["customers"]
            iv = mean_interval(own.to_numpy(float), confidence=confidence)
            row = {
                "example": example,
                "policy": policy,
                "r": float(r),
                "replications": iv.n,
                "equilibrium": float(policy_centre(solutions[example], policy).sum()),
                "customers": iv.mean,
                "customers_ci": iv.half_width,
                "sojourn_time": iv.mean / lam,
                "sojourn_time_ci": iv.half_width / lam,
                "difference": np.nan,
                "difference_ci": np.nan,
                "p": np.nan,
            }
            if policy != "lqfs-lb" and len(base):
                reps = own.index.intersection(base.index)
                d = (own[reps] - base[reps]).to_numpy(float)
                iv_d = mean_interval(d, confidence=confidence)
                row["difference"], row["difference_ci"] = iv_d.mean, iv_d.half_width
                row["p"] = mean_estimate(d).p_value()
            example_rows.append(row)
        ps = [row["p"] for row in example_rows if not np.isnan(row["p"])]
        adjusted = iter(holm(ps)) if ps else iter(())
        for row in example_rows:
            p = row.pop("p")
            row["p_holm"] = float(next(adjusted)) if not np.isnan(p) else np.nan
        rows.extend(example_rows)
    return pd.DataFrame(rows)
