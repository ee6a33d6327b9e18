"""Closed-form solution of LOAD-OPT for C = 2 classes (the "M model", paper Sec. 4.1).

Implemented from the case analysis of Sec. 4.1, independently of the exact solver
(:mod:`.exact`), so the two can be tested against each other. Units as in :mod:`.model`:
``mu`` (work per unit time) and ``cost`` (cost per job per unit time) have shape ``(3,)``,
index 0 = the multi-skilled server; ``eta`` (work per unit time) has shape ``(2,)``.

The paper assumes w.l.o.g. ``delta_1 <= delta_2`` (``delta_j = sqrt((c_j/mu_j)/(c_0/mu_0))``,
the corrected definition, ``docs/multiskill.md#kkt-conditions-and-delta``). Under that
ordering the cases, numbered as in the paper, are

- case 1, ``C_d = {1, 2}``: ``rho_i = eta_i/mu_i``, ``rho_0 = 0``;
- case 2, ``C_d = {1}, C_b = {2}``: ``rho_0 = 1 - (mu_0+mu_2-eta_2)/(mu_0+delta_2 mu_2)``;
- case 3, ``C_d = {1}, C_0 = {2}``: ``rho_1 = eta_1/mu_1``, ``rho_0 = eta_2/mu_0``;
- case 4, ``C_0 = {1, 2}``: ``rho_0 = (eta_1+eta_2)/mu_0``;
- case 5, ``C_b = {1, 2}``:
  ``rho_0 = 1 - (mu_0+mu_1+mu_2-eta_1-eta_2)/(mu_0+delta_1 mu_1+delta_2 mu_2)``;
- case 6, ``C_b = {1}, C_d = {2}``: ``rho_0 = 1 - (mu_0+mu_1-eta_1)/(mu_0+delta_1 mu_1)``;
- case 7, ``C_b = {1}, C_0 = {2}``: ``rho_0 = 1 - (mu_0+mu_1-eta_1-eta_2)/(mu_0+delta_1 mu_1)``;

with ``rho_j = 1 - delta_j (1 - rho_0)`` for ``j`` in C_b and ``rho_j = 0`` for ``j`` in C_0.

**Case 7 is ours.** The paper lists six cases and excludes, by Proposition 3(a), only
``C_0 = {1}`` with class 2 in C_d or C_b. The partition ``C_b = {1}, C_0 = {2}`` is not
excluded by any of its propositions and is optimal on a region of positive area (e.g.
``mu = (10, 10, 10)``, ``cost = (1, 2.25, 9)``, ``eta = (5, 5)``: ``delta = (1.5, 3)``,
``rho_0 = 0.6``). Its conditions follow from Proposition 2 exactly as for the others.

The case is decided by the simplified conditions of Sec. 4.1, multiplied out so that no
denominator can change sign (see :func:`case_conditions`); the strict/weak inequalities
follow Proposition 2 (C_0 iff ``delta_i (1-rho_0) >= 1``; C_b iff
``1 - eta_i/mu_i < delta_i (1-rho_0) < 1``; C_d otherwise), the same convention as
:func:`.model.partition_at`, so that, away from rounding at boundaries, the case partition is
the one the exact solver reports. On a boundary between two cases both give the same loads.

All conditions are linear in ``(eta_1, eta_2)`` for fixed ``mu``, ``cost``, so the case
boundaries of Fig. 2 are straight line segments (:func:`case_boundaries`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import BOTH, DEDICATED, SHARED, Instance, Partition, delta, holding_cost
from .result import Solution

__all__ = [
    "BOUNDARY_KEYS",
    "CASE_LABELS",
    "CASE_PARTITIONS",
    "TwoClassSolution",
    "case_boundaries",
    "case_conditions",
    "case_map",
    "closed_form_loads",
    "solve_two_class",
]

#: Partition labels ``(class 1, class 2)`` of each case, under ``delta_1 <= delta_2``.
CASE_PARTITIONS: dict[int, tuple[int, int]] = {
    1: (DEDICATED, DEDICATED),
    2: (DEDICATED, BOTH),
    3: (DEDICATED, SHARED),
    4: (SHARED, SHARED),
    5: (BOTH, BOTH),
    6: (BOTH, DEDICATED),
    7: (BOTH, SHARED),
}

#: Human-readable partition of each case (paper's numbering; 7 is ours), ``delta_1 <= delta_2``.
CASE_LABELS: dict[int, str] = {
    1: "C_d={1,2}",
    2: "C_d={1}, C_b={2}",
    3: "C_d={1}, C_0={2}",
    4: "C_0={1,2}",
    5: "C_b={1,2}",
    6: "C_b={1}, C_d={2}",
    7: "C_b={1}, C_0={2}",
}

#: The boundaries between adjacent cases, as lines ``a_1 eta_1 + a_2 eta_2 = b`` (w.l.o.g.
#: frame); see :func:`_boundary_lines`. Key ``"i|j"`` separates case i from case j.
BOUNDARY_KEYS = ("1|2", "1|6", "2|3", "2|5", "3|7", "4|7", "5|7", "5|6")


def _parts(mu, dlt, eta):
    """Broadcast the scalars of the w.l.o.g. frame: (m0, m1, m2, d1, d2, e1, e2, r1, r2)."""
    mu = np.asarray(mu, dtype=float)
    dlt = np.asarray(dlt, dtype=float)
    eta = np.asarray(eta, dtype=float)
    m0, m1, m2 = mu[..., 0], mu[..., 1], mu[..., 2]
    d1, d2 = dlt[..., 0], dlt[..., 1]
    e1, e2 = eta[..., 0], eta[..., 1]
    return m0, m1, m2, d1, d2, e1, e2, e1 / m1, e2 / m2


def case_conditions(mu, dlt, eta) -> dict[int, np.ndarray]:
    """The conditions of Sec. 4.1 under which each case is optimal (``delta_1 <= delta_2``).

    Parameters
    ----------
    mu:
        Capacities ``(..., 3)``, work per unit time.
    dlt:
        ``(delta_1, delta_2)``, shape ``(..., 2)``, dimensionless, with ``delta_1 <= delta_2``.
    eta:
        Intensities ``(..., 2)``, work per unit time; the instance must be stable.

    Returns
    -------
    dict
        ``{case: bool array}``. Mathematically exactly one case holds for a stable instance
        (Proposition 2 has a unique self-consistent partition); in floating point a point on a
        boundary may, rarely, satisfy two, and :func:`case_map` then takes the first.

    Notes
    -----
    The paper's simplified forms, multiplied out (all multipliers are positive for a stable
    instance: ``mu_0 + mu_i - eta_i > 0`` and ``mu_0 + mu_1 + mu_2 - eta_1 - eta_2 > 0``):

    1. ``delta_i <= 1 - eta_i/mu_i`` for i = 1, 2;
    2. ``delta_1 (mu_0+mu_2-eta_2) <= (1-eta_1/mu_1)(mu_0+delta_2 mu_2)`` and
       ``1 - eta_2/mu_2 < delta_2`` and ``delta_2 (mu_0-eta_2) < mu_0``;
    3. ``delta_1 (mu_0-eta_2) <= (1-eta_1/mu_1) mu_0`` and ``delta_2 (mu_0-eta_2) >= mu_0``;
    4. ``delta_1 (mu_0-eta_1-eta_2) >= mu_0``;
    5. ``delta_1 (mu_0+mu_2-eta_2) > (1-eta_1/mu_1)(mu_0+delta_2 mu_2)`` and
       ``mu_0+delta_1 mu_1 > delta_2 (mu_0+mu_1-eta_1-eta_2)`` and
       ``delta_2 (mu_0+mu_1-eta_1) > (1-eta_2/mu_2)(mu_0+delta_1 mu_1)``;
    6. ``delta_1 (mu_0-eta_1) < mu_0`` and ``delta_1 > 1-eta_1/mu_1`` and
       ``delta_2 (mu_0+mu_1-eta_1) <= (1-eta_2/mu_2)(mu_0+delta_1 mu_1)``;
    7. (ours) ``delta_1 (mu_0-eta_2) > (1-eta_1/mu_1) mu_0`` and
       ``delta_2 (mu_0+mu_1-eta_1-eta_2) >= mu_0+delta_1 mu_1`` and
       ``delta_1 (mu_0-eta_1-eta_2) < mu_0``.

    Adjacent cases use the same expression with complementary inequalities, so no point
    falls between two adjacent cases.
    """
    m0, m1, m2, d1, d2, e1, e2, r1, r2 = _parts(mu, dlt, eta)
    # Shared expressions (each evaluated once, so adjacent cases are exact complements).
    c1_b = d1 * (m0 + m2 - e2) > (1.0 - r1) * (m0 + d2 * m2)  # class 1 leaves C_d, 2 in C_b
    c1_b0 = d1 * (m0 - e2) > (1.0 - r1) * m0  # class 1 leaves C_d, 2 in C_0
    c2_0 = d2 * (m0 - e2) >= m0  # class 2 in C_0, 1 in C_d
    c2_0b = d2 * (m0 + m1 - e1 - e2) >= m0 + d1 * m1  # class 2 in C_0, 1 in C_b
    c2_bd = d2 * (m0 + m1 - e1) > (1.0 - r2) * (m0 + d1 * m1)  # class 2 in C_b, 1 in C_b
    c11_0 = d1 * (m0 - e1 - e2) >= m0  # class 1 (hence 2) in C_0
    return {
        1: (d1 <= 1.0 - r1) & (d2 <= 1.0 - r2),
        2: ~c1_b & (d2 > 1.0 - r2) & ~c2_0,
        3: ~c1_b0 & c2_0,
        4: c11_0,
        5: c1_b & ~c2_0b & c2_bd,
        6: (d1 * (m0 - e1) < m0) & (d1 > 1.0 - r1) & ~c2_bd,
        7: c1_b0 & c2_0b & ~c11_0,
    }


def closed_form_loads(case, mu, dlt, eta) -> np.ndarray:
    """Optimal loads ``(rho_0, rho_1, rho_2)`` of each case, equations (10)-(11) (w.l.o.g.).

    ``case`` is an int array broadcastable with the leading shape of the other arguments;
    entries with case 0 (unstable) get NaN loads. Returns shape ``(..., 3)``, dimensionless.
    """
    m0, m1, m2, d1, d2, e1, e2, r1, r2 = _parts(mu, dlt, eta)
    case = np.asarray(case)
    shape = np.broadcast_shapes(case.shape, m0.shape, d1.shape, e1.shape)
    case = np.broadcast_to(case, shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Spare capacity s = 1 - rho_0 by equation (10) for each partition.
        s = {
            1: np.ones(shape),
            2: (m0 + m2 - e2) / (m0 + d2 * m2),
            3: (m0 - e2) / m0,
            4: (m0 - e1 - e2) / m0,
            5: (m0 + m1 + m2 - e1 - e2) / (m0 + d1 * m1 + d2 * m2),
            6: (m0 + m1 - e1) / (m0 + d1 * m1),
            7: (m0 + m1 - e1 - e2) / (m0 + d1 * m1),
        }
    rho0 = np.full(shape, np.nan)
    rho1 = np.full(shape, np.nan)
    rho2 = np.full(shape, np.nan)
    for k, (lab1, lab2) in CASE_PARTITIONS.items():
        sel = case == k
        if not np.any(sel):
            continue
        sk = np.broadcast_to(s[k], shape)[sel]
        rho0[sel] = 1.0 - sk
        for rho, lab, d, r in ((rho1, lab1, d1, r1), (rho2, lab2, d2, r2)):
            if lab == DEDICATED:
                rho[sel] = np.broadcast_to(r, shape)[sel]
            elif lab == BOTH:
                rho[sel] = 1.0 - np.broadcast_to(d, shape)[sel] * sk  # equation (11)
            else:
                rho[sel] = 0.0
    rho0[case == 1] = 0.0
    return np.stack([rho0, rho1, rho2], axis=-1)


def _stable(mu, eta) -> np.ndarray:
    """Proposition 1 for C = 2: ``mu_0 > (eta_1-mu_1)^+ + (eta_2-mu_2)^+``."""
    mu = np.asarray(mu, dtype=float)
    eta = np.asarray(eta, dtype=float)
    over = np.clip(eta[..., 0] - mu[..., 1], 0.0, None) + np.clip(eta[..., 1] - mu[..., 2], 0, None)
    return mu[..., 0] > over


def _case_wlog(mu, dlt, eta) -> np.ndarray:
    """Case number 1..7 (0 where unstable) in the w.l.o.g. frame ``delta_1 <= delta_2``."""
    conds = case_conditions(mu, dlt, eta)
    shape = np.broadcast_shapes(*(c.shape for c in conds.values()))
    out = np.zeros(shape, dtype=np.int8)
    for k in sorted(conds, reverse=True):  # first matching case wins on rare double hits
        out[np.broadcast_to(conds[k], shape)] = k
    out[~np.broadcast_to(_stable(mu, eta), shape)] = 0
    return out


def _check_two(mu, cost) -> tuple[np.ndarray, np.ndarray]:
    mu = np.asarray(mu, dtype=float)
    cost = np.asarray(cost, dtype=float)
    if mu.shape != (3,) or cost.shape != (3,):
        raise ValueError(f"C = 2 needs mu and cost of shape (3,), got {mu.shape}, {cost.shape}")
    if not (np.all(mu > 0) and np.all(cost > 0)):
        raise ValueError("mu and cost must be finite and > 0")
    return mu, cost


_SWAP = np.array([0, 2, 1])


@dataclass(frozen=True)
class TwoClassSolution:
    """Closed-form optimum of a C = 2 instance (Sec. 4.1).

    Attributes
    ----------
    instance:
        The solved instance, in its original class labels.
    case:
        Case number in the paper's numbering (1..6; 7 = ``C_b={1}, C_0={2}``, ours), in the
        frame ``delta_1 <= delta_2``: when the instance has ``delta_1 > delta_2`` the classes
        are relabelled first and ``case`` refers to the relabelled classes.
    relabelled:
        Whether the classes were swapped to get ``delta_1 <= delta_2``.
    loads:
        ``(rho_0, rho_1, rho_2)`` in the original labels (dimensionless).
    partition:
        C_d, C_b, C_0 in the original class labels.
    """

    instance: Instance
    case: int
    relabelled: bool
    loads: np.ndarray
    partition: Partition

    @property
    def cost(self) -> float:
        """Mean holding cost rate sum_j c_j rho_j/(1 - rho_j) (cost per unit time)."""
        return float(holding_cost(self.loads, self.instance.cost))

    @property
    def case_label(self) -> str:
        """The case's partition in the (possibly relabelled) w.l.o.g. frame."""
        return CASE_LABELS[self.case]

    def to_solution(self) -> Solution:
        """As a generic :class:`~.result.Solution` (method ``"closed-form"``)."""
        return Solution(
            instance=self.instance,
            loads=self.loads,
            partition=self.partition,
            method="closed-form",
            info={"case": self.case, "relabelled": self.relabelled},
        )


def solve_two_class(instance: Instance) -> TwoClassSolution:
    """Closed-form optimum of LOAD-OPT for C = 2 (Sec. 4.1; see the module docstring).

    The case is decided by the closed-form conditions (:func:`case_conditions`), not by a
    solver; if ``delta_1 > delta_2`` the classes are swapped, solved, and mapped back.

    The seventh case (C_b = {1}, C_0 = {2}, missing from the paper's list) on an example:

    >>> from queue_routing.multiskill import Instance, solve_exact, solve_two_class
    >>> inst = Instance(mu=[10, 10, 10], cost=[1, 2.25, 9], eta=[5, 5])
    >>> sol = solve_two_class(inst)
    >>> sol.case, sol.loads.round(12).tolist()
    (7, [0.6, 0.4, 0.0])
    >>> bool(abs(sol.cost - solve_exact(inst).cost) < 1e-12)
    True
    """
    if instance.n_classes != 2:
        raise ValueError(f"solve_two_class needs C = 2 classes, got C = {instance.n_classes}")
    dlt = instance.delta
    relabel = bool(dlt[0] > dlt[1])
    mu, eta = instance.mu, instance.eta
    if relabel:
        mu, dlt, eta = mu[_SWAP], dlt[::-1], eta[::-1]
    case = int(_case_wlog(mu, dlt, eta))
    if case == 0:  # pragma: no cover - Instance already rejects unstable input
        raise ValueError("unstable instance")
    loads = closed_form_loads(case, mu, dlt, eta)
    labels = np.array(CASE_PARTITIONS[case], dtype=np.int8)
    if relabel:
        loads, labels = loads[_SWAP], labels[::-1]
    loads = np.array(loads)
    loads.setflags(write=False)
    return TwoClassSolution(
        instance=instance,
        case=case,
        relabelled=relabel,
        loads=loads,
        partition=Partition(labels),
    )


def case_map(mu, cost, eta1_grid, eta2_grid) -> np.ndarray:
    """Optimal case over a grid of intensities for fixed ``mu``, ``cost`` (Fig. 2).

    Parameters
    ----------
    mu, cost:
        Shape ``(3,)``: capacities (work per unit time) and holding costs.
    eta1_grid, eta2_grid:
        Broadcastable arrays of class intensities (work per unit time), e.g. from
        ``np.meshgrid``.

    Returns
    -------
    int8 array of the broadcast shape: the case 1..7 (numbering of :data:`CASE_LABELS`, in
    the frame ``delta_1 <= delta_2``, i.e. with the classes relabelled when
    ``delta_1 > delta_2``), 0 where the instance is unstable (or an intensity is <= 0).
    """
    mu, cost = _check_two(mu, cost)
    e1, e2 = np.broadcast_arrays(np.asarray(eta1_grid, float), np.asarray(eta2_grid, float))
    eta = np.stack([e1, e2], axis=-1)
    dlt = delta(mu, cost)
    if dlt[0] > dlt[1]:
        mu, dlt, eta = mu[_SWAP], dlt[::-1], eta[..., ::-1]
    out = _case_wlog(mu, dlt, eta)
    out[~((e1 > 0) & (e2 > 0))] = 0
    return out


def _boundary_lines(mu, dlt) -> dict[str, tuple[float, float, float]]:
    """Each case boundary as ``(a_1, a_2, b)``: ``a_1 eta_1 + a_2 eta_2 = b`` (w.l.o.g. frame).

    Obtained by turning the inequality of :func:`case_conditions` that separates the two
    cases into an equality; every one is linear in ``(eta_1, eta_2)``.
    """
    m0, m1, m2 = (float(x) for x in mu)
    d1, d2 = (float(x) for x in dlt)
    return {
        # delta_2 = 1 - eta_2/mu_2
        "1|2": (0.0, 1.0 / m2, 1.0 - d2),
        # delta_1 = 1 - eta_1/mu_1
        "1|6": (1.0 / m1, 0.0, 1.0 - d1),
        # delta_2 (mu_0 - eta_2) = mu_0
        "2|3": (0.0, d2, d2 * m0 - m0),
        # delta_1 (mu_0 + mu_2 - eta_2) = (1 - eta_1/mu_1)(mu_0 + delta_2 mu_2)
        "2|5": ((m0 + d2 * m2) / m1, -d1, (m0 + d2 * m2) - d1 * (m0 + m2)),
        # delta_1 (mu_0 - eta_2) = (1 - eta_1/mu_1) mu_0
        "3|7": (m0 / m1, -d1, m0 - d1 * m0),
        # delta_1 (mu_0 - eta_1 - eta_2) = mu_0
        "4|7": (d1, d1, d1 * m0 - m0),
        # delta_2 (mu_0 + mu_1 - eta_1 - eta_2) = mu_0 + delta_1 mu_1
        "5|7": (d2, d2, d2 * (m0 + m1) - m0 - d1 * m1),
        # delta_2 (mu_0 + mu_1 - eta_1) = (1 - eta_2/mu_2)(mu_0 + delta_1 mu_1)
        "5|6": (-d2, (m0 + d1 * m1) / m2, m0 + d1 * m1 - d2 * (m0 + m1)),
    }


def case_boundaries(mu, cost, eta1_values) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Closed-form case boundaries in the ``(eta_1, eta_2)`` plane, for Fig. 2's overlay.

    Each boundary of :func:`case_conditions` is a straight line (the conditions are linear in
    the intensities), solved for ``eta_2`` at each of ``eta1_values``; a line with no
    ``eta_2`` term is vertical and is returned at its fixed ``eta_1`` over
    ``len(eta1_values)`` values of ``eta_2`` in ``[0, mu_0 + mu_2]``. Points of a line that
    do not separate its two cases (outside the segment where the cases meet, or in the
    unstable region) are NaN, so plotting the arrays draws exactly the boundary segments.

    Returns
    -------
    ``{"i|j": (eta1, eta2)}`` with the keys of :data:`BOUNDARY_KEYS` (cases numbered as in
    :func:`case_map`, i.e. in the frame ``delta_1 <= delta_2``), plus ``"stability"``: the
    curve ``eta_2 = mu_0 + mu_2 - (eta_1 - mu_1)^+`` bounding the stable region (Proposition
    1) for ``eta_1 < mu_0 + mu_1``. Intensities in work per unit time.
    """
    mu, cost = _check_two(mu, cost)
    x = np.asarray(eta1_values, dtype=float).ravel()
    dlt = delta(mu, cost)
    swap = bool(dlt[0] > dlt[1])
    lines = _boundary_lines(mu[_SWAP], dlt[::-1]) if swap else _boundary_lines(mu, dlt)
    eta2_max = mu[0] + mu[2]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for key, (a1, a2, b) in lines.items():
        if swap:  # the line is in relabelled coordinates (eta_2, eta_1)
            a1, a2 = a2, a1
        if a2 != 0.0:
            e1 = x.copy()
            e2 = (b - a1 * e1) / a2
        else:
            e2 = np.linspace(0.0, eta2_max, x.size)
            e1 = np.full(x.size, b / a1)
        # Keep the points where the line separates its two cases.
        norm = np.hypot(a1, a2)
        n1, n2 = a1 / norm, a2 / norm
        eps = 1e-7 * (1.0 + np.abs(e1) + np.abs(e2))
        plus = case_map(mu, cost, e1 + eps * n1, e2 + eps * n2)
        minus = case_map(mu, cost, e1 - eps * n1, e2 - eps * n2)
        i, j = (int(c) for c in key.split("|"))
        keep = ((plus == i) & (minus == j)) | ((plus == j) & (minus == i))
        keep &= (e1 > 0) & (e2 > 0)
        out[key] = (np.where(keep, e1, np.nan), np.where(keep, e2, np.nan))
    e2s = mu[0] + mu[2] - np.clip(x - mu[1], 0.0, None)
    ok = (x >= 0) & (x < mu[0] + mu[1])
    out["stability"] = (np.where(ok, x, np.nan), np.where(ok, e2s, np.nan))
    return out
