"""LQFS-LB, LAP and static routing side by side: time averages and slope verdicts, LAP's level
against its OU limit, the price of stability (thin adapter)."""

import pandas as pd

from queue_routing.io import write_table
from queue_routing.serverpools import solve_spp
from queue_routing.serverpools.experiments import (
    lap_ou_table,
    lap_time_averages,
    lqfs_lb_rows,
    price_of_stability,
)
from queue_routing.serverpools.instances import example_system
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_table, read_serverpools_tables


def main(snakemake):
    p = snakemake.params
    solutions = {name: solve_spp(example_system(name)) for name in p.r}
    own = read_serverpools_tables(snakemake.config, snakemake.input.runs)
    stochastic = read_serverpools_table(snakemake.config, snakemake.input.stochastic)
    reused = [lqfs_lb_rows(stochastic, solutions[name], name, r) for name, r in p.r.items()]
    runs = pd.concat([own, *reused], ignore_index=True)
    runs = runs.sort_values(["example", "policy", "r", "replication"], ignore_index=True)
    runs = runs[[c for c in own.columns if c in runs.columns]]
    averages, verdicts = lap_time_averages(
        runs,
        stationarity_confidence=p.stationarity_confidence,
        confidence=p.confidence,
        decades=p.fit_decades,
    )
    ou = lap_ou_table(runs, solutions, confidence=p.confidence)
    price = price_of_stability(runs, solutions, confidence=p.confidence)
    for table in (averages, verdicts, ou, price):
        print(table.to_string())
    out = snakemake.output
    level = f"{p.confidence:.0%}"
    write_table(runs, out.runs)
    write_table(
        averages,
        out.averages,
        out.averages_md,
        title=(
            "LQFS-LB, LAP and static routing: stationary time-averaged |(X^r - r x*)/sqrt(r)| "
            f"against r, x* each discipline's own equilibrium (mean of replications, ± {level} "
            "t half-width in mean_norm_ci; stationary = the first-half/second-half test)"
        ),
    )
    write_table(
        verdicts,
        out.verdicts,
        out.verdicts_md,
        title=f"Slope of log time average against log r over the top decade, {level} interval",
    )
    write_table(
        ou,
        out.ou,
        out.ou_md,
        title=(
            "LAP: simulated E|Y|, sqrt(E|Y|^2) and covariances of the scaled deviation Y against "
            f"the stationary law N(0, Sigma) of its OU limit ({level} t half-width in ci)"
        ),
        float_format="%.4g",
    )
    write_table(
        price,
        out.price,
        out.price_md,
        title=(
            "Price of stability: customers per unit r and mean sojourn time (Little) at the "
            f"largest common r, paired differences from LQFS-LB ({level} t half-widths, "
            "Holm-adjusted p)"
        ),
        float_format="%.4g",
    )


run_script(snakemake, main)  # noqa: F821
