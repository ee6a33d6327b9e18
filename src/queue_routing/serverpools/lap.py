"""Leaf Activity Priority (LAP): a static priority discipline beside LQFS-LB.

Stolyar & Yudovina, "Tightness of invariant distributions of a large-scale flexible service
system under a priority discipline", Stochastic Systems 2 (2012) 381-408, and Stolyar,
"Diffusion scale tightness of invariant distributions of a large-scale flexible service
system", Adv. Appl. Probab. 47 (2015): for the model of :mod:`.model` with rho < 1, LAP keeps
the r-th system stable for all large r and its diffusion-scaled invariant laws tight. Our
reading of the discipline (``docs/serverpools.md``, "What to do instead: LAP"):

Priorities
    On the basic activity tree E (I + J - 1 edges) with a chosen *root pool* j_0: repeatedly
    take a leaf of the remaining tree other than j_0 (a class or pool with one remaining
    edge), give its edge the next priority (the first edge the highest) and delete the leaf.
    j_0 is the last node left. A node's last edge is its edge towards j_0, so every class and
    every non-root pool gives its root-ward activity the lowest priority. Among several leaves
    we take the lowest-numbered node, classes before pools (any choice gives the same
    equilibrium and the same linearisation, below).
Arrival
    A class-i customer takes an idle server in the pool of its highest-priority activity
    that has one; otherwise it joins queue i.
Service completion
    A freed server of pool j takes the head customer of the class of its highest-priority
    activity with a non-empty queue; otherwise it idles.

Equilibrium. At the fluid equilibrium every pool but j_0 is full, j_0 carries the slack and
there are no queues: the occupancies psi_e (busy servers per unit r) solve the I + J - 1
linear equations

    sum_j mu_ij psi_ij = lambda_i  (every class i),   sum_i psi_ij = beta_j  (j != j_0),

uniquely on a tree (leaf elimination: a class leaf's last edge carries its residual
arrivals, a pool leaf's last edge its residual capacity). It depends on j_0 only. j_0 is
*admissible* when every psi_e > 0 and j_0's load sum_i psi_ij0 / beta_j0 < 1.

Linearisation. Near the equilibrium, with the class totals x_i (customers per unit r) as the
state, the same elimination gives psi_E = M x + c: a class leaf's last edge takes x_i minus
its earlier edges, a non-root pool leaf's last edge beta_j minus its earlier edges. Then
x' = lambda - G psi_E (G of :func:`~.linear.flow_matrix`), so x' = A (x - x*) with A = G M.
In the elimination order of the classes A is lower triangular and its diagonal entries are
-mu of each class's lowest-priority (root-ward) activity: real, negative, always stable.

Units: psi, x per unit r; rates per unit time; eigenvalues per unit time.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArgumentError
from .linear import Analysis, analyze, as_solution, basic_tree, flow_matrix, spectrum
from .model import ServerPoolSystem, SPPSolution


def _pairs(eigenvalues: np.ndarray) -> list[list[float]]:
    return [[float(w.real), float(w.imag)] for w in eigenvalues]


__all__ = [
    "DisciplineComparison",
    "LAPAnalysis",
    "LAPEquilibrium",
    "analyze_disciplines",
    "analyze_lap",
    "lap_drift",
    "lap_equilibrium",
    "lap_priorities",
    "lap_roots",
    "static_drift",
]


def lap_priorities(edges, n_classes: int, n_pools: int, root_pool: int) -> np.ndarray:
    """The LAP priority order: indices into ``edges``, highest priority first.

    ``edges``: the basic tree, shape ``(I + J - 1, 2)``, 0-based (class, pool); ``root_pool``:
    0-based. Leaf elimination (module docstring): the lowest-numbered leaf other than the root,
    classes before pools, is deleted next and its edge gets the next priority.

    The N-shape class 1 - pool 1 - class 2 - pool 2 (edges 0, 1, 2) rooted at pool 2: class 1
    is the only leaf besides the root, then pool 1, then class 2; rooted at pool 1, class 1 and
    pool 2 are both leaves (class 1 first), then class 2:

    >>> edges = np.array([[0, 0], [1, 0], [1, 1]])
    >>> lap_priorities(edges, 2, 2, root_pool=1).tolist()
    [0, 1, 2]
    >>> lap_priorities(edges, 2, 2, root_pool=0).tolist()
    [0, 2, 1]
    """
    edges = np.asarray(edges, dtype=np.int64)
    n_nodes = n_classes + n_pools
    root = n_classes + int(root_pool)
    incident: list[set[int]] = [set() for _ in range(n_nodes)]
    for e, (i, j) in enumerate(edges):
        incident[int(i)].add(e)
        incident[n_classes + int(j)].add(e)
    heap = [v for v in range(n_nodes) if v != root and len(incident[v]) == 1]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        v = heapq.heappop(heap)
        (e,) = incident[v]
        order.append(e)
        incident[v].clear()
        i, j = int(edges[e, 0]), n_classes + int(edges[e, 1])
        u = i + j - v
        incident[u].discard(e)
        if u != root and len(incident[u]) == 1:
            heapq.heappush(heap, u)
    if len(order) != len(edges):
        raise ValueError("edges must form a spanning tree of the classes and pools")
    return np.asarray(order, dtype=np.int64)


def _eliminate(edges, order, n_classes, class_rhs, pool_rhs, class_weight):
    """Solve sum_j w_e z_e = class_rhs[i] (every class), sum_i z_e = pool_rhs[j] (every pool
    but the root) along the elimination ``order`` (each edge's leaf end known).

    ``class_rhs`` (I, m), ``pool_rhs`` (J, m); ``class_weight`` (K,) the weight of an edge in
    its class's equation. Returns z, shape (K, m).
    """
    k = len(edges)
    remaining = np.zeros(n_classes + int(edges[:, 1].max()) + 1, dtype=np.int64)
    for i, j in edges:
        remaining[i] += 1
        remaining[n_classes + j] += 1
    class_res = np.array(class_rhs, dtype=float)
    pool_res = np.array(pool_rhs, dtype=float)
    z = np.zeros((k, class_res.shape[1]))
    for e in order:
        i, j = int(edges[e, 0]), int(edges[e, 1])
        if remaining[i] == 1:  # the class is the leaf: its residual arrivals
            z[e] = class_res[i] / class_weight[e]
        else:  # the pool is the leaf: its residual capacity
            z[e] = pool_res[j]
        class_res[i] -= class_weight[e] * z[e]
        pool_res[j] -= z[e]
        remaining[i] -= 1
        remaining[n_classes + j] -= 1
    return z


@dataclass(frozen=True)
class LAPEquilibrium:
    """The LAP fluid equilibrium for one root pool (module docstring).

    Attributes
    ----------
    root_pool:
        j_0, 0-based.
    priorities:
        Indices into ``solution.basic``, highest priority first (:func:`lap_priorities`).
    occupancy:
        psi_ij, busy servers per unit r, shape ``(I, J)`` (0 off the basic tree).
    class_totals:
        x*_i = sum_j psi_ij (no queues), customers per unit r, shape ``(I,)``.
    root_load:
        sum_i psi_ij0 / beta_j0 (dimensionless).
    admissible:
        Every basic occupancy > 0 and ``root_load < 1``.
    reason:
        Why not admissible (one phrase; empty when admissible).
    """

    root_pool: int
    priorities: np.ndarray
    occupancy: np.ndarray
    class_totals: np.ndarray
    root_load: float
    admissible: bool
    reason: str
    solution: SPPSolution = field(repr=False, compare=False)

    @property
    def customers(self) -> float:
        """sum_i x*_i: customers in the system per unit r at the equilibrium."""
        return float(self.class_totals.sum())

    @property
    def sojourn_time(self) -> float:
        """Mean time in the system by Little's law, sum x* / sum lambda (units of 1/mu)."""
        return self.customers / float(self.solution.system.arrival_rates.sum())

    @property
    def priority_edges(self) -> np.ndarray:
        """The basic activities in priority order, 0-based (class, pool), shape ``(K, 2)``."""
        return self.solution.basic[self.priorities]


def lap_equilibrium(
    system_or_solution: ServerPoolSystem | SPPSolution, root_pool: int
) -> LAPEquilibrium:
    """The LAP equilibrium with root ``root_pool`` (0-based) on the SPP's basic tree.

    The N-shape with lambda = (1, 2), beta = (2, 2), mu = [[1, 0], [2, 1]] rooted at pool 2:
    class 1 (a leaf) fills psi_11 = lambda_1 / mu_11 = 1, pool 1 (full) leaves psi_21 = 1 for
    class 2, which sends its remaining 2 - 2 * 1 = 0 to pool 2: not admissible.

    >>> n_shape = ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])
    >>> eq = lap_equilibrium(n_shape, 1)
    >>> eq.occupancy.tolist(), eq.admissible, eq.reason
    ([[1.0, 0.0], [1.0, 0.0]], False, 'occupancy of (class 2, pool 2) is 0 <= 0')
    >>> eq = lap_equilibrium(n_shape, 0)  # pool 2 full: psi_22 = 2, class 2 needs 0 more
    >>> eq.occupancy.tolist(), eq.admissible
    ([[1.0, 0.0], [0.0, 2.0]], False)
    """
    solution = as_solution(system_or_solution)
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    root_pool = _root(root_pool, n_j)
    edges = basic_tree(solution)
    order = lap_priorities(edges, n_i, n_j, root_pool)
    mu = system.rates[edges[:, 0], edges[:, 1]]
    pools = system.pool_sizes.copy()
    pools[root_pool] = np.nan  # never used: the root has no equation
    z = _eliminate(edges, order, n_i, system.arrival_rates[:, None], pools[:, None], mu)[:, 0]
    occupancy = np.zeros((n_i, n_j))
    occupancy[edges[:, 0], edges[:, 1]] = z
    root_load = float(occupancy[:, root_pool].sum() / system.pool_sizes[root_pool])
    reason = ""
    bad = np.flatnonzero(~(z > 0))
    if bad.size:
        e = int(bad[np.argmin(z[bad])])
        i, j = (int(k) for k in edges[e])
        reason = f"occupancy of (class {i + 1}, pool {j + 1}) is {z[e]:.4g} <= 0"
    elif not root_load < 1.0:
        reason = f"root load {root_load:.4g} >= 1"
    for a in (occupancy, order):
        a.setflags(write=False)
    totals = occupancy.sum(axis=1)
    totals.setflags(write=False)
    return LAPEquilibrium(
        root_pool=root_pool,
        priorities=order,
        occupancy=occupancy,
        class_totals=totals,
        root_load=root_load,
        admissible=not reason,
        reason=reason,
        solution=solution,
    )


def _root(root_pool: Any, n_pools: int) -> int:
    if isinstance(root_pool, bool) or not isinstance(root_pool, int | np.integer):
        raise ArgumentError("root_pool", f"root_pool must be a pool index, got {root_pool!r:.20}")
    if not 0 <= int(root_pool) < n_pools:
        raise ArgumentError(
            "root_pool", f"root_pool must be a pool 1..{n_pools}, got pool {int(root_pool) + 1}"
        )
    return int(root_pool)


def lap_roots(system_or_solution: ServerPoolSystem | SPPSolution) -> list[LAPEquilibrium]:
    """Every pool as a root, with its equilibrium and whether it is admissible (in pool order).

    >>> from queue_routing.serverpools.instances import example_system
    >>> [(eq.root_pool + 1, eq.admissible) for eq in lap_roots(example_system("stable"))]
    [(1, False), (2, False), (3, True)]
    """
    solution = as_solution(system_or_solution)
    return [lap_equilibrium(solution, j) for j in range(solution.system.n_pools)]


def lap_drift(equilibrium: LAPEquilibrium) -> np.ndarray:
    """A = G M, shape ``(I, I)``, per unit time: the linearised LAP fluid model in class totals
    near ``equilibrium`` (module docstring; every pool but the root full, no queues).

    The stable example rooted at pool 3 (classes eliminated in the order 3, 1, 2): x_3' has
    -mu_33 = -1, x_1' has -mu_12 = -2 (pool 1 is full with class 1), and class 2 gets what
    class 1 leaves of pool 2 (d psi_22 / d x_1 = -1) and the rest on (2, 3), so
    d x_2' / d x_1 = 0.5 - 1.5 = -1 and d x_2' / d x_2 = -mu_23 = -1.5:

    >>> from queue_routing.serverpools.instances import example_system
    >>> eq = lap_equilibrium(example_system("stable"), 2)
    >>> lap_drift(eq).round(6).tolist()
    [[-2.0, 0.0, 0.0], [-1.0, -1.5, 0.0], [0.0, 0.0, -1.0]]
    """
    solution = equilibrium.solution
    system = solution.system
    edges = solution.basic
    n_i = system.n_classes
    mu = system.rates[edges[:, 0], edges[:, 1]]
    # the class rows: x_i on the class's own equation (weight 1: psi counts customers)
    m = _eliminate(
        edges,
        equilibrium.priorities,
        n_i,
        np.eye(n_i),
        np.zeros((system.n_pools, n_i)),
        np.ones_like(mu),
    )
    return flow_matrix(solution) @ m


def static_drift(system_or_solution: ServerPoolSystem | SPPSolution) -> np.ndarray:
    """The fluid drift of static routing per activity: -diag(mu_e), shape ``(K, K)`` in the
    order of ``solution.basic`` (each activity an M/M/N-like station fed at rate flow_e)."""
    solution = as_solution(system_or_solution)
    edges = solution.basic
    return -np.diag(solution.system.rates[edges[:, 0], edges[:, 1]])


@dataclass(frozen=True)
class LAPAnalysis:
    """The LAP equilibrium at one root, its linearisation A and spectrum (:func:`analyze_lap`).

    Attributes
    ----------
    equilibrium:
        The chosen root's :class:`LAPEquilibrium` (admissible).
    drift:
        A = G M, shape ``(I, I)``, per unit time (:func:`lap_drift`).
    eigenvalues:
        Its spectrum sorted by decreasing real part (real: A is triangular up to a
        permutation), per unit time.
    stable:
        Every eigenvalue's real part below ``-1e-9 max mu``.
    roots:
        Every pool's equilibrium (:func:`lap_roots`), the chosen one among them.
    """

    equilibrium: LAPEquilibrium
    drift: np.ndarray
    eigenvalues: np.ndarray
    stable: bool
    roots: tuple[LAPEquilibrium, ...] = field(repr=False)

    @property
    def root_pool(self) -> int:
        return self.equilibrium.root_pool

    def to_dict(self) -> dict[str, Any]:
        """``{"policy": "lap", "root_pool", "priorities": [{"class", "pool", "rate"}] (highest
        first), "equilibrium": [x*_i] (class totals per unit r), "occupancy": [{"class",
        "pool", "busy"}], "root_load", "customers", "sojourn_time", "eigenvalues": [[re, im]],
        "stable", "admissible_roots"}``; classes and pools numbered from 1."""
        eq = self.equilibrium
        system = eq.solution.system
        return {
            "policy": "lap",
            "root_pool": eq.root_pool + 1,
            "priorities": [
                {"class": int(i) + 1, "pool": int(j) + 1, "rate": float(system.rates[i, j])}
                for i, j in eq.priority_edges
            ],
            "equilibrium": eq.class_totals.tolist(),
            "occupancy": [
                {"class": int(i) + 1, "pool": int(j) + 1, "busy": float(eq.occupancy[i, j])}
                for i, j in eq.solution.basic
            ],
            "root_load": float(eq.root_load),
            "customers": eq.customers,
            "sojourn_time": eq.sojourn_time,
            "eigenvalues": _pairs(self.eigenvalues),
            "stable": bool(self.stable),
            "admissible_roots": [r.root_pool + 1 for r in self.roots if r.admissible],
        }


def _roots_text(roots) -> str:
    return "; ".join(f"pool {eq.root_pool + 1}: {eq.reason}" for eq in roots)


def analyze_lap(
    system: ServerPoolSystem | SPPSolution | dict[str, Any], root_pool: int | None = None
) -> LAPAnalysis:
    """LAP at ``root_pool`` (0-based), or at the admissible root with the fewest customers
    per unit r (lowest-numbered among equals) when ``root_pool`` is None.

    Raises :class:`~queue_routing.errors.ArgumentError` (``root_pool``) naming every root
    tried and why it fails when the given root, or every root, is not admissible.

    >>> from queue_routing.serverpools.instances import example_system
    >>> out = analyze_lap(example_system("stable"))
    >>> out.root_pool, out.to_dict()["eigenvalues"], out.stable
    (2, [[-1.0, 0.0], [-1.5, 0.0], [-2.0, 0.0]], True)
    """
    if isinstance(system, dict):
        system = ServerPoolSystem.from_dict(system)
    solution = as_solution(system)
    roots = tuple(lap_roots(solution))
    if root_pool is not None:
        root_pool = _root(root_pool, solution.system.n_pools)
        chosen = roots[root_pool]
        if not chosen.admissible:
            raise ArgumentError(
                "root_pool",
                f"root_pool: pool {root_pool + 1} is not an admissible LAP root ({chosen.reason})",
            )
    else:
        good = [eq for eq in roots if eq.admissible]
        if not good:
            raise ArgumentError(
                "root_pool",
                f"root_pool: no pool is an admissible LAP root ({_roots_text(roots)})",
            )
        chosen = min(good, key=lambda eq: (eq.customers, eq.root_pool))
    a = lap_drift(chosen)
    eig = spectrum(a)
    scale = 1e-9 * float(solution.system.rates.max())
    return LAPAnalysis(
        equilibrium=chosen,
        drift=a,
        eigenvalues=eig,
        stable=bool(eig.real.max() < -scale),
        roots=roots,
    )


@dataclass(frozen=True)
class DisciplineComparison:
    """LQFS-LB (:class:`~.linear.Analysis`) and LAP (:class:`LAPAnalysis`) on one system."""

    lqfs_lb: Analysis
    lap: LAPAnalysis

    def to_dict(self) -> dict[str, Any]:
        """``{"lqfs_lb": {..., "customers", "sojourn_time"}, "lap": {...}}``."""
        sol = self.lqfs_lb.solution
        customers = float(sol.class_occupancy.sum())
        return {
            "lqfs_lb": {
                **self.lqfs_lb.to_dict(),
                "equilibrium": sol.class_occupancy.tolist(),
                "customers": customers,
                "sojourn_time": customers / float(sol.system.arrival_rates.sum()),
            },
            "lap": self.lap.to_dict(),
        }


def analyze_disciplines(
    system: ServerPoolSystem | dict[str, Any], root_pool: int | None = None
) -> DisciplineComparison:
    """Both disciplines side by side: :func:`~.linear.analyze` and :func:`analyze_lap`.

    >>> from queue_routing.serverpools.instances import example_system
    >>> both = analyze_disciplines(example_system("large_cycle")).to_dict()
    >>> both["lqfs_lb"]["stable_underloaded"], both["lap"]["stable"]
    (False, True)
    """
    if isinstance(system, dict):
        system = ServerPoolSystem.from_dict(system)
    return DisciplineComparison(lqfs_lb=analyze(system), lap=analyze_lap(system, root_pool))
