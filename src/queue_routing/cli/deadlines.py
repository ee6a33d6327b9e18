"""``queue-routing deadlines``: Part B's subcommands (docs/deadlines.md)."""

from __future__ import annotations

import argparse
from typing import Any

from . import options
from .common import compare_policies, read_json, terminal_progress

HELP = "Part B: soft real-time jobs on multiclusters"
INSTANCE = 'JSON file {"arrival_rate", "servers", "service_rates", "rejection_cost", "deadline"}'


# -- the handlers: parse, call the library, return what to print ------------------------------
def _evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from ..deadlines import Instance, evaluate

    instance = Instance.from_dict(read_json(args.instance))
    if args.method == "simulation":
        progress = terminal_progress(args.replications, f"simulating {args.policy}")
    else:  # only the optimal policy iterates (relative value iteration)
        progress = terminal_progress(None, "relative value iteration", unit="iteration")
    return evaluate(
        instance,
        args.policy,
        method=args.method,
        truncation=args.truncation,
        horizon=args.horizon,
        replications=args.replications,
        table_size=args.table_size,
        seed=args.seed,
        keys=("cli",),  # never the policy: compare-policies sees the same jobs
        progress=progress,
    ).to_dict()


def _index(args: argparse.Namespace) -> dict[str, Any]:
    from ..deadlines import Instance, index_function

    nu = index_function(
        Instance.from_dict(read_json(args.instance)), args.policy, args.cluster, args.upto
    )
    return {"index": [float(v) for v in nu]}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds Part B's subcommands (evaluate, compare-policies, index) to ``subparsers``, the
    ``deadlines`` command's."""
    from ..deadlines.policies import INDEX_POLICIES, POLICY_DESCRIPTIONS
    from ..deadlines.policy_comparison import COMPARED_POLICIES

    ev = options.command(
        subparsers, "evaluate", "cost, rejection and miss rates of a policy", INSTANCE
    )
    options.add_policy(ev, POLICY_DESCRIPTIONS)
    ev.add_argument(
        "--method",
        choices=["exact", "simulation"],
        default="exact",
        help="exact: the truncated Markov chain (up to 3 clusters); simulation: 95%% CI",
    )
    ev.add_argument(
        "--truncation",
        type=options.int_at_least(1),
        default=None,
        help="exact: jobs per cluster kept in the truncated chain (default: from 60, or 30 for "
        "three clusters, raised until the cost is stable)",
    )
    options.add_horizon(
        ev,
        20000.0,
        help="simulation: measured time per replication (time units), after a warm-up of "
        "10%% of it",
    )
    options.add_replications(ev, help="simulation: independent replications")
    options.add_table_size(
        ev,
        help="simulation: index table length per cluster (beyond it a cluster counts as full)",
    )
    options.add_seed(ev, help="simulation: root seed")
    ev.set_defaults(func=_evaluate)

    cp = options.command(
        subparsers,
        "compare-policies",
        "paired comparison of policies by simulation (common random numbers): cost, ratio "
        "to PI, ranking, best",
        INSTANCE,
    )
    options.add_policies(cp, {k: POLICY_DESCRIPTIONS[k] for k in COMPARED_POLICIES})
    options.add_horizon(cp, 20000.0)
    options.add_warmup(cp)
    options.add_replications(cp, help="paired replications (every policy on the same jobs)")
    options.add_table_size(
        cp, help="index table length per cluster (beyond it a cluster counts as full)"
    )
    options.add_seed(cp)
    cp.set_defaults(func=compare_policies)

    ix = options.command(subparsers, "index", "index function of one cluster", INSTANCE)
    ix.add_argument(
        "--policy",
        choices=list(INDEX_POLICIES),
        required=True,
        help=options.policy_help({k: POLICY_DESCRIPTIONS[k] for k in INDEX_POLICIES}),
    )
    ix.add_argument(
        "--cluster", type=options.int_at_least(1), required=True, help="cluster number, from 1"
    )
    ix.add_argument(
        "--upto", type=options.int_at_least(0), required=True, help="largest number of jobs x"
    )
    ix.set_defaults(func=_index)
