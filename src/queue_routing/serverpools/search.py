"""Seeded search over random activity trees for unstable fluid equilibria (ours; Sec. 3-4).

The paper shows that the LQFS-LB equilibrium can be locally unstable once the activity tree
is "not too small" but gives no numerical example (the seed lost them). We sample systems
whose SPP basic activities are a prescribed random spanning tree and look at the spectra of
A_u and A_c (:mod:`.linear`).

A random system of size (I, J): a uniform random spanning tree of the complete bipartite
graph K_{I,J} (Aldous-Broder random walk), rates mu_ij log-uniform on ``mu_range`` on the
tree edges (no other activities), flows lambda_ij log-uniform on ``flow_range``; then
lambda_i = sum_j lambda_ij and beta_j = sum_i (lambda_ij / mu_ij) / rho, so every pool is
exactly at load rho and the tree with these flows is the unique SPP optimum (CRP holds: all
activities are basic and the basic solution is nondegenerate).

Randomness: sample k of size (I, J) uses ``rng_for(seed, "serverpools-search", I, J, k)``
only, so any sample can be regenerated alone (:func:`sample_system`).

The search does not solve each sample's SPP: its optimal tree is the drawn one by
construction, and A_u and A_c depend only on that tree, the rates and the pool proportions
(:func:`~.linear.tree_a_underloaded`), so the spectra are those of
``a_underloaded(tree_spp(system))`` bit for bit at a third of the cost
(tests/test_serverpools_linear.py checks both on random samples of every size searched).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..seeding import rng_for
from .errors import ServerPoolError
from .linear import centering, critical_spectrum_of, spectrum, tree_a_underloaded
from .model import ServerPoolSystem
from .tree import random_spanning_tree

__all__ = [
    "SEARCH_KEY",
    "SearchResult",
    "SizeSummary",
    "alternating_path_system",
    "instability_search",
    "random_tree_system",
    "sample_system",
    "search_size",
]

SEARCH_KEY = "serverpools-search"


def _log_uniform(rng: np.random.Generator, bounds: Sequence[float], size: int) -> np.ndarray:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ServerPoolError(
            f"range must be two numbers (low, high), got {bounds!r:.60}"
        ) from None
    if not 0 < lo <= hi or not np.isfinite(hi):
        raise ServerPoolError(f"range must satisfy 0 < low <= high < inf, got ({lo}, {hi})")
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size))


def random_tree_system(
    n_classes: int,
    n_pools: int,
    rng: np.random.Generator,
    *,
    mu_range: Sequence[float] = (0.1, 10.0),
    flow_range: Sequence[float] = (0.1, 1.0),
    rho: float = 0.9,
) -> ServerPoolSystem:
    """A random system whose SPP basic activities are a random spanning tree at load ``rho``.

    ``mu_range``: service rates, jobs per unit time per server (log-uniform);
    ``flow_range``: tree flows lambda_ij, customers per unit time per unit r (log-uniform);
    ``rho``: the SPP optimum (dimensionless, > 0). Draw order: tree, mu, flows.

    >>> from queue_routing.serverpools import solve_spp
    >>> system = random_tree_system(3, 4, np.random.default_rng(5), rho=0.8)
    >>> sol = solve_spp(system)
    >>> round(sol.rho, 9), len(sol.basic) == len(system.activities) == 3 + 4 - 1
    (0.8, True)
    """
    if not (isinstance(rho, int | float | np.integer | np.floating) and rho > 0):
        raise ServerPoolError(f"rho must be a number > 0, got {rho!r:.40}")
    edges = random_spanning_tree(n_classes, n_pools, rng)
    mu = _log_uniform(rng, mu_range, len(edges))
    flows = _log_uniform(rng, flow_range, len(edges))
    rates = np.zeros((n_classes, n_pools))
    rates[edges[:, 0], edges[:, 1]] = mu
    with np.errstate(all="ignore"):  # out-of-range results are rejected by the constructor
        lam = np.bincount(edges[:, 0], weights=flows, minlength=n_classes)
        beta = np.bincount(edges[:, 1], weights=flows / mu, minlength=n_pools) / rho
    return ServerPoolSystem(arrival_rates=lam, pool_sizes=beta, rates=rates)


def sample_system(
    seed: int, n_classes: int, n_pools: int, k: int, **kwargs: Any
) -> ServerPoolSystem:
    """Sample k of size (I, J) of :func:`instability_search` (same stream, same arguments)."""
    rng = rng_for(seed, SEARCH_KEY, n_classes, n_pools, k)
    return random_tree_system(n_classes, n_pools, rng, **kwargs)


def _pairs(w: np.ndarray) -> list[list[float]]:
    return [[float(z.real), float(z.imag)] for z in w]


def _example(k: int, system: ServerPoolSystem, eig_u, eig_c) -> dict[str, Any]:
    return {
        "sample": int(k),
        "system": system.to_dict(),
        "eigenvalues_underloaded": _pairs(eig_u),
        "eigenvalues_critical": _pairs(eig_c),
    }


@dataclass(frozen=True)
class SizeSummary:
    """Search results for one size (I, J).

    ``max_real_*`` are the largest real parts found (per unit time; A_c without its
    structural zero, ``-inf`` if I = 1). Examples are dicts ``{"sample", "system" (the JSON
    contract), "eigenvalues_underloaded", "eigenvalues_critical"}`` or None.
    """

    n_classes: int
    n_pools: int
    samples: int
    unstable_underloaded: int
    unstable_critical: int
    max_real_underloaded: float
    max_real_critical: float
    unstable_example_underloaded: dict[str, Any] | None = field(default=None, repr=False)
    unstable_example_critical: dict[str, Any] | None = field(default=None, repr=False)
    stable_example: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SizeSummary:
        """The summary written by :meth:`to_dict` (``None`` largest real parts: ``-inf``)."""

        def num(x: float | None) -> float:
            return float("-inf") if x is None else float(x)

        return cls(
            n_classes=int(d["n_classes"]),
            n_pools=int(d["n_pools"]),
            samples=int(d["samples"]),
            unstable_underloaded=int(d["unstable_underloaded"]),
            unstable_critical=int(d["unstable_critical"]),
            max_real_underloaded=num(d["max_real_underloaded"]),
            max_real_critical=num(d["max_real_critical"]),
            unstable_example_underloaded=d["unstable_example_underloaded"],
            unstable_example_critical=d["unstable_example_critical"],
            stable_example=d["stable_example"],
        )

    @classmethod
    def merge(cls, parts: Sequence[SizeSummary]) -> SizeSummary:
        """One size's summary from those of consecutive sample blocks, in sample order (a
        split search, :mod:`queue_routing.workflow.chunks`): counts added, largest real parts
        maximised, each example that of the first block that has one -- the summary of the
        unsplit search, since every sample has its own stream."""
        if not parts:
            raise ValueError("no summaries to merge")
        sizes = {(p.n_classes, p.n_pools) for p in parts}
        if len(sizes) != 1:
            raise ValueError(f"summaries of different sizes cannot be merged: {sorted(sizes)}")

        def first(attr: str) -> dict[str, Any] | None:
            return next((getattr(p, attr) for p in parts if getattr(p, attr) is not None), None)

        return cls(
            n_classes=parts[0].n_classes,
            n_pools=parts[0].n_pools,
            samples=sum(p.samples for p in parts),
            unstable_underloaded=sum(p.unstable_underloaded for p in parts),
            unstable_critical=sum(p.unstable_critical for p in parts),
            max_real_underloaded=max(p.max_real_underloaded for p in parts),
            max_real_critical=max(p.max_real_critical for p in parts),
            unstable_example_underloaded=first("unstable_example_underloaded"),
            unstable_example_critical=first("unstable_example_critical"),
            stable_example=first("stable_example"),
        )

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "n_classes": self.n_classes,
            "n_pools": self.n_pools,
            "samples": self.samples,
            "unstable_underloaded": self.unstable_underloaded,
            "unstable_critical": self.unstable_critical,
            "max_real_underloaded": num(self.max_real_underloaded),
            "max_real_critical": num(self.max_real_critical),
            "unstable_example_underloaded": self.unstable_example_underloaded,
            "unstable_example_critical": self.unstable_example_critical,
            "stable_example": self.stable_example,
        }


@dataclass(frozen=True)
class SearchResult:
    """All sizes searched, and the smallest sizes (by I + J, then I) showing instability.

    ``seed`` is the root seed of the search; :meth:`to_dict` writes it as ``"root_seed"``
    (the key of the pipeline's ``search.json``).
    """

    seed: int
    settings: dict[str, Any]
    sizes: tuple[SizeSummary, ...]
    smallest_unstable_underloaded: tuple[int, int] | None
    smallest_unstable_critical: tuple[int, int] | None

    @classmethod
    def from_summaries(
        cls, seed: int, settings: dict[str, Any], sizes: Iterable[SizeSummary]
    ) -> SearchResult:
        """The result of the sizes searched, with the smallest unstable sizes found."""
        sizes = tuple(sizes)
        return cls(
            seed=int(seed),
            settings=settings,
            sizes=sizes,
            smallest_unstable_underloaded=_smallest(sizes, "unstable_underloaded"),
            smallest_unstable_critical=_smallest(sizes, "unstable_critical"),
        )

    def to_dict(self) -> dict[str, Any]:
        def size(s: tuple[int, int] | None) -> list[int] | None:
            return None if s is None else [int(s[0]), int(s[1])]

        return {
            "root_seed": int(self.seed),
            "settings": self.settings,
            "sizes": [s.to_dict() for s in self.sizes],
            "smallest_unstable_underloaded": size(self.smallest_unstable_underloaded),
            "smallest_unstable_critical": size(self.smallest_unstable_critical),
        }


def _search_size(seed, n_i, n_j, samples: range, kwargs, tol) -> SizeSummary:
    n_u = n_c = 0
    max_u = max_c = float("-inf")
    ex_u = ex_c = ex_s = None
    p = centering(n_i)
    for k in samples:
        system = sample_system(seed, n_i, n_j, k, **kwargs)
        # a spanning tree by construction (random_spanning_tree): no check per sample
        a_u = tree_a_underloaded(system.activities, system.rates, system.pool_sizes, check=False)
        eig_u = spectrum(a_u)
        eig_c, others = critical_spectrum_of(a_u @ p)
        threshold = tol * float(system.rates.max())
        re_u = float(eig_u.real.max())
        re_c = float(others.real.max()) if others.size else float("-inf")
        max_u, max_c = max(max_u, re_u), max(max_c, re_c)
        bad_u, bad_c = re_u > threshold, re_c > threshold
        n_u += bad_u
        n_c += bad_c
        if bad_u and ex_u is None:
            ex_u = _example(k, system, eig_u, eig_c)
        if bad_c and ex_c is None:
            ex_c = _example(k, system, eig_u, eig_c)
        if ex_s is None and re_u < -threshold and re_c < -threshold:
            ex_s = _example(k, system, eig_u, eig_c)
    return SizeSummary(n_i, n_j, len(samples), n_u, n_c, max_u, max_c, ex_u, ex_c, ex_s)


def search_size(
    seed: int,
    size: tuple[int, int],
    samples: int | range,
    *,
    mu_range: Sequence[float] = (0.1, 10.0),
    flow_range: Sequence[float] = (0.1, 1.0),
    rho: float = 0.9,
    tol: float = 1e-9,
) -> SizeSummary:
    """:func:`instability_search`'s summary of one size (I, J) over ``samples``: a count
    (samples ``0..samples-1``) or a block of sample indices (``range(1000, 2000)``), whose
    summaries :meth:`SizeSummary.merge` combines into that of the whole range."""
    block = range(int(samples)) if isinstance(samples, int | np.integer) else samples
    if not isinstance(block, range) or block.step != 1 or len(block) < 1 or block.start < 0:
        raise ServerPoolError(f"samples must be >= 1 or a range of indices, got {samples!r}")
    kwargs = {"mu_range": tuple(mu_range), "flow_range": tuple(flow_range), "rho": float(rho)}
    return _search_size(seed, int(size[0]), int(size[1]), block, kwargs, tol)


def _smallest(summaries: Iterable[SizeSummary], attr: str) -> tuple[int, int] | None:
    hits = [(s.n_classes, s.n_pools) for s in summaries if getattr(s, attr) > 0]
    return min(hits, key=lambda s: (s[0] + s[1], s[0])) if hits else None


def instability_search(
    seed: int,
    sizes: Iterable[tuple[int, int]],
    samples_per_size: int,
    mu_range: Sequence[float] = (0.1, 10.0),
    *,
    flow_range: Sequence[float] = (0.1, 1.0),
    rho: float = 0.9,
    tol: float = 1e-9,
) -> SearchResult:
    """Sample ``samples_per_size`` random tree systems per size (I, J) and count instability.

    A sample counts as unstable for A_u (resp. A_c) when the largest real part of its
    spectrum (A_c: without the structural zero) exceeds ``tol * max(mu)``; stable examples
    need both below ``-tol * max(mu)``. ``mu_range`` in jobs per unit time per server.

    One class or one pool is always stable (Sec. 3); the search is reproducible:

    >>> result = instability_search(7, [(1, 3), (3, 1)], 20)
    >>> [(s.n_classes, s.n_pools, s.unstable_underloaded) for s in result.sizes]
    [(1, 3, 0), (3, 1, 0)]
    >>> result.to_dict() == instability_search(7, [(1, 3), (3, 1)], 20).to_dict()
    True
    """
    sizes = [(int(i), int(j)) for i, j in sizes]
    if samples_per_size < 1:
        raise ServerPoolError(f"samples_per_size must be >= 1, got {samples_per_size}")
    kwargs = {"mu_range": tuple(mu_range), "flow_range": tuple(flow_range), "rho": float(rho)}
    summaries = tuple(
        _search_size(seed, n_i, n_j, range(samples_per_size), kwargs, tol) for n_i, n_j in sizes
    )
    settings = search_settings(
        sizes, samples_per_size, mu_range=mu_range, flow_range=flow_range, rho=rho, tol=tol
    )
    return SearchResult.from_summaries(seed, settings, summaries)


def search_settings(
    sizes: Iterable[tuple[int, int]],
    samples_per_size: int,
    *,
    mu_range: Sequence[float],
    flow_range: Sequence[float],
    rho: float,
    tol: float,
) -> dict[str, Any]:
    """The settings of a search as :attr:`SearchResult.settings` records them (JSON-ready:
    ``sizes`` as ``[I, J]`` lists, the ranges as lists of floats)."""
    return {
        "sizes": [[int(i), int(j)] for i, j in sizes],
        "samples_per_size": int(samples_per_size),
        "mu_range": [float(x) for x in mu_range],
        "flow_range": [float(x) for x in flow_range],
        "rho": float(rho),
        "tol": float(tol),
    }


def alternating_path_system(
    ratio: float,
    pool_sizes: Sequence[float] = (50.0, 1.0, 1.0, 1.2),
    rho: float = 0.9,
) -> ServerPoolSystem:
    """A 3-class, 4-pool path whose A_u loses stability as ``ratio`` grows (ours).

    The activity tree is the path pool 4 - class 2 - pool 2 - class 1 - pool 3 - class 3 -
    pool 1 (numbered from 1) with rates alternating ``ratio, 1, ratio, 1, ratio, 1`` along
    it: mu_24 = mu_12 = mu_33 = ``ratio`` and mu_22 = mu_13 = mu_31 = 1 (jobs per unit time
    per server). This is the shape that the seeded search and a local optimisation found
    for the smallest unstable size (I, J) = (3, 4). With the default ``pool_sizes`` (servers
    per unit r) the largest real part of spec(A_u) is affine in ``ratio`` and crosses zero
    at ratio ~ 23.3; A_c stays stable. The nominal occupancies are rho beta_j on the two
    leaf pools and rho beta_j / 2 per class on the two inner pools; the arrival rates
    (customers per unit time per unit r) follow, so the tree is the SPP optimum at ``rho``.
    """
    beta = np.asarray(pool_sizes, dtype=float)
    if beta.shape != (4,):
        raise ServerPoolError(f"pool_sizes must have 4 entries, got shape {beta.shape}")
    if not ratio > 0 or not rho > 0:
        raise ServerPoolError(f"ratio and rho must be > 0, got {ratio}, {rho}")
    mu = np.zeros((3, 4))
    mu[0, 1] = mu[1, 3] = mu[2, 2] = ratio
    mu[0, 2] = mu[1, 1] = mu[2, 0] = 1.0
    psi = np.zeros((3, 4))
    psi[1, 3], psi[2, 0] = rho * beta[3], rho * beta[0]
    psi[0, 1] = psi[1, 1] = rho * beta[1] / 2
    psi[0, 2] = psi[2, 2] = rho * beta[2] / 2
    return ServerPoolSystem(arrival_rates=(mu * psi).sum(axis=1), pool_sizes=beta, rates=mu)
