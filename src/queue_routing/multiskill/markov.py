"""Exact stationary cost of the routing policies on small instances (truncated CTMC).

Model: ``docs/multiskill.md#index-policy-simulations``; the model and the
policies are those of :mod:`queue_routing.multiskill.policies`. The count process
``x = (x_0, ..., x_C)`` is a CTMC: class ``i`` arrives at rate ``eta_i`` and is routed to
server ``i`` or server 0 by the policy, server ``j`` completes jobs at rate ``mu_j`` when
``x_j > 0``. We truncate every coordinate at ``L``: an arrival routed to a server that holds
``L`` jobs is blocked (lost). The routing decision is taken first, exactly as in the
simulator, so the truncated chain agrees with the untruncated one on every state inside the
box; the error of the truncation is controlled by the stationary probability of the boundary
``{x : max_j x_j = L}`` (:attr:`ChainResult.boundary_mass`), which callers should check is
negligible. Under Bernoulli routing the truncated chain is a product of independent M/M/1/L
queues, a check of the chain itself.

The chain has ``(L + 1)^(C + 1)`` states, so this is for C = 1 and 2 (and small L at C = 3).
The stationary distribution solves ``pi Q = 0``, ``sum(pi) = 1``, with the generator assembled
as a scipy.sparse matrix. Two solvers:

``direct``        the transposed generator with the balance equation of the empty state
                  replaced by ``pi_0 = 1`` (a sparse row; a dense normalisation row wrecks the
                  fill-in), sparse LU (``spsolve``), then normalised. SuperLU's fill-in on
                  this 3-D grid makes it slow beyond ~20,000 states (measured: 1-2 s at
                  17,576 states, 10-30 s at 68,921 for C = 2).
``gauss-seidel``  symmetric Gauss-Seidel sweeps on the balance equations ``pi(s) q(s) =
                  sum_{s'} pi(s') Q(s', s)`` over the CSR arrays of ``Q^T`` (compiled),
                  normalised after each sweep, until ``max |pi Q| <= 1e-14 max_s q(s)``
                  (measured: 0.4-1 s at 68,921 states, 200-500 sweeps, agreeing with the
                  direct solve to 3e-15). Non-convergence raises, it is never returned.

``auto`` (the default) uses ``direct`` up to 5,000 states and ``gauss-seidel`` beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.linalg import spsolve

from ..user_policy import UserPolicy, policy_name
from .model import Instance
from .policies import POLICIES, arrival_rates, bernoulli_probabilities, policy_weights, resolve

__all__ = ["ChainResult", "generator", "initial_truncation", "stationary_cost"]

#: Largest state space :func:`generator` accepts.
MAX_STATES = 2_000_000
#: ``auto`` solves chains up to this many states directly, larger ones by Gauss-Seidel.
DIRECT_MAX_STATES = 5_000
_GS_RTOL = 1e-14
_GS_MAX_SWEEPS = 200_000


@dataclass(frozen=True)
class ChainResult:
    """Stationary performance of one policy on the truncated chain.

    Attributes
    ----------
    policy:
        One of :data:`~queue_routing.multiskill.policies.POLICIES`, or a user policy's name
        (``docs/README.md#your-own-policy``).
    truncation:
        ``L``, the largest count of each server.
    cost:
        Stationary mean holding cost rate ``sum_j c_j E[x_j]`` (cost per unit time).
    per_server_mean_jobs:
        ``E[x_j]`` (jobs), shape ``(C + 1,)``.
    boundary_mass:
        Stationary probability of ``{max_j x_j = L}`` (the states where some arrival is
        blocked); the truncation error of the cost is of this order times the tail's size.
    lost_rate:
        Rate of arrivals lost to the truncation (routed to a server holding L jobs; jobs per
        unit time) in stationarity; Part B's chain results use the same name.
    n_states:
        ``(L + 1)^(C + 1)``.
    residual:
        ``max |pi Q|`` (probability per unit time), the accuracy of the solve.
    method:
        ``"direct"`` or ``"gauss-seidel"``.
    sweeps:
        Gauss-Seidel sweeps (0 for the direct solve).
    distribution:
        ``pi`` reshaped to ``(L + 1,) * (C + 1)``, indexed by ``(x_0, ..., x_C)``.
    """

    policy: str
    truncation: int
    cost: float
    per_server_mean_jobs: np.ndarray
    boundary_mass: float
    lost_rate: float
    n_states: int
    residual: float
    method: str
    sweeps: int
    distribution: np.ndarray = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the result: the keys of a simulation's
        (:meth:`.SimulationResult.to_dict`), ``ci95`` being ``None`` (the chain is solved
        exactly), and the truncation's accuracy: ``cost``, ``ci95``, ``per_server_mean_jobs``,
        ``truncation``, ``boundary_mass`` and ``lost_rate``.

        >>> from queue_routing.multiskill import Instance
        >>> res = stationary_cost(Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6]), "jsq")
        >>> list(res.to_dict())
        ['cost', 'ci95', 'per_server_mean_jobs', 'truncation', 'boundary_mass', 'lost_rate']
        """
        return {
            "cost": float(self.cost),
            "ci95": None,
            "per_server_mean_jobs": [float(v) for v in self.per_server_mean_jobs],
            "truncation": int(self.truncation),
            "boundary_mass": float(self.boundary_mass),
            "lost_rate": float(self.lost_rate),
        }


def _routes_dedicated(instance: Instance, policy: str, x: np.ndarray) -> np.ndarray:
    """Probability (shape ``(C, n_states)``) that an arriving class-i job goes to server i.

    ``x`` has shape ``(C + 1, n_states)``. Index policies use the same comparison as the
    simulator's kernel, ``w_i (x_i + 1) <= w_0 (x_0 + 1)`` (ties to the dedicated server).
    """
    n = instance.n_classes
    if isinstance(policy, UserPolicy):  # its table up to the truncation (x_j <= L)
        table = policy.index_table(n + 1, int(x.max(initial=0)), instance)
        lhs = table[np.arange(1, n + 1)[:, None], x[1:]]
        rhs = table[0, x[0]]
        return (lhs <= rhs[None, :]).astype(float)
    if policy == "bernoulli":
        p = bernoulli_probabilities(instance)
        return np.broadcast_to(p[:, None], (n, x.shape[1])).astype(float)
    w = policy_weights(instance, policy)
    lhs = w[1:, None] * (x[1:] + 1)
    rhs = w[0] * (x[0] + 1)
    return (lhs <= rhs[None, :]).astype(float)


def generator(instance: Instance, policy: str, truncation: int) -> sp.csr_matrix:
    """Generator ``Q`` (rates per unit time) of the chain truncated at ``L = truncation``.

    States are flattened C-order from ``(x_0, ..., x_C)`` in ``{0..L}^(C + 1)``; rows sum
    to zero. Arrivals routed to a full server (``x_j = L``) are blocked. ``policy`` is one
    of :data:`POLICIES` or a user index policy (``"path.py:name"``, a callable, a
    :class:`~queue_routing.user_policy.UserPolicy`; ``docs/README.md#your-own-policy``),
    tabulated for ``x = 0..L``.
    """
    if isinstance(policy, str) and policy not in POLICIES and ":" not in policy:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    policy = resolve(policy)
    if isinstance(truncation, bool) or not isinstance(truncation, int | np.integer):
        raise TypeError(f"truncation must be an int, got {type(truncation).__name__}")
    if truncation < 1:
        raise ValueError(f"truncation must be >= 1, got {truncation}")
    L = int(truncation)
    n_srv = instance.n_classes + 1
    n_states = (L + 1) ** n_srv
    if n_states > MAX_STATES:
        raise ValueError(
            f"truncation: {n_states} states for L = {L} and C = {n_srv - 1} exceeds "
            f"MAX_STATES = {MAX_STATES}"
        )
    shape = (L + 1,) * n_srv
    x = np.array(np.unravel_index(np.arange(n_states), shape))  # (C + 1, n_states)
    strides = np.array([(L + 1) ** (n_srv - 1 - j) for j in range(n_srv)])
    ded = _routes_dedicated(instance, policy, x)
    rows, cols, vals = [], [], []
    states = np.arange(n_states)
    for i in range(1, n_srv):
        eta = instance.eta[i - 1]
        for j, frac in ((i, ded[i - 1]), (0, 1.0 - ded[i - 1])):
            ok = (x[j] < L) & (frac > 0)
            rows.append(states[ok])
            cols.append(states[ok] + strides[j])
            vals.append(eta * frac[ok])
    for j in range(n_srv):
        ok = x[j] > 0
        rows.append(states[ok])
        cols.append(states[ok] - strides[j])
        vals.append(np.full(int(ok.sum()), instance.mu[j]))
    rows_a, cols_a, vals_a = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    off = sp.csr_matrix((vals_a, (rows_a, cols_a)), shape=(n_states, n_states))
    out = np.asarray(off.sum(axis=1)).ravel()
    return (off - sp.diags(out)).tocsr()


@njit(cache=True, nogil=True)  # nogil: a signal can end a long solve (signals.py)
def _gauss_seidel(indptr, indices, data, out_rate, pi, tol, max_sweeps):  # pragma: no cover
    """Symmetric Gauss-Seidel on ``pi Q = 0`` in place; returns ``(sweeps, max |pi Q|)``.

    ``indptr, indices, data``: CSR arrays of ``Q^T`` (row ``s`` lists ``Q(s', s)``, diagonal
    included); ``out_rate[s] = -Q(s, s) > 0``. One sweep is a forward then a backward pass,
    then ``pi`` is normalised to sum 1 and the residual computed.
    """
    n = pi.size
    res = np.inf
    for sweep in range(max_sweeps):
        for direction in range(2):
            for t in range(n):
                s = t if direction == 0 else n - 1 - t
                acc = 0.0
                for k in range(indptr[s], indptr[s + 1]):
                    c = indices[k]
                    if c != s:
                        acc += pi[c] * data[k]
                pi[s] = acc / out_rate[s]
        total = pi.sum()
        for s in range(n):
            pi[s] /= total
        res = 0.0
        for s in range(n):
            acc = 0.0
            for k in range(indptr[s], indptr[s + 1]):
                acc += pi[indices[k]] * data[k]
            res = max(res, abs(acc))
        if res <= tol:
            return sweep + 1, res
    return max_sweeps, res


def _solve_direct(q: sp.csr_matrix) -> np.ndarray:
    n_states = q.shape[0]
    keep = np.ones(n_states)
    keep[0] = 0.0
    unit = sp.csr_matrix(([1.0], ([0], [0])), shape=q.shape)
    a = sp.diags(keep) @ q.T.tocsr() + unit
    b = np.zeros(n_states)
    b[0] = 1.0
    pi = spsolve(a.tocsc(), b, permc_spec="MMD_AT_PLUS_A")
    return pi / pi.sum()


def _solve_gauss_seidel(q: sp.csr_matrix) -> tuple[np.ndarray, int]:
    qt = q.T.tocsr()
    qt.sort_indices()
    out_rate = -q.diagonal()
    pi = np.full(q.shape[0], 1.0 / q.shape[0])
    tol = _GS_RTOL * float(out_rate.max())
    sweeps, res = _gauss_seidel(qt.indptr, qt.indices, qt.data, out_rate, pi, tol, _GS_MAX_SWEEPS)
    if not res <= tol:
        raise RuntimeError(
            f"stationary_cost: Gauss-Seidel did not converge in {sweeps} sweeps "
            f"(max |pi Q| = {res:.3g} > {tol:.3g}); use method='direct'"
        )
    return pi, int(sweeps)


def initial_truncation(instance: Instance, boundary_tol: float = 1e-10) -> int:
    """A first guess of ``L`` for a boundary mass near ``boundary_tol``.

    ``L = ceil(log(tol)/log(r)) + 2`` with ``r`` the largest of the optimal Bernoulli loads and
    the total load ``sum eta / sum mu`` (the tail of a pooled system decays like the latter).
    :func:`stationary_cost` enlarges it while the boundary mass is too large.
    """
    lam = arrival_rates(instance)
    r = max(float(np.max(lam / instance.mu)), float(instance.eta.sum() / instance.mu.sum()))
    r = min(max(r, 1e-3), 1.0 - 1e-9)
    return max(2, math.ceil(math.log(boundary_tol) / math.log(r)) + 2)


def stationary_cost(
    instance: Instance,
    policy: str,
    truncation: int | None = None,
    *,
    boundary_tol: float = 1e-10,
    method: str = "auto",
) -> ChainResult:
    """Stationary cost of ``policy`` on ``instance`` from the truncated chain.

    Parameters
    ----------
    truncation:
        ``L``. ``None``: start from :func:`initial_truncation` and multiply ``L`` by 1.25
        until the boundary mass is below ``boundary_tol`` (raises if the state space would
        exceed :data:`MAX_STATES` first). With an explicit ``L`` the boundary mass is only
        reported: check it before trusting the cost.
    method:
        ``"auto"``, ``"direct"`` or ``"gauss-seidel"`` (see the module docstring).

    Examples
    --------
    Under Bernoulli routing the chain is a product of M/M/1 queues, so its cost is the
    product form (2.578947368... = 0.62/0.38 + 3 (0.24/0.76)); the PI index policy is cheaper:

    >>> from queue_routing.multiskill import Instance, stationary_cost
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> chain = stationary_cost(inst, "bernoulli")
    >>> bool(abs(chain.cost - (0.62 / 0.38 + 3 * 0.24 / 0.76)) < 1e-8), chain.boundary_mass < 1e-10
    (True, True)
    >>> bool(stationary_cost(inst, "pi").cost < chain.cost)
    True
    """
    if method not in ("auto", "direct", "gauss-seidel"):
        raise ValueError(f"method must be 'auto', 'direct' or 'gauss-seidel', got {method!r}")
    if not (isinstance(boundary_tol, float | int) and 0 < boundary_tol < 1):
        raise ValueError(f"boundary_tol must be in (0, 1), got {boundary_tol!r}")
    policy = resolve(policy)  # a user policy is loaded once, tabulated per level
    if truncation is not None:
        return _stationary(instance, policy, truncation, method)
    L = initial_truncation(instance, boundary_tol)
    while True:
        res = _stationary(instance, policy, L, method)
        if res.boundary_mass < boundary_tol:
            return res
        L = math.ceil(1.25 * L)


def _stationary(instance: Instance, policy: str, truncation: int, method: str) -> ChainResult:
    q = generator(instance, policy, truncation)
    n_states = q.shape[0]
    if method == "auto":
        method = "direct" if n_states <= DIRECT_MAX_STATES else "gauss-seidel"
    sweeps = 0
    if method == "direct":
        pi = _solve_direct(q)
    else:
        pi, sweeps = _solve_gauss_seidel(q)
    residual = float(np.max(np.abs(q.T @ pi)))
    if not math.isfinite(residual):  # pragma: no cover - singular solve
        raise RuntimeError("stationary_cost: the linear solve failed")
    L = int(truncation)
    n_srv = instance.n_classes + 1
    dist = pi.reshape((L + 1,) * n_srv)
    means = np.empty(n_srv)
    levels = np.arange(L + 1)
    for j in range(n_srv):
        marginal = dist.sum(axis=tuple(k for k in range(n_srv) if k != j))
        means[j] = float(levels @ marginal)
    x = np.array(np.unravel_index(np.arange(n_states), dist.shape))
    boundary = float(pi[(x == L).any(axis=0)].sum())
    ded = _routes_dedicated(instance, policy, x)
    blocked = 0.0
    for i in range(1, n_srv):
        lost = ded[i - 1] * (x[i] == L) + (1.0 - ded[i - 1]) * (x[0] == L)
        blocked += instance.eta[i - 1] * float(pi @ lost)
    return ChainResult(
        policy=policy_name(policy),
        truncation=L,
        cost=float(means @ instance.cost),
        per_server_mean_jobs=means,
        boundary_mass=boundary,
        lost_rate=blocked,
        n_states=n_states,
        residual=residual,
        method=method,
        sweeps=sweeps,
        distribution=dist,
    )
