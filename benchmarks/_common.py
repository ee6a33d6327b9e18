"""What every benchmark script shares: one thread per process, and the machine it ran on.

Import this module first (before numpy): it pins the thread counts of numba and the BLAS
libraries to 1, so that a benchmark compares one core against one core.
"""

from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.metadata  # noqa: E402
import platform  # noqa: E402

__all__ = ["machine"]


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
