"""Comparison models of Sec. 5: no sharing, all sharing, and the switching curve.

The paper's Sec. 5 text is missing from our copy of it; what follows is our reconstruction
(``docs/multiskill.md#comparison-models``). Units as in :mod:`.model`: ``mu`` in work
per unit time, ``cost`` per job per unit time, ``eta`` in work per unit time; costs returned
are mean holding cost rates ``sum_j c_j rho_j/(1-rho_j)`` (cost per unit time).

- **No sharing**: every class uses only its dedicated server (p = 1), server 0 idles.
- **All sharing**: every server serves every class; the total intensity ``sum_i eta_i`` is
  routed optimally (Bernoulli) over the C + 1 servers (Altman, Ayesta, Prabhu 2011). With
  ``cost_variant="same"`` server j keeps its own holding cost ``c_j``; this system contains
  the multi-skilled one, so it is never worse. With ``cost_variant="multiskilled"`` every
  server becomes multi-skilled and is charged ``c_0`` (flexibility costs), which is what
  makes a switching curve possible.
- **Switching curve** (C = 2): where the multi-skilled optimum and the all-sharing optimum
  cost the same, by root finding on the cost difference.

The default parameters of the reconstructed Figs. 4 and 5 are module constants
(:data:`FIG4_MU`, :data:`FIG4_COST`, :data:`FIG5_MU`, :data:`FIG5_COST`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .exact import solve_exact, solve_exact_batch
from .model import Instance, holding_cost, stability_margin
from .result import check_precision, warn_if_imprecise

__all__ = [
    "FIG4_COST",
    "FIG4_ETA1",
    "FIG4_ETA1_VALUES",
    "FIG4_ETA2_RANGE",
    "FIG4_MU",
    "FIG5_COST",
    "FIG5_ETA1_VALUES",
    "FIG5_ETA2_RANGE",
    "FIG5_MU",
    "AllSharingSolution",
    "all_sharing",
    "all_sharing_batch",
    "compare",
    "cost_curves",
    "cost_difference",
    "cost_difference_map",
    "multiskilled_cost_batch",
    "no_sharing_cost",
    "switching_curve",
    "switching_point",
]

CostVariant = Literal["multiskilled", "same"]
_VARIANTS = ("multiskilled", "same")

# -- reconstructed figure settings ---------------------------------------------------------
#: Fig. 4 capacities ``(mu_0, mu_1, mu_2)``, work per unit time. **Reconstructed**: the paper's
#: values are missing from the seed. Chosen so that, with the ``"multiskilled"`` cost variant
#: (every all-sharing server charged ``c_0``), a switching curve exists: cheap dedicated
#: servers, an expensive multi-skilled server. Multi-skilled routing wins while the classes
#: are balanced (each uses its cheap dedicated server); all sharing wins when one class is
#: much heavier than the other, because then it can use the other class's idle dedicated
#: server (at the multi-skilled price).
FIG4_MU = np.array([1.0, 1.0, 1.0])
#: Fig. 4 holding costs ``(c_0, c_1, c_2)``, cost per job per unit time (reconstructed).
FIG4_COST = np.array([2.0, 1.0, 1.0])
#: Fig. 4 (left): eta_1 held fixed while eta_2 sweeps :data:`FIG4_ETA2_RANGE` (reconstructed).
FIG4_ETA1 = 0.2
#: Fig. 4: range of eta_2 swept (the multi-skilled system is stable for eta_2 < 2 - (eta_1-1)^+).
FIG4_ETA2_RANGE = (0.001, 2.0)
#: Fig. 4 (right): the values of eta_1 at which the switching curve is computed.
FIG4_ETA1_VALUES = np.linspace(0.005, 1.995, 200)

#: Fig. 5 capacities: equal, ``mu_j = 1`` (reconstructed; the paper's values are missing).
FIG5_MU = np.array([1.0, 1.0, 1.0])
#: Fig. 5 holding costs: different per server, multi-skilled the dearest (reconstructed).
FIG5_COST = np.array([3.0, 1.0, 2.0])
#: Fig. 5: values of eta_1 at which the switching curve is computed.
FIG5_ETA1_VALUES = np.linspace(0.005, 1.995, 200)
#: Fig. 5: range of eta_2 scanned for switching points.
FIG5_ETA2_RANGE = (0.001, 2.0)


def _brentq(*args, **kwargs):
    """:func:`scipy.optimize.brentq`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import brentq

    return brentq(*args, **kwargs)


# -- no sharing ----------------------------------------------------------------------------
def no_sharing_cost(instance: Instance) -> float | None:
    """Cost of the system without sharing: ``sum_j c_j r_j/(1 - r_j)``, ``r_j = eta_j/mu_j``.

    Server 0 is idle. Returns ``None`` when some ``eta_j >= mu_j`` (no sharing is unstable).
    """
    r = instance.dedicated_loads
    if np.any(r >= 1.0):
        return None
    return float(holding_cost(r, instance.cost[1:]))


# -- all sharing ---------------------------------------------------------------------------
def _sharing_costs(cost: np.ndarray, cost_variant: str) -> np.ndarray:
    """Holding cost charged to each server in the all-sharing system, shape like ``cost``."""
    if cost_variant not in _VARIANTS:
        raise ValueError(f"cost_variant must be one of {_VARIANTS}, got {cost_variant!r}")
    cost = np.asarray(cost, dtype=float)
    if cost_variant == "same":
        return cost
    return np.broadcast_to(cost[..., :1], cost.shape).copy()


def all_sharing_batch(mu, cost_tilde, total) -> tuple[np.ndarray, np.ndarray]:
    """Optimal Bernoulli routing of a total intensity over parallel PS servers, batched.

    Minimises ``sum_j c_j rho_j/(1-rho_j)`` subject to ``sum_j mu_j rho_j = total``,
    ``0 <= rho_j < 1`` (Altman, Ayesta, Prabhu 2011). KKT: ``c_j/(mu_j (1-rho_j)^2)`` is equal
    on the used servers, i.e. ``1 - rho_j = a_j g`` with ``a_j = sqrt(c_j/mu_j)``, and server j
    is unused iff ``a_j g >= 1``. With the servers sorted by ``a_j``, the used set is a
    prefix, and since ``F(g) = sum_j mu_j (1 - a_j g)^+`` is the maximum over prefixes k of
    the lines ``M_k - g W_k`` (``M_k``, ``W_k`` prefix sums of ``mu_j``, ``sqrt(c_j mu_j)``),
    the root of ``F(g) = total`` is exactly ``g* = max_k (M_k - total)/W_k``.

    Parameters
    ----------
    mu, cost_tilde:
        ``(..., n)``: capacities (work per unit time) and holding costs of the servers.
    total:
        ``(...)``: total intensity to route (work per unit time), ``< sum mu``.

    Returns
    -------
    loads:
        ``(..., n)``, dimensionless; NaN rows where ``total >= sum mu`` (unstable).
    g:
        ``(...)``, the multiplier g* (time^(1/2) per cost^(1/2) unit; NaN where unstable).
    """
    mu = np.asarray(mu, dtype=float)
    cost_tilde = np.asarray(cost_tilde, dtype=float)
    mu, cost_tilde = np.broadcast_arrays(mu, cost_tilde)
    total = np.asarray(total, dtype=float)
    a = np.sqrt(cost_tilde / mu)
    order = np.argsort(a, axis=-1, kind="stable")
    mu_s = np.take_along_axis(mu, order, axis=-1)
    w_s = np.take_along_axis(np.sqrt(cost_tilde * mu), order, axis=-1)
    g_k = (np.cumsum(mu_s, axis=-1) - total[..., None]) / np.cumsum(w_s, axis=-1)
    g = g_k.max(axis=-1)
    stable = total < mu.sum(axis=-1)
    g = np.where(stable, g, np.nan)
    loads = np.clip(1.0 - a * g[..., None], 0.0, None)
    return loads, g


@dataclass(frozen=True)
class AllSharingSolution:
    """Optimal routing of the all-sharing system (every server serves every class).

    Attributes
    ----------
    instance:
        The multi-skilled instance whose servers and total intensity are pooled.
    cost_variant:
        ``"multiskilled"`` (every server charged ``c_0``) or ``"same"`` (``c_j``).
    charged_cost:
        Holding cost charged to each server, shape ``(C + 1,)``.
    loads:
        Optimal loads ``rho_0..rho_C`` (dimensionless); unused servers have load 0.
    multiplier:
        g* with ``1 - rho_j = sqrt(c~_j/mu_j) g*`` on the used servers.
    """

    instance: Instance
    cost_variant: str
    charged_cost: np.ndarray
    loads: np.ndarray
    multiplier: float

    @property
    def cost(self) -> float:
        """Mean holding cost rate ``sum_j c~_j rho_j/(1 - rho_j)`` (cost per unit time)."""
        return float(holding_cost(self.loads, self.charged_cost))

    @property
    def used(self) -> np.ndarray:
        """Boolean mask of the servers that receive traffic."""
        return self.loads > 0.0


def all_sharing(
    instance: Instance, cost_variant: CostVariant = "multiskilled"
) -> AllSharingSolution | None:
    """Optimal all-sharing routing of ``sum_i eta_i`` over the C + 1 servers (see module).

    Returns ``None`` when ``sum_i eta_i >= sum_j mu_j`` (no routing is stable).
    """
    charged = _sharing_costs(instance.cost, cost_variant)
    total = float(instance.eta.sum())
    if not total < float(instance.mu.sum()):
        return None
    loads, g = all_sharing_batch(instance.mu, charged, np.asarray(total))
    loads.setflags(write=False)
    charged.setflags(write=False)
    return AllSharingSolution(
        instance=instance,
        cost_variant=cost_variant,
        charged_cost=charged,
        loads=loads,
        multiplier=float(g),
    )


# -- the comparison ------------------------------------------------------------------------
def compare(instance: Instance) -> dict[str, Any]:
    """Optimal cost of each model (the ``queue-routing multiskill compare`` JSON contract).

    Returns ``{"multiskilled": float, "no_sharing": float | None, "all_sharing": float | None,
    "all_sharing_same_costs": float | None}``, cost per unit time; ``None`` where the model is
    unstable. ``all_sharing`` charges every server ``c_0``; ``all_sharing_same_costs`` keeps
    ``c_j``.
    """
    shared = all_sharing(instance, "multiskilled")
    same = all_sharing(instance, "same")
    optimum = solve_exact(instance)
    # the all-sharing models' loads carry the same rounding near capacity: eps / (1 - rho)
    others = [m.loads for m in (shared, same) if m is not None]
    near = max((float(np.finfo(float).eps / (1.0 - np.max(x))) for x in others), default=0.0)
    check_precision(optimum)
    warn_if_imprecise(max(optimum.precision_limit, near), "the costs (and their comparison)")
    return {
        "multiskilled": optimum.cost,
        "no_sharing": no_sharing_cost(instance),
        "all_sharing": None if shared is None else shared.cost,
        "all_sharing_same_costs": None if same is None else same.cost,
    }


# -- cost along lines and switching curves (C = 2 or any C) --------------------------------
def _grid(mu, cost, eta1, eta2_values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    if mu.shape != (3,) or cost.shape != (3,):
        raise ValueError(f"C = 2 needs mu and cost of shape (3,), got {mu.shape}, {cost.shape}")
    eta2 = np.atleast_1d(np.asarray(eta2_values, dtype=float))
    eta = np.stack([np.full(eta2.shape, float(eta1)), eta2], axis=-1)
    return mu, cost, eta


def multiskilled_cost_batch(mu, cost, eta) -> np.ndarray:
    """Optimal multi-skilled cost of each row of ``eta`` (shape ``(B, C)``) for fixed mu, cost.

    ``inf`` where the row is unstable (Proposition 1) or has a non-positive intensity.
    """
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    eta = np.asarray(eta, dtype=float)
    ok = (stability_margin(mu, eta) > 0) & np.all(eta > 0, axis=-1)
    out = np.full(eta.shape[0], np.inf)
    if np.any(ok):
        b = int(ok.sum())
        loads = solve_exact_batch(np.tile(mu, (b, 1)), np.tile(cost, (b, 1)), eta[ok])
        out[ok] = holding_cost(loads, cost)
    return out


def _all_sharing_cost_batch(mu, cost, eta, cost_variant: str) -> np.ndarray:
    charged = _sharing_costs(cost, cost_variant)
    loads, _ = all_sharing_batch(mu, charged, eta.sum(axis=-1))
    out = holding_cost(np.nan_to_num(loads, nan=1.0), charged)
    return np.where(np.all(eta > 0, axis=-1), out, np.inf)


def _difference_and_scale(mu, cost, eta1, eta2_values, cost_variant):
    mu, cost, eta = _grid(mu, cost, eta1, eta2_values)
    ms = multiskilled_cost_batch(mu, cost, eta)
    sh = _all_sharing_cost_batch(mu, cost, eta, cost_variant)
    ok = np.isfinite(ms) & np.isfinite(sh)
    with np.errstate(invalid="ignore"):
        diff = np.where(ok, ms - sh, np.nan)
        scale = np.where(ok, np.abs(ms) + np.abs(sh), np.nan)
    return diff, scale


def cost_difference(mu, cost, eta1, eta2_values, cost_variant: CostVariant = "multiskilled"):
    """Multi-skilled minus all-sharing optimal cost along ``eta_1 = const`` (C = 2).

    NaN where either system is unstable. Cost per unit time, shape ``(len(eta2_values),)``.
    """
    return _difference_and_scale(mu, cost, eta1, eta2_values, cost_variant)[0]


def cost_difference_map(
    mu, cost, eta1_grid, eta2_grid, cost_variant: CostVariant = "multiskilled"
) -> np.ndarray:
    """Multi-skilled minus all-sharing optimal cost over a grid of ``(eta_1, eta_2)`` (Fig. 5).

    Negative where the multi-skilled system is cheaper; NaN where either system is unstable.
    ``eta1_grid``, ``eta2_grid`` broadcast (e.g. from ``np.meshgrid``); cost per unit time.
    """
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    e1, e2 = np.broadcast_arrays(np.asarray(eta1_grid, float), np.asarray(eta2_grid, float))
    eta = np.stack([e1.ravel(), e2.ravel()], axis=-1)
    ms = multiskilled_cost_batch(mu, cost, eta)
    sh = _all_sharing_cost_batch(mu, cost, eta, cost_variant)
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isfinite(ms) & np.isfinite(sh), ms - sh, np.nan)
    return diff.reshape(e1.shape)


def cost_curves(mu, cost, eta1: float, eta2_values) -> pd.DataFrame:
    """Optimal cost of every model along the line ``eta_1 = const`` (Fig. 4, left; C = 2).

    Returns a DataFrame with columns ``eta2`` (work per unit time), ``multiskilled``,
    ``no_sharing``, ``all_sharing`` (every server charged ``c_0``), ``all_sharing_same_costs``
    (cost per unit time; NaN where the model is unstable).
    """
    mu, cost, eta = _grid(mu, cost, eta1, eta2_values)
    ms = multiskilled_cost_batch(mu, cost, eta)
    r = eta / mu[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        ns = np.where(np.all(r < 1.0, axis=-1), holding_cost(r, cost[1:]), np.inf)
    ns = np.where(np.all(eta > 0, axis=-1), ns, np.inf)  # not an instance: NaN everywhere
    frame = pd.DataFrame(
        {
            "eta2": eta[:, 1],
            "multiskilled": ms,
            "no_sharing": ns,
            "all_sharing": _all_sharing_cost_batch(mu, cost, eta, "multiskilled"),
            "all_sharing_same_costs": _all_sharing_cost_batch(mu, cost, eta, "same"),
        }
    )
    value_cols = frame.columns[1:]
    frame[value_cols] = frame[value_cols].where(np.isfinite(frame[value_cols]), np.nan)
    return frame


def switching_point(
    mu,
    cost,
    eta1: float,
    eta2_range: tuple[float, float],
    cost_variant: CostVariant = "multiskilled",
    n_grid: int = 2001,
    xtol: float = 1e-12,
    rtol_zero: float = 1e-11,
) -> np.ndarray:
    """Values of eta_2 where the multi-skilled and all-sharing optimal costs are equal (C = 2).

    Along the line ``eta_1 = const``: the cost difference (:func:`cost_difference`) is
    evaluated on ``n_grid`` points of ``eta2_range``; a difference within ``rtol_zero`` of
    the summed costs counts as 0 (so that rounding noise, where the two optima coincide on a
    whole interval, creates no roots). Every change between strictly positive and strictly
    negative differences at consecutive stable grid points (zeros in between skipped) is
    refined by :func:`scipy.optimize.brentq` to ``xtol``; a difference that touches 0 without
    changing sign is not a crossing. Two crossings within one grid spacing (a near tangency)
    cancel and are missed: refine ``n_grid``. Brackets never span an unstable point.

    Returns the sorted 1-D array of roots (work per unit time), empty if there is none.
    """

    def f(y: float) -> float:
        return float(cost_difference(mu, cost, eta1, [y], cost_variant)[0])

    lo, hi = (float(v) for v in eta2_range)
    if not hi > lo:
        raise ValueError(f"eta2_range must be (low, high) with low < high, got {eta2_range}")
    x = np.linspace(lo, hi, int(n_grid))
    d, scale = _difference_and_scale(mu, cost, eta1, x, cost_variant)
    fin = np.isfinite(d)
    # Differences within rounding of 0 count as 0: where the two optima coincide on a whole
    # interval (e.g. cost_variant="same"), rounding noise must not produce sign changes.
    sign = np.where(np.abs(d) <= rtol_zero * scale, 0.0, np.sign(d))
    roots: list[float] = []
    prev = -1  # index of the last finite grid point with a non-zero sign
    for k in range(x.size):
        if not fin[k]:
            prev = -1
            continue
        if sign[k] == 0.0:
            continue
        if prev >= 0 and sign[prev] != sign[k]:
            roots.append(_brentq(f, x[prev], x[k], xtol=xtol, rtol=4 * np.finfo(float).eps))
        prev = k
    return np.array(sorted(roots))


def switching_curve(
    mu,
    cost,
    eta1_values,
    eta2_range: tuple[float, float],
    cost_variant: CostVariant = "multiskilled",
    **search: Any,
) -> np.ndarray:
    """The switching curve in the ``(eta_1, eta_2)`` plane (Fig. 4, right; Fig. 5; C = 2).

    For each ``eta_1`` in ``eta1_values``, the roots in ``eta2_range`` of the cost difference
    multi-skilled minus all sharing (:func:`switching_point`); ``search`` holds the root
    search's keywords of :func:`switching_point` (``n_grid``, ``xtol``, ``rtol_zero``), whose
    defaults are its own.

    Returns an array of shape ``(len(eta1_values), k)``: row i holds the sorted roots at
    ``eta1_values[i]``, NaN-padded; ``k >= 1`` is the largest number of roots found on any
    row, so a curve with a single branch is column 0 (NaN where there is no root).
    """
    eta1_values = np.atleast_1d(np.asarray(eta1_values, dtype=float))
    rows = [switching_point(mu, cost, e1, eta2_range, cost_variant, **search) for e1 in eta1_values]
    k = max([1, *(r.size for r in rows)])
    out = np.full((eta1_values.size, k), np.nan)
    for i, r in enumerate(rows):
        out[i, : r.size] = r
    return out
