"""Fixtures shared across test modules."""

import os
import time

import pytest
from hypothesis import settings

from _workflow import SMOKE, run_snakemake

# Property tests draw the same examples on every run (CI must not depend on luck); set
# HYPOTHESIS_PROFILE=explore to draw new ones locally.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One uninterrupted local run of the smoke config, the reference of the pipeline tests."""
    workdir = tmp_path_factory.mktemp("smoke")
    start = time.perf_counter()
    run_snakemake(workdir, "--configfile", str(SMOKE))
    print(f"local smoke run: {time.perf_counter() - start:.0f} s wall time (2 cores)")
    return workdir
