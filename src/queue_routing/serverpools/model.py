"""The flexible server-pool model of Stolyar & Yudovina (2013), Sec. 2, and its SPP.

Customer classes ``i = 0..I-1`` and server pools ``j = 0..J-1`` (0-based in arrays; the JSON
contract and every human-readable message about graph nodes number them from 1, as
"class 1", "pool 1"). In the r-th system class i arrives as Poisson(r lambda_i) and pool j
has r beta_j servers; a class-i customer in pool j is served at rate mu_ij. Units, used
throughout the subpackage:

``arrival_rates``  lambda_i, customers per unit time per unit of scale r, shape ``(I,)``;
``pool_sizes``     beta_j, servers per unit of r, shape ``(J,)``;
``rates``          mu_ij, jobs per unit time per busy server, shape ``(I, J)``, 0 where
                   (i, j) is not an activity.

The static planning problem (SPP, Sec. 2; its displayed equations (2)-(4) are lost in the seed
text, see ``shared/spec/serverpools.md``) is the linear program

    minimise rho  s.t.  sum_j lambda_ij = lambda_i              (3)  dual nu_i   (free)
                        sum_i lambda_ij / mu_ij <= rho beta_j   (4)  dual alpha_j (>= 0)
                        lambda_ij >= 0 on activities.

Its LP dual is: maximise sum_i nu_i lambda_i s.t. nu_i mu_ij <= alpha_j on every activity and
sum_j alpha_j beta_j = 1 (the column of the free variable rho). So the natural normalisation
of the pool duals is ``sum_j alpha_j beta_j = 1``, strong duality reads
``sum_i nu_i lambda_i = rho``, and complementary slackness gives ``nu_i mu_ij = alpha_j`` on
every basic activity: nu_i is the workload (in units of pool capacity) of one class-i customer
and alpha_j the (1/r-scaled) rate at which pool j processes workload, as the seed says. Both
are dimensionless per customer / per server; ``rho`` is dimensionless (busy fraction).

Complete resource pooling (CRP): the optimum is unique, its basic activities (lambda_ij > 0)
form a spanning tree of the bipartite graph on I u J and every pool constraint (4) binds with
alpha_j > 0. :func:`check_crp` raises a specific :class:`~.errors.CRPError` subclass naming
the classes/pools involved when one of these fails. Graph operations on the activities
(cycles, components, spanning trees) are in :mod:`.tree`, the exceptions in :mod:`.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog

from .errors import (
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    ServerPoolError,
)
from .tree import components, edge_names, find_cycle, is_spanning_tree, node_names

__all__ = [
    "SPPSolution",
    "ServerPoolSystem",
    "check_crp",
    "solve_spp",
    "tree_spp",
]

_JSON_KEYS = ("arrival_rates", "pool_sizes", "activities")
_ACTIVITY_KEYS = ("class", "pool", "rate")


# -- validation helpers -------------------------------------------------------------------
def _as_array(name: str, value: Any, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ServerPoolError(f"{name} must be an array of numbers ({exc})") from None
    if arr.ndim != ndim:
        raise ServerPoolError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
        shown = ", ".join(map(str, bad))
        raise ServerPoolError(f"{name}[{shown}] is not a finite number ({arr[bad]})")
    return arr


def _positive_vector(name: str, value: Any) -> np.ndarray:
    arr = _as_array(name, value, 1)
    if arr.size == 0:
        raise ServerPoolError(f"{name} must not be empty")
    if np.any(arr <= 0):
        bad = int(np.flatnonzero(arr <= 0)[0])
        raise ServerPoolError(f"{name}[{bad}] = {arr[bad]:g} must be > 0")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ServerPoolSystem:
    """One flexible server-pool system (validated at construction; see the module docstring).

    Raises :class:`~.errors.ServerPoolError` naming the offending field and index. The
    arrays are stored read-only, as floats.

    >>> system = ServerPoolSystem(arrival_rates=[1.2], pool_sizes=[3.0], rates=[[0.8]])
    >>> system.n_classes, system.n_pools, system.activities.tolist()
    (1, 1, [[0, 0]])
    >>> ServerPoolSystem([1.0], [1.0], [[-1.0]])
    Traceback (most recent call last):
    ...
    queue_routing.serverpools.errors.ServerPoolError: rates[0, 0] = -1 must be >= 0
    """

    arrival_rates: np.ndarray
    pool_sizes: np.ndarray
    rates: np.ndarray

    def __post_init__(self) -> None:
        lam = _positive_vector("arrival_rates", self.arrival_rates)
        beta = _positive_vector("pool_sizes", self.pool_sizes)
        mu = _as_array("rates", self.rates, 2)
        if mu.shape != (lam.size, beta.size):
            raise ServerPoolError(
                f"rates must have shape (I, J) = ({lam.size}, {beta.size}) to match "
                f"arrival_rates and pool_sizes, got {mu.shape}"
            )
        if np.any(mu < 0):
            i, j = (int(k) for k in np.argwhere(mu < 0)[0])
            raise ServerPoolError(f"rates[{i}, {j}] = {mu[i, j]:g} must be >= 0")
        idle_classes = np.flatnonzero(~np.any(mu > 0, axis=1))
        if idle_classes.size:
            i = int(idle_classes[0])
            raise ServerPoolError(
                f"rates[{i}, :]: class {i + 1} has no activity (needs some rates[{i}, j] > 0)"
            )
        idle_pools = np.flatnonzero(~np.any(mu > 0, axis=0))
        if idle_pools.size:
            j = int(idle_pools[0])
            raise ServerPoolError(
                f"rates[:, {j}]: pool {j + 1} has no activity (needs some rates[i, {j}] > 0)"
            )
        mu.setflags(write=False)
        object.__setattr__(self, "arrival_rates", lam)
        object.__setattr__(self, "pool_sizes", beta)
        object.__setattr__(self, "rates", mu)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ServerPoolSystem)
            and np.array_equal(self.arrival_rates, other.arrival_rates)
            and np.array_equal(self.pool_sizes, other.pool_sizes)
            and np.array_equal(self.rates, other.rates)
        )

    def __hash__(self) -> int:
        return hash((self.arrival_rates.tobytes(), self.pool_sizes.tobytes(), self.rates.tobytes()))

    # -- derived quantities -------------------------------------------------------------
    @property
    def n_classes(self) -> int:
        """I, the number of customer classes."""
        return int(self.arrival_rates.size)

    @property
    def n_pools(self) -> int:
        """J, the number of server pools."""
        return int(self.pool_sizes.size)

    @property
    def activities(self) -> np.ndarray:
        """The activities (i, j) with mu_ij > 0, 0-based, sorted, shape ``(K, 2)``."""
        acts = np.argwhere(self.rates > 0).astype(np.int64)  # row-major order is sorted
        acts.setflags(write=False)
        return acts

    # -- (de)serialisation -------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerPoolSystem:
        """Build from the JSON contract (classes and pools numbered from 1)::

        {"arrival_rates": [lambda_i], "pool_sizes": [beta_j],
         "activities": [{"class": i, "pool": j, "rate": mu_ij}, ...]}

        The N-shaped tree class 1 - pool 1 - class 2 - pool 2:

        >>> n_shape = ServerPoolSystem.from_dict(
        ...     {
        ...         "arrival_rates": [1.0, 2.0],
        ...         "pool_sizes": [2.0, 2.0],
        ...         "activities": [
        ...             {"class": 1, "pool": 1, "rate": 1.0},
        ...             {"class": 2, "pool": 1, "rate": 2.0},
        ...             {"class": 2, "pool": 2, "rate": 1.0},
        ...         ],
        ...     }
        ... )
        >>> n_shape.rates.tolist()  # mu_ij, 0-based (I, J), 0 off the activities
        [[1.0, 0.0], [2.0, 1.0]]
        >>> ServerPoolSystem.from_dict(n_shape.to_dict()) == n_shape
        True
        """
        if not isinstance(data, dict):
            raise ServerPoolError(
                "system must be a JSON object with keys arrival_rates, pool_sizes, activities"
            )
        missing = [k for k in _JSON_KEYS if k not in data]
        if missing:
            raise ServerPoolError(f"system is missing key(s): {', '.join(missing)}")
        extra = sorted(set(data) - set(_JSON_KEYS))
        if extra:
            raise ServerPoolError(f"system has unknown key(s): {', '.join(map(str, extra))}")
        lam = _positive_vector("arrival_rates", data["arrival_rates"])
        beta = _positive_vector("pool_sizes", data["pool_sizes"])
        acts = data["activities"]
        if not isinstance(acts, list) or not acts:
            raise ServerPoolError("activities must be a non-empty list of objects")
        mu = np.zeros((lam.size, beta.size))
        seen: dict[tuple[int, int], int] = {}
        for k, act in enumerate(acts):
            where = f"activities[{k}]"
            if not isinstance(act, dict):
                raise ServerPoolError(f"{where} must be an object with keys class, pool, rate")
            missing = [key for key in _ACTIVITY_KEYS if key not in act]
            if missing:
                raise ServerPoolError(f"{where} is missing key(s): {', '.join(missing)}")
            extra = sorted(set(act) - set(_ACTIVITY_KEYS))
            if extra:
                raise ServerPoolError(f"{where} has unknown key(s): {', '.join(map(str, extra))}")
            i = _node_number(f"{where}.class", act["class"], lam.size)
            j = _node_number(f"{where}.pool", act["pool"], beta.size)
            if (i, j) in seen:
                raise ServerPoolError(
                    f"{where} duplicates activities[{seen[i, j]}] (class {i}, pool {j})"
                )
            seen[i, j] = k
            rate = act["rate"]
            if isinstance(rate, bool) or not isinstance(rate, int | float):
                raise ServerPoolError(f"{where}.rate must be a number, got {rate!r}")
            if not np.isfinite(rate) or rate <= 0:
                raise ServerPoolError(f"{where}.rate = {rate!r} must be finite and > 0")
            mu[i - 1, j - 1] = float(rate)
        return cls(arrival_rates=lam, pool_sizes=beta, rates=mu)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of :meth:`from_dict` (activities sorted, numbered from 1)."""
        return {
            "arrival_rates": self.arrival_rates.tolist(),
            "pool_sizes": self.pool_sizes.tolist(),
            "activities": [
                {"class": int(i) + 1, "pool": int(j) + 1, "rate": float(self.rates[i, j])}
                for i, j in self.activities
            ],
        }


def _node_number(where: str, value: Any, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ServerPoolError(f"{where} must be an integer, got {value!r}")
    if not 1 <= value <= count:
        raise ServerPoolError(f"{where} = {value} is not in 1..{count}")
    return int(value)


# -- the SPP ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SPPSolution:
    """An optimal solution of the static planning problem (Sec. 2) with its duals.

    Attributes
    ----------
    system:
        The solved :class:`ServerPoolSystem`.
    rho:
        Optimal maximal pool load (dimensionless busy fraction).
    flows:
        lambda_ij, customers per unit time per unit r routed along (i, j), shape ``(I, J)``.
    occupancy:
        psi*_ij = lambda_ij / mu_ij, busy servers per unit r (nominal occupancy), ``(I, J)``.
    class_duals:
        nu_i >= 0, workload per class-i customer (dual of (3)), shape ``(I,)``.
    pool_duals:
        alpha_j >= 0, dual of (4) with sign "price of capacity", normalised by
        sum_j alpha_j beta_j = 1 (the dual constraint of the free variable rho), ``(J,)``.
    basic:
        Activities with lambda_ij > tol, 0-based (i, j), sorted, shape ``(K_b, 2)``.
    underloaded:
        rho < 1 - tol.
    critical:
        |rho - 1| <= tol.
    """

    system: ServerPoolSystem
    rho: float
    flows: np.ndarray
    occupancy: np.ndarray
    class_duals: np.ndarray
    pool_duals: np.ndarray
    basic: np.ndarray
    underloaded: bool
    critical: bool

    @property
    def class_occupancy(self) -> np.ndarray:
        """psi*_i = sum_j psi*_ij, busy servers per unit r serving class i, shape ``(I,)``."""
        return self.occupancy.sum(axis=1)

    @property
    def basic_flows(self) -> np.ndarray:
        """lambda_ij on the basic activities (order of :attr:`basic`), shape ``(K_b,)``."""
        return self.flows[self.basic[:, 0], self.basic[:, 1]]

    @property
    def reduced_costs(self) -> np.ndarray:
        """alpha_j / mu_ij - nu_i on every activity (order of ``system.activities``).

        Non-negative for an optimal dual; zero on basic activities (complementary slackness).
        Units: pool-capacity time per customer.
        """
        acts = self.system.activities
        mu = self.system.rates[acts[:, 0], acts[:, 1]]
        return self.pool_duals[acts[:, 1]] / mu - self.class_duals[acts[:, 0]]

    def to_dict(self) -> dict[str, Any]:
        """rho, basic flows (numbered from 1) and the duals, JSON-ready."""
        return {
            "rho": float(self.rho),
            "flows": [
                {"class": int(i) + 1, "pool": int(j) + 1, "rate": float(self.flows[i, j])}
                for i, j in self.basic
            ],
            "class_duals": self.class_duals.tolist(),
            "pool_duals": self.pool_duals.tolist(),
        }


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _make_solution(system, rho, flows, nu, alpha, tol) -> SPPSolution:
    mu = system.rates
    flows = np.where(mu > 0, flows, 0.0)
    occupancy = np.divide(flows, mu, out=np.zeros_like(flows), where=mu > 0)
    acts = system.activities
    scale = float(system.arrival_rates.max())
    keep = flows[acts[:, 0], acts[:, 1]] > tol * scale
    return SPPSolution(
        system=system,
        rho=float(rho),
        flows=_frozen(flows),
        occupancy=_frozen(occupancy),
        class_duals=_frozen(np.asarray(nu, dtype=float).copy()),
        pool_duals=_frozen(np.asarray(alpha, dtype=float).copy()),
        basic=_frozen(acts[keep].copy()),
        underloaded=bool(rho < 1.0 - tol),
        critical=bool(abs(rho - 1.0) <= tol),
    )


def _solve_on_tree(system: ServerPoolSystem, edges: np.ndarray):
    """Flows, rho and duals when the activities ``edges`` (a spanning tree) are basic.

    Primal: sum_j lambda_ij = lambda_i, sum_i lambda_ij/mu_ij - rho beta_j = 0 on the tree
    ((I + J) equations in I + J - 1 flows and rho). Dual: nu_i mu_ij - alpha_j = 0 on the
    tree and sum_j alpha_j beta_j = 1. Both square systems are nonsingular on a spanning tree.
    """
    n_i, n_j = system.n_classes, system.n_pools
    k = len(edges)
    ii, jj = edges[:, 0], edges[:, 1]
    mu = system.rates[ii, jj]
    a = np.zeros((n_i + n_j, k + 1))
    a[ii, np.arange(k)] = 1.0
    a[n_i + jj, np.arange(k)] = 1.0 / mu
    a[n_i:, k] = -system.pool_sizes
    rhs = np.concatenate([system.arrival_rates, np.zeros(n_j)])
    x = np.linalg.solve(a, rhs)
    flows = np.zeros((n_i, n_j))
    flows[ii, jj] = x[:k]
    d = np.zeros((n_i + n_j, n_i + n_j))
    d[np.arange(k), ii] = mu
    d[np.arange(k), n_i + jj] = -1.0
    d[k, n_i:] = system.pool_sizes
    y = np.linalg.solve(d, np.eye(n_i + n_j)[k])
    return float(x[k]), flows, y[:n_i], y[n_i:]


def tree_spp(system: ServerPoolSystem, *, tol: float = 1e-9) -> SPPSolution:
    """The SPP of a system whose activities form a spanning tree, by one linear solve.

    If every tree flow is positive, the tree solution is the unique SPP optimum and CRP holds
    (all activities basic, so the dual is trivially feasible; the primal is nondegenerate).
    Otherwise, or if the activities are not a spanning tree, this falls back to
    :func:`solve_spp`, which raises the appropriate :class:`~.errors.CRPError`.

    >>> system = ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])
    >>> fast, lp = tree_spp(system), solve_spp(system)
    >>> bool(np.allclose(fast.flows, lp.flows) and np.isclose(fast.rho, lp.rho))
    True
    """
    acts = system.activities
    if is_spanning_tree(acts, system.n_classes, system.n_pools):
        rho, flows, nu, alpha = _solve_on_tree(system, acts)
        if np.all(flows[acts[:, 0], acts[:, 1]] > tol * system.arrival_rates.max()):
            return _make_solution(system, rho, flows, nu, alpha, tol)
    return solve_spp(system, tol=tol)


def _lp_matrices(system: ServerPoolSystem):
    acts = system.activities
    k = len(acts)
    n_i, n_j = system.n_classes, system.n_pools
    mu = system.rates[acts[:, 0], acts[:, 1]]
    a_eq = np.zeros((n_i, k + 1))
    a_eq[acts[:, 0], np.arange(k)] = 1.0
    a_ub = np.zeros((n_j, k + 1))
    a_ub[acts[:, 1], np.arange(k)] = 1.0 / mu
    a_ub[:, k] = -system.pool_sizes
    bounds = [(0.0, None)] * k + [(None, None)]
    return a_eq, a_ub, bounds


def solve_spp(
    system: ServerPoolSystem, *, require_crp: bool = True, tol: float = 1e-9
) -> SPPSolution:
    """Solve the SPP (Sec. 2) with HiGHS; check CRP (:func:`check_crp`) unless told not to.

    Variables are the flows on the activities and rho (free). The duals are HiGHS's
    marginals: nu_i = d rho / d lambda_i (equality rows) and alpha_j = -(marginal of the
    pool row), so that sum_j alpha_j beta_j = 1. When CRP holds, flows, rho and duals are
    recomputed from the basic tree by an exact linear solve (removing solver round-off).
    ``tol`` is relative: flows below ``tol * max(lambda)`` count as zero.

    One activity: the pool is loaded to rho = lambda / (beta mu) = 1.2 / (3 x 0.8), its
    dual is alpha = 1 / beta (normalisation) and the class dual nu = alpha / mu:

    >>> sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    >>> [round(float(x), 6) for x in (sol.rho, sol.pool_duals[0], sol.class_duals[0])]
    [0.5, 0.333333, 0.416667]

    The N-shape (rho = 2/3 by hand, see ``tests/test_serverpools_model.py``); strong duality
    sum_i nu_i lambda_i = rho:

    >>> sol = solve_spp(ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]]))
    >>> round(sol.rho, 6), sol.basic.tolist(), sol.underloaded
    (0.666667, [[0, 0], [1, 0], [1, 1]], True)
    >>> bool(np.isclose(sol.class_duals @ sol.system.arrival_rates, sol.rho))
    True
    """
    if not isinstance(system, ServerPoolSystem):
        raise ServerPoolError(f"expected a ServerPoolSystem, got {type(system).__name__}")
    a_eq, a_ub, bounds = _lp_matrices(system)
    k = a_eq.shape[1] - 1
    c = np.zeros(k + 1)
    c[k] = 1.0
    res = linprog(
        c,
        A_ub=a_ub,
        b_ub=np.zeros(system.n_pools),
        A_eq=a_eq,
        b_eq=system.arrival_rates,
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:
        raise ServerPoolError(f"the SPP linear program failed: {res.message}")
    acts = system.activities
    flows = np.zeros((system.n_classes, system.n_pools))
    flows[acts[:, 0], acts[:, 1]] = np.clip(res.x[:k], 0.0, None)
    solution = _make_solution(
        system, res.x[k], flows, res.eqlin.marginals, -res.ineqlin.marginals, tol
    )
    if not require_crp:
        return solution
    check_crp(solution, tol=tol)
    rho, flows, nu, alpha = _solve_on_tree(system, solution.basic)
    return _make_solution(system, rho, flows, nu, alpha, tol)


def _flow_ranges(system: ServerPoolSystem, rho: float, slack: float):
    """Min and max of every activity's flow over the (slightly relaxed) optimal face."""
    a_eq, a_ub, bounds = _lp_matrices(system)
    k = a_eq.shape[1] - 1
    bounds = [*bounds[:k], (None, rho + slack)]
    lo, hi = np.zeros(k), np.zeros(k)
    for idx in range(k):
        for sign, out in ((1.0, lo), (-1.0, hi)):
            c = np.zeros(k + 1)
            c[idx] = sign
            res = linprog(
                c,
                A_ub=a_ub,
                b_ub=np.zeros(system.n_pools),
                A_eq=a_eq,
                b_eq=system.arrival_rates,
                bounds=bounds,
                method="highs",
            )
            if res.status != 0:  # pragma: no cover - the face contains the optimum
                raise ServerPoolError(f"optimal-face LP failed: {res.message}")
            out[idx] = res.x[idx]
    return lo, hi


def check_crp(solution: SPPSolution, *, tol: float = 1e-9) -> None:
    """Raise a :class:`CRPError` subclass unless complete resource pooling holds (Sec. 2).

    Fast exact test: the basic activities form a spanning tree (so the basic solution is
    nondegenerate), the flows and duals solved exactly on that tree are positive (every pool
    binds with alpha_j > 0), and every non-basic activity has a strictly positive reduced
    cost alpha_j/mu_ij - nu_i (then the optimum is unique). Otherwise the failure is
    diagnosed from the optimal face, computed by minimising and maximising each flow subject
    to rho <= rho* (1 + tol'):

    * :class:`NotATreeError` -- the activities used by some optimal solution contain a
      cycle (named; the optimum is then not unique);
    * :class:`NonBindingPoolError` -- some pool has slack (or binds with alpha_j = 0);
    * :class:`NonUniqueOptimumError` -- some flows vary over the optimal face;
    * :class:`DisconnectedError` -- the basic activities split I u J into components (named).

    Tolerances (relative): slacks and reduced costs (as 1 - nu_i mu_ij / alpha_j) are
    compared with ``max(tol, 1e-7)`` (HiGHS's feasibility tolerance); on the optimal face
    rho may exceed rho* by ``max(tol, 1e-9)`` and a flow counts as used/varying above
    ``1e-6 max(lambda)``.

    Two classes and two pools, all four activities at rate 1: any split is optimal.

    >>> equal = ServerPoolSystem([1.0, 1.0], [1.0, 1.0], np.ones((2, 2)))
    >>> try:
    ...     check_crp(solve_spp(equal, require_crp=False))
    ... except NotATreeError as err:
    ...     print(err.kind, err.classes, err.pools)
    cycle (1, 2) (1, 2)
    """
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    acts = system.activities
    scale = float(system.arrival_rates.max())
    basic = solution.basic
    lp_tol = max(tol, 1e-7)  # HiGHS's primal/dual feasibility tolerance
    mu = system.rates[acts[:, 0], acts[:, 1]]
    in_basic = np.zeros((n_i, n_j), dtype=bool)
    in_basic[basic[:, 0], basic[:, 1]] = True
    nonbasic = ~in_basic[acts[:, 0], acts[:, 1]]
    if is_spanning_tree(basic, n_i, n_j):
        # Exact certificate from the tree itself (independent of the solver's duals, which
        # lose relative accuracy when some alpha_j is tiny): positive tree flows, the tree
        # duals, and reduced costs 1 - nu_i mu_ij / alpha_j > 0 (relative) off the tree.
        rho_t, flows_t, nu_t, alpha_t = _solve_on_tree(system, basic)
        if (
            np.all(flows_t[basic[:, 0], basic[:, 1]] > 0)
            and np.all(alpha_t > 0)
            and abs(rho_t - solution.rho) <= lp_tol * max(abs(rho_t), 1.0)
            and np.all(
                1.0 - nu_t[acts[nonbasic, 0]] * mu[nonbasic] / alpha_t[acts[nonbasic, 1]] > lp_tol
            )
        ):
            return
    load = solution.occupancy.sum(axis=0)
    capacity = solution.rho * system.pool_sizes
    slack_pools = np.flatnonzero(capacity - load > lp_tol * max(float(capacity.max()), 1e-300))
    alpha = solution.pool_duals
    zero_alpha = np.flatnonzero(alpha <= 0)
    scale_rc = np.abs(alpha[acts[:, 1]] / mu).max() if len(acts) else 1.0
    flat_rc = nonbasic & (solution.reduced_costs <= lp_tol * scale_rc)

    # Diagnose from the optimal face (a handful of small LPs; error path only).
    # rho may exceed rho* by 1e-9 relative; flows that move by less than 1e-6 relative over
    # this relaxed face count as fixed (HiGHS's feasibility tolerance is 1e-7).
    lo, hi = _flow_ranges(system, solution.rho, max(tol, 1e-9) * max(abs(solution.rho), 1.0))
    used = acts[hi > 1e-6 * scale]
    varying = acts[hi - lo > 1e-6 * scale]
    cycle = find_cycle(used, n_i, n_j)
    if cycle is not None:
        nodes = cycle[:-1]
        walk = " - ".join(node_names([v], n_i) for v in cycle)
        raise NotATreeError(
            f"the activities used by optimal SPP solutions contain the cycle {walk}, so the "
            "optimum is not unique and the basic activities are not a tree",
            classes=sorted(v + 1 for v in nodes if v < n_i),
            pools=sorted(v - n_i + 1 for v in nodes if v >= n_i),
        )
    if slack_pools.size:
        shown = ", ".join(
            f"pool {j + 1} (load {load[j]:.6g} < rho beta_j = {capacity[j]:.6g})"
            for j in slack_pools
        )
        raise NonBindingPoolError(
            f"capacity constraint (4) is slack at the optimum for {shown}",
            pools=[j + 1 for j in slack_pools],
        )
    if len(varying):
        raise NonUniqueOptimumError(
            "the SPP optimum is not unique: the flows on "
            f"{edge_names(varying)} vary over the optimal face",
            classes=sorted({int(i) + 1 for i in varying[:, 0]}),
            pools=sorted({int(j) + 1 for j in varying[:, 1]}),
        )
    comps = components(basic, n_i, n_j)
    if len(comps) > 1:
        shown = "; ".join("{" + node_names(c, n_i) + "}" for c in comps)
        raise DisconnectedError(
            f"the basic activities split the classes and pools into {len(comps)} "
            f"components: {shown}",
            classes=range(1, n_i + 1),
            pools=range(1, n_j + 1),
        )
    if zero_alpha.size:
        raise NonBindingPoolError(
            "pool capacity constraint binds with zero dual price alpha_j for "
            + ", ".join(f"pool {j + 1}" for j in zero_alpha),
            pools=[j + 1 for j in zero_alpha],
        )
    flat = acts[flat_rc]
    raise NonUniqueOptimumError(
        f"non-basic activities {edge_names(flat)} have zero reduced cost (degenerate dual)",
        classes=sorted({int(i) + 1 for i in flat[:, 0]}),
        pools=sorted({int(j) + 1 for j in flat[:, 1]}),
    )
