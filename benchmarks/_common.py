"""What every benchmark script shares: one thread per process, the machine it ran on, and the
report of a comparison with SimPy.

Import this module first (before numpy): it pins the thread counts of numba and the BLAS
libraries to 1, so that a benchmark compares one core against one core.
"""

from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.metadata  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402

__all__ = [
    "machine",
    "simpy_missing",
    "simpy_run_line",
    "smallest_ratio",
    "target_line",
    "versus_simpy",
]


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine(*packages: str) -> list[str]:
    """Lines describing the machine, Python, numpy, numba and the given ``packages``' versions.

    >>> machine("scipy")[1].startswith("python ")
    True
    """
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    versions = "; ".join(f"{p} {_version(p)}" for p in ("numpy", *packages))
    return [
        f"machine: {platform.machine()} {platform.system()} {platform.release()}; "
        f"cores: {os.cpu_count()} (usable {affinity}); processor: {platform.processor() or '?'}",
        f"python {platform.python_version()}; {versions}; numba {_version('numba')} "
        f"(NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']})",
    ]


# -- comparisons with SimPy ------------------------------------------------------------------
def simpy_missing(indent: str = "") -> None:
    """Say that SimPy is not installed, so there is no comparison."""
    print(f"{indent}simpy: not installed (pip install simpy); no comparison")


def simpy_run_line(
    out: Mapping[str, float],
    *,
    horizon: float,
    quantity: str,
    value: float,
    reference: float,
    digits: str = ".4g",
    label: str = "simpy:    ",
    warmup: str = " (+10% warm-up)",
    run: str = "one short replication",
) -> float:
    """Print SimPy's run (``out``: its ``events`` and ``wall`` seconds) and its estimate
    ``value`` of ``quantity`` against the compiled simulator's ``reference`` (their relative
    difference: a check that both simulate the same system); return SimPy's events per second.

    >>> eps = simpy_run_line({"events": 2000, "wall": 0.5}, horizon=100.0, quantity="cost",
    ...     value=1.02, reference=1.0)
    simpy:    1 x horizon 100 (+10% warm-up): 2,000 events in 0.50 s = 4,000 events/s;
    cost 1.02 (one short replication; rel. diff +2.0%)
    >>> eps
    4000.0
    """
    eps = out["events"] / out["wall"]
    print(
        f"{label}1 x horizon {horizon:g}{warmup}: {out['events']:,} events in "
        f"{out['wall']:.2f} s = {eps:,.0f} events/s; {quantity} {value:{digits}} "
        f"({run}; rel. diff {value / reference - 1:+.1%})"
    )
    return eps


def smallest_ratio(ratios: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The (ratio, compiled events/s) pair of the smallest ratio (NaN, no comparison, last).

    >>> smallest_ratio([(math.nan, 5.0), (120.0, 2.0), (150.0, 3.0)])
    (120.0, 2.0)
    """
    return min(ratios, key=lambda r: r[0] if math.isfinite(r[0]) else math.inf)


def target_line(ratio: float, target: float) -> str:
    """Whether ``ratio`` meets the benchmark's ``target`` ratio.

    >>> target_line(123.4, 100), target_line(29.0, 30)
    ('target >= 100x: met', 'target >= 30x: NOT met')
    """
    return f"target >= {target}x: {'met' if ratio >= target else 'NOT met'}"


def versus_simpy(name: str, ratio: float, compiled_eps: float) -> str:
    """The headline of a benchmark against SimPy (its last line).

    >>> versus_simpy("deadlines", 123.4, 3.1e7)
    'deadlines: 123x vs SimPy (3.1e+07 events/s compiled)'
    """
    return f"{name}: {ratio:.0f}x vs SimPy ({compiled_eps:.3g} events/s compiled)"
