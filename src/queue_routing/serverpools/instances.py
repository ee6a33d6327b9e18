"""Example instances of Part C (ours: the paper gives no numerical examples).

Stolyar & Yudovina (2013) prove that the LQFS-LB fluid equilibrium can be unstable but the
source text has no numerical example, so the three examples and the one-parameter family
below are ours. The examples are trees given by their basic activities, service rates mu_ij and
nominal occupancies psi*_ij (busy servers per unit r); then lambda_ij = mu_ij psi*_ij,
lambda_i = sum_j lambda_ij and beta_j = sum_i psi*_ij / rho, so every pool is exactly at load
rho and the tree is the unique SPP optimum (complete resource pooling holds).

* :data:`STABLE` -- the path P1 - C1 - P2 - C2 - P3 - C3 (3 classes, 3 pools), rates of order
  1, rho = 0.7: A_u has eigenvalues -1, -1.10, -1.67 (the stable instance of the tests).
* :data:`UNSTABLE` -- the path P2 - C2 - P3 - C1 - P1 - C3 - P4 (3 classes, 4 pools), found by
  a seeded random search over trees (:mod:`.search`) and rounded, rho = 0.9: A_u has the
  complex pair 0.236 +- 3.08i. Its pool sizes are spread over a factor 62 and its rates over a
  factor 300; instability needs such heterogeneity.
* :data:`LARGE_CYCLE` -- a 5-class, 5-pool tree (rho = 0.5) chosen by an exploratory search
  for a large fluid limit cycle relative to the diffusion noise and a fast growth rate
  (docs/serverpools.md, "The large-cycle example"): A_u has 0.419 +- 3.55i, -1.77 +- 0.87i
  and -48; the fluid cycle's time-averaged |x - x*| is 0.104 per unit r (10% of
  sum_i x*_i = 1.0; 0.0155 for UNSTABLE), so its stochastic system follows the cycle, and
  its diffusion-scaled deviation grows like sqrt(r), from r ~ 3e5.
* :func:`heterogeneity_family` -- a one-parameter family through :data:`UNSTABLE`: the log
  rates and log occupancies are scaled about their geometric means by an exponent theta
  (theta = 0: all rates and occupancies equal, so A_u = -mu I is stable; theta = 1: UNSTABLE);
  its largest real part crosses zero near theta = 0.90 (the stability boundary).

All instances are in the JSON contract of ``queue-routing serverpools analyze``
(``{"arrival_rates", "pool_sizes", "activities": [{"class", "pool", "rate"}]}``, classes and
pools numbered from 1). Units: lambda in customers per unit time per unit r, beta in servers
per unit r, mu in jobs per unit time per busy server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ServerPoolError
from .model import ServerPoolSystem

__all__ = [
    "EXAMPLES",
    "EXAMPLE_TREES",
    "LARGE_CYCLE",
    "STABLE",
    "UNSTABLE",
    "example_system",
    "heterogeneity_family",
    "tree_instance",
]

#: (class, pool) numbered from 1, mu_ij, psi*_ij: the stable path (rho = 0.7).
_STABLE_TREE: tuple[tuple[int, int, float, float], ...] = (
    (1, 1, 1.0, 0.5),
    (1, 2, 2.0, 0.25),
    (2, 2, 0.5, 0.6),
    (2, 3, 1.5, 0.4),
    (3, 3, 1.0, 0.8),
)
_STABLE_RHO = 0.7

#: (class, pool) numbered from 1, mu_ij, psi*_ij: the unstable path (rho = 0.9).
_UNSTABLE_TREE: tuple[tuple[int, int, float, float], ...] = (
    (1, 1, 6.0, 0.009),
    (1, 3, 0.16, 0.027),
    (2, 2, 0.27, 0.9),
    (2, 3, 7.0, 0.027),
    (3, 1, 0.12, 0.009),
    (3, 4, 36.0, 0.0144),
)
_UNSTABLE_RHO = 0.9

#: (class, pool) numbered from 1, mu_ij, psi*_ij: the large-cycle tree (rho = 0.5), chosen
#: for a large fluid limit cycle relative to the diffusion noise (docs/serverpools.md).
_LARGE_CYCLE_TREE: tuple[tuple[int, int, float, float], ...] = (
    (1, 3, 48.0, 0.0022),
    (2, 2, 0.11, 0.82),
    (2, 5, 3.8, 0.025),
    (3, 1, 4.2, 0.017),
    (3, 3, 0.087, 0.013),
    (4, 3, 5.1, 0.0069),
    (4, 5, 0.17, 0.043),
    (5, 1, 0.16, 0.0048),
    (5, 4, 9.0, 0.067),
)
_LARGE_CYCLE_RHO = 0.5


def tree_instance(tree: Sequence[tuple[int, int, float, float]], rho: float) -> dict[str, Any]:
    """The JSON instance of a tree ``[(class, pool, mu_ij, psi*_ij), ...]`` at load ``rho``.

    ``lambda_i = sum_j mu_ij psi*_ij`` and ``beta_j = sum_i psi*_ij / rho`` (module docstring).
    Classes and pools are numbered from 1 and must be 1..I and 1..J.
    """
    if not (_is_number(rho) and 0 < rho <= 1):
        raise ServerPoolError(f"rho must be a number in (0, 1], got {rho!r:.40}")
    for c, p, mu, psi in tree:
        if not all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in (c, p)):
            raise ServerPoolError(
                f"activity ({c!r:.20}, {p!r:.20}): class and pool must be integers"
            )
        if min(c, p) < 1:
            raise ServerPoolError(f"activity ({c}, {p}): classes and pools are numbered from 1")
        if not (_is_number(mu) and _is_number(psi) and mu > 0 and psi > 0):
            raise ServerPoolError(f"activity ({c}, {p}): mu and psi* must be numbers > 0")
    n_i = max(int(c) for c, _, _, _ in tree)
    n_j = max(int(p) for _, p, _, _ in tree)
    lam = np.zeros(n_i)
    psi_pool = np.zeros(n_j)
    with np.errstate(all="ignore"):  # out-of-range results are rejected below
        for c, p, mu, psi in tree:
            lam[c - 1] += float(mu) * float(psi)
            psi_pool[p - 1] += float(psi)
        beta = psi_pool / rho
    out = {
        "arrival_rates": lam.tolist(),
        "pool_sizes": beta.tolist(),
        "activities": [
            {"class": int(c), "pool": int(p), "rate": float(mu)} for c, p, mu, _ in tree
        ],
    }
    ServerPoolSystem.from_dict(out)  # every derived value in range, every class and pool used
    return out


def _is_number(x) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)


#: The stable example (JSON contract).
STABLE: dict[str, Any] = tree_instance(_STABLE_TREE, _STABLE_RHO)

#: The unstable example (JSON contract).
UNSTABLE: dict[str, Any] = tree_instance(_UNSTABLE_TREE, _UNSTABLE_RHO)

#: The large-cycle example (JSON contract).
LARGE_CYCLE: dict[str, Any] = tree_instance(_LARGE_CYCLE_TREE, _LARGE_CYCLE_RHO)

#: The examples by name (the pipeline's ``example`` wildcard).
EXAMPLES: dict[str, dict[str, Any]] = {
    "stable": STABLE,
    "unstable": UNSTABLE,
    "large_cycle": LARGE_CYCLE,
}

#: The defining trees ``(class, pool, mu, psi*)`` and loads of the examples.
EXAMPLE_TREES: dict[str, tuple[tuple[tuple[int, int, float, float], ...], float]] = {
    "stable": (_STABLE_TREE, _STABLE_RHO),
    "unstable": (_UNSTABLE_TREE, _UNSTABLE_RHO),
    "large_cycle": (_LARGE_CYCLE_TREE, _LARGE_CYCLE_RHO),
}


def example_system(name: str) -> ServerPoolSystem:
    """The example ``name`` (a key of :data:`EXAMPLES`) as a :class:`ServerPoolSystem`."""
    if name not in EXAMPLES:
        raise KeyError(f"unknown example {name!r}; choose from {sorted(EXAMPLES)}")
    return ServerPoolSystem.from_dict(EXAMPLES[name])


def heterogeneity_family(theta: float, base: str = "unstable") -> ServerPoolSystem:
    """The example ``base`` with its heterogeneity scaled by the exponent ``theta >= 0``.

    On the same tree and at the same rho: ``mu_ij(theta) = g_mu (mu_ij / g_mu)^theta`` and
    ``psi*_ij(theta) = g_psi (psi*_ij / g_psi)^theta`` with g the geometric means over the
    activities; lambda and beta follow as in :func:`tree_instance`. theta = 0 gives equal
    rates and occupancies (A_u = -g_mu I), theta = 1 the example itself; the spreads
    max/min of mu and psi* are the example's raised to the power theta.

    >>> from queue_routing.serverpools.linear import a_underloaded, stability_verdict
    >>> a = a_underloaded(heterogeneity_family(0.0))
    >>> g_mu = np.exp(np.log([6.0, 0.16, 0.27, 7.0, 0.12, 36.0]).mean())  # UNSTABLE's rates
    >>> bool(np.allclose(a, -g_mu * np.eye(3)))
    True
    >>> stability_verdict(heterogeneity_family(1.0)).stable_underloaded  # UNSTABLE itself
    False
    """
    if not (_is_number(theta) and np.isfinite(theta) and theta >= 0):
        raise ServerPoolError(f"theta must be finite and >= 0, got {theta}")
    tree, rho = EXAMPLE_TREES[base]
    mu = np.array([t[2] for t in tree])
    psi = np.array([t[3] for t in tree])
    g_mu = np.exp(np.log(mu).mean())
    g_psi = np.exp(np.log(psi).mean())
    with np.errstate(all="ignore"):  # out-of-range values are rejected by tree_instance
        mu_t = g_mu * (mu / g_mu) ** theta
        psi_t = g_psi * (psi / g_psi) ** theta
    scaled = [
        (c, p, float(m), float(s)) for (c, p, _, _), m, s in zip(tree, mu_t, psi_t, strict=True)
    ]
    return ServerPoolSystem.from_dict(tree_instance(scaled, rho))
