"""The optimal dynamic routing policy of Part A on the truncated chain, and the exact gap of
every routing policy to it (ours; ``docs/multiskill.md#the-optimal-dynamic-policy``).

With unit-mean exponential job sizes the job counts ``x = (x_0, ..., x_C)`` of the
processor-sharing servers form a CTMC controlled at each arrival: class ``i`` arrives at rate
``eta_i`` and is routed to its dedicated server ``i`` or to server 0; server ``j`` completes
jobs at rate ``mu_j`` while ``x_j > 0``; the cost rate is ``c.x = sum_j c_j x_j`` (cost per
unit time). The chain is truncated to a box, a level per server: count ``x_j`` lives in
``0..L_j``. A ``truncation`` is one level ``L`` (the cube ``L_j = L``) or the levels ``(L_0,
..., L_C)``. At the faces a job is *redirected*: a class-``i`` job whose chosen server is
full goes to the other one, and is lost only when both are full
(:mod:`.optimal_kernels`). Unlike the chain of :mod:`.markov`, which loses a job sent to a
full server, no policy can then gain by filling a server to have jobs lost (the optimum of
a chain with losses does, at every face it can reach: its truncated cost converges slowly,
from below, and its faces fill up); the optimum and every policy that sees the state (the
index policies, a user's, PI², a decision table) are solved on the same chain, so their
gaps are free of truncation asymmetry. Optimal Bernoulli routing ignores the state: it keeps
losses, so its servers stay independent finite M/M/1 queues solved in closed form
(:func:`bernoulli_chain`), and it is compared with the optimum on certified costs.

* :func:`optimal_policy`: relative value iteration on the chain uniformised at ``Lambda =
  sum_i eta_i + sum_j mu_j`` (compiled kernel :func:`.optimal_kernels.relative_value_iteration`),
  stopped by the span bounds ``Lambda min(Th - h) <= g* <= Lambda max(Th - h)`` on the
  optimal average cost ``g*``. The stationary law of the optimal decision table is solved
  too (compiled Gauss-Seidel), for the probability of the truncation boundary ``{x_j = L_j
  for some j}`` and of each face ``{x_j = L_j}``. With ``truncation=None`` the levels are
  raised (each box warm-started from the last) until the optimal cost is *certified*: it
  moved by at most ``rtol`` (relative) on a step that raised every level by
  :data:`LEVEL_FACTOR`. With ``shape="box"`` (the default) a step raises only the levels
  whose face holds more than :data:`FACE_FACTOR` ``* rtol`` of the stationary law, and every
  level once none does: at heavy load the backlog piles up at some servers while the others
  stay short, and only the long ones need high levels. ``shape="cube"`` raises every level
  at every step. ``method="policy"``: policy iteration instead (:func:`_policy_iteration`:
  each policy's Poisson equation solved by Gauss-Seidel sweeps with a coarse correction on
  the total count, improvement with ties kept on the incumbent), certified by the same
  bounds, those of one value-iteration step from its relative values.
* :class:`OptimalSearch`: the same search advanced a bounded wall time at a time and saved
  in between (a pipeline job each), to the same bits as one uninterrupted search; with
  ``policy=`` a built-in policy's relative values on one box (:func:`policy_relative_values`).
* Above the load :data:`AGGREGATION_LOAD` every stationary law is solved by Gauss-Seidel with
  aggregation-disaggregation on the total count (:func:`.optimal_kernels.
  stationary_two_level`), about ten times fewer sweeps at high load.
* :func:`evaluate_policy`: the stationary cost of any policy (optimal Bernoulli routing, the
  index policies, a user's index policy, PI², a decision table) on the chain, its levels
  raised in the same way (by its own faces) until its own cost is certified.
* PI² (``"pi2"``): one more policy-improvement step, greedy for the relative values of PI on
  the chain (:func:`pi2_table`).
* :func:`compare_with_optimum`: all of it for a list of policies, with the gaps in percent
  (each policy as :func:`evaluate_beside` evaluates it beside the optimum).

Memory: a chain of ``prod_j (L_j + 1)`` states needs :data:`BYTES_PER_STATE` bytes a state
(:func:`chain_bytes`); beyond ``max_bytes`` (8 GiB by default) an
:class:`~queue_routing.errors.ArgumentError` names the memory needed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from ..checks import integer, positive
from ..errors import AccuracyError, ArgumentError
from ..io import atomic_path
from ..user_policy import UserPolicy, policy_name
from .model import Instance
from .optimal_kernels import (
    MODE_OPTIMAL,
    MODE_SPLIT,
    MODE_TABLE,
    bellman_bounds,
    chain_box,
    greedy_mask,
    improve_mask,
    index_mask,
    poisson_two_level,
    poisson_two_level_2,
    redirect_mask,
    relative_value_iteration,
    relative_value_iteration_2,
    relative_value_iteration_3,
    stationary_gauss_seidel,
    stationary_summary,
    stationary_two_level,
)
from .policies import (
    POLICIES,
    POLICY_DESCRIPTIONS,
    arrival_rates,
    bernoulli_probabilities,
    policy_weights,
    resolve,
)

__all__ = [
    "BYTES_PER_STATE",
    "CHAIN_DESCRIPTIONS",
    "CHAIN_POLICIES",
    "DEFAULT_MAX_BYTES",
    "METHODS",
    "SHAPES",
    "ChainEvaluation",
    "OptimalComparison",
    "OptimalResult",
    "OptimalSearch",
    "aggregated",
    "bernoulli_chain",
    "chain_bytes",
    "chain_method",
    "compare_with_optimum",
    "evaluate_beside",
    "evaluate_policy",
    "largest_level",
    "optimal_policy",
    "optimal_values",
    "optimal_values_vectorised",
    "pi2_extended",
    "pi2_table",
    "policy_relative_values",
]

#: Policies evaluated on the chain: those of :data:`~.policies.POLICIES` and PI².
CHAIN_POLICIES = (*POLICIES, "pi2")
#: One line on each of them (the CLI's help).
CHAIN_DESCRIPTIONS = {
    **POLICY_DESCRIPTIONS,
    "pi2": "a second policy-improvement step: greedy for PI's relative values on the chain",
}
#: Bytes a state of the chain needs at the peak of :func:`compare_with_optimum`: the optimum's
#: relative values and decision table kept (8 + 4), and while a policy is evaluated its
#: relative values, their next iterate and a decision table (8 + 8 + 4), plus a warm start or
#: a stationary law (8).
BYTES_PER_STATE = 40
#: The memory the chain may take by default: 8 GiB.
DEFAULT_MAX_BYTES = 8 * 2**30
#: First truncation level when the level is chosen automatically.
START_LEVEL = 10
#: Factor by which the level is raised (``L -> max(L + 1, ceil(1.5 L))``).
LEVEL_FACTOR = 1.5
#: Default relative tolerance on a certified cost.
DEFAULT_RTOL = 1e-6
#: Default highest automatic level of any server, per number of classes (C >= 4:
#: :func:`largest_level`); ``max_bytes`` bounds the box too.
DEFAULT_MAX_LEVEL = {1: 5000, 2: 1000, 3: 300}
#: ``shape="box"``: a level is raised while its face ``{x_j = L_j}`` holds more than
#: ``FACE_FACTOR * rtol`` of the stationary law (table1-2 at load 0.9, cube levels 80 to 180:
#: the relative error of the cost is 10 to 20 times the boundary mass, so a face of
#: ``rtol / 100`` leaves about ``rtol / 5``, which the certifying step then sees).
FACE_FACTOR = 1e-2
#: How the automatic levels grow (:data:`FACE_FACTOR`).
SHAPES = ("box", "cube")
#: Iterations of the value-iteration kernel per call (signals and progress run between).
KERNEL_BLOCK = 500
#: Boxes of fewer states run their value-iteration steps on one thread: starting the threads
#: costs a few microseconds a step, more than a step of such a box saves on two
#: (measured at C = 2: 1.03x on two threads at 9,261 states, 1.45x at 68,921; the values
#: are the same to the bit either way).
PARALLEL_MIN_STATES = 30_000
#: Gauss-Seidel: most sweeps, and the residual tolerance relative to the uniformisation rate,
#: ``rtol * GS_RESIDUAL_FACTOR`` clipped to ``GS_RTOL_RANGE`` (measured at load 0.7, 157 464
#: states: a residual of 1e-9 leaves a relative cost error of 3e-6, 1e-10 of 2e-7, so the
#: factor keeps the solve's error about ten times below ``rtol``).
GS_MAX_SWEEPS = 200_000
GS_RESIDUAL_FACTOR = 1e-5
GS_RTOL_RANGE = (1e-13, 1e-9)
#: Solvers of the chain: ``"value"`` (relative value iteration for the optimum and for PI's
#: relative values), ``"policy"`` (policy iteration with policy evaluation by the two-level
#: solve of the Poisson equation, :mod:`.optimal_kernels`), ``"auto"`` (``"value"``: policy
#: iteration won only at low levels, e.g. table1-2 at load 0.9, L = 35: 2.3 s against 3.9 s,
#: and lost at high ones: the optimum of table1-2 at load 0.8, certified at L = 80, 94 s
#: against 18 s, its two-level iterations growing with the level almost as value iteration's
#: steps do).
METHODS = ("auto", "value", "policy")
#: Total load ``sum eta / sum mu`` above which a stationary law is solved by Gauss-Seidel with
#: aggregation-disaggregation on the total count (always with ``method="policy"``): plain
#: Gauss-Seidel slows down like the chain's mixing time (table1-2 at load 0.7, PI's table at
#: L = 53: 430 sweeps and 5.3 s plain, 54 sweeps and 0.5 s aggregated); below it the study's
#: results stay those of plain Gauss-Seidel.
AGGREGATION_LOAD = 0.75
#: Over-relaxation of the Gauss-Seidel sweeps of the policy evaluation (on table1-2 at load
#: 0.7, L = 53, 1.5 took 112 iterations and 1.0 310, but 1.5 diverged at load 0.9).
SOR_OMEGA = 1.0
#: Policy improvement: a decision changes only for a value lower by more than this times the
#: largest ``|h|`` (ties, rounding of the solves, stay on the incumbent).
TIE_RTOL = 1e-11
#: Policy iteration evaluates at ``LOOSE_FACTOR`` times its tolerance until no decision
#: changes, then at the tolerance (inexact policy iteration).
LOOSE_FACTOR = 100.0
#: Most policy-improvement steps at one level.
MAX_POLICY_STEPS = 100


# -- memory ------------------------------------------------------------------------------------
def n_states(n_classes: int, truncation) -> int:
    """``prod_j (L_j + 1)``, the states of the chain truncated at ``truncation`` (a level
    ``L``: ``(L + 1)^(C + 1)``)."""
    return int(np.prod(chain_box(n_classes, truncation) + 1, dtype=object))


def chain_bytes(n_classes: int, truncation) -> int:
    """Bytes the chain of ``n_classes`` classes truncated at ``truncation`` (a level or the
    levels of a box) needs (:data:`BYTES_PER_STATE` per state).

    >>> chain_bytes(2, 99), chain_bytes(2, (399, 49, 49))  # 10^6 states each
    (40000000, 40000000)
    """
    return BYTES_PER_STATE * n_states(n_classes, truncation)


def largest_level(n_classes: int, max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """The largest ``L`` whose chain fits in ``max_bytes`` (0 if not even ``L = 1`` fits).

    >>> [largest_level(c) for c in (1, 2, 3, 4, 5)]
    [14653, 597, 120, 45, 23]
    """
    L = int((max_bytes / BYTES_PER_STATE) ** (1.0 / (n_classes + 1))) + 1
    while L > 0 and chain_bytes(n_classes, L) > max_bytes:
        L -= 1
    return L if L >= 1 else 0


def check_memory(n_classes: int, truncation, max_bytes: int) -> None:
    """An :class:`~queue_routing.errors.ArgumentError` (argument ``truncation``) naming the
    memory the chain needs when it exceeds ``max_bytes``."""
    need = chain_bytes(n_classes, truncation)
    if need > max_bytes:
        raise ArgumentError(
            "truncation",
            f"truncation: the chain of C = {n_classes} classes at {_describe(truncation)} has "
            f"{n_states(n_classes, truncation):.3g} states and needs {need / 2**30:.3g} GiB of "
            f"memory, more than the {max_bytes / 2**30:.3g} GiB allowed",
        )


def _describe(truncation) -> str:
    """``level L = 9`` or ``levels (40, 8, 8)``."""
    top = np.atleast_1d(np.asarray(truncation))
    if top.size == 1 or (top == top.flat[0]).all():
        return f"level L = {int(top.flat[0])}"
    return f"levels {tuple(int(v) for v in top)}"


def _level(truncation: Any) -> int:
    return integer("truncation", truncation, 1)


def chain_method(instance: Instance, method: str = "auto") -> str:
    """``"value"`` or ``"policy"`` (:data:`METHODS`; ``"auto"`` is ``"value"``).

    >>> from queue_routing.multiskill import Instance
    >>> chain_method(Instance(mu=[1.0, 1.0], cost=[1.0, 1.0], eta=[1.8]), "policy")
    'policy'
    """
    if method not in METHODS:
        raise ArgumentError("method", f"method must be one of {list(METHODS)}, got {method!r}")
    return "value" if method == "auto" else method


def aggregated(instance: Instance, method: str) -> bool:
    """Whether stationary laws are solved with aggregation (:data:`AGGREGATION_LOAD`)."""
    load = float(np.sum(instance.eta) / np.sum(instance.mu))
    return method == "policy" or load > AGGREGATION_LOAD


# -- the arrays of a policy on the chain ------------------------------------------------------
def _separable_values(instance: Instance, top: np.ndarray) -> list[np.ndarray]:
    """``q_j(x) = c_j x (x + 1) / (2 (mu_j - lambda_j*))``, ``x = 0..L_j``: PI's separable
    relative values (the M/M/1 queues of optimal Bernoulli routing), a warm start."""
    lam = arrival_rates(instance)
    out = []
    for j in range(instance.n_classes + 1):
        x = np.arange(top[j] + 1, dtype=float)
        out.append(instance.cost[j] * x * (x + 1) / (2.0 * (instance.mu[j] - lam[j])))
    return out


def _add_along(h: np.ndarray, axis: int, v: np.ndarray) -> None:
    shape = [1] * h.ndim
    shape[axis] = v.size
    h += v.reshape(shape)


def _start_values(instance: Instance, top: np.ndarray, h_prev: np.ndarray | None) -> np.ndarray:
    """Relative values (flat) to start value iteration on the box ``top`` from: PI's separable
    values, or those of a smaller box (``h_prev`` of shape ``prev + 1``) edge-padded and
    continued by the separable values' increments."""
    n_srv = instance.n_classes + 1
    q = _separable_values(instance, top)
    if h_prev is None:
        h = np.zeros(tuple(int(v) + 1 for v in top))
        for j in range(n_srv):
            _add_along(h, j, q[j])
        return h.reshape(-1)
    prev = np.array(h_prev.shape) - 1
    h = np.pad(h_prev, [(0, int(top[j] - prev[j])) for j in range(n_srv)], mode="edge")
    for j in range(n_srv):
        _add_along(h, j, q[j] - q[j][np.minimum(np.arange(top[j] + 1), prev[j])])
    return h.reshape(-1)


def _index_table(instance: Instance, policy: Any, top: np.ndarray) -> np.ndarray:
    """``table[j, x]`` (shape ``(C + 1, max_j L_j + 1)``) of an index policy: ``w_j (x + 1)``
    of a built-in one (the simulator's comparison) or the user's index."""
    L = int(np.max(top))
    if isinstance(policy, UserPolicy):
        return np.ascontiguousarray(policy.index_table(instance.n_classes + 1, L, instance))
    w = policy_weights(instance, policy)
    return np.ascontiguousarray(w[:, None] * (np.arange(L + 1)[None, :] + 1.0))


_NO_MASK = np.zeros(1, dtype=np.uint32)
#: The mask of optimal Bernoulli routing (a marker: its chain is solved in closed form).
_BERNOULLI = np.zeros(1, dtype=np.uint32)


def _policy_arrays(
    instance: Instance, policy: Any, top: np.ndarray, rtol: float, max_iter: int,
    method: str = "value",
):  # fmt: skip
    """``(mode, mask, p)`` of ``policy`` on the box ``top`` for the kernels; a decision table
    (given, or an index policy's) redirected at the faces (:func:`.optimal_kernels.
    redirect_mask`, a given table copied first)."""
    n_srv = instance.n_classes + 1
    if isinstance(policy, np.ndarray):
        mask = np.array(policy, dtype=np.uint32).reshape(-1)
        if mask.size != n_states(instance.n_classes, top):
            raise ArgumentError(
                "policy",
                f"policy: a decision table on {_describe(top)} has "
                f"{n_states(instance.n_classes, top)} entries, got {mask.size}",
            )
        redirect_mask(mask, top, n_srv)
        return MODE_TABLE, mask, np.zeros(1)
    if policy == "pi2":
        table = pi2_table(instance, top, rtol=rtol, max_iter=max_iter, method=method)
        return MODE_TABLE, table, np.zeros(1)
    if policy == "bernoulli":
        return MODE_SPLIT, _BERNOULLI, np.ascontiguousarray(bernoulli_probabilities(instance))
    mask = index_mask(_index_table(instance, policy, top), top)
    redirect_mask(mask, top, n_srv)
    return MODE_TABLE, mask, np.zeros(1)


def _rates(instance: Instance) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    eta = np.ascontiguousarray(instance.eta, dtype=float)
    mu = np.ascontiguousarray(instance.mu, dtype=float)
    cost = np.ascontiguousarray(instance.cost, dtype=float)
    return eta, mu, cost, float(eta.sum() + mu.sum())


def _iterate(
    instance: Instance,
    top: np.ndarray,
    h: np.ndarray,
    mode: int,
    mask: np.ndarray,
    p: np.ndarray,
    rtol: float,
    max_iter: int,
    progress: Callable[..., Any] | None = None,
    done_before: int = 0,
    deadline: float = math.inf,
) -> tuple[int, float, float, bool]:
    """Value iteration in place on ``h`` in blocks of :data:`KERNEL_BLOCK` iterations (the
    kernel keeps no state but ``h``, so the blocks are the uninterrupted iteration), the
    box's iterations counted from ``done_before`` (a resumed box: the same blocks), stopped
    after the first block that ends past ``deadline`` (:func:`time.perf_counter`) unless
    converged: ``(iterations of the box, lower, upper, converged)``."""
    eta, mu, cost, big_lam = _rates(instance)
    kernel = {2: relative_value_iteration_2, 3: relative_value_iteration_3}.get(
        instance.n_classes, relative_value_iteration
    )
    it, lower, upper, converged = int(done_before), math.nan, math.nan, False
    threads = numba.get_num_threads()
    if h.size < PARALLEL_MIN_STATES:
        numba.set_num_threads(1)
    try:
        while it < max_iter and not converged:
            done, lower, upper, converged = kernel(
                h, top, eta, mu, cost, big_lam, mode, mask, p, rtol,
                min(KERNEL_BLOCK, max_iter - it),
            )  # fmt: skip
            it += int(done)
            if progress is not None:
                progress(int(done), extra=f"{_describe(top)}, bounds [{lower:.6g}, {upper:.6g}]")
            if time.perf_counter() >= deadline:
                break
    finally:
        numba.set_num_threads(threads)
    return it, float(lower), float(upper), bool(converged)


def _poisson(
    instance: Instance,
    top: np.ndarray,
    h: np.ndarray,
    mode: int,
    mask: np.ndarray,
    p: np.ndarray,
    g: float,
    rtol: float,
    max_iter: int,
) -> tuple[int, float, float, float, bool]:
    """The Poisson equation of a table or split policy in place on ``h`` (the two-level
    solve, from the estimate ``g``, or ``h``'s own one-step bounds if ``g`` is NaN):
    ``(iterations, g, lower, upper, converged)``."""
    eta, mu, cost, _ = _rates(instance)
    if math.isnan(g):
        g = float(np.dot(cost, arrival_rates(instance) / (instance.mu - arrival_rates(instance))))
    kernel = poisson_two_level_2 if instance.n_classes == 2 else poisson_two_level
    it, g, lower, upper, ok = kernel(
        h, top, eta, mu, cost, mode, mask, p, g, SOR_OMEGA, rtol, max_iter
    )
    return int(it), float(g), float(lower), float(upper), bool(ok)


def policy_relative_values(
    instance: Instance,
    policy: Any,
    truncation,
    *,
    rtol: float = DEFAULT_RTOL / 10,
    max_iter: int = 1_000_000,
    method: str = "value",
) -> tuple[np.ndarray, float, float]:
    """Relative values ``h`` (shape ``(L_0 + 1, ..., L_C + 1)``, cost units, ``h(0) = 0``) of a
    policy on the chain truncated at ``truncation`` (a level or a box's levels), and the span
    bounds ``(lower, upper)`` on its average cost (both ``min`` and ``max`` of ``c.x + (Q
    h)(x)``): value iteration with the policy's routing fixed (``method="value"``), or the
    two-level solve of the Poisson equation (``"policy"``,
    :func:`.optimal_kernels.poisson_two_level`), to ``rtol``.

    Raises :class:`~queue_routing.errors.AccuracyError` when it does not converge in
    ``max_iter`` iterations.
    """
    top = chain_box(instance.n_classes, truncation)
    method = chain_method(instance, method)
    if method == "value" and isinstance(policy, str) and policy in POLICIES:  # resumable
        search = OptimalSearch.start(instance, top, rtol=rtol, max_iter=max_iter, policy=policy)
        search.advance()
        return search.policy_values()
    policy = policy if isinstance(policy, np.ndarray) else resolve_chain_policy(policy)
    name = "the table" if isinstance(policy, np.ndarray) else policy_name(policy)
    mode, mask, p = _policy_arrays(instance, policy, top, rtol, max_iter, method)
    h = _start_values(instance, top, None)
    if method == "policy":
        it, _, lower, upper, ok = _poisson(
            instance, top, h, mode, mask, p, math.nan, rtol, max_iter
        )
    else:
        it, lower, upper, ok = _iterate(instance, top, h, mode, mask, p, rtol, max_iter)
    if not ok:
        raise AccuracyError(_not_converged(name, top, it, lower, upper))
    return h.reshape(tuple(int(v) + 1 for v in top)), lower, upper


def _not_converged(name: str, top: np.ndarray, it: int, lower: float, upper: float) -> str:
    return (
        f"truncation: value iteration of {name} at {_describe(top)} did not converge in "
        f"{it} iterations (bounds [{lower:.6g}, {upper:.6g}])"
    )


def pi2_table(
    instance: Instance,
    truncation,
    *,
    rtol: float = DEFAULT_RTOL / 10,
    max_iter: int = 1_000_000,
    method: str = "value",
) -> np.ndarray:
    """PI²'s decision table on the chain truncated at ``truncation`` (a level or a box's levels;
    flat, C order; bit ``i - 1`` set routes class ``i`` to its dedicated server): greedy for
    PI's relative values ``h_PI`` on the chain, i.e. class ``i`` to server ``i`` iff ``h_PI(x
    + e_i) <= h_PI(x + e_0)`` where both have room (one policy-improvement step from PI, as
    PI is one from optimal Bernoulli routing)."""
    top = chain_box(instance.n_classes, truncation)
    h, _, _ = policy_relative_values(
        instance, "pi", top, rtol=rtol, max_iter=max_iter, method=method
    )
    return greedy_mask(h.reshape(-1), top, instance.n_classes + 1)


def pi2_extended(instance: Instance, h_pi: np.ndarray, truncation) -> np.ndarray:
    """PI² on any box (flat table, C order), from PI's relative values ``h_pi`` solved on the
    box ``F = h_pi.shape - 1``: greedy for ``h_pi`` where both of a class's servers have room
    in ``F`` (as :func:`pi2_table` on ``F``), PI's own choice elsewhere, and redirected at the
    faces of ``truncation``. So PI² is one policy on every box, and its cost can be certified
    by raising the levels as an index policy's is, without solving ``h_pi`` again. On ``F``
    itself it is :func:`pi2_table`."""
    n = instance.n_classes
    top = chain_box(n, truncation)
    mask = index_mask(_index_table(instance, "pi", top), top).reshape(
        tuple(int(v) + 1 for v in top)
    )
    F = np.array(h_pi.shape) - 1
    for i in range(1, n + 1):
        # the states x of both boxes with x_0 < F_0 and x_i < F_i (all of whose moves stay in F)
        lim = [min(int(F[j]), int(top[j])) + 1 for j in range(n + 1)]
        lim[0], lim[i] = min(int(F[0]), lim[0]), min(int(F[i]), lim[i])
        here = tuple(slice(0, m) for m in lim)
        up_i = tuple(slice(1, m + 1) if j == i else slice(0, m) for j, m in enumerate(lim))
        up_0 = tuple(slice(1, m + 1) if j == 0 else slice(0, m) for j, m in enumerate(lim))
        bit = np.uint32(1 << (i - 1))
        dedicated = h_pi[up_i] <= h_pi[up_0]
        mask[here] = np.where(dedicated, mask[here] | bit, mask[here] & ~bit)
    mask = np.ascontiguousarray(mask.reshape(-1))
    redirect_mask(mask, top, n + 1)
    return mask


def resolve_chain_policy(policy: Any) -> str | UserPolicy:
    """A name of :data:`CHAIN_POLICIES` or a user policy (:func:`~.policies.resolve`)."""
    if policy == "pi2":
        return "pi2"
    return resolve(policy)


# -- the stationary law of a policy -------------------------------------------------------------
@dataclass(frozen=True)
class _Law:
    """The stationary law of a policy on a box: cost (per unit time), ``E[x_j]``, the mass of
    the boundary and of each face ``{x_j = L_j}``, the arrivals lost (per unit time), and the
    law itself (shape ``top + 1``; None for optimal Bernoulli routing, solved per server)."""

    cost: float
    means: np.ndarray
    boundary: float
    faces: np.ndarray
    lost: float
    pi: np.ndarray | None


def _stationary(
    instance: Instance,
    top: np.ndarray,
    mode: int,
    mask: np.ndarray,
    p: np.ndarray,
    pi0: np.ndarray | None = None,
    rtol: float = DEFAULT_RTOL,
    method: str = "value",
) -> _Law:
    """The stationary law of a table or split policy on the box ``top`` (optimal Bernoulli
    routing in closed form, :func:`bernoulli_chain`), the solve started from ``pi0`` (a
    smaller box's law, zero-padded) or the uniform law: symmetric Gauss-Seidel, or the same
    sweeps with aggregation-disaggregation on the total count
    (:func:`.optimal_kernels.stationary_two_level`, when :func:`aggregated`), to the same
    residual."""
    if mode == MODE_SPLIT and mask is _BERNOULLI:
        cost, means, boundary, lost, faces = _bernoulli_law(instance, top)
        return _Law(cost, means, boundary, faces, lost, None)
    eta, mu, cost, _ = _rates(instance)
    shape = tuple(int(v) + 1 for v in top)
    size = int(np.prod(shape))
    if pi0 is None:
        pi = np.full(size, 1.0 / size)
    else:
        pad = [(0, shape[j] - pi0.shape[j]) for j in range(len(shape))]
        pi = np.pad(pi0, pad).reshape(-1)
        pi += 1e-3 / pi.size  # every state positive
        pi /= pi.sum()
    tol = min(max(rtol * GS_RESIDUAL_FACTOR, GS_RTOL_RANGE[0]), GS_RTOL_RANGE[1])
    if aggregated(instance, method):
        sweeps, res = stationary_two_level(pi, top, eta, mu, mode, mask, p, tol, GS_MAX_SWEEPS, 2)
    else:
        sweeps, res = stationary_gauss_seidel(
            pi, top, eta, mu, mode, mask, p, tol, GS_MAX_SWEEPS, 10
        )
    if not res <= tol * (eta.sum() + mu.sum()):
        raise AccuracyError(
            f"truncation: Gauss-Seidel at {_describe(top)} did not converge in {sweeps} sweeps "
            f"(max |pi Q| = {res:.3g})"
        )
    means, boundary, lost = stationary_summary(pi, top, eta, mu, mode, mask, p)
    law = pi.reshape(shape)
    faces = np.array([float(law.take(-1, axis=j).sum()) for j in range(len(shape))])
    return _Law(float(means @ cost), means, float(boundary), faces, float(lost), law)


def _bernoulli_law(instance: Instance, top: np.ndarray):
    """``(cost, means, boundary_mass, lost_rate, faces)`` of optimal Bernoulli routing on the
    box: independent M/M/1/L_j queues."""
    lam = arrival_rates(instance)
    rho = lam / instance.mu
    means = np.empty(rho.size)
    faces = np.empty(rho.size)
    for j, r in enumerate(rho):
        k = np.arange(top[j] + 1, dtype=float)
        w = np.exp(k * math.log(r)) if r > 0 else (k == 0).astype(float)
        w /= w.sum()
        means[j] = float(k @ w)
        faces[j] = w[-1]
    boundary = 1.0 - float(np.prod(1.0 - faces))
    return float(means @ instance.cost), means, boundary, float(lam @ faces), faces


def bernoulli_chain(instance: Instance, truncation):
    """``(cost, means, boundary_mass, lost_rate)`` of optimal Bernoulli routing on the chain
    truncated at ``truncation`` (a level ``L`` or the levels ``L_j``): the servers are
    independent M/M/1/L_j queues with arrival rates ``lambda_j*``
    (:func:`~.policies.arrival_rates`), ``P(x_j = k) ∝ rho_j^k``, ``k = 0..L_j``.

    >>> from queue_routing.multiskill import Instance
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> round(bernoulli_chain(inst, 400)[0], 9)  # 0.62/0.38 + 3 (0.24/0.76)
    2.578947368
    """
    return _bernoulli_law(instance, chain_box(instance.n_classes, truncation))[:4]


@dataclass(frozen=True)
class ChainEvaluation:
    """Stationary performance of one policy on the truncated chain.

    Attributes
    ----------
    policy:
        The policy's name.
    cost:
        Long-run average holding cost ``sum_j c_j E[x_j]`` (cost per unit time).
    per_server_mean_jobs:
        ``E[x_j]`` (jobs), shape ``(C + 1,)``.
    truncation:
        The largest level ``max_j L_j`` of the reported cost's box.
    boundary_mass:
        Stationary probability of the boundary ``{x_j = L_j for some j}``.
    lost_rate:
        Arrivals lost to the truncation per unit time.
    certified:
        Whether the cost moved by at most ``rtol`` (relative) on a step that raised every
        level.
    history:
        ``((levels, cost), ...)`` of the boxes solved.
    levels:
        The box ``(L_0, ..., L_C)`` of the reported cost.
    """

    policy: str
    cost: float
    per_server_mean_jobs: np.ndarray
    truncation: int
    boundary_mass: float
    lost_rate: float
    certified: bool
    history: tuple = ()
    levels: tuple = ()

    def to_dict(self) -> dict[str, Any]:
        """``cost``, ``truncation``, ``levels``, ``boundary_mass``, ``lost_rate``,
        ``certified``, ``per_server_mean_jobs`` and ``history`` (a list of ``[levels,
        cost]``)."""
        return {
            "cost": float(self.cost),
            "truncation": int(self.truncation),
            "levels": [int(v) for v in self.levels],
            "boundary_mass": float(self.boundary_mass),
            "lost_rate": float(self.lost_rate),
            "certified": bool(self.certified),
            "per_server_mean_jobs": [float(v) for v in self.per_server_mean_jobs],
            "history": [[[int(v) for v in levels], float(c)] for levels, c in self.history],
        }


def _evaluation(name: str, law: _Law, top: np.ndarray, certified: bool, history) -> ChainEvaluation:
    return ChainEvaluation(
        policy=name, cost=law.cost, per_server_mean_jobs=law.means, truncation=int(top.max()),
        boundary_mass=law.boundary, lost_rate=law.lost, certified=bool(certified),
        history=tuple(history), levels=tuple(int(v) for v in top),
    )  # fmt: skip


def _next_level(L: int) -> int:
    return max(L + 1, math.ceil(LEVEL_FACTOR * L))


def _previous_level(L: int) -> int:
    """The largest level whose :func:`_next_level` is at least ``L`` (``L - 1`` at least)."""
    k = max(1, L - 1)
    while k > 1 and _next_level(k - 1) >= L:
        k -= 1
    return k


def _check_shape(shape: str) -> str:
    if shape not in SHAPES:
        raise ArgumentError("shape", f"shape must be one of {list(SHAPES)}, got {shape!r}")
    return shape


def _grown(top: np.ndarray, faces: np.ndarray, rtol: float, shape: str) -> np.ndarray:
    """The next box: every level raised by :data:`LEVEL_FACTOR` (``shape="cube"``, or when no
    face holds more than :data:`FACE_FACTOR` ``* rtol``), else only those of the heavy faces.

    >>> _grown(np.array([10, 10, 10]), np.array([1e-3, 1e-9, 0.0]), 1e-4, "box").tolist()
    [15, 10, 10]
    >>> _grown(np.array([15, 10, 10]), np.array([1e-9, 1e-9, 0.0]), 1e-4, "box").tolist()
    [23, 15, 15]
    """
    heavy = faces > FACE_FACTOR * rtol
    grow = heavy if shape == "box" and heavy.any() else np.ones(top.size, dtype=bool)
    return np.array([_next_level(int(v)) if g else int(v) for v, g in zip(top, grow, strict=True)])


def _certified(top, prev_top, cost, prev, rtol, floor) -> bool:
    """The cost at ``top`` is certified: it moved by at most ``rtol`` (relative) from the box
    ``prev_top`` with every level raised since, and ``top`` holds ``floor``."""
    return (
        prev is not None
        and bool((top > prev_top).all())
        and abs(cost - prev) <= rtol * abs(cost)
        and bool((top >= floor).all())
    )


def _levels_cap(instance: Instance, max_level: int | None, max_bytes: int) -> int:
    """The highest automatic level of any server (``max_bytes`` bounds the box apart)."""
    if max_level is not None:
        return int(max_level)
    return DEFAULT_MAX_LEVEL.get(instance.n_classes, largest_level(instance.n_classes, max_bytes))


def _fits(instance: Instance, top: np.ndarray, cap: int, max_bytes: int) -> bool:
    return int(top.max()) <= cap and chain_bytes(instance.n_classes, top) <= max_bytes


def evaluate_policy(
    instance: Instance,
    policy: Any,
    truncation=None,
    *,
    certify: bool = True,
    rtol: float = DEFAULT_RTOL,
    start=None,
    max_level: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    strict: bool = False,
    method: str = "auto",
    shape: str = "box",
    h_pi: np.ndarray | None = None,
) -> ChainEvaluation:
    """The exact stationary cost of ``policy`` on the chain (compiled Gauss-Seidel on the
    balance equations, residual ``<= rtol 1e-5 Lambda`` within ``[1e-13, 1e-9] Lambda``).

    ``policy``: ``"bernoulli"`` (the exact solver's optimal split), ``"jsq"``, ``"led"``,
    ``"io"``, ``"pi"``, ``"pi2"``, a user index policy (``"path.py:name"``, a callable
    ``index(server, jobs, instance)``; ``docs/your-own-policy.md``), or a decision table
    (flat uint32 array, bit ``i - 1`` = class ``i`` to server ``i``; then ``certify`` must be
    False). ``truncation`` and ``start``: a level ``L`` (the cube) or a box's levels ``(L_0,
    ..., L_C)``. ``certify=False``: solved at ``truncation`` only (``certified`` False). Else
    from ``start`` (default: the box one step below ``truncation``, or below
    :data:`START_LEVEL`) the levels are raised (``shape``, :func:`_grown`) until the cost
    moves by at most ``rtol`` (relative) on a step that raised every level and the box holds
    ``truncation``; if ``max_level`` or ``max_bytes`` comes first the last box is returned
    with ``certified`` False (an :class:`~queue_routing.errors.AccuracyError` with
    ``strict``). PI² (``"pi2"``): PI's relative values are solved once, on the box where PI's
    own cost is certified (the same way), and PI² on every box is :func:`pi2_extended` of
    them (``h_pi``: those values, already solved, as :func:`policy_relative_values` of PI on
    that box at ``rtol / 10``). ``method`` (:data:`METHODS`): PI²'s evaluation of PI, and the
    stationary solver (:func:`aggregated`).

    >>> from queue_routing.multiskill import Instance
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> ev = evaluate_policy(inst, "bernoulli")  # product form: 0.62/0.38 + 3 (0.24/0.76)
    >>> ev.certified, bool(abs(ev.cost - (0.62 / 0.38 + 3 * 0.24 / 0.76)) < 1e-5)
    (True, True)
    """
    positive("rtol", rtol)
    method = chain_method(instance, method)
    shape = _check_shape(shape)
    table = isinstance(policy, np.ndarray)
    if table and certify:
        raise ArgumentError("certify", "certify: a decision table is evaluated at its own level")
    pol = policy if table else resolve_chain_policy(policy)
    name = "table" if table else policy_name(pol)
    n = instance.n_classes
    if not certify:
        top = chain_box(n, truncation)
        check_memory(n, top, max_bytes)
        mode, mask, p = _policy_arrays(instance, pol, top, rtol, 1_000_000, method)
        law = _stationary(instance, top, mode, mask, p, None, rtol, method)
        return _evaluation(name, law, top, False, ((tuple(int(v) for v in top), law.cost),))
    cap = _levels_cap(instance, max_level, max_bytes)
    floor = chain_box(n, START_LEVEL if truncation is None else truncation)
    if start is not None:
        top = chain_box(n, start)
    else:
        top = np.array([max(2, _previous_level(int(v))) for v in floor])
    arrays = _policy_arrays
    if pol == "pi2" and h_pi is None:  # PI's values where PI's own cost is certified
        pi_ev = evaluate_policy(
            instance, "pi", truncation, rtol=rtol, start=start, max_level=max_level,
            max_bytes=max_bytes, strict=strict, method=method, shape=shape,
        )  # fmt: skip
        h_pi, _, _ = policy_relative_values(instance, "pi", pi_ev.levels, rtol=rtol / 10,
                                            method=method)  # fmt: skip
    if pol == "pi2":

        def arrays(instance, pol, top, *_):
            return MODE_TABLE, pi2_extended(instance, h_pi, top), np.zeros(1)

    history: list[tuple[tuple, float]] = []
    prev, prev_top, law = None, None, None
    while True:
        check_memory(n, top, max_bytes)
        mode, mask, p = arrays(instance, pol, top, rtol, 1_000_000, method)
        law = _stationary(instance, top, mode, mask, p, None if law is None else law.pi, rtol,
                          method)  # fmt: skip
        history.append((tuple(int(v) for v in top), law.cost))
        ok = _certified(top, prev_top, law.cost, prev, rtol, floor)
        nxt = np.maximum(_grown(top, law.faces, rtol, shape), floor)
        if ok or not _fits(instance, nxt, cap, max_bytes):
            if not ok and strict:
                raise AccuracyError(
                    f"truncation: the cost of {name} is not stable to rtol {rtol:g} below level "
                    f"{cap} (levels and costs {history[-3:]})"
                )
            return _evaluation(name, law, top, ok, history)
        prev, prev_top, top = law.cost, top, nxt


# -- the optimum ------------------------------------------------------------------------------
def _policy_iteration(
    instance: Instance,
    top: np.ndarray,
    h: np.ndarray,
    rtol: float,
    max_iter: int,
    progress: Callable[..., Any] | None = None,
) -> tuple[int, float, float, bool, np.ndarray]:
    """Policy iteration on the box ``top`` in place on ``h`` (the start values): the decision
    table greedy for ``h``, then alternately its evaluation (:func:`_poisson`, warm-started
    from the last values and cost, to :data:`LOOSE_FACTOR` times ``rtol`` until the policy is
    stable, then to ``rtol``) and policy improvement keeping ties on the incumbent
    (:func:`.optimal_kernels.improve_mask`, a tie being a difference below :data:`TIE_RTOL`
    times the largest ``|h|``), until no decision changes. The bounds are those of one optimal
    value-iteration step from the final values (:func:`.optimal_kernels.bellman_bounds`),
    valid whatever the accuracy of the solves. Returns ``(solver
    iterations, lower, upper, converged, mask)``."""
    eta, mu, cost, _ = _rates(instance)
    n_srv = instance.n_classes + 1
    mask = greedy_mask(h, top, n_srv)
    g = math.nan
    total = 0
    ok = False
    loose = rtol * LOOSE_FACTOR
    for _step in range(MAX_POLICY_STEPS):
        it, g, lower, upper, ok = _poisson(
            instance, top, h, MODE_TABLE, mask, np.zeros(1), g, loose, max_iter
        )
        total += it
        if progress is not None:
            progress(it, extra=f"{_describe(top)}, policy bounds [{lower:.6g}, {upper:.6g}]")
        if not ok:
            break
        tol = TIE_RTOL * float(np.max(np.abs(h)))
        if improve_mask(h, top, n_srv, mask, tol) == 0:
            if loose <= rtol:
                break
            loose = rtol  # the policy is stable at the loose tolerance: solve exactly
    lower, upper = bellman_bounds(h, top, eta, mu, cost)
    ok = ok and upper - lower <= rtol * 0.5 * abs(upper + lower)
    return total, float(lower), float(upper), bool(ok), mask


@dataclass(frozen=True)
class OptimalResult:
    """The average-cost optimal routing on the chain truncated to a box.

    Attributes
    ----------
    cost:
        Optimal long-run average holding cost (cost per unit time): the midpoint of the bounds.
    lower, upper:
        Span bounds ``Lambda min(Th - h)`` and ``Lambda max(Th - h)`` of the last value
        iteration step (cost per unit time).
    truncation:
        The largest level ``max_j L_j`` of the final box.
    converged:
        The span bounds met ``rtol`` at the final box, and, when the levels were chosen
        automatically, the cost is certified (moved by at most ``rtol`` on the last step,
        which raised every level). An explicit truncation is solved as it stands:
        ``converged`` then says only that the bounds met.
    certified:
        The levels were raised until the cost no longer moved (False for an explicit
        truncation).
    boundary_mass, lost_rate:
        Stationary probability of the boundary ``{x_j = L_j for some j}`` under the optimal
        decision table, and the rate of arrivals it loses to the truncation (jobs per unit
        time).
    table_cost:
        The stationary cost of the optimal decision table (Gauss-Seidel), a check of ``cost``.
    iterations, seconds:
        Value-iteration steps (or, by policy iteration, two-level solver iterations) and wall
        time (s), over every level tried.
    method:
        ``"value"`` or ``"policy"`` (:func:`chain_method`).
    history:
        ``((levels, cost, lower, upper), ...)`` of the boxes tried.
    levels:
        The final box ``(L_0, ..., L_C)``.
    face_mass:
        Stationary probability of each face ``{x_j = L_j}`` (shape ``(C + 1,)``).
    mask:
        The decision table, flat (C order): bit ``i - 1`` set routes class ``i`` to server
        ``i`` (see :meth:`route`, :meth:`decision_table`).
    relative_values:
        ``h`` (shape ``(L_0 + 1, ..., L_C + 1)``, cost units), ``h(0) = 0``.
    """

    cost: float
    lower: float
    upper: float
    truncation: int
    converged: bool
    certified: bool
    boundary_mass: float
    lost_rate: float
    table_cost: float
    iterations: int
    seconds: float
    history: tuple
    n_classes: int
    method: str = "value"
    levels: tuple = ()
    face_mass: np.ndarray = field(repr=False, compare=False, default=None)
    mask: np.ndarray = field(repr=False, compare=False, default=None)
    relative_values: np.ndarray = field(repr=False, compare=False, default=None)

    @property
    def bounds(self) -> tuple[float, float]:
        """``(lower, upper)``, the span bounds on the optimal cost."""
        return (self.lower, self.upper)

    def route(self, state: Sequence[int], job_class: int) -> int:
        """The server (``job_class`` or 0) the optimal policy sends a class-``job_class``
        arrival to in ``state = (x_0, ..., x_C)`` (every count ``x_j <= L_j``)."""
        top, n_srv = self.levels, self.n_classes + 1
        x = [int(v) for v in state]
        if len(x) != n_srv or min(x) < 0 or any(v > t for v, t in zip(x, top, strict=True)):
            raise ArgumentError(
                "state", f"state must be {n_srv} counts x_j in 0..L_j = {list(top)}, got {state}"
            )
        integer("job_class", job_class, 1, self.n_classes)
        s = int(np.ravel_multi_index(x, tuple(t + 1 for t in top)))
        return job_class if (int(self.mask[s]) >> (job_class - 1)) & 1 else 0

    def decision_table(self) -> np.ndarray:
        """``d[x_0, ..., x_C, i - 1]`` (bool, shape ``(L_0 + 1, ..., L_C + 1, C)``): True where
        the optimal policy routes a class-``i`` arrival to server ``i``."""
        shape = tuple(t + 1 for t in self.levels)
        bits = np.arange(self.n_classes, dtype=np.uint32)
        return (
            ((self.mask[:, None] >> bits[None, :]) & 1).astype(bool).reshape(*shape, self.n_classes)
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON object: ``cost``, ``bounds`` ``[lower, upper]``, ``truncation``, ``levels``,
        ``converged``, ``certified``, ``boundary_mass``, ``lost_rate``, ``table_cost``,
        ``iterations``, ``seconds``, ``method``, ``history`` (lists ``[levels, cost, lower,
        upper]``); the decision table and the relative values stay attributes."""
        return {
            "cost": float(self.cost),
            "bounds": [float(self.lower), float(self.upper)],
            "truncation": int(self.truncation),
            "levels": [int(v) for v in self.levels],
            "converged": bool(self.converged),
            "certified": bool(self.certified),
            "boundary_mass": float(self.boundary_mass),
            "lost_rate": float(self.lost_rate),
            "table_cost": float(self.table_cost),
            "iterations": int(self.iterations),
            "seconds": float(self.seconds),
            "method": self.method,
            "history": [[[int(v) for v in r[0]], *(float(v) for v in r[1:])] for r in self.history],
        }


def optimal_policy(
    instance: Instance,
    truncation=None,
    *,
    rtol: float = DEFAULT_RTOL,
    start=None,
    max_level: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_iter: int = 2_000_000,
    strict: bool = True,
    method: str = "auto",
    shape: str = "box",
    progress: Callable[..., Any] | None = None,
) -> OptimalResult:
    """The optimal dynamic routing of ``instance`` on the truncated chain (module docstring).

    Parameters
    ----------
    truncation:
        ``None``: the box from ``start`` (a level or levels; default the cube of
        :data:`START_LEVEL`), its levels raised (``shape``) until the optimal cost moves by
        at most ``rtol`` relative on a step that raised every level (certified). A level
        ``L`` (the cube) or the levels ``(L_0, ..., L_C)``: that box only, as it stands.
    rtol:
        Relative tolerance of the certification; value iteration stops when its span bounds
        are within ``rtol / 10`` (relative).
    max_level, max_bytes:
        The automatic levels stay at most ``max_level`` (default :data:`DEFAULT_MAX_LEVEL`)
        and the box within ``max_bytes`` of memory (:func:`chain_bytes`). A chain that does
        not fit at the first box (``start``, or the explicit truncation) raises
        :class:`~queue_routing.errors.ArgumentError` naming the memory it needs: the classes
        are too many for the exact chain.
    strict:
        Raise :class:`~queue_routing.errors.AccuracyError` when the cost is not certified (or
        value iteration does not converge in ``max_iter`` steps); with ``strict=False`` the
        result is returned with ``converged`` False.
    method:
        ``"value"``: relative value iteration on each box; ``"policy"``: policy iteration
        (:func:`_policy_iteration`), each box started from the last box's values, the
        bounds those of one value-iteration step from its relative values; ``"auto"``:
        value iteration (:data:`METHODS`).
    shape:
        ``"box"``: raise the levels of the heavy faces only (:data:`FACE_FACTOR`), every
        level once none is heavy; ``"cube"``: every level at every step (:data:`SHAPES`).

    Examples
    --------
    The optimum is below PI's cost, and the stationary cost of its decision table is the
    value iteration's cost:

    >>> from queue_routing.multiskill import Instance
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> opt = optimal_policy(inst)
    >>> opt.converged, opt.lower <= opt.cost <= opt.upper
    (True, True)
    >>> bool(opt.cost <= evaluate_policy(inst, "pi", opt.levels, certify=False).cost)
    True
    >>> bool(abs(opt.table_cost - opt.cost) < 1e-5 * opt.cost)
    True
    """
    search = OptimalSearch.start(
        instance, truncation, rtol=rtol, start=start, max_level=max_level,
        max_bytes=max_bytes, max_iter=max_iter, method=method, shape=shape,
    )  # fmt: skip
    search.advance(progress=progress)
    return search.result(strict=strict)


#: The fields of :class:`OptimalSearch` saved as arrays (``None`` saved as an empty array)
#: and in the JSON of the rest (:meth:`OptimalSearch.save`).
_SEARCH_ARRAYS = ("top", "h", "prev_top", "pi", "mask", "faces")
_SEARCH_META = (
    "rtol", "cap", "max_bytes", "max_iter", "method", "shape", "explicit", "box_iterations",
    "prev", "iterations", "seconds", "done", "lower", "upper", "ok", "certified", "law",
    "policy",
)  # fmt: skip


@dataclass
class OptimalSearch:
    """Where :func:`optimal_policy`'s search over boxes stands, to be advanced a bounded time
    at a time (a pipeline job each) and saved in between (:meth:`save`, :meth:`load`): the
    same arithmetic as one uninterrupted search, so the result is the same to the bit
    however the time is cut (value iteration is resumed at the block it stopped after,
    :data:`KERNEL_BLOCK`).

    Start one with :meth:`start` (the arguments of :func:`optimal_policy`), run it with
    :meth:`advance`, read the result with :meth:`result` once :attr:`done`:

    >>> from queue_routing.multiskill import Instance
    >>> inst = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6])
    >>> search = OptimalSearch.start(inst, rtol=1e-6)
    >>> while not search.advance(seconds=0.0):  # a block or a box at a time
    ...     pass
    >>> search.result().cost == optimal_policy(inst, rtol=1e-6).cost
    True
    """

    instance: Instance
    rtol: float
    cap: int
    max_bytes: int
    max_iter: int
    method: str
    shape: str
    explicit: bool
    #: the box being solved, its values (flat, started) and the iterations done on it
    top: np.ndarray
    h: np.ndarray | None = None
    box_iterations: int = 0
    #: the last box's cost and levels (certification) and stationary law (a warm start)
    prev: float | None = None
    prev_top: np.ndarray | None = None
    pi: np.ndarray | None = None
    history: list = field(default_factory=list)
    iterations: int = 0
    seconds: float = 0.0
    done: bool = False
    #: once done: the last bounds, whether they met, the certificate, the optimal table
    #: and its law's summary (cost, boundary mass, lost rate, faces)
    lower: float = math.nan
    upper: float = math.nan
    ok: bool = False
    certified: bool = False
    mask: np.ndarray | None = None
    law: tuple = ()
    faces: np.ndarray | None = None
    #: a built-in policy whose relative values are solved instead of the optimum
    policy: str | None = None

    @property
    def tolerance(self) -> float:
        """Value iteration's relative tolerance: ``rtol / 10`` for the optimum, ``rtol`` for a
        policy's values."""
        return self.rtol if self.policy is not None else self.rtol / 10

    @classmethod
    def start(
        cls,
        instance: Instance,
        truncation=None,
        *,
        rtol: float = DEFAULT_RTOL,
        start=None,
        max_level: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_iter: int = 2_000_000,
        method: str = "auto",
        shape: str = "box",
        policy: str | None = None,
    ) -> OptimalSearch:
        """A search not yet advanced, the arguments those of :func:`optimal_policy` (a chain
        too large for ``max_bytes`` already raises here). ``policy``: one of the built-in
        index policies (:data:`~.policies.POLICIES`), whose relative values are solved on the
        box ``truncation`` to ``rtol`` instead (:func:`policy_relative_values`;
        :meth:`policy_values`)."""
        positive("rtol", rtol)
        method = chain_method(instance, method)
        shape = _check_shape(shape)
        n = instance.n_classes
        explicit = truncation is not None
        if policy is not None and (policy not in POLICIES or not explicit):
            raise ArgumentError(
                "policy",
                f"policy: the values of one of {list(POLICIES)} on an explicit truncation, "
                f"got {policy!r} on {truncation!r}",
            )
        if explicit:
            top = chain_box(n, truncation)
            cap = int(top.max())
        else:
            cap = _levels_cap(instance, max_level, max_bytes)
            top = chain_box(n, START_LEVEL if start is None else start)
        check_memory(n, top, max_bytes)  # C too large: the memory it needs
        return cls(instance, float(rtol), cap, int(max_bytes), int(max_iter), method, shape,
                   explicit, top, policy=policy)  # fmt: skip

    def advance(
        self, seconds: float | None = None, progress: Callable[..., Any] | None = None
    ) -> bool:
        """Run the search until it is :attr:`done`, or (``seconds``) until the first point
        past that wall time: the end of a value-iteration block or of a box (at least one
        block is run). Returns :attr:`done`."""
        t0 = time.perf_counter()
        deadline = math.inf if seconds is None else t0 + float(seconds)
        try:
            while not self.done:
                self._box(deadline, progress)
                if time.perf_counter() >= deadline:
                    break
        finally:
            self.seconds += time.perf_counter() - t0
        return self.done

    def _box(self, deadline: float, progress: Callable[..., Any] | None) -> None:
        """Advance the box being solved: its value iteration (to ``deadline``), then its
        stationary law, the certificate and the next box."""
        inst, top, rtol = self.instance, self.top, self.rtol
        n_srv = inst.n_classes + 1
        if self.h is None:
            self.h = _start_values(inst, top, None)
        if self.method == "policy" and self.policy is None:
            it, lower, upper, ok, mask = _policy_iteration(
                inst, top, self.h, self.tolerance, self.max_iter, progress
            )
        else:
            mode, fixed, p = MODE_OPTIMAL, _NO_MASK, np.zeros(1)
            if self.policy is not None:
                mode, fixed, p = _policy_arrays(inst, self.policy, top, rtol, self.max_iter)
            it, lower, upper, ok = _iterate(
                inst, top, self.h, mode, fixed, p, self.tolerance, self.max_iter, progress,
                self.box_iterations, deadline,
            )  # fmt: skip
            if not ok and it < self.max_iter:  # paused within the box
                self.iterations += it - self.box_iterations
                self.box_iterations = it
                return
            if self.policy is not None:  # a policy's values: this box only
                self.iterations += it - self.box_iterations
                self.box_iterations = it
                self.lower, self.upper, self.ok, self.done = lower, upper, ok, True
                return
            mask = greedy_mask(self.h, top, n_srv)
        self.iterations += it - self.box_iterations
        self.box_iterations = 0
        cost = 0.5 * (lower + upper)
        self.history.append((tuple(int(v) for v in top), cost, lower, upper))
        self.lower, self.upper, self.ok, self.mask = lower, upper, ok, mask
        if not ok:  # this box's table is solved as it stands
            law = _stationary(inst, top, MODE_TABLE, mask, np.zeros(1), None, rtol, self.method)
            self._finish(law, False)
            return
        law = _stationary(inst, top, MODE_TABLE, mask, np.zeros(1), self.pi, rtol, self.method)
        certified = not self.explicit and _certified(top, self.prev_top, cost, self.prev, rtol,
                                                     top)  # fmt: skip
        nxt = _grown(top, law.faces, rtol, self.shape)
        if self.explicit or certified or not _fits(inst, nxt, self.cap, self.max_bytes):
            self._finish(law, certified)
            return
        h_box = self.h.reshape(tuple(int(v) + 1 for v in top))
        self.prev, self.prev_top, self.pi = cost, top, law.pi
        self.top = nxt
        self.h = _start_values(inst, nxt, h_box).reshape(-1)

    def _finish(self, law: _Law, certified: bool) -> None:
        self.certified = bool(certified)
        self.law = (law.cost, law.boundary, law.lost)
        self.faces = law.faces
        self.pi = None
        self.done = True

    def policy_values(self) -> tuple[np.ndarray, float, float]:
        """``(h, lower, upper)`` of a policy's search that is :attr:`done`, as
        :func:`policy_relative_values` returns them (an
        :class:`~queue_routing.errors.AccuracyError` if value iteration did not converge)."""
        if not self.done or self.policy is None:
            raise ArgumentError("search", "search: not a policy's values, or not done yet")
        if not self.ok:
            raise AccuracyError(
                _not_converged(self.policy, self.top, self.box_iterations, self.lower, self.upper)
            )
        return self.h.reshape(tuple(int(v) + 1 for v in self.top)), self.lower, self.upper

    def result(self, strict: bool = True) -> OptimalResult:
        """The :class:`OptimalResult` of a search that is :attr:`done`. ``strict``: raise
        :class:`~queue_routing.errors.AccuracyError` when the cost is not certified (or value
        iteration did not converge in ``max_iter`` steps), as :func:`optimal_policy` does."""
        if not self.done or self.policy is not None:
            raise ArgumentError("search", "search: not the optimum's, or not done yet")
        top, lower, upper = self.top, self.lower, self.upper
        if strict and not self.ok:
            raise AccuracyError(
                f"truncation: {self.method} iteration at {_describe(top)} did not converge in "
                f"{self.max_iter} iterations (bounds [{lower:.6g}, {upper:.6g}])"
            )
        if strict and not self.explicit and not self.certified:
            raise AccuracyError(
                f"truncation: the optimal cost is not stable to rtol {self.rtol:g} below level "
                f"{self.cap} (levels and costs {[(r[0], r[1]) for r in self.history[-3:]]})"
            )
        table_cost, boundary, lost = self.law
        return OptimalResult(
            cost=float(0.5 * (lower + upper)),
            lower=float(lower),
            upper=float(upper),
            truncation=int(top.max()),
            converged=bool(self.ok and (self.explicit or self.certified)),
            certified=bool(self.certified),
            boundary_mass=float(boundary),
            lost_rate=float(lost),
            table_cost=float(table_cost),
            iterations=int(self.iterations),
            seconds=float(self.seconds),
            history=tuple(self.history),
            n_classes=self.instance.n_classes,
            method=self.method,
            levels=tuple(int(v) for v in top),
            face_mass=self.faces,
            mask=self.mask,
            relative_values=self.h.reshape(tuple(int(v) + 1 for v in top)),
        )

    def save(self, path) -> None:
        """Write the search to ``path`` (``.npz``; the instance is saved to be checked by
        :meth:`load`), atomically."""
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **self.pack())

    @classmethod
    def load(cls, path, instance: Instance) -> OptimalSearch:
        """The search saved at ``path`` by :meth:`save`, for ``instance`` (another instance
        raises :class:`~queue_routing.errors.ArgumentError`)."""
        with np.load(path, allow_pickle=False) as data:
            return cls.unpack(data, instance, path=path)

    def pack(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The arrays :meth:`save` writes (names after ``prefix``: several searches in one
        file), the rest as JSON in ``meta``."""
        meta = {
            "instance": _instance_key(self.instance),
            **{k: getattr(self, k) for k in _SEARCH_META},
            "history": [[list(r[0]), *r[1:]] for r in self.history],
        }
        arrays = {
            prefix + k: np.empty(0) if getattr(self, k) is None else np.asarray(getattr(self, k))
            for k in _SEARCH_ARRAYS
        }
        return {prefix + "meta": np.array(json.dumps(meta)), **arrays}

    @classmethod
    def unpack(cls, data, instance: Instance, prefix: str = "", path="") -> OptimalSearch:
        """The search :meth:`pack` wrote into ``data`` (a mapping of names to arrays)."""
        meta = json.loads(str(data[prefix + "meta"]))
        arrays = {k: (data[prefix + k] if data[prefix + k].size else None) for k in _SEARCH_ARRAYS}
        if meta.pop("instance") != _instance_key(instance):
            raise ArgumentError("search", f"search: {path} was saved for another instance")
        history = [(tuple(r[0]), *r[1:]) for r in meta.pop("history")]
        law = tuple(meta.pop("law"))
        return cls(instance=instance, history=history, law=law, **meta, **arrays)


def _instance_key(instance: Instance) -> dict[str, list[float]]:
    """The instance a saved search belongs to (its rates and costs, exact in JSON)."""
    return {k: getattr(instance, k).tolist() for k in ("mu", "cost", "eta")}


def _up(h: np.ndarray, axis: int) -> np.ndarray:
    """``h(x + e_axis)``, and ``h(x)`` where ``x_axis = L`` (the job lost)."""
    out = h.copy()
    sl = [slice(None)] * h.ndim
    src = list(sl)
    sl[axis] = slice(0, -1)
    src[axis] = slice(1, None)
    out[tuple(sl)] = h[tuple(src)]
    return out


def _down(h: np.ndarray, axis: int) -> np.ndarray:
    """``h(x - e_axis)`` where ``x_axis > 0`` (zero elsewhere: multiplied by a zero rate)."""
    out = np.zeros_like(h)
    sl = [slice(None)] * h.ndim
    src = list(sl)
    sl[axis] = slice(1, None)
    src[axis] = slice(0, -1)
    out[tuple(sl)] = h[tuple(src)]
    return out


def optimal_values(
    instance: Instance, truncation, rtol: float = DEFAULT_RTOL / 10, max_iter: int = 2_000_000
) -> tuple[np.ndarray, int, float, float, bool]:
    """The value iteration of :func:`optimal_policy` on one box (a level or levels) by the
    compiled kernel, from PI's separable values, nothing else (no decision table, no
    stationary law): ``(h, iterations, lower, upper, converged)``, ``h`` of shape ``(L_0 + 1,
    ..., L_C + 1)``. The same operator as :func:`optimal_values_vectorised`."""
    top = chain_box(instance.n_classes, truncation)
    h = _start_values(instance, top, None)
    it, lower, upper, ok = _iterate(
        instance, top, h, MODE_OPTIMAL, _NO_MASK, np.zeros(1), rtol, max_iter
    )
    return h.reshape(tuple(int(v) + 1 for v in top)), it, lower, upper, ok


def optimal_values_vectorised(
    instance: Instance, truncation, rtol: float = DEFAULT_RTOL / 10, max_iter: int = 2_000_000
) -> tuple[np.ndarray, int, float, float, bool]:
    """The value iteration of :func:`optimal_policy` on one box in numpy, vectorised over the
    state grid (the reference implementation of the compiled kernel and the baseline of
    ``benchmarks/optimal_value_iteration.py``), from the same start (PI's separable values).
    Returns ``(h, iterations, lower, upper, converged)``, ``h`` of shape ``(L_0 + 1, ...,
    L_C + 1)``.
    """
    top = chain_box(instance.n_classes, truncation)
    n_srv = instance.n_classes + 1
    eta, mu, cost, big_lam = _rates(instance)
    h = _start_values(instance, top, None).reshape(tuple(int(v) + 1 for v in top))
    grid = np.indices(h.shape)
    holding = np.tensordot(cost, grid, axes=1).astype(float)
    busy = [grid[j] > 0 for j in range(n_srv)]
    full = [grid[j] == top[j] for j in range(n_srv)]
    stay = big_lam - eta.sum() - sum(mu[j] * busy[j] for j in range(n_srv))
    lower = upper = math.nan
    for it in range(1, max_iter + 1):
        h0 = _up(h, 0)
        th = holding + stay * h
        for j in range(n_srv):
            th += mu[j] * _down(h, j)
        for i in range(1, n_srv):  # the least server with room; the other one if full
            hi = _up(h, i)
            best = np.where(full[i], h0, np.where(full[0], hi, np.minimum(hi, h0)))
            th += eta[i - 1] * best
        th /= big_lam
        diff = th - h
        lower, upper = big_lam * float(diff.min()), big_lam * float(diff.max())
        h = th - th.flat[0]
        if upper - lower <= rtol * 0.5 * abs(upper + lower):
            return h, it, lower, upper, True
    return h, max_iter, lower, upper, False


# -- every policy against the optimum -----------------------------------------------------------
@dataclass(frozen=True)
class OptimalComparison:
    """The optimum and each policy's exact cost on the chain, with the gaps.

    ``gaps[name] = 100 (cost - optimum) / optimum`` (percent of the optimal cost).
    """

    optimal: OptimalResult
    evaluations: dict[str, ChainEvaluation]

    @property
    def gaps(self) -> dict[str, float]:
        """Each policy's gap to the optimum, percent of the optimal cost."""
        g = self.optimal.cost
        return {k: 100.0 * (ev.cost - g) / g for k, ev in self.evaluations.items()}

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON object: ``cost``, ``bounds``, ``truncation``, ``converged``,
        ``certified``, ``boundary_mass``, ``levels`` of the optimum, and ``policies``: per
        policy ``cost``, ``gap_pct``, ``truncation``, ``levels``, ``boundary_mass`` and
        ``certified``."""
        opt = self.optimal
        gaps = self.gaps
        return {
            "cost": float(opt.cost),
            "bounds": [float(opt.lower), float(opt.upper)],
            "truncation": int(opt.truncation),
            "levels": [int(v) for v in opt.levels],
            "converged": bool(opt.converged),
            "certified": bool(opt.certified),
            "boundary_mass": float(opt.boundary_mass),
            "policies": {
                k: {
                    "cost": float(ev.cost),
                    "gap_pct": float(gaps[k]),
                    "truncation": int(ev.truncation),
                    "levels": [int(v) for v in ev.levels],
                    "boundary_mass": float(ev.boundary_mass),
                    "certified": bool(ev.certified),
                }
                for k, ev in self.evaluations.items()
            },
        }


def compare_with_optimum(
    instance: Instance,
    policies: Sequence[Any] = CHAIN_POLICIES,
    truncation=None,
    *,
    rtol: float = DEFAULT_RTOL,
    max_level: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    strict: bool = True,
    method: str = "auto",
    shape: str = "box",
    progress: Callable[..., Any] | None = None,
) -> OptimalComparison:
    """:func:`optimal_policy` and :func:`evaluate_policy` of each of ``policies``.

    With ``truncation=None`` each policy's box starts at the optimum's box before the
    certified one and is raised (by its own faces, ``shape``) until its own cost is certified
    on a box holding the optimum's (a policy with a heavier tail than the optimum needs
    higher levels); with an explicit truncation every policy is solved on that box. A policy
    whose cost cannot be certified is reported with ``certified`` False (never an error: the
    optimum still is). ``method``: the solvers (:func:`chain_method`), the same for the
    optimum and every policy.

    >>> from queue_routing.multiskill import Instance
    >>> inst = Instance(mu=[2.0, 1.5, 1.0], cost=[1.0, 3.0, 2.0], eta=[1.2, 0.6])
    >>> cmp = compare_with_optimum(inst, ["bernoulli", "pi", "pi2"], rtol=1e-5)
    >>> all(g > -1e-3 for g in cmp.gaps.values()), cmp.gaps["pi2"] <= cmp.gaps["pi"] + 1e-3
    (True, True)
    """
    opt = optimal_policy(
        instance, truncation, rtol=rtol, max_level=max_level, max_bytes=max_bytes,
        strict=strict, method=method, shape=shape, progress=progress,
    )  # fmt: skip
    evaluations = {}
    for policy in policies:
        ev = evaluate_beside(
            instance, policy, opt, truncation, rtol=rtol, max_level=max_level,
            max_bytes=max_bytes, method=method, shape=shape,
        )  # fmt: skip
        evaluations[ev.policy] = ev
    return OptimalComparison(optimal=opt, evaluations=evaluations)


def evaluate_beside(
    instance: Instance,
    policy: Any,
    optimal: OptimalResult,
    truncation=None,
    *,
    rtol: float = DEFAULT_RTOL,
    max_level: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    method: str = "auto",
    shape: str = "box",
    h_pi: np.ndarray | None = None,
) -> ChainEvaluation:
    """:func:`evaluate_policy` of ``policy`` as :func:`compare_with_optimum` makes it beside
    the optimum ``optimal`` found with the same arguments: with ``truncation=None`` from the
    optimum's box before the certified one, raised until the policy's own cost is certified
    on a box holding the optimum's; else on ``truncation`` as it stands. ``h_pi``: PI²'s
    values of PI, already solved (:func:`evaluate_policy`)."""
    pol = resolve_chain_policy(policy)
    if truncation is not None:
        return evaluate_policy(
            instance, pol, truncation, certify=False, rtol=rtol, max_bytes=max_bytes,
            method=method,
        )  # fmt: skip
    start = optimal.history[-2][0] if len(optimal.history) > 1 else None
    return evaluate_policy(
        instance, pol, optimal.levels, rtol=rtol, start=start, max_level=max_level,
        max_bytes=max_bytes, method=method, shape=shape, h_pi=h_pi,
    )  # fmt: skip
