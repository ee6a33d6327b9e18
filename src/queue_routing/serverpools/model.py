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
text, see ``docs/serverpools.md#static-planning-problem``) is the linear program

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

Units and accuracy. The answer does not depend on the units: multiplying every rate
(lambda and mu) by s, or lambda and beta together by s, gives the same basic tree and the
same CRP verdict, with rho, flows and duals scaled by the exact laws (rho -> rho s_lambda /
(s_beta s_mu), flows -> s_lambda flows, alpha -> alpha / s_beta, nu -> nu / (s_beta s_mu)).
When CRP holds the optimum is found and certified on its tree without a tolerance on the
data's scale (:mod:`.tree_simplex`: duals as logarithms, flows with round-off bounds, exact
rational arithmetic where the bounds leave a sign open), so flows, rho and duals are accurate
to 1e-10 relative (flows: relative to their class's lambda_i) and usually to round-off.
Failures of CRP are diagnosed by HiGHS on the SPP with the units divided out
(:func:`_scaled_lp`), at its precision (about 1e-9 relative), so which failure is named for
a system whose loads lambda_i / (mu_ij beta_j) span more than about 1e9 may depend on it.
Accepted inputs: arrival rates, pool sizes and non-zero rates in [1e-100, 1e100]
(:data:`MIN_MAGNITUDE`, :data:`MAX_MAGNITUDE`), so that every product and ratio computed
stays a finite double; everything else is refused with one line naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import (
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    ServerPoolError,
    listing,
)
from .tree import (
    components,
    components_text,
    cycle_text,
    find_cycle,
    greedy_spanning_tree,
    is_spanning_tree,
)
from .tree_simplex import TreeEvaluation, certify_tree, crp_tree, exact_eval, tree_eval

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "SPPSolution",
    "ServerPoolSystem",
    "check_crp",
    "solve_spp",
    "tree_spp",
]

_JSON_KEYS = ("arrival_rates", "pool_sizes", "activities")
_ACTIVITY_KEYS = ("class", "pool", "rate")


def _linprog(*args, **kwargs):
    """:func:`scipy.optimize.linprog`, imported on first use (scipy.optimize costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.optimize import linprog

    return linprog(*args, **kwargs)


def _csr_array(*args, **kwargs):
    """:func:`scipy.sparse.csr_array`, imported on first use (scipy.sparse costs a large part of
    a pipeline job's start-up when imported with the package)."""
    from scipy.sparse import csr_array

    return csr_array(*args, **kwargs)


# -- validation helpers -------------------------------------------------------------------
#: Accepted magnitudes of arrival rates, pool sizes and (non-zero) service rates. The SPP's
#: coefficients are the dimensionless loads lambda_i / (mu_ij beta_j), a product of three data
#: values, and rho is of their order; with every value in [1e-100, 1e100] they lie in
#: [1e-300, 1e300], so every product, ratio and sum computed here stays a finite normal double.
MIN_MAGNITUDE = 1e-100
MAX_MAGNITUDE = 1e100
_ALLOWED = "allowed: numbers in [1e-100, 1e100]"


def _show(value: Any) -> str:
    """A short JSON-like spelling of a rejected value (for one-line messages)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        v = int(value)
        if abs(v) < 10**15:
            return str(v)
        return f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, float | np.floating):
        return format(float(value), ".6g")
    if isinstance(value, str):
        text = json.dumps(value)
        return (text if len(text) <= 24 else text[:20] + '..."') + " (a string)"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _leaf(field: str, value: Any, label: str) -> float:
    """``value`` as a float if it is a (non-boolean) real number within the double range."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        raise ServerPoolError(
            f"{field}: {_show(value)} for {label} is not a number; {_ALLOWED} (JSON numbers)"
        )
    if isinstance(value, int | np.integer) and abs(int(value)) > MAX_MAGNITUDE:
        raise ServerPoolError(f"{field}: {_show(value)} for {label} is out of range; {_ALLOWED}")
    return float(value)


def _walk(field: str, value: Any, ndim: int, index: tuple[int, ...], label) -> Any:
    if len(index) == ndim:
        return _leaf(field, value, label(index))
    if isinstance(value, list | tuple | np.ndarray):
        return [_walk(field, v, ndim, (*index, k), label) for k, v in enumerate(value)]
    where = f" at {field}" + "".join(f"[{k}]" for k in index) if index else ""
    raise ServerPoolError(
        f"{field} must be a {ndim}-dimensional array of numbers, found {_show(value)}{where}"
    )


def _as_array(field: str, value: Any, ndim: int, label) -> np.ndarray:
    """A float array of ``ndim`` dimensions; booleans, strings, non-numbers rejected by name."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        if value.ndim != ndim:
            raise ServerPoolError(f"{field} must be {ndim}-dimensional, got shape {value.shape}")
        return np.array(value, dtype=float)
    nested = _walk(field, value, ndim, (), label)
    try:
        arr = np.array(nested, dtype=float)
    except ValueError:
        raise ServerPoolError(
            f"{field} must be a rectangular array (rows of equal length)"
        ) from None
    if arr.ndim != ndim:  # an empty row list, e.g. [[], []] -> shape (2, 0) is fine; [] is (0,)
        raise ServerPoolError(f"{field} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr


def _class_label(index: tuple[int, ...]) -> str:
    return f"class {index[0] + 1}"


def _pool_label(index: tuple[int, ...]) -> str:
    return f"pool {index[0] + 1}"


def _activity_label(index: tuple[int, ...]) -> str:
    return f"class {index[0] + 1}, pool {index[1] + 1}"


def _check_range(field: str, arr: np.ndarray, label, *, zero_allowed: bool) -> None:
    """Every entry in [MIN_MAGNITUDE, MAX_MAGNITUDE] (or exactly 0 if ``zero_allowed``)."""
    ok = np.isfinite(arr) & (arr >= MIN_MAGNITUDE) & (arr <= MAX_MAGNITUDE)
    if zero_allowed:
        ok |= arr == 0
    if not ok.all():
        index = tuple(int(k) for k in np.argwhere(~ok)[0])
        allowed = f"allowed: 0 (no activity) or {_ALLOWED[9:]}" if zero_allowed else _ALLOWED
        raise ServerPoolError(
            f"{field}: {_show(arr[index])} for {label(index)} is out of range; {allowed}"
        )


def _positive_vector(field: str, value: Any, label) -> np.ndarray:
    arr = _as_array(field, value, 1, label)
    if arr.size == 0:
        raise ServerPoolError(f"{field} must not be empty")
    _check_range(field, arr, label, zero_allowed=False)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ServerPoolSystem:
    """One flexible server-pool system (validated at construction; see the module docstring).

    Accepted: arrival rates and pool sizes in [1e-100, 1e100] (:data:`MIN_MAGNITUDE`,
    :data:`MAX_MAGNITUDE`), rates 0 (no activity) or in that range; every class and every
    pool needs an activity. Numbers must be real numbers (int or float, numpy or Python):
    booleans, strings, NaN, infinities and integers beyond the range are rejected. Raises
    :class:`~.errors.ServerPoolError`, one line naming the field and the class or pool
    (numbered from 1). The arrays are stored read-only, as floats.

    >>> system = ServerPoolSystem(arrival_rates=[1.2], pool_sizes=[3.0], rates=[[0.8]])
    >>> system.n_classes, system.n_pools, system.activities.tolist()
    (1, 1, [[0, 0]])
    >>> ServerPoolSystem([1.0], [1.0], [[-1.0]])
    Traceback (most recent call last):
    ...
    queue_routing.serverpools.errors.ServerPoolError: rates: -1 for class 1, pool 1 is out of
    range; allowed: 0 (no activity) or numbers in [1e-100, 1e100]
    """

    arrival_rates: np.ndarray
    pool_sizes: np.ndarray
    rates: np.ndarray

    def __post_init__(self) -> None:
        lam = _positive_vector("arrival_rates", self.arrival_rates, _class_label)
        beta = _positive_vector("pool_sizes", self.pool_sizes, _pool_label)
        mu = _as_array("rates", self.rates, 2, _activity_label)
        if mu.shape != (lam.size, beta.size):
            raise ServerPoolError(
                f"rates must have shape (I, J) = ({lam.size}, {beta.size}) to match "
                f"arrival_rates and pool_sizes, got {mu.shape}"
            )
        _check_range("rates", mu, _activity_label, zero_allowed=True)
        idle_classes = np.flatnonzero(~np.any(mu > 0, axis=1))
        if idle_classes.size:
            i = int(idle_classes[0])
            raise ServerPoolError(
                f"rates: class {i + 1} has no activity (needs a rate > 0 for some pool)"
            )
        idle_pools = np.flatnonzero(~np.any(mu > 0, axis=0))
        if idle_pools.size:
            j = int(idle_pools[0])
            raise ServerPoolError(
                f"rates: pool {j + 1} has no activity (needs a rate > 0 for some class)"
            )
        mu.setflags(write=False)
        acts = np.argwhere(mu > 0).astype(np.int64)  # row-major order is sorted
        acts.setflags(write=False)
        object.__setattr__(self, "_activities", acts)
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
        return self._activities

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
        extra = sorted(str(k) for k in set(data) - set(_JSON_KEYS))
        if extra:
            raise ServerPoolError(f"system has unknown key(s): {listing(map(_cut, extra))}")
        lam = _positive_vector("arrival_rates", _json_list(data, "arrival_rates"), _class_label)
        beta = _positive_vector("pool_sizes", _json_list(data, "pool_sizes"), _pool_label)
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
            extra = sorted(str(key) for key in set(act) - set(_ACTIVITY_KEYS))
            if extra:
                raise ServerPoolError(f"{where} has unknown key(s): {listing(map(_cut, extra))}")
            i = _node_number(f"{where}.class", act["class"], lam.size)
            j = _node_number(f"{where}.pool", act["pool"], beta.size)
            if (i, j) in seen:
                raise ServerPoolError(
                    f"{where} duplicates activities[{seen[i, j]}] (class {i}, pool {j})"
                )
            seen[i, j] = k
            label = f"class {i}, pool {j}"
            rate = _leaf(f"{where}.rate", act["rate"], label)
            if not (np.isfinite(rate) and MIN_MAGNITUDE <= rate <= MAX_MAGNITUDE):
                raise ServerPoolError(
                    f"{where}.rate: {_show(rate)} for {label} is out of range; {_ALLOWED}"
                )
            mu[i - 1, j - 1] = rate
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
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ServerPoolError(f"{where} must be an integer in 1..{count}, got {_show(value)}")
    if not 1 <= value <= count:
        raise ServerPoolError(f"{where} = {_show(value)} is not in 1..{count}")
    return int(value)


def _cut(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_list(data: dict[str, Any], key: str) -> Any:
    """``data[key]``, which must be a JSON array (a list), not a string, number or object."""
    value = data[key]
    if not isinstance(value, list):
        raise ServerPoolError(f"{key} must be a list of numbers, got {_show(value)}")
    return value


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
        The basic activities, 0-based (i, j), sorted, shape ``(K_b, 2)``: the certified tree
        when CRP holds, else the activities with lambda_ij > tol lambda_i.
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


def _make_solution(system, rho, flows, nu, alpha, tol, basic=None) -> SPPSolution:
    mu = system.rates
    flows = np.where(mu > 0, flows, 0.0)
    occupancy = np.divide(flows, mu, out=np.zeros_like(flows), where=mu > 0)
    acts = system.activities
    if basic is None:  # flows above tol lambda_i (relative to their own class)
        keep = flows[acts[:, 0], acts[:, 1]] > tol * system.arrival_rates[acts[:, 0]]
        basic = acts[keep]
    return SPPSolution(
        system=system,
        rho=float(rho),
        flows=_frozen(flows),
        occupancy=_frozen(occupancy),
        class_duals=_frozen(np.asarray(nu, dtype=float).copy()),
        pool_duals=_frozen(np.asarray(alpha, dtype=float).copy()),
        basic=_frozen(np.array(basic, dtype=np.int64).reshape(-1, 2)),
        underloaded=bool(rho < 1.0 - tol),
        critical=bool(abs(rho - 1.0) <= tol),
    )


def _check_tol(tol: Any) -> float:
    if isinstance(tol, bool) or not isinstance(tol, int | float | np.integer | np.floating):
        raise ServerPoolError(f"tol must be a number in [0, 0.01], got {_show(tol)}")
    if not 0.0 <= float(tol) <= 0.01:
        raise ServerPoolError(f"tol = {_show(tol)} is out of range; allowed: [0, 0.01]")
    return float(tol)


def _check_system(system: Any) -> ServerPoolSystem:
    if not isinstance(system, ServerPoolSystem):
        raise ServerPoolError(f"expected a ServerPoolSystem, got {type(system).__name__}")
    return system


def _solve_on_tree(system: ServerPoolSystem, edges: np.ndarray):
    """Flows, rho and duals when the activities ``edges`` (a spanning tree) are basic.

    Primal: sum_j lambda_ij = lambda_i, sum_i lambda_ij/mu_ij - rho beta_j = 0 on the tree
    ((I + J) equations in I + J - 1 flows and rho). Dual: nu_i mu_ij - alpha_j = 0 on the
    tree and sum_j alpha_j beta_j = 1. Both square systems are nonsingular on a spanning tree.
    A dense LU solve, which loses relative accuracy on strongly heterogeneous trees: its
    result is used only where it agrees with :func:`~.tree_simplex.tree_eval`
    (:func:`_tree_solution`). None if the solver fails.
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
    d = np.zeros((n_i + n_j, n_i + n_j))
    d[np.arange(k), ii] = mu
    d[np.arange(k), n_i + jj] = -1.0
    d[k, n_i:] = system.pool_sizes
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(a, rhs)
            y = np.linalg.solve(d, np.eye(n_i + n_j)[k])
        except np.linalg.LinAlgError:
            return None
    flows = np.zeros((n_i, n_j))
    flows[ii, jj] = x[:k]
    return float(x[k]), flows, y[:n_i], y[n_i:]


def _activity_rates(system: ServerPoolSystem) -> tuple[np.ndarray, np.ndarray]:
    acts = system.activities
    return acts, system.rates[acts[:, 0], acts[:, 1]]


def _tree_solution(system: ServerPoolSystem, tree: np.ndarray, ev: TreeEvaluation, tol):
    """The SPPSolution of the certified tree ``acts[tree]`` (its basic solution).

    The reference is the evaluation ``ev`` when its round-off bounds are below 1e-11
    (relative, for rho, every dual and every flow), else the exact one
    (:func:`~.tree_simplex.exact_eval`, rational arithmetic rounded once). The dense solve
    :func:`_solve_on_tree` is reported where it agrees with the reference to 1e-10, so that
    results are bit-for-bit those of earlier versions on well-conditioned systems; otherwise
    the exact values are. Either way every value (each flow, each dual, rho) is within 1e-10
    relative of the exact basic solution of the stored data, so pool loads sum to rho beta_j
    within 1e-10 too.
    """
    acts, mu = _activity_rates(system)
    edges = acts[tree]
    lam = system.arrival_rates
    if not ev.exact and (ev.rho_error > 1e-11 or np.any(ev.flow_error > 1e-11 * ev.flows)):
        ev = exact_eval(lam, system.pool_sizes, acts, mu, ev)  # bounds too loose to compare
    lu = _solve_on_tree(system, edges)
    if lu is not None:
        rho_l, flows_l, nu_l, alpha_l = lu
        rel = 1e-10
        f_l = flows_l[edges[:, 0], edges[:, 1]]
        with np.errstate(all="ignore"):
            nu_x, alpha_x = np.exp(ev.log_nu), np.exp(ev.log_alpha)
            agree = bool(
                np.isfinite(rho_l)
                and abs(rho_l - ev.rho) <= rel * ev.rho
                and np.all(np.abs(nu_l - nu_x) <= rel * nu_x)
                and np.all(np.abs(alpha_l - alpha_x) <= rel * alpha_x)
                and np.all(np.abs(f_l - ev.flows) <= rel * ev.flows)
            )
        if agree:
            return _make_solution(system, rho_l, flows_l, nu_l, alpha_l, tol, basic=edges)
    if not ev.exact:
        ev = exact_eval(lam, system.pool_sizes, acts, mu, ev)
    flows = np.zeros((system.n_classes, system.n_pools))
    flows[edges[:, 0], edges[:, 1]] = ev.flows
    with np.errstate(all="ignore"):
        nu, alpha = np.exp(ev.log_nu), np.exp(ev.log_alpha)
    return _make_solution(system, ev.rho, flows, nu, alpha, tol, basic=edges)


def _crp_solution(system: ServerPoolSystem, tol: float, lp=None) -> SPPSolution | None:
    """The unique SPP optimum if CRP holds (certified exactly on its tree), else None.

    A spanning tree of activities is certified directly. Otherwise the candidate trees are
    those of the dual simplex (:func:`~.tree_simplex.crp_tree`) started from the cheapest
    pools, or, given an approximate SPP solution ``lp``, from its pool duals, and then the
    spanning tree of ``lp``'s largest flows (completed by its smallest reduced costs). Any
    candidate that passes :func:`~.tree_simplex.certify_tree` is the optimum.
    """
    acts, mu = _activity_rates(system)
    lam, beta = system.arrival_rates, system.pool_sizes
    n_i, n_j = system.n_classes, system.n_pools
    if len(acts) == n_i + n_j - 1:
        tree = np.arange(len(acts), dtype=np.int64)
        try:
            ev = tree_eval(lam, beta, acts, mu, tree)
        except ServerPoolError:  # I + J - 1 activities with a cycle: not a spanning tree
            ev = None
        if ev is not None:
            ev = certify_tree(lam, beta, acts, mu, ev, tol)
            return None if ev is None else _tree_solution(system, tree, ev, tol)
    candidates = []
    if lp is None:
        candidates.append(lambda: crp_tree(lam, beta, acts, mu))
    else:
        with np.errstate(all="ignore"):
            prices = np.where(lp.pool_duals > 0, np.log(lp.pool_duals), -np.log(beta) - 50.0)
        candidates.append(lambda: crp_tree(lam, beta, acts, mu, prices=prices))
        candidates.append(lambda: _lp_tree(system, lp))
    for make in candidates:
        found = make()
        if found is None:
            continue
        tree, ev = found
        ev = certify_tree(lam, beta, acts, mu, ev, tol)
        if ev is not None:
            return _tree_solution(system, tree, ev, tol)
    return None


def _lp_tree(system: ServerPoolSystem, lp: SPPSolution):
    """The spanning tree of ``lp``'s largest flows (relative to their class), completed by the
    activities of smallest relative reduced cost, with its evaluation; None if disconnected."""
    acts, mu = _activity_rates(system)
    lam = system.arrival_rates
    share = lp.flows[acts[:, 0], acts[:, 1]] / lam[acts[:, 0]]
    with np.errstate(all="ignore"):
        rc = 1.0 - lp.class_duals[acts[:, 0]] * mu / lp.pool_duals[acts[:, 1]]
    rc = np.nan_to_num(rc, nan=np.inf)
    order = np.lexsort((np.arange(len(acts)), rc, -share))
    tree = greedy_spanning_tree(acts, system.n_classes, system.n_pools, order)
    if len(tree) != system.n_classes + system.n_pools - 1:
        return None
    return tree, tree_eval(lam, system.pool_sizes, acts, mu, tree)


def tree_spp(system: ServerPoolSystem, *, tol: float = 1e-9) -> SPPSolution:
    """The SPP of a system whose activities form a spanning tree (the same as :func:`solve_spp`).

    On a spanning tree the SPP is solved exactly on the tree (:mod:`.tree_simplex`); if every
    tree flow is positive the tree solution is the unique SPP optimum and CRP holds. Otherwise,
    or if the activities are not a spanning tree, :func:`solve_spp` raises the appropriate
    :class:`~.errors.CRPError`.

    >>> system = ServerPoolSystem([1.0, 2.0], [2.0, 2.0], [[1.0, 0.0], [2.0, 1.0]])
    >>> fast, lp = tree_spp(system), solve_spp(system, require_crp=False)
    >>> bool(np.allclose(fast.flows, lp.flows) and np.isclose(fast.rho, lp.rho))
    True
    """
    return solve_spp(system, tol=tol)


# -- the SPP in dimensionless form, for HiGHS ---------------------------------------------------
#: HiGHS's feasibility tolerances on the scaled LP (its defaults are 1e-7).
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class _ScaledLP:
    """The SPP in dimensionless form (:func:`_scaled_lp`); ``cols``: activities kept."""

    a_eq: np.ndarray
    a_ub: np.ndarray
    cols: np.ndarray
    col_scale: np.ndarray
    log_scale: float
    n_pools: int


def _scaled_lp(system: ServerPoolSystem) -> _ScaledLP:
    """The SPP with the units divided out, so that HiGHS sees the same LP in any units.

    Variables: the fractions x_e = lambda_ij / lambda_i and t = rho / S; rows
    ``sum_j x_ij = 1`` and ``sum_i c_ij x_ij <= t`` with the dimensionless loads
    ``c_ij = lambda_i / (mu_ij beta_j S)``, where S is the largest over classes of the
    smallest load of one class (computed in logarithms). These are invariant under changes
    of units (all rates by one factor; lambda and beta together) and under re-scaling one
    class's customers or one pool's servers. Column x_e is scaled by
    g_i = min(b_i^(-1/2), 1e7) (b_i: class i's smallest load over S) so that light classes keep
    entries above HiGHS's 1e-9 cut-off; entries stay below 1e13 (HiGHS rejects 1e15):
    activities above it, more than ~1e13 times less efficient than their class's best, are
    left out of the LP (they carry no flow in its solution). This LP serves
    ``require_crp=False`` and the diagnosis of CRP failures; the CRP optimum itself is found
    and certified exactly (:mod:`.tree_simplex`).
    """
    acts, mu = _activity_rates(system)
    log_mu = np.log(mu)
    n_i, n_j = system.n_classes, system.n_pools
    log_lam, log_beta = np.log(system.arrival_rates), np.log(system.pool_sizes)
    log_a = log_lam[acts[:, 0]] - log_mu - log_beta[acts[:, 1]]
    best = np.full(n_i, np.inf)
    np.minimum.at(best, acts[:, 0], log_a)
    log_scale = float(best.max())
    log_g = np.minimum(-0.5 * (best - log_scale), np.log(1e7))[acts[:, 0]]
    log_entry = log_a - log_scale + log_g
    keep = np.flatnonzero(log_entry <= np.log(1e13))
    k = keep.size
    g = np.exp(log_g[keep])
    cols = np.arange(k)
    a_eq = _csr_array((g, (acts[keep, 0], cols)), shape=(n_i, k + 1))
    entries = np.exp(np.maximum(log_entry[keep], np.log(1.01e-9)))
    a_ub = _csr_array(
        (
            np.concatenate([entries, -np.ones(n_j)]),
            (
                np.concatenate([acts[keep, 1], np.arange(n_j)]),
                np.concatenate([cols, np.full(n_j, k)]),
            ),
        ),
        shape=(n_j, k + 1),
    )
    return _ScaledLP(a_eq, a_ub, keep, g, log_scale, n_j)


def _run_lp(lp: _ScaledLP, c: np.ndarray, t_max: float | None = None):
    """HiGHS on the scaled LP with objective ``c`` (and t <= t_max): the result, or None.

    Tight tolerances first; if HiGHS fails or returns a point that is not feasible to 1e-6
    (in the scaled units: class fractions summing to 1, pool loads at most t), its default
    tolerances; None if that fails too.
    """
    k = lp.cols.size
    bounds = [(0.0, None)] * k + [(None, t_max)]
    for options in (_HIGHS_OPTIONS, {}):
        res = _linprog(
            c,
            A_ub=lp.a_ub,
            b_ub=np.zeros(lp.n_pools),
            A_eq=lp.a_eq,
            b_eq=np.ones(lp.a_eq.shape[0]),
            bounds=bounds,
            method="highs",
            options=options,
        )
        if res.status == 0 and _feasible(lp, res.x):
            return res
    return None


def _feasible(lp: _ScaledLP, z: np.ndarray) -> bool:
    """Whether the scaled LP's point ``z`` (y and t) is feasible to 1e-6 (relative)."""
    k = lp.cols.size
    y, t = np.clip(z[:k], 0.0, None), float(z[k])
    with np.errstate(all="ignore"):
        sums = lp.a_eq[:, :k] @ y
        loads = lp.a_ub[:, :k] @ y
    return bool(
        np.isfinite(t)
        and t > 0
        and np.all(np.abs(sums - 1.0) <= 1e-6)
        and np.all(loads <= t * (1.0 + 1e-6))
    )


def _lp_solution(system: ServerPoolSystem, tol: float) -> tuple[SPPSolution, _ScaledLP, float]:
    """An SPP optimum by HiGHS on the scaled LP, in the system's units; and t* = rho / S."""
    lp = _scaled_lp(system)
    k = lp.cols.size
    c = np.zeros(k + 1)
    c[k] = 1.0
    res = _run_lp(lp, c)
    if res is None:
        raise ServerPoolError(
            "the SPP linear program failed: HiGHS found no accurate solution of the scaled LP "
            "(its loads lambda_i / (mu_ij beta_j) are too far apart for double precision)"
        )
    acts = system.activities
    lam, beta = system.arrival_rates, system.pool_sizes
    x = np.clip(res.x[:k], 0.0, None) * lp.col_scale  # fractions of each class
    t = float(res.x[k])
    flows = np.zeros((system.n_classes, system.n_pools))
    flows[acts[lp.cols, 0], acts[lp.cols, 1]] = x * lam[acts[lp.cols, 0]]
    u = np.asarray(res.eqlin.marginals, dtype=float)
    w = -np.asarray(res.ineqlin.marginals, dtype=float)
    with np.errstate(all="ignore"):  # nu_i = u_i S / lambda_i, alpha_j = w_j / beta_j
        nu = np.sign(u) * np.exp(np.log(np.abs(u)) + lp.log_scale - np.log(lam))
        alpha = w / beta
        rho = t * float(np.exp(lp.log_scale))
    nu = np.where(np.isfinite(nu), nu, 0.0)
    return _make_solution(system, rho, flows, nu, alpha, tol), lp, t


def solve_spp(
    system: ServerPoolSystem, *, require_crp: bool = True, tol: float = 1e-9
) -> SPPSolution:
    """Solve the SPP (Sec. 2); check CRP (:func:`check_crp`) unless told not to.

    When CRP holds, the optimum is found and certified exactly on its tree of basic
    activities (:mod:`.tree_simplex`: a dual simplex over spanning trees, with duals as
    logarithms and round-off bounds), so flows, rho and duals are exact up to round-off and
    change consistently with the units. Otherwise the SPP is solved by HiGHS in dimensionless
    form (:func:`_scaled_lp`): with ``require_crp`` the CRP failure is diagnosed
    (:func:`check_crp` raises), without it that optimum is returned (its duals are HiGHS's
    marginals: nu_i = d rho / d lambda_i, alpha_j = -(marginal of the pool row), so that
    sum_j alpha_j beta_j = 1). ``tol`` (relative, in [0, 0.01]): flows below
    ``tol * lambda_i`` count as zero and reduced costs below ``tol`` (relative to
    alpha_j / mu_ij) as zero.

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
    system = _check_system(system)
    tol = _check_tol(tol)
    acts = system.activities
    tree_like = len(acts) == system.n_classes + system.n_pools - 1
    small = system.n_classes + system.n_pools < _WARM_START_NODES
    if tree_like or small:
        certified = _crp_solution(system, tol)
        if certified is not None:
            return certified
    solution, lp, t = _lp_solution(system, tol)
    if not tree_like:  # HiGHS's duals start the dual simplex; its flows give a tree
        certified = _crp_solution(system, tol, solution)
        if certified is not None:
            return certified
    if require_crp:
        _diagnose(solution, lp, t, tol)
    return solution


#: From this many classes and pools on, the dual simplex starts from HiGHS's pool duals.
_WARM_START_NODES = 40


def _activity_index(system: ServerPoolSystem, edges: np.ndarray) -> np.ndarray:
    """Indices into ``system.activities`` of the activities ``edges`` (pairs, 0-based)."""
    position = np.full((system.n_classes, system.n_pools), -1, dtype=np.int64)
    acts = system.activities
    position[acts[:, 0], acts[:, 1]] = np.arange(len(acts))
    return np.sort(position[edges[:, 0], edges[:, 1]])


def check_crp(solution: SPPSolution, *, tol: float = 1e-9) -> None:
    """Raise a :class:`CRPError` subclass unless complete resource pooling holds (Sec. 2).

    CRP holds when an exact certificate exists (:mod:`.tree_simplex`): a spanning tree of
    activities whose flows all exceed ``tol * lambda_i``, on which every pool binds (the
    duals of a spanning tree are positive), and such that every other activity has relative
    reduced cost ``alpha_j / (nu_i mu_ij) - 1 > tol`` (then the optimum is unique); the tree
    of ``solution.basic`` is tried first, then those of :func:`_crp_solution`. Otherwise the
    failure is diagnosed from ``solution`` and from the optimal face of the scaled LP (HiGHS,
    :func:`_scaled_lp`; flows as fractions of their class, rho relative):

    * :class:`NotATreeError` -- the activities used by some optimal solution (a fraction
      above 1e-6 of their class's arrivals) contain a cycle (named; the optimum is then not
      unique);
    * :class:`NonBindingPoolError` -- some pool has slack (load below rho (1 - 1e-7)) or binds
      with dual alpha_j beta_j <= max(tol, 1e-9);
    * :class:`NonUniqueOptimumError` -- some flows vary over the optimal face (by more than
      1e-6 of their class), or non-basic activities have relative reduced cost
      <= max(tol, 1e-7);
    * :class:`DisconnectedError` -- the basic activities split I u J into components (named).

    The face is {rho <= rho* (1 + max(tol, 1e-9))}. Messages list at most a few items.

    Two classes and two pools, all four activities at rate 1: any split is optimal.

    >>> equal = ServerPoolSystem([1.0, 1.0], [1.0, 1.0], np.ones((2, 2)))
    >>> try:
    ...     check_crp(solve_spp(equal, require_crp=False))
    ... except NotATreeError as err:
    ...     print(err.kind, err.classes, err.pools)
    cycle (1, 2) (1, 2)
    """
    if not isinstance(solution, SPPSolution):
        raise ServerPoolError(f"expected an SPPSolution, got {type(solution).__name__}")
    tol = _check_tol(tol)
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    basic = solution.basic
    if len(basic) and is_spanning_tree(basic, n_i, n_j):
        acts, mu = _activity_rates(system)
        lam, beta = system.arrival_rates, system.pool_sizes
        tree = _activity_index(system, basic)
        ev = tree_eval(lam, beta, acts, mu, tree)
        if certify_tree(lam, beta, acts, mu, ev, tol) is not None:
            return
    if _crp_solution(system, tol) is not None or _crp_solution(system, tol, solution) is not None:
        return
    lp = _scaled_lp(system)
    with np.errstate(all="ignore"):
        t = float(solution.rho / np.exp(lp.log_scale))
    if not (np.isfinite(t) and t > 0):
        raise ServerPoolError(f"solution.rho = {_show(solution.rho)} is not a positive SPP value")
    _diagnose(solution, lp, t, tol)


def _face_support(lp: _ScaledLP, t_max: float) -> np.ndarray:
    """Fractions x_e (columns of ``lp``) positive in some solution with t <= t_max.

    Repeatedly maximise the sum of the fractions not yet seen positive over the face; every
    round finds a new one or shows there is none (the face is convex).
    """
    k = lp.cols.size
    used = np.zeros(k, dtype=bool)
    for _ in range(k + 1):
        c = np.zeros(k + 1)
        c[:k] = np.where(used, 0.0, -lp.col_scale)
        res = _run_lp(lp, c, t_max)
        if res is None:
            raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
        new = ~used & (res.x[:k] * lp.col_scale > 1e-6)
        if not new.any():
            return used
        used |= new
    return used  # pragma: no cover


def _face_varies(lp: _ScaledLP, t_max: float, columns: np.ndarray) -> bool:
    """Whether some fraction x_e, e in ``columns``, varies over the face t <= t_max.

    Two LPs instead of two per column: the minimum and maximum of a generic positive
    combination sum_e w_e x_e (weights in [1, 2], from a fixed seed) differ iff the face,
    restricted to these fractions, is not a single point (with probability one over w);
    "differ" means by more than 1e-7 (fractions of a class). Only then are the columns'
    ranges computed, to name them.
    """
    k = lp.cols.size
    if columns.size == 0:
        return False
    w = np.random.default_rng(20130901).uniform(1.0, 2.0, columns.size)
    values = []
    for sign in (1.0, -1.0):
        c = np.zeros(k + 1)
        c[columns] = sign * w * lp.col_scale[columns]
        res = _run_lp(lp, c, t_max)
        if res is None:
            raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
        values.append(float(w @ (res.x[columns] * lp.col_scale[columns])))
    return values[1] - values[0] > 1e-7


def _face_ranges(lp: _ScaledLP, t_max: float, columns: np.ndarray):
    """Min and max of the fractions x_e, e in ``columns``, over the face t <= t_max."""
    k = lp.cols.size
    lo, hi = np.zeros(columns.size), np.zeros(columns.size)
    for n, idx in enumerate(columns.tolist()):
        for sign, out in ((1.0, lo), (-1.0, hi)):
            c = np.zeros(k + 1)
            c[idx] = sign * lp.col_scale[idx]
            res = _run_lp(lp, c, t_max)
            if res is None:
                raise ServerPoolError("optimal-face LP failed: HiGHS found no accurate solution")
            out[n] = res.x[idx] * lp.col_scale[idx]
    return lo, hi


def _pairs(edges) -> list[str]:
    return [f"(class {int(i) + 1}, pool {int(j) + 1})" for i, j in edges]


def _diagnose(solution: SPPSolution, lp: _ScaledLP, t: float, tol: float) -> None:
    """Raise the CRPError naming why CRP fails (see :func:`check_crp`)."""
    system = solution.system
    n_i, n_j = system.n_classes, system.n_pools
    acts = system.activities
    basic = solution.basic
    t_max = t * (1.0 + max(tol, 1e-9))
    used_cols = _face_support(lp, t_max)
    used = acts[lp.cols[used_cols]]
    cycle = find_cycle(used, n_i, n_j)
    if cycle is not None:
        nodes = cycle[:-1]
        raise NotATreeError(
            f"the activities used by optimal SPP solutions contain the cycle "
            f"{cycle_text(cycle, n_i)}, so the optimum is not unique and the basic activities "
            "are not a tree",
            classes=sorted(v + 1 for v in nodes if v < n_i),
            pools=sorted(v - n_i + 1 for v in nodes if v >= n_i),
        )
    beta = system.pool_sizes
    load = solution.occupancy.sum(axis=0)  # busy servers per unit r
    with np.errstate(all="ignore"):
        slack_pools = np.flatnonzero(load / beta < solution.rho * (1.0 - 1e-7))
    if slack_pools.size:
        with np.errstate(over="ignore"):
            capacity = solution.rho * beta
        shown = listing(
            (
                f"pool {j + 1} (load {load[j]:.6g} < rho beta_j = {capacity[j]:.6g})"
                for j in slack_pools
            ),
            limit=2,
        )
        raise NonBindingPoolError(
            f"capacity constraint (4) is slack at the optimum for {shown}",
            pools=[j + 1 for j in slack_pools],
        )
    varying = used[:0]
    if _face_varies(lp, t_max, np.flatnonzero(used_cols)):
        lo, hi = _face_ranges(lp, t_max, np.flatnonzero(used_cols))
        varying = used[hi - lo > 1e-6]
    if len(varying):
        raise NonUniqueOptimumError(
            f"the SPP optimum is not unique: the flows on {listing(_pairs(varying))} vary over "
            "the optimal face",
            classes=sorted({int(i) + 1 for i in varying[:, 0]}),
            pools=sorted({int(j) + 1 for j in varying[:, 1]}),
        )
    comps = components(basic, n_i, n_j)
    if len(comps) > 1:
        raise DisconnectedError(
            f"the basic activities split the classes and pools into {len(comps)} "
            f"components: {components_text(comps, n_i)}",
            classes=range(1, n_i + 1),
            pools=range(1, n_j + 1),
        )
    alpha = solution.pool_duals
    with np.errstate(all="ignore"):
        zero_alpha = np.flatnonzero(~(alpha * beta > max(tol, 1e-9)))
    if zero_alpha.size:
        raise NonBindingPoolError(
            "pool capacity constraint binds with zero dual price alpha_j for "
            + listing(f"pool {j + 1}" for j in zero_alpha),
            pools=[j + 1 for j in zero_alpha],
        )
    in_basic = np.zeros((n_i, n_j), dtype=bool)
    in_basic[basic[:, 0], basic[:, 1]] = True
    nonbasic = ~in_basic[acts[:, 0], acts[:, 1]]
    mu = system.rates[acts[:, 0], acts[:, 1]]
    with np.errstate(all="ignore"):
        rc = 1.0 - solution.class_duals[acts[:, 0]] * mu / alpha[acts[:, 1]]
    flat = acts[nonbasic & ~(rc > max(tol, 1e-7))]
    if len(flat):
        raise NonUniqueOptimumError(
            f"non-basic activities {listing(_pairs(flat))} have zero reduced cost "
            "(degenerate dual)",
            classes=sorted({int(i) + 1 for i in flat[:, 0]}),
            pools=sorted({int(j) + 1 for j in flat[:, 1]}),
        )
    raise NonUniqueOptimumError(
        f"no spanning tree of activities certifies a unique optimum with every pool binding "
        f"at tol = {tol:g} (flows or reduced costs within tol of zero: a degenerate optimum)"
    )
