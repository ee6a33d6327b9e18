"""Job-size laws of mean 1 for the general-size simulator (ours, beyond the paper's tables).

Model: ``docs/multiskill.md#general-job-sizes``. A job's size is its work (work units); every
law here has mean 1, so the class intensity ``eta_i`` (work per unit time) is also the class's
arrival rate (jobs per unit time), as in the exponential model. The squared coefficient of
variation ``SCV = Var[S] / E[S]^2`` (dimensionless) sets the variability:

=================  =================  =====================================================
spec               SCV                law
=================  =================  =====================================================
``exponential``    1                  ``Exp(1)``
``deterministic``  0                  ``S = 1``
``erlang:K``       ``1/K``            sum of ``K`` exponentials of rate ``K``
``hyperexponential:V``  ``V >= 1``    ``Exp(r_1)`` w.p. ``p``, ``Exp(r_2)`` w.p. ``1 - p``,
                                      balanced means ``p/r_1 = (1 - p)/r_2 = 1/2``:
                                      ``p = (1 + sqrt((V - 1)/(V + 1)))/2``, ``r_1 = 2p``,
                                      ``r_2 = 2(1 - p)``
``lognormal:V``    ``V > 0``          ``exp(m + s Z)``, ``s^2 = ln(1 + V)``, ``m = -s^2/2``
=================  =================  =====================================================

The compiled samplers (:func:`draw_size`, :func:`draw_residual`) take a law as ``(kind,
params)`` (:meth:`JobSizes.kernel_args`) and consume a fixed number of uniforms per draw
(:func:`draw_size`), so a stream of sizes is the same sequence whatever the policy
(common random numbers, ``docs/multiskill.md#common-random-numbers``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..rng import next_uniform

__all__ = [
    "EXPONENTIAL",
    "KINDS",
    "JobSizeError",
    "JobSizes",
    "draw_residual",
    "draw_size",
    "job_sizes",
    "sample_residuals",
    "sample_sizes",
]

#: Kinds of law, in the order of their kernel codes.
KINDS = ("exponential", "deterministic", "erlang", "hyperexponential", "lognormal")
_EXP, _DET, _ERL, _HYP, _LOGN = range(5)
#: Largest Erlang order accepted (a draw costs K uniforms).
MAX_ERLANG = 1000

SPEC_HELP = "exponential | deterministic | erlang:K | hyperexponential:SCV | lognormal:SCV"


class JobSizeError(ValueError):
    """A job-size law that is malformed (unknown kind, bad parameter); one-line message."""

    argument = "job_sizes"  # the CLI reports it as a usage error of --job-sizes


@dataclass(frozen=True)
class JobSizes:
    """A job-size law of mean 1 (work units); validated at construction.

    Attributes
    ----------
    kind:
        One of :data:`KINDS`.
    scv:
        Squared coefficient of variation (dimensionless): given for ``hyperexponential``
        (``>= 1``) and ``lognormal`` (``> 0``); implied by the kind otherwise (``None`` may be
        passed and is filled in: 1, 0 and ``1/k``).
    k:
        Erlang order (``erlang`` only, ``1 <= k <= MAX_ERLANG``); 1 otherwise.

    >>> JobSizes("erlang", k=4).scv
    0.25
    >>> job_sizes("hyperexponential:16").spec
    'hyperexponential:16'
    """

    kind: str
    scv: float | None = None
    k: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise JobSizeError(f"job sizes: unknown kind {self.kind!r} (choose from {SPEC_HELP})")
        k = self.k
        if isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise JobSizeError(f"job sizes: the Erlang order must be an integer, got {k!r}")
        if self.kind == "erlang":
            if not 1 <= k <= MAX_ERLANG:
                raise JobSizeError(
                    f"job sizes: the Erlang order must be in 1..{MAX_ERLANG}, got {k}"
                )
        elif k != 1:
            raise JobSizeError(f"job sizes: an order k is for erlang only, not {self.kind}")
        implied = {"exponential": 1.0, "deterministic": 0.0, "erlang": 1.0 / int(k)}
        scv = self.scv
        if self.kind in implied:
            if scv is not None and not math.isclose(float(scv), implied[self.kind]):
                raise JobSizeError(
                    f"job sizes: {self.kind} has SCV {implied[self.kind]:g}, not {scv!r}"
                )
            scv = implied[self.kind]
        else:
            if isinstance(scv, bool) or not isinstance(scv, int | float | np.number):
                raise JobSizeError(f"job sizes: {self.kind} needs a numeric SCV, got {scv!r}")
            scv = float(scv)
            low_ok = scv >= 1.0 if self.kind == "hyperexponential" else scv > 0.0
            if not (math.isfinite(scv) and low_ok and scv <= 1e6):
                bound = ">= 1" if self.kind == "hyperexponential" else "> 0"
                raise JobSizeError(
                    f"job sizes: {self.kind} needs a finite SCV {bound} (and <= 1e6), got {scv:g}"
                )
        object.__setattr__(self, "scv", float(scv))
        object.__setattr__(self, "k", int(k))

    @property
    def spec(self) -> str:
        """The canonical string of the law (what :func:`job_sizes` parses)."""
        if self.kind == "erlang":
            return f"erlang:{self.k}"
        if self.kind in ("hyperexponential", "lognormal"):
            return f"{self.kind}:{self.scv:g}"
        return self.kind

    @property
    def is_exponential(self) -> bool:
        """``True`` for ``exponential`` (the uniformised simulator's law)."""
        return self.kind == "exponential"

    def kernel_args(self) -> tuple[int, np.ndarray]:
        """``(kind code, params float64[3])`` for :func:`draw_size` / :func:`draw_residual`:
        ``erlang`` ``(k, 0, 0)``; ``hyperexponential`` ``(p, r_1, r_2)``; ``lognormal``
        ``(m, s, 0)``; zeros otherwise."""
        params = np.zeros(3)
        if self.kind == "erlang":
            params[0] = self.k
        elif self.kind == "hyperexponential":
            p = 0.5 * (1.0 + math.sqrt((self.scv - 1.0) / (self.scv + 1.0)))
            params[:] = (p, 2.0 * p, 2.0 * (1.0 - p))
        elif self.kind == "lognormal":
            s2 = math.log1p(self.scv)
            params[:2] = (-0.5 * s2, math.sqrt(s2))
        return KINDS.index(self.kind), params

    def __str__(self) -> str:
        return self.spec


#: A law's number: an optionally signed decimal with an optional fraction and exponent, or
#: ``inf``/``nan`` (refused afterwards with the range they break); no ``_``, which ``float``
#: would read as a digit separator ("1_6" is not 16).
_DECIMAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)

#: The exponential law (the default everywhere).
EXPONENTIAL = JobSizes("exponential")


def job_sizes(spec: str | JobSizes | None) -> JobSizes:
    """Parse ``exponential|deterministic|erlang:K|hyperexponential:SCV|lognormal:SCV``.

    ``None`` is :data:`EXPONENTIAL`; a :class:`JobSizes` is returned as is. Raises
    :class:`JobSizeError` (a :class:`ValueError`) with one line naming the problem.

    >>> job_sizes("erlang:3")
    JobSizes(kind='erlang', scv=0.3333333333333333, k=3)
    >>> job_sizes("lognormal:x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    queue_routing...JobSizeError: job sizes: lognormal needs a number after ':', got 'x'
    """
    if spec is None:
        return EXPONENTIAL
    if isinstance(spec, JobSizes):
        return spec
    if not isinstance(spec, str):
        raise JobSizeError(f"job sizes must be a string ({SPEC_HELP}), got {type(spec).__name__}")
    text = spec.strip()
    kind, sep, arg = text.partition(":")
    kind = kind.strip()
    arg = arg.strip()
    if kind not in KINDS:
        raise JobSizeError(f"job sizes: unknown law {text!r} (choose from {SPEC_HELP})")
    if kind in ("exponential", "deterministic"):
        if sep:
            raise JobSizeError(f"job sizes: {kind} takes no parameter, got {text!r}")
        return JobSizes(kind)
    if not arg:
        what = "an order K" if kind == "erlang" else "an SCV"
        raise JobSizeError(f"job sizes: {kind} needs {what}, as in {kind}:4; got {text!r}")
    if kind == "erlang":
        try:
            if not arg.isascii() or not arg.isdigit():  # int() would read "3_0" as 30
                raise ValueError(arg)
            k = int(arg)
        except ValueError:
            raise JobSizeError(
                f"job sizes: erlang needs an integer order after ':', got {arg!r}"
            ) from None
        return JobSizes("erlang", k=k)
    try:
        if not _DECIMAL.fullmatch(arg):  # float() would read "1_6" as 16
            raise ValueError(arg)
        scv = float(arg)
    except ValueError:
        raise JobSizeError(f"job sizes: {kind} needs a number after ':', got {arg!r}") from None
    return JobSizes(kind, scv=scv)


# -- compiled samplers -----------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _exp1(s):  # pragma: no cover - compiled
    return -math.log1p(-next_uniform(s))


@njit(cache=True, nogil=True, inline="always")
def _normal(s):  # pragma: no cover - compiled
    """Box-Muller with two uniforms (the cosine branch only: a fixed count per draw)."""
    r = math.sqrt(-2.0 * math.log1p(-next_uniform(s)))
    return r * math.cos(2.0 * math.pi * next_uniform(s))


@njit(cache=True, nogil=True)
def draw_size(kind, params, s):  # pragma: no cover - compiled
    """One job size (work units) of the law ``(kind, params)`` from stream ``s``.

    Uniforms consumed: exponential 1, deterministic 0, erlang ``k``, hyperexponential 2,
    lognormal 2.
    """
    if kind == 0:
        return _exp1(s)
    if kind == 1:
        return 1.0
    if kind == 2:
        k = int(params[0])
        acc = 0.0
        for _ in range(k):
            acc += _exp1(s)
        return acc / k
    if kind == 3:
        if next_uniform(s) < params[0]:
            return _exp1(s) / params[1]
        return _exp1(s) / params[2]
    return math.exp(params[0] + params[1] * _normal(s))


@njit(cache=True, nogil=True)
def draw_residual(kind, params, s):  # pragma: no cover - compiled
    """One draw of the equilibrium (residual-work) law ``P(S_e > x) = int_x^inf P(S > y) dy``
    of mean-1 ``S``: the remaining work of a job in a stationary PS queue (Kelly's symmetric
    queues: given ``n`` jobs present, their residual works are i.i.d. of this law).

    ``S_e = U * S_b`` with ``U`` uniform and ``S_b`` the size-biased law ``y P(S in dy)``:
    exponential ``Exp(1)``; deterministic ``U``; erlang ``U * Gamma(k + 1, rate k)``;
    balanced hyperexponential ``Exp(r_1)`` or ``Exp(r_2)`` w.p. 1/2 each (size-biasing
    weights ``p_i / r_i = 1/2``); lognormal ``U * exp(m + s^2 + s Z)``.
    """
    if kind == 0:
        return _exp1(s)
    if kind == 1:
        return next_uniform(s)
    if kind == 2:
        k = int(params[0])
        acc = 0.0
        for _ in range(k + 1):
            acc += _exp1(s)
        return next_uniform(s) * acc / k
    if kind == 3:
        if next_uniform(s) < 0.5:
            return _exp1(s) / params[1]
        return _exp1(s) / params[2]
    sig = params[1]
    return next_uniform(s) * math.exp(params[0] + sig * sig + sig * _normal(s))


@njit(cache=True, nogil=True)
def _fill(kind, params, state, out, residual):  # pragma: no cover - compiled
    s = state.copy()
    for i in range(out.size):
        out[i] = draw_residual(kind, params, s) if residual else draw_size(kind, params, s)


def sample_sizes(law: JobSizes | str, state: np.ndarray, n: int) -> np.ndarray:
    """``n`` job sizes (work units) of ``law`` from the xoshiro stream ``state`` (uint64[4],
    not changed): exactly what the simulator's ``sizes`` stream draws for its first ``n``
    arrivals.

    >>> from queue_routing.seeding import stream_states
    >>> st = stream_states(1, "doc", streams=("sizes",))[0]
    >>> sample_sizes("deterministic", st, 3).tolist()
    [1.0, 1.0, 1.0]
    """
    law = job_sizes(law)
    kind, params = law.kernel_args()
    out = np.empty(int(n))
    _fill(kind, params, np.asarray(state, dtype=np.uint64), out, False)
    return out


def sample_residuals(law: JobSizes | str, state: np.ndarray, n: int) -> np.ndarray:
    """``n`` draws of the equilibrium law of ``law`` (:func:`draw_residual`; work units)."""
    law = job_sizes(law)
    kind, params = law.kernel_args()
    out = np.empty(int(n))
    _fill(kind, params, np.asarray(state, dtype=np.uint64), out, True)
    return out
