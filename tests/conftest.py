"""Fixtures shared across test modules."""

import pytest
from _workflow import SMOKE, run_snakemake


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One uninterrupted local run of the smoke config, the reference of the pipeline tests."""
    workdir = tmp_path_factory.mktemp("smoke")
    run_snakemake(workdir, "--configfile", str(SMOKE))
    return workdir
