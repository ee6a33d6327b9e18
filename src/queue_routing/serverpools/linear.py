"""Linearisation of the LQFS-LB fluid model near its equilibrium (Sec. 3, Theorems 3.1-3.2).

Underloaded (rho < 1), Theorem 3.1: near the equilibrium there is no queueing and all pool
loads are equal (state space collapse), so the state is the vector of class totals
psi_i = sum_j psi_ij (busy servers per unit r). On the basic tree E the occupancies follow
linearly, psi_E = M psi_I, where z = M y solves

    sum_j z_ij = y_i  (i in I),     sum_i z_ij = rho(y) beta_j  (j in J),
    rho(y) = sum_i y_i / sum_j beta_j,

(found by peeling leaves, :func:`~.tree.peel_leaves`: a class leaf puts all of y_i on its
edge, a pool leaf gets rho(y) beta_j; remove the leaf and repeat). Then
psi_i' = lambda_i - sum_j mu_ij psi_ij, i.e. psi_I' = A_u (psi_I - psi*_I) with A_u = G M
and G_{i,(kj)} = -mu_kj if i = k, else 0.

Critically loaded (rho = 1) with positive queues, Theorem 3.2: all servers are busy, so
sum_i psi_ij = beta_j, and all queues are equal, q = (sum_i x_i - sum_j beta_j)/I, where the
state x_i = psi_i + q_i is the number of class-i customers in the system (per unit r). Then
psi_I = x - q 1 = P x + (sum_j beta_j / I) 1 with P = Id - 1 1^T / I, and
x_i' = lambda_i - sum_j mu_ij psi_ij gives x' = A_c (x - x*) with

    A_c = G M P.

Structural zero mode: A_c 1 = 0 exactly (P 1 = 0). Adding the same amount to every queue
moves the state along the line of equilibria {x* + q 1 : q > 0} and is neither damped nor
amplified. This is the only structural zero; stability of A_c means every eigenvalue of the
map induced on R^I / span(1), i.e. of V^T A_c V for an orthonormal basis V of 1^perp, has
negative real part. A_c does not depend on beta (for y with sum_i y_i = 0 the pool targets
rho(y) beta_j vanish), only on the tree and the rates mu.

Units: eigenvalues and entries of A_u, A_c are per unit time; psi, x per unit r.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import NotUnderloadedError, ServerPoolError
from .model import ServerPoolSystem, SPPSolution, check_tol
from .spp import solve_spp
from .tree import check_spanning_tree, peel_leaves

__all__ = [
    "Analysis",
    "LinearStability",
    "a_critical",
    "a_underloaded",
    "analyze",
    "centering",
    "critical_spectrum",
    "critical_spectrum_of",
    "critical_vector_field",
    "eigenvalue_text",
    "flow_matrix",
    "load_balancing_map",
    "spectrum",
    "stability_verdict",
    "tree_a_underloaded",
    "underloaded_vector_field",
]


def as_solution(system_or_solution: ServerPoolSystem | SPPSolution) -> SPPSolution:
    if isinstance(system_or_solution, SPPSolution):
        return system_or_solution
    if isinstance(system_or_solution, ServerPoolSystem):
        return solve_spp(system_or_solution)
    raise ServerPoolError(
        f"expected a ServerPoolSystem or SPPSolution, got {type(system_or_solution).__name__}"
    )


def basic_tree(solution: SPPSolution) -> np.ndarray:
    """The basic activities, checked to form a spanning tree of I u J."""
    system = solution.system
    return check_spanning_tree(solution.basic, system.n_classes, system.n_pools)


def load_balancing_map(system_or_solution: ServerPoolSystem | SPPSolution) -> np.ndarray:
    """M, shape ``(K_b, I)``: class totals psi_I -> occupancies psi_E on the basic tree.

    Sec. 3 (proof of Theorem 3.1): rows in the order of ``solution.basic``; z = M y solves
    sum_j z_ij = y_i and sum_i z_ij = rho(y) beta_j with rho(y) = sum_i y_i / sum_j beta_j.
    Dimensionless (servers per server).

    On the N-shape class 1 - pool 1 - class 2 - pool 2 with beta = (2, 2): class 1 is a
    leaf (z_11 = y_1), pool 2 is a leaf (z_22 = rho(y) beta_2 = (y_1 + y_2) / 2), and
    z_21 = y_2 - z_22; M maps the equilibrium class totals psi*_I to the occupancies psi*_E:

    >>> sol = solve_spp(ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]]))
    >>> m = load_balancing_map(sol)
    >>> m.tolist()  # rows (1,1), (2,1), (2,2); columns y_1, y_2
    [[1.0, 0.0], [-0.5, 0.5], [0.5, 0.5]]
    >>> psi_e = sol.occupancy[sol.basic[:, 0], sol.basic[:, 1]]
    >>> bool(np.allclose(m @ sol.class_occupancy, psi_e))
    True
    """
    solution = as_solution(system_or_solution)
    return _load_balancing_map(basic_tree(solution), solution.system.pool_sizes)


def _load_balancing_map(edges: np.ndarray, beta: np.ndarray) -> np.ndarray:
    n_i = int(edges[:, 0].max()) + 1  # a spanning tree touches every class
    pool_targets = np.outer(beta / beta.sum(), np.ones(n_i))
    return peel_leaves(edges, np.eye(n_i), pool_targets)


def flow_matrix(system_or_solution: ServerPoolSystem | SPPSolution) -> np.ndarray:
    """G, shape ``(I, K_b)``: G_{i,(kj)} = -mu_kj if i = k, else 0 (per unit time)."""
    solution = as_solution(system_or_solution)
    return _flow_matrix(basic_tree(solution), solution.system.rates)


def _flow_matrix(edges: np.ndarray, rates: np.ndarray) -> np.ndarray:
    g = np.zeros((rates.shape[0], len(edges)))
    g[edges[:, 0], np.arange(len(edges))] = -rates[edges[:, 0], edges[:, 1]]
    return g


def tree_a_underloaded(
    edges: np.ndarray, rates: np.ndarray, pool_sizes: np.ndarray, *, check: bool = True
) -> np.ndarray:
    """A_u = G M (per unit time) from the basic tree alone: ``edges`` (K_b, 2), a spanning
    tree of I u J (0-based (class, pool), checked), ``rates`` mu (I, J) in jobs per unit time
    per server, ``pool_sizes`` beta (J,) in servers per unit r. ``check=False`` skips the
    spanning-tree check, for callers whose edges are a tree by construction (the search).

    A_u depends on the tree, the rates on it and the proportions beta_j / sum beta only
    (module docstring), not on the arrival rates: this is :func:`a_underloaded` of any
    solution with ``basic = edges``, bit for bit, without solving the SPP (what the
    instability search needs, whose samples are built with a known optimal tree).

    >>> edges = np.array([[0, 0], [1, 0], [1, 1]])  # the N-shape of load_balancing_map
    >>> mu = np.array([[1.0, 0.0], [2.0, 1.0]])
    >>> tree_a_underloaded(edges, mu, np.array([2.0, 2.0])).tolist()
    [[-1.0, 0.0], [0.5, -1.5]]
    """
    rates = np.asarray(rates, dtype=float)
    edges = np.asarray(edges)
    if check:
        edges = check_spanning_tree(edges, rates.shape[0], rates.shape[1])
    return _flow_matrix(edges, rates) @ _load_balancing_map(edges, np.asarray(pool_sizes, float))


def a_underloaded(system_or_solution: ServerPoolSystem | SPPSolution) -> np.ndarray:
    """A_u = G M, shape ``(I, I)``, per unit time (Theorem 3.1 / Lemma 3.3(i)).

    With a single pool every class is a leaf of the tree, so A_u = -diag(mu_i1):

    >>> star = ServerPoolSystem([1.0, 1.0], [4.0], [[1.0], [2.0]])
    >>> bool(np.allclose(a_underloaded(star), -np.diag([1.0, 2.0])))
    True
    """
    solution = as_solution(system_or_solution)
    edges = basic_tree(solution)
    system = solution.system
    return _flow_matrix(edges, system.rates) @ _load_balancing_map(edges, system.pool_sizes)


def centering(n: int) -> np.ndarray:
    """P = Id - 1 1^T / n, shape ``(n, n)`` (dimensionless): A_c = A_u P (Theorem 3.2)."""
    return np.eye(n) - np.full((n, n), 1.0 / n)


def a_critical(system_or_solution: ServerPoolSystem | SPPSolution) -> np.ndarray:
    """A_c = G M P, shape ``(I, I)``, per unit time (Theorem 3.2; module docstring).

    The state is the class totals x_i (in service plus queued); A_c @ ones = 0 is the
    structural zero mode of the line of critical equilibria.

    >>> a_c = a_critical(ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]]))
    >>> bool(np.allclose(a_c @ np.ones(2), 0.0))
    True
    """
    solution = as_solution(system_or_solution)
    n_i = solution.system.n_classes
    return a_underloaded(solution) @ centering(n_i)


def _sorted(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, dtype=complex)
    return w[np.lexsort((-w.imag, -w.real))]


def spectrum(a: np.ndarray) -> np.ndarray:
    """Eigenvalues of ``a`` sorted by decreasing real part (ties: decreasing imaginary part).

    ``spectrum(a)[0]`` has the largest real part. Complex dtype, shape ``(n,)``.
    """
    return _sorted(np.linalg.eigvals(np.asarray(a, dtype=float)))


@functools.lru_cache(maxsize=64)
def _complement_basis(n: int) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of the ones vector, ``(n, n - 1)``
    (read-only: computed once per n)."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, : n - 1]]))
    basis = q[:, 1:]
    basis.flags.writeable = False
    return basis


def critical_spectrum(system_or_solution: ServerPoolSystem | SPPSolution):
    """(full spectrum of A_c with the structural zero set to exactly 0, the I - 1 others).

    The others are the eigenvalues of V^T A_c V with V an orthonormal basis of 1^perp: the
    map A_c induces on R^I / span(1), which has A_c's spectrum minus the structural zero.
    """
    return critical_spectrum_of(a_critical(system_or_solution))


def critical_spectrum_of(a_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`critical_spectrum` of the matrix A_c (per unit time, shape ``(I, I)``), e.g.
    ``a_u @ (Id - 1 1^T / I)`` from :func:`tree_a_underloaded`."""
    a_c = np.asarray(a_c, dtype=float)
    n = a_c.shape[0]
    v = _complement_basis(n)
    others = spectrum(v.T @ a_c @ v) if n > 1 else np.zeros(0, dtype=complex)
    return _sorted(np.concatenate([others, [0.0]])), others


@dataclass(frozen=True)
class LinearStability:
    """Local stability of the fluid equilibrium (Theorems 3.1-3.2).

    Attributes
    ----------
    eigenvalues_underloaded:
        Spectrum of A_u, per unit time, sorted by decreasing real part, shape ``(I,)``.
    eigenvalues_critical:
        Spectrum of A_c including its structural zero (set to exactly 0), shape ``(I,)``.
    max_real_underloaded:
        Largest real part of the spectrum of A_u (A_u has no structural zero modes).
    max_real_critical:
        Largest real part over the I - 1 non-structural eigenvalues of A_c; ``-inf`` when
        I = 1 (A_c = 0: only the structural mode).
    stable_underloaded, stable_critical:
        Whether the respective maximum real part is < ``-tol * max(mu)``: properties of the
        matrices, i.e. of the basic tree, the rates and the pool proportions beta_j / sum beta
        (A_u and A_c do not depend on lambda). They are the local stability of the fluid
        equilibrium only in the matching ``regime``: for an overloaded system
        ``stable_underloaded`` describes the same system with every lambda_i scaled down
        below capacity, not the system itself (which has no equilibrium).
    structural_zeros_critical:
        Number of structural zero modes removed from A_c (always 1: the ones vector).
    rho:
        The SPP optimum (dimensionless).
    regime:
        ``"underloaded"`` (rho < 1 - tol: Theorem 3.1 applies), ``"critical"``
        (|rho - 1| <= tol: Theorem 3.2) or ``"overloaded"`` (rho > 1 + tol: no fluid
        equilibrium, queues grow).
    """

    eigenvalues_underloaded: np.ndarray
    eigenvalues_critical: np.ndarray
    max_real_underloaded: float
    max_real_critical: float
    stable_underloaded: bool
    stable_critical: bool
    structural_zeros_critical: int = 1
    rho: float = float("nan")
    regime: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: eigenvalues as ``[re, im]`` pairs, a non-finite number as ``None``
        (``max_real_critical`` is ``-inf`` for one class)."""

        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "eigenvalues_underloaded": _pairs(self.eigenvalues_underloaded),
            "eigenvalues_critical": _pairs(self.eigenvalues_critical),
            "max_real_underloaded": num(self.max_real_underloaded),
            "max_real_critical": num(self.max_real_critical),
            "stable_underloaded": bool(self.stable_underloaded),
            "stable_critical": bool(self.stable_critical),
            "structural_zeros_critical": int(self.structural_zeros_critical),
            "rho": num(self.rho),
            "regime": self.regime,
        }


def _pairs(eigenvalues: np.ndarray) -> list[list[float]]:
    return [[float(w.real), float(w.imag)] for w in eigenvalues]


def eigenvalue_text(
    real: Iterable[float], imag: Iterable[float], *, digits: int = 4, unicode_minus: bool = False
) -> str:
    """Eigenvalues as text, with conjugate pairs merged: ``0.2357 ± 3.078i, -2.327``.

    ``real``, ``imag``: the parts of each eigenvalue, in order (a pair is two consecutive
    eigenvalues with opposite imaginary parts); ``digits``: significant digits of each part;
    ``unicode_minus``: write every minus sign as U+2212 (for figures).

    >>> eigenvalue_text([0.23571, 0.23571, -2.3271], [3.07812, -3.07812, 0.0])
    '0.2357 ± 3.078i, -2.327'
    >>> eigenvalue_text([-0.5], [1e-5], digits=3, unicode_minus=True)
    '−0.5 + 1e−05i'
    """
    out, skip = [], False
    pairs = list(zip(real, imag, strict=True))
    for k, (re, im) in enumerate(pairs):
        if skip:
            skip = False
            continue
        if abs(im) > 1e-12 and k + 1 < len(pairs) and np.isclose(pairs[k + 1][1], -im):
            out.append(f"{re:.{digits}g} ± {abs(im):.{digits}g}i")
            skip = True
        elif abs(im) > 1e-12:
            out.append(f"{re:.{digits}g} {'+' if im > 0 else '-'} {abs(im):.{digits}g}i")
        else:
            out.append(f"{re:.{digits}g}")
    text = ", ".join(out)
    return text.replace("-", "−") if unicode_minus else text


def stability_verdict(
    system_or_solution: ServerPoolSystem | SPPSolution, *, tol: float = 1e-9
) -> LinearStability:
    """Spectra of A_u and A_c and the stability verdicts (``tol`` relative to max mu).

    The verdicts are scale-invariant: multiplying every rate (lambda and mu) by s multiplies
    both spectra and the threshold by s; multiplying lambda and beta by s changes neither.
    ``regime`` says which verdict applies to the system itself (:class:`LinearStability`).

    The N-shape has A_u = [[-1, 0], [1/2, -3/2]] (by hand, ``tests/test_serverpools_linear``)
    and A_c with eigenvalues 0 (structural, exact) and -3/2:

    >>> v = stability_verdict(
    ...     ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])
    ... )
    >>> v.eigenvalues_underloaded.real.round(6).tolist(), v.stable_underloaded
    ([-1.0, -1.5], True)
    >>> bool(v.eigenvalues_critical[0] == 0), round(v.max_real_critical, 6), v.stable_critical
    (True, -1.5, True)
    """
    tol = check_tol(tol)
    solution = as_solution(system_or_solution)
    eig_u = spectrum(a_underloaded(solution))
    eig_c, others = critical_spectrum(solution)
    scale = tol * float(solution.system.rates.max())
    max_u = float(eig_u.real.max())
    max_c = float(others.real.max()) if others.size else float("-inf")
    if solution.underloaded:
        regime = "underloaded"
    elif solution.critical:
        regime = "critical"
    else:
        regime = "overloaded"
    return LinearStability(
        eigenvalues_underloaded=eig_u,
        eigenvalues_critical=eig_c,
        max_real_underloaded=max_u,
        max_real_critical=max_c,
        stable_underloaded=bool(max_u < -scale),
        stable_critical=bool(max_c < -scale),
        rho=float(solution.rho),
        regime=regime,
    )


def underloaded_vector_field(
    system_or_solution: ServerPoolSystem | SPPSolution, psi: np.ndarray
) -> np.ndarray:
    """psi_i' = lambda_i - sum_j mu_ij (M psi)_ij near the underloaded equilibrium.

    ``psi``: class totals in service, per unit r, shape ``(..., I)``. Returns the time
    derivative, per unit r per unit time, same shape. Vanishes at psi = psi*_I.
    """
    solution = as_solution(system_or_solution)
    edges = basic_tree(solution)
    m = load_balancing_map(solution)
    mu = solution.system.rates[edges[:, 0], edges[:, 1]]
    psi = np.asarray(psi, dtype=float)
    occ = psi @ m.T  # (..., K_b)
    service = (mu * occ) @ (edges[:, 0][:, None] == np.arange(solution.system.n_classes))
    return solution.system.arrival_rates - service


def critical_vector_field(
    system_or_solution: ServerPoolSystem | SPPSolution, x: np.ndarray
) -> np.ndarray:
    """x_i' = lambda_i - sum_j mu_ij (M (x - q 1))_ij with q = (sum x - sum beta)/I.

    The critically loaded dynamics with all servers busy and equal positive queues
    (Theorem 3.2). ``x``: customers in system per unit r, shape ``(..., I)``.
    """
    solution = as_solution(system_or_solution)
    x = np.asarray(x, dtype=float)
    q = (x.sum(axis=-1) - solution.system.pool_sizes.sum()) / solution.system.n_classes
    return underloaded_vector_field(solution, x - q[..., None])


@dataclass(frozen=True)
class Analysis:
    """The result of :func:`analyze`: the SPP solution and the local stability of the
    underloaded fluid equilibrium; :meth:`to_dict` is the JSON object of ``queue-routing
    serverpools analyze``."""

    solution: SPPSolution
    stability: LinearStability

    @property
    def rho(self) -> float:
        """The SPP optimum (dimensionless busy fraction)."""
        return float(self.solution.rho)

    @property
    def stable_underloaded(self) -> bool:
        """Local stability of the underloaded fluid equilibrium (Theorem 3.1)."""
        return bool(self.stability.stable_underloaded)

    def to_dict(self) -> dict[str, Any]:
        """``{"rho", "flows": [{"class", "pool", "rate"}] (basic activities, numbered from 1),
        "eigenvalues_underloaded": [[re, im], ...], "eigenvalues_critical": [[re, im], ...]
        (including the structural zero), "stable_underloaded"}``."""
        solution, verdict = self.solution, self.stability
        return {
            "rho": float(solution.rho),
            "flows": [
                {"class": int(i) + 1, "pool": int(j) + 1, "rate": float(solution.flows[i, j])}
                for i, j in solution.basic
            ],
            "eigenvalues_underloaded": _pairs(verdict.eigenvalues_underloaded),
            "eigenvalues_critical": _pairs(verdict.eigenvalues_critical),
            "stable_underloaded": bool(verdict.stable_underloaded),
        }


def analyze(system: ServerPoolSystem | dict[str, Any]) -> Analysis:
    """The SPP solution and the local stability of the underloaded fluid equilibrium
    (``queue-routing serverpools analyze`` prints :meth:`Analysis.to_dict`).

    ``system``: a :class:`~.model.ServerPoolSystem` or its JSON object.

    Only for underloaded systems: ``stable_underloaded`` is the local stability of the
    underloaded fluid equilibrium (Theorem 3.1), which exists only for rho < 1, so a system
    with rho >= 1 - 1e-9 raises :class:`~.errors.NotUnderloadedError` (one line, with rho)
    rather than report a verdict about an equilibrium it does not have. (Critically loaded
    systems: :func:`stability_verdict`, whose ``stable_critical`` and ``regime`` apply.)
    Raises :class:`~.errors.ServerPoolError` for a malformed system and a
    :class:`~.errors.CRPError` when complete resource pooling fails.

    One class and one pool (an M/M/N queue): rho = lambda / (beta mu), A_u = -mu:

    >>> out = analyze(
    ...     {
    ...         "arrival_rates": [1.2],
    ...         "pool_sizes": [3.0],
    ...         "activities": [{"class": 1, "pool": 1, "rate": 0.8}],
    ...     }
    ... )
    >>> round(out.rho, 6), out.to_dict()["eigenvalues_underloaded"], out.stable_underloaded
    (0.5, [[-0.8, 0.0]], True)
    """
    if isinstance(system, dict):
        system = ServerPoolSystem.from_dict(system)
    solution = as_solution(system)
    if not solution.underloaded:
        raise NotUnderloadedError(
            solution.rho,
            "the fluid equilibrium that analyze linearises exists only for rho < 1 "
            "(add capacity or reduce the arrival rates)",
        )
    return Analysis(solution=solution, stability=stability_verdict(solution))
