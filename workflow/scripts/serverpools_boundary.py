"""Stability boundary over the heterogeneity family, with the crossing by root finding."""

import numpy as np

from queue_routing.io import write_table
from queue_routing.serverpools.experiments import boundary_crossings, boundary_scan
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    thetas = np.linspace(p.theta_min, p.theta_max, p.points)
    scan = boundary_scan(thetas, base=p.base)
    crossings = boundary_crossings(scan, base=p.base, xtol=p.xtol)
    print(crossings.to_string())
    write_table(scan, snakemake.output.scan)
    write_table(crossings, snakemake.output.crossings)


run_script(snakemake, main)  # noqa: F821
