"""``queue-routing serverpools``: Part C's subcommands (docs/serverpools.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ArgumentError
from . import options
from .common import read_json, terminal_progress

HELP = "Part C: large flexible server pools (LQFS-LB)"
INSTANCE = 'JSON file {"arrival_rates", "pool_sizes", "activities": [{"class", "pool", "rate"}]}'


# -- the handlers: parse, call the library, return what to print ------------------------------
def _analyze(args: argparse.Namespace) -> dict[str, Any]:
    from ..serverpools import ServerPoolSystem, analyze
    from ..serverpools.lap import analyze_lap

    system = ServerPoolSystem.from_dict(read_json(args.instance))
    if args.policy == "lap":
        root = None if args.root_pool is None else args.root_pool - 1
        return analyze_lap(system, root).to_dict()
    if args.root_pool is not None:
        raise ArgumentError("root_pool", "root_pool applies to --policy lap only")
    return analyze(system).to_dict()


def _simulate(args: argparse.Namespace) -> dict[str, Any]:
    from ..serverpools import ServerPoolSystem, time_average

    return time_average(
        ServerPoolSystem.from_dict(read_json(args.instance)),
        args.scale,
        horizon=args.horizon,
        warmup=args.warmup,
        replications=args.replications,
        seed=args.seed,
        keys=("cli",),
        progress=terminal_progress(args.replications, f"simulating r={args.scale:g}"),
    ).to_dict()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds Part C's subcommands (analyze, simulate) to ``subparsers``, the ``serverpools``
    command's."""
    analyze = options.command(
        subparsers,
        "analyze",
        "static planning LP and local stability of the fluid equilibrium",
        INSTANCE,
    )
    analyze.add_argument(
        "--policy",
        choices=("lqfs-lb", "lap"),
        default="lqfs-lb",
        help="lqfs-lb: the SPP and the linearised LQFS-LB fluid model; lap: Leaf Activity "
        "Priority, its priorities, equilibrium (class totals per unit r) and eigenvalues",
    )
    analyze.add_argument(
        "--root-pool",
        type=options.int_at_least(1),
        default=None,
        metavar="J",
        help="LAP's root pool (numbered from 1); default: the admissible root with the fewest "
        "customers per unit r",
    )
    analyze.set_defaults(func=_analyze)

    sim = options.command(
        subparsers,
        "simulate",
        "stationary time average of the diffusion-scaled deviation |X^r - r x*|/sqrt(r) of "
        "the r-th system under LQFS-LB, with its 95%% interval and a stationarity test",
        INSTANCE,
    )
    sim.add_argument(
        "--scale",
        type=options.positive_number,
        required=True,
        metavar="R",
        help="scale r: arrival rates r lambda_i, round(r beta_j) servers",
    )
    options.add_horizon(
        sim,
        100.0,
        help="measured time per replication after the warm-up (time units of 1/mu)",
    )
    options.add_warmup(
        sim,
        help="discarded time from the nominal start r x* (time units); default derived from "
        "the leading eigenvalue gamma of A_u and r: ln(1000)/(2|gamma|) if stable, "
        "(ln(r)/2 + ln(1000))/gamma if unstable",
    )
    options.add_replications(sim, help="independent replications for the 95%% interval", default=5)
    options.add_renamed(sim, "--burn-in", "--warmup")
    options.add_seed(sim)
    sim.set_defaults(func=_simulate)
