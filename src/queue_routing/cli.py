"""The ``queue-routing`` command: parses the arguments, calls the library, prints JSON.

Every subcommand reads one instance as JSON (a file path, or ``-`` for stdin) and prints one
JSON object to stdout. Errors go to stderr as a single line ``queue-routing: error: ...``
with a non-zero exit status (2 for usage errors, 1 for bad or unstable instances).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .io import atomic_path

__all__ = ["main"]


class CliError(Exception):
    """An error reported to the user as one line on stderr (exit status 1)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like argparse but terse
        self.exit(2, f"{self.prog}: error: {message}\n")


def _read_json(source: str) -> Any:
    if source == "-":
        text = sys.stdin.read()
        where = "stdin"
    else:
        path = Path(source)
        if not path.is_file():
            raise CliError(f"instance file not found: {source}")
        text = path.read_text()
        where = source
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{where} is not valid JSON: {exc}") from None


def _terminal_progress(total: int | None, label: str, unit: str = "replication"):
    """A status line on stderr when it is a terminal; silent otherwise (pipes, files, CI)."""
    from .progress import Progress

    return Progress(total, label, unit=unit, stream=sys.stderr)


def _finite_or_none(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite_or_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite_or_none(v) for v in x]
    return x


# -- the subcommands: parse, call the library, return what to print ------------------------
def _multiskill_solve(args: argparse.Namespace) -> dict[str, Any]:
    from .multiskill import Instance, solve

    options = {}
    if args.method == "fixed-point":
        options = {"update": args.update, "init": args.init, "seed": args.seed}
    return solve(Instance.from_dict(_read_json(args.instance)), args.method, **options).to_dict()


def _multiskill_compare(args: argparse.Namespace) -> dict[str, Any]:
    from .multiskill import Instance, compare

    return compare(Instance.from_dict(_read_json(args.instance)))


def _multiskill_simulate(args: argparse.Namespace) -> dict[str, Any]:
    from .multiskill import Instance, simulate

    if not args.horizon > 0:
        raise CliError(f"--horizon must be > 0, got {args.horizon}")
    instance = Instance.from_dict(_read_json(args.instance))
    progress = _terminal_progress(args.replications, f"simulating {args.policy}")
    return simulate(
        instance,
        args.policy,
        horizon=args.horizon,
        replications=args.replications,
        seed=args.seed,
        start=args.start,
        progress=progress,
    ).to_dict()


def _deadlines_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from .deadlines import Instance, evaluate

    instance = Instance.from_dict(_read_json(args.instance))
    if args.method == "simulation":
        progress = _terminal_progress(args.replications, f"simulating {args.policy}")
    else:  # only the optimal policy iterates (relative value iteration)
        progress = _terminal_progress(None, "relative value iteration", unit="iteration")
    return evaluate(
        instance,
        args.policy,
        method=args.method,
        truncation=args.truncation,
        horizon=args.horizon,
        replications=args.replications,
        table_size=args.table_size,
        seed=args.seed,
        keys=("cli", args.policy),
        progress=progress,
    ).to_dict()


def _deadlines_index(args: argparse.Namespace) -> dict[str, Any]:
    from .deadlines import Instance, index_function

    nu = index_function(
        Instance.from_dict(_read_json(args.instance)), args.policy, args.cluster, args.upto
    )
    return {"index": [float(v) for v in nu]}


def _serverpools_analyze(args: argparse.Namespace) -> dict[str, Any]:
    from .serverpools import ServerPoolSystem, analyze

    return analyze(ServerPoolSystem.from_dict(_read_json(args.instance)))


class _HelpWithDefaults(argparse.HelpFormatter):
    """Appends "(default: X)" to the help of every option that has a default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if action.option_strings and default is not None and default is not argparse.SUPPRESS:
            text += " (default: %(default)s)"
        return text


def _policy_help(descriptions: dict[str, str]) -> str:
    return "; ".join(f"{name}: {text}" for name, text in descriptions.items())


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .deadlines.policies import INDEX_POLICIES
    from .deadlines.policies import POLICY_DESCRIPTIONS as DEADLINE_POLICIES
    from .multiskill.simulation import POLICY_DESCRIPTIONS as MULTISKILL_POLICIES

    parser = _Parser(
        prog="queue-routing",
        description="Solvers and simulators for routing in multi-server queueing systems. "
        "Every command reads one JSON instance and prints one JSON object.",
    )
    parser.add_argument("--version", action="version", version=f"queue-routing {__version__}")
    parts = parser.add_subparsers(dest="part", required=True, parser_class=_Parser)

    # Options every command has; defaults are shown in every command's --help.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the JSON object to FILE (atomically: complete or not at all) instead of stdout",
    )

    def command(group, name: str, text: str, instance_help: str) -> argparse.ArgumentParser:
        sub = group.add_parser(
            name,
            help=text,
            description=text,
            parents=[common],
            formatter_class=_HelpWithDefaults,
        )
        sub.add_argument("instance", help=f"{instance_help}, or - for stdin")
        return sub

    ms = parts.add_parser("multiskill", help="Part A: multi-skilled servers, Bernoulli routing")
    ms_cmd = ms.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ms_instance = 'JSON file {"mu": [mu_0..mu_C], "cost": [c_0..c_C], "eta": [eta_1..eta_C]}'

    solve = command(ms_cmd, "solve", "optimal Bernoulli routing (LOAD-OPT)", ms_instance)
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
    solve.add_argument(
        "--seed", type=int, default=0, help="seed for --init random and --update single"
    )
    solve.set_defaults(func=_multiskill_solve)

    cmp_ = command(ms_cmd, "compare", "cost of multi-skilled vs no / all sharing", ms_instance)
    cmp_.set_defaults(func=_multiskill_compare)

    sim = command(
        ms_cmd, "simulate", "mean holding cost of a routing policy, simulated", ms_instance
    )
    sim.add_argument(
        "--policy",
        choices=list(MULTISKILL_POLICIES),
        required=True,
        help=_policy_help(MULTISKILL_POLICIES),
    )
    sim.add_argument(
        "--horizon",
        type=float,
        default=1000.0,
        help="measured time per replication (time units), after a warm-up of 10%% of it",
    )
    sim.add_argument(
        "--replications",
        type=int,
        default=10,
        help="independent replications for the 95%% confidence interval",
    )
    sim.add_argument("--seed", type=int, default=0, help="root seed of the random streams")
    sim.add_argument(
        "--start",
        choices=["bernoulli", "empty"],
        default="bernoulli",
        help="initial state: stationary law of optimal Bernoulli routing, or empty",
    )
    sim.set_defaults(func=_multiskill_simulate)

    dl = parts.add_parser("deadlines", help="Part B: soft real-time jobs on multiclusters")
    dl_cmd = dl.add_subparsers(dest="command", required=True, parser_class=_Parser)
    dl_instance = (
        'JSON file {"arrival_rate", "servers", "service_rates", "rejection_cost", "deadline"}'
    )
    ev = command(dl_cmd, "evaluate", "cost, rejection and miss rates of a policy", dl_instance)
    ev.add_argument(
        "--policy",
        choices=list(DEADLINE_POLICIES),
        required=True,
        help=_policy_help(DEADLINE_POLICIES),
    )
    ev.add_argument(
        "--method",
        choices=["exact", "simulation"],
        default="exact",
        help="exact: the truncated Markov chain (up to 3 clusters); simulation: 95%% CI",
    )
    ev.add_argument(
        "--truncation",
        type=int,
        default=None,
        help="exact: jobs per cluster kept in the truncated chain (default: 60 for up to two "
        "clusters, 30 for three)",
    )
    ev.add_argument(
        "--horizon",
        type=float,
        default=20000.0,
        help="simulation: measured time per replication (time units), after a warm-up of "
        "10%% of it",
    )
    ev.add_argument(
        "--replications", type=int, default=10, help="simulation: independent replications"
    )
    ev.add_argument(
        "--table-size",
        type=int,
        default=400,
        help="simulation: index table length per cluster (beyond it a cluster counts as full)",
    )
    ev.add_argument("--seed", type=int, default=0, help="simulation: root seed")
    ev.set_defaults(func=_deadlines_evaluate)
    ix = command(dl_cmd, "index", "index function of one cluster", dl_instance)
    ix.add_argument(
        "--policy",
        choices=list(INDEX_POLICIES),
        required=True,
        help=_policy_help({k: DEADLINE_POLICIES[k] for k in INDEX_POLICIES}),
    )
    ix.add_argument("--cluster", type=int, required=True, help="cluster number, from 1")
    ix.add_argument("--upto", type=int, required=True, help="largest number of jobs x")
    ix.set_defaults(func=_deadlines_index)

    sp = parts.add_parser("serverpools", help="Part C: large flexible server pools (LQFS-LB)")
    sp_cmd = sp.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ana = command(
        sp_cmd,
        "analyze",
        "static planning LP and local stability of the fluid equilibrium",
        'JSON file {"arrival_rates", "pool_sizes", "activities": [{"class", "pool", "rate"}]}',
    )
    ana.set_defaults(func=_serverpools_analyze)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``queue-routing`` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "seed", 0) is not None and getattr(args, "seed", 0) < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    try:
        out = args.func(args)
    except (CliError, ValueError) as exc:
        msg = " ".join(str(exc).split())  # guarantee a single line
        argument = getattr(exc, "argument", None)  # a library argument that is also an option
        if argument and msg.startswith(argument):
            msg = "--" + argument.replace("_", "-") + msg[len(argument) :]
        print(f"queue-routing: error: {msg}", file=sys.stderr)
        return 1
    text = json.dumps(_finite_or_none(out), allow_nan=False) + "\n"
    if args.output is not None:
        with atomic_path(args.output) as tmp:
            tmp.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
