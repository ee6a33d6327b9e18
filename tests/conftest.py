"""Fixtures shared across test modules."""

import time

import pytest

from _workflow import SMOKE, run_snakemake


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One uninterrupted local run of the smoke config, the reference of the pipeline tests."""
    workdir = tmp_path_factory.mktemp("smoke")
    start = time.perf_counter()
    run_snakemake(workdir, "--configfile", str(SMOKE))
    print(f"local smoke run: {time.perf_counter() - start:.0f} s wall time (2 cores)")
    return workdir
