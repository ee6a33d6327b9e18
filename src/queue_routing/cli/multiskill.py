"""``queue-routing multiskill``: Part A's subcommands (docs/multiskill.md)."""

from __future__ import annotations

import argparse
from typing import Any

from . import options
from .common import compare_policies, read_json, terminal_progress

HELP = "Part A: multi-skilled servers, Bernoulli routing"
INSTANCE = 'JSON file {"mu": [mu_0..mu_C], "cost": [c_0..c_C], "eta": [eta_1..eta_C]}'


# -- the handlers: parse, call the library, return what to print ------------------------------
def _solve(args: argparse.Namespace) -> dict[str, Any]:
    from ..multiskill import Instance, solve

    options = {}
    if args.method == "fixed-point":
        options = {"update": args.update, "init": args.init, "seed": args.seed}
    return solve(Instance.from_dict(read_json(args.instance)), args.method, **options).to_dict()


def _compare(args: argparse.Namespace) -> dict[str, Any]:
    from ..multiskill import Instance, compare

    return compare(Instance.from_dict(read_json(args.instance)))


def _simulate(args: argparse.Namespace) -> dict[str, Any]:
    from ..multiskill import Instance, simulate

    instance = Instance.from_dict(read_json(args.instance))
    progress = terminal_progress(args.replications, f"simulating {args.policy}")
    return simulate(
        instance,
        args.policy,
        horizon=args.horizon,
        replications=args.replications,
        seed=args.seed,
        start=args.start,
        table_size=args.table_size,
        progress=progress,
        job_sizes=args.job_sizes,
        on_table_bound="raise",  # as compare-policies: a truncated policy is no answer
    ).to_dict()


def _optimal(args: argparse.Namespace) -> dict[str, Any]:
    import warnings

    from ..multiskill import Instance
    from ..multiskill.optimal import compare_with_optimum

    instance = Instance.from_dict(read_json(args.instance))
    progress = terminal_progress(None, "relative value iteration", unit="iteration")
    res = compare_with_optimum(
        instance, args.policies, args.truncation, rtol=args.rtol, strict=False, progress=progress
    )
    if not res.optimal.converged:
        warnings.warn(
            f"the optimal cost is not certified at levels {list(res.optimal.levels)} (converged "
            "false): the truncation may still decide it",
            stacklevel=1,
        )
    elif not res.optimal.certified:
        warnings.warn(
            f"the optimal cost at the given --truncation {res.optimal.truncation} is not "
            "certified (certified false): the level may still decide it; omit --truncation "
            "to raise the level until the cost stops moving",
            stacklevel=1,
        )
    uncertified = [k for k, ev in res.evaluations.items() if not ev.certified]
    if uncertified:
        warnings.warn(
            f"not certified at their level (certified false): {', '.join(uncertified)}",
            stacklevel=1,
        )
    return res.to_dict()


# -- the options only Part A has ----------------------------------------------------------------
def _job_sizes(text: str):
    """An argparse type: a job-size law of mean 1 (``multiskill.sizes.job_sizes``)."""
    from ..multiskill.sizes import JobSizeError, job_sizes

    try:
        return job_sizes(text)
    except JobSizeError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("job sizes: ")) from None


def _add_job_sizes(sub: argparse.ArgumentParser) -> None:
    from ..multiskill.sizes import SPEC_HELP

    sub.add_argument(
        "--job-sizes",
        type=_job_sizes,
        default="exponential",
        metavar="LAW",
        help=f"job-size law of mean 1 (work units): {SPEC_HELP}; SCV = squared coefficient "
        "of variation; exponential uses the uniformised chain, the others the event-driven "
        "simulator",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds Part A's subcommands (solve, compare, simulate, compare-policies, optimal) to
    ``subparsers``, the ``multiskill`` command's."""
    from ..multiskill.policies import POLICY_DESCRIPTIONS

    solve = options.command(subparsers, "solve", "optimal Bernoulli routing (LOAD-OPT)", INSTANCE)
    solve.add_argument(
        "--method",
        choices=["exact", "fixed-point", "generic"],
        default="exact",
        help="exact: our exact solver; fixed-point: the paper's Algorithm 1; generic: scipy "
        "L-BFGS-B on the routing probabilities",
    )
    solve.add_argument(
        "--update",
        choices=["jacobi", "single"],
        default="jacobi",
        help="Algorithm 1 update rule (fixed-point only): jacobi moves every misclassified "
        "class at once, single one class chosen at random",
    )
    solve.add_argument(
        "--init",
        choices=["dedicated", "both", "shared", "random"],
        default="dedicated",
        help="Algorithm 1 initial partition (fixed-point only): every class in C_d, C_b, "
        "C_0, or a random partition",
    )
    options.add_seed(solve, help="seed for --init random and --update single")
    solve.set_defaults(func=_solve)

    compare = options.command(
        subparsers, "compare", "cost of multi-skilled vs no / all sharing", INSTANCE
    )
    compare.set_defaults(func=_compare)

    sim = options.command(
        subparsers, "simulate", "mean holding cost of a routing policy, simulated", INSTANCE
    )
    options.add_policy(sim, POLICY_DESCRIPTIONS)
    options.add_horizon(
        sim,
        1000.0,
        help="measured time per replication (time units), after a warm-up of 10%% of it",
    )
    options.add_replications(sim, help="independent replications for the 95%% confidence interval")
    options.add_seed(sim)
    sim.add_argument(
        "--start",
        choices=["bernoulli", "empty"],
        default="bernoulli",
        help="initial state: stationary law of optimal Bernoulli routing, or empty",
    )
    _add_job_sizes(sim)
    options.add_table_size(
        sim,
        help="your own policy: its index is tabulated for 0..TABLE_SIZE jobs per server (an "
        "arrival beyond it is an error: raise the size)",
    )
    sim.set_defaults(func=_simulate)

    cp = options.command(
        subparsers,
        "compare-policies",
        "paired comparison of routing policies (common random numbers, control variates of "
        "known mean): cost, ratio to the exact optimal Bernoulli cost, ranking, best",
        INSTANCE,
    )
    options.add_policies(cp, POLICY_DESCRIPTIONS)
    options.add_horizon(cp, 1000.0)
    options.add_warmup(cp)
    options.add_replications(
        cp, help="paired replications (every policy on the same random numbers)", minimum=3
    )
    options.add_seed(cp)
    _add_job_sizes(cp)
    options.add_table_size(
        cp,
        help="your own policies: index tabulated for 0..TABLE_SIZE jobs per server (an "
        "arrival beyond it is an error: raise the size)",
    )
    cp.set_defaults(func=compare_policies)

    from ..multiskill.optimal import CHAIN_DESCRIPTIONS

    opt = options.command(
        subparsers,
        "optimal",
        "the optimal dynamic routing (relative value iteration on the truncated chain, "
        "certified) and each policy's exact cost and gap to it",
        INSTANCE,
    )
    opt.add_argument(
        "--truncation",
        type=options.int_at_least(1),
        default=None,
        help="solve the chain at this level L only (at most L jobs at each server), as it "
        "stands (default: the levels raised, a box of one level per server, until the optimal "
        "cost is certified)",
    )
    options.add_policies(opt, CHAIN_DESCRIPTIONS)
    opt.add_argument(
        "--rtol",
        type=options.positive_number,
        default=1e-6,
        help="relative tolerance of the certified costs",
    )
    opt.set_defaults(func=_optimal)
