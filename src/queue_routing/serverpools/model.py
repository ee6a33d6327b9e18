"""The flexible server-pool model of Stolyar & Yudovina (2013), Sec. 2, and its SPP solution.

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
alpha_j > 0. :func:`~.crp.check_crp` raises a specific :class:`~.errors.CRPError` subclass
naming the classes/pools involved when one of these fails. Graph operations on the activities
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
(:func:`~.highs.scaled_lp`), at its precision (about 1e-9 relative), so which failure is named for
a system whose loads lambda_i / (mu_ij beta_j) span more than about 1e9 may depend on it.
Accepted inputs: arrival rates, pool sizes and non-zero rates in [1e-100, 1e100]
(:data:`MIN_MAGNITUDE`, :data:`MAX_MAGNITUDE`), so that every product and ratio computed
stays a finite double; everything else is refused with one line naming the field.

This module holds the system (:class:`ServerPoolSystem`, validated, with its JSON contract)
and the type of an SPP solution (:class:`SPPSolution`); the SPP is solved in :mod:`.spp`
(:func:`~.spp.solve_spp`: exactly on a certified tree, :mod:`.crp` and :mod:`.tree_simplex`,
else by HiGHS on the scaled LP, :mod:`.highs`) and complete resource pooling is checked and
diagnosed in :mod:`.crp`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ServerPoolError, listing

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "SPPSolution",
    "ServerPoolSystem",
]

_JSON_KEYS = ("arrival_rates", "pool_sizes", "activities")
_ACTIVITY_KEYS = ("class", "pool", "rate")


# -- validation helpers -------------------------------------------------------------------
#: Accepted magnitudes of arrival rates, pool sizes and (non-zero) service rates. The SPP's
#: coefficients are the dimensionless loads lambda_i / (mu_ij beta_j), a product of three data
#: values, and rho is of their order; with every value in [1e-100, 1e100] they lie in
#: [1e-300, 1e300], so every product, ratio and sum computed here stays a finite normal double.
MIN_MAGNITUDE = 1e-100
MAX_MAGNITUDE = 1e100
_ALLOWED = "allowed: numbers in [1e-100, 1e100]"


def show_json(value: Any) -> str:
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
            f"{field}: {show_json(value)} for {label} is not a number; {_ALLOWED} (JSON numbers)"
        )
    if isinstance(value, int | np.integer) and abs(int(value)) > MAX_MAGNITUDE:
        raise ServerPoolError(
            f"{field}: {show_json(value)} for {label} is out of range; {_ALLOWED}"
        )
    return float(value)


def _walk(field: str, value: Any, ndim: int, index: tuple[int, ...], label) -> Any:
    if len(index) == ndim:
        return _leaf(field, value, label(index))
    if isinstance(value, list | tuple | np.ndarray):
        return [_walk(field, v, ndim, (*index, k), label) for k, v in enumerate(value)]
    where = f" at {field}" + "".join(f"[{k}]" for k in index) if index else ""
    raise ServerPoolError(
        f"{field} must be a {ndim}-dimensional array of numbers, found {show_json(value)}{where}"
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
            f"{field}: {show_json(arr[index])} for {label(index)} is out of range; {allowed}"
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
        _check_keys("system", data, _JSON_KEYS)
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
            _check_keys(where, act, _ACTIVITY_KEYS)
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
                    f"{where}.rate: {show_json(rate)} for {label} is out of range; {_ALLOWED}"
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


def _check_keys(where: str, obj: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Refuse a JSON object ``obj`` (named ``where`` in the message) that lacks one of ``keys``
    (all missing ones named, in the order of ``keys``) or has another key (sorted, each cut
    to a few characters, the list to a few items: :func:`~.errors.listing`)."""
    missing = [key for key in keys if key not in obj]
    if missing:
        raise ServerPoolError(f"{where} is missing key(s): {', '.join(missing)}")
    extra = sorted(str(key) for key in set(obj) - set(keys))
    if extra:
        raise ServerPoolError(f"{where} has unknown key(s): {listing(map(_cut, extra))}")


def _node_number(where: str, value: Any, count: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ServerPoolError(f"{where} must be an integer in 1..{count}, got {show_json(value)}")
    if not 1 <= value <= count:
        raise ServerPoolError(f"{where} = {show_json(value)} is not in 1..{count}")
    return int(value)


def _cut(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_list(data: dict[str, Any], key: str) -> Any:
    """``data[key]``, which must be a JSON array (a list), not a string, number or object."""
    value = data[key]
    if not isinstance(value, list):
        raise ServerPoolError(f"{key} must be a list of numbers, got {show_json(value)}")
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


def spp_solution(system, rho, flows, nu, alpha, tol, basic=None) -> SPPSolution:
    """The :class:`SPPSolution` of ``system`` with optimum ``rho``, ``flows`` (I, J), duals
    ``nu`` (I,) and ``alpha`` (J,), its arrays read-only; ``basic``: the basic activities
    (default: those whose flow exceeds ``tol * lambda_i``)."""
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


def check_tol(tol: Any) -> float:
    """The SPP's relative tolerance ``tol``: a number in [0, 0.01], as a float (else
    :class:`~.errors.ServerPoolError`, one line)."""
    if isinstance(tol, bool) or not isinstance(tol, int | float | np.integer | np.floating):
        raise ServerPoolError(f"tol must be a number in [0, 0.01], got {show_json(tol)}")
    if not 0.0 <= float(tol) <= 0.01:
        raise ServerPoolError(f"tol = {show_json(tol)} is out of range; allowed: [0, 0.01]")
    return float(tol)


def activity_rates(system: ServerPoolSystem) -> tuple[np.ndarray, np.ndarray]:
    """The activities ``(K, 2)`` (0-based (i, j), sorted) and their rates mu_ij ``(K,)``."""
    acts = system.activities
    return acts, system.rates[acts[:, 0], acts[:, 1]]
