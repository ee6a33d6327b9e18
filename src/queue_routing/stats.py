"""Small statistics shared by the simulators, and the protocol of their results.

* :func:`t_quantile`, :func:`t_cdf`, :func:`t_half_width` -- Student-``t`` intervals;
* :class:`Replicated` -- what every simulation result of the three parts carries:
  ``replications``, ``standard_error`` and ``ci95``;
* :class:`ReplicationBlock` -- what every block of replications (a chunk of a split study)
  carries: ``events`` and ``table_bound``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from scipy import special

__all__ = ["Replicated", "ReplicationBlock", "t_cdf", "t_half_width", "t_quantile"]


# Student-t through scipy.special (the functions scipy.stats.t calls, bit for bit): importing
# scipy.stats costs most of a second, paid by every pipeline job that reports an interval.
def t_quantile(p, df):
    """Quantile of Student's ``t`` with ``df`` degrees of freedom at probability ``p``
    (``scipy.stats.t.ppf(p, df)``; NaN for ``df <= 0``).

    >>> round(float(t_quantile(0.975, 9)), 6)
    2.262157
    """
    return special.stdtrit(df, p)


def t_cdf(x, df):
    """Distribution function of Student's ``t`` with ``df`` degrees of freedom
    (``scipy.stats.t.cdf(x, df)``; the survival function is ``t_cdf(-x, df)``).

    >>> float(t_cdf(0.0, 3))
    0.5
    """
    return special.stdtr(df, x)


def t_half_width(samples, confidence: float = 0.95):
    """Half-width of the t confidence interval for the mean over axis 0 of ``samples``.

    ``samples`` holds one value per independent replication (axis 0). Returns a float for 1-D
    input, an array of the remaining shape otherwise (NaN/inf propagate without warnings).
    """
    samples = np.asarray(samples, dtype=float)
    r = samples.shape[0]
    with np.errstate(invalid="ignore"):
        hw = (
            t_quantile(0.5 + confidence / 2, r - 1) * np.std(samples, axis=0, ddof=1) / math.sqrt(r)
        )
    return float(hw) if np.ndim(hw) == 0 else hw


class Replicated:
    """The protocol of every simulation result of the three parts (a mixin).

    A result holds one value per independent replication in the attribute named by
    :attr:`replication_field` (``replication_costs`` unless a class says otherwise; shape
    ``(R,)``, or ``(R, ...)`` for several quantities at once), their mean (``cost`` for a cost
    per unit time, ``value`` otherwise), and ``ci95``, the Student-``t`` 95% half-width of that
    mean (:func:`t_half_width` of the same values, ``R - 1`` degrees of freedom). The mixin
    adds :attr:`replications` and :attr:`standard_error`, so every part reports them alike;
    each result also has ``to_dict()``, its JSON object.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo(Replicated):
    ...     cost: float
    ...     ci95: float
    ...     replication_costs: np.ndarray
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> d = Demo(float(x.mean()), t_half_width(x), x)
    >>> d.replications, d.standard_error, round(d.ci95, 4)
    (3, 0.5773502691896258, 2.4841)
    """

    #: The attribute holding the per-replication values (axis 0: the replications).
    replication_field: ClassVar[str] = "replication_costs"
    ci95: float

    @property
    def replication_values(self) -> np.ndarray:
        """The per-replication values (the attribute named by :attr:`replication_field`)."""
        return np.asarray(getattr(self, self.replication_field))

    @property
    def replications(self) -> int:
        """R, the number of independent replications."""
        return int(self.replication_values.shape[0])

    @property
    def standard_error(self):
        """Standard error of the mean: sample sd of the replications over sqrt(R) (a float
        for one quantity, an array of the remaining shape for several)."""
        r = self.replication_values
        if r.ndim == 1:
            return float(np.std(r, ddof=1) / math.sqrt(r.size))
        return np.std(r, axis=0, ddof=1) / math.sqrt(r.shape[0])


class ReplicationBlock:
    """The protocol of a block of replications (a mixin): replications ``indices`` of one
    policy or configuration, simulated on their own streams, so that blocks simulated in
    different jobs reassemble bit for bit into the unsplit study
    (:mod:`queue_routing.workflow.chunks`).

    A block holds ``indices`` (the replication indices, in order), ``events_per_replication``
    (real events of each replication, warm-up included) and, where an index table decides,
    ``table_bound_per_replication`` (measured arrivals that found a compared server beyond
    the table, :class:`~queue_routing.errors.TableBoundWarning`; empty otherwise).
    """

    indices: tuple[int, ...]
    events_per_replication: tuple[int, ...]
    table_bound_per_replication: tuple[int, ...] = ()

    @property
    def events(self) -> int:
        """Real transitions simulated, all replications."""
        return sum(self.events_per_replication)

    @property
    def table_bound(self) -> int:
        """Measured arrivals beyond the index table, all replications (0 without a table)."""
        return sum(self.table_bound_per_replication)
