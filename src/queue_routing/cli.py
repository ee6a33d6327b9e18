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
    return simulate(
        Instance.from_dict(_read_json(args.instance)),
        args.policy,
        horizon=args.horizon,
        replications=args.replications,
        seed=args.seed,
        start=args.start,
    ).to_dict()


def _deadlines_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from .deadlines import Instance, evaluate

    return evaluate(
        Instance.from_dict(_read_json(args.instance)),
        args.policy,
        method=args.method,
        truncation=args.truncation,
        horizon=args.horizon,
        replications=args.replications,
        table_size=args.table_size,
        seed=args.seed,
        keys=("cli", args.policy),
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


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="queue-routing",
        description="Solvers and simulators for routing in multi-server queueing systems.",
    )
    parts = parser.add_subparsers(dest="part", required=True, parser_class=_Parser)

    ms = parts.add_parser("multiskill", help="multi-skilled servers with Bernoulli routing")
    ms_cmd = ms.add_subparsers(dest="command", required=True, parser_class=_Parser)

    solve = ms_cmd.add_parser("solve", help="optimal Bernoulli routing (LOAD-OPT)")
    solve.add_argument("instance", help='JSON file {"mu", "cost", "eta"} or - for stdin')
    solve.add_argument("--method", choices=["exact", "fixed-point", "generic"], default="exact")
    solve.add_argument(
        "--update",
        choices=["jacobi", "single"],
        default="jacobi",
        help="Algorithm 1 update rule (fixed-point only)",
    )
    solve.add_argument(
        "--init",
        choices=["dedicated", "both", "shared", "random"],
        default="dedicated",
        help="Algorithm 1 initial partition",
    )
    solve.add_argument(
        "--seed", type=int, default=0, help="seed for --init random and --update single"
    )
    solve.set_defaults(func=_multiskill_solve)

    cmp_ = ms_cmd.add_parser("compare", help="cost of multi-skilled vs no/all sharing")
    cmp_.add_argument("instance", help="JSON instance file or - for stdin")
    cmp_.set_defaults(func=_multiskill_compare)

    sim = ms_cmd.add_parser("simulate", help="mean holding cost of a routing policy, simulated")
    sim.add_argument("instance", help="JSON instance file or - for stdin")
    sim.add_argument("--policy", choices=["bernoulli", "jsq", "led", "io", "pi"], required=True)
    sim.add_argument(
        "--horizon",
        type=float,
        default=1000.0,
        help="measured time per replication (time units; warm-up 10%% more)",
    )
    sim.add_argument(
        "--replications",
        type=int,
        default=10,
        help="independent replications for the 95%% confidence interval",
    )
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument(
        "--start",
        choices=["bernoulli", "empty"],
        default="bernoulli",
        help="initial state: stationary law of optimal Bernoulli routing, or empty",
    )
    sim.set_defaults(func=_multiskill_simulate)
    dl = parts.add_parser("deadlines", help="admission and routing of soft real-time jobs")
    dl_cmd = dl.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ev = dl_cmd.add_parser("evaluate", help="cost, rejection and miss rates of a policy")
    ev.add_argument("instance", help="JSON instance file or - for stdin")
    ev.add_argument("--policy", choices=["bs", "io", "pi", "rb", "optimal"], required=True)
    ev.add_argument("--method", choices=["exact", "simulation"], default="exact")
    ev.add_argument(
        "--truncation",
        type=int,
        default=None,
        help="exact: jobs per cluster kept in the truncated chain (default 60/30)",
    )
    ev.add_argument(
        "--horizon", type=float, default=20000.0, help="simulation: measured time per replication"
    )
    ev.add_argument("--replications", type=int, default=10)
    ev.add_argument(
        "--table-size", type=int, default=400, help="simulation: index table length per cluster"
    )
    ev.add_argument("--seed", type=int, default=0)
    ev.set_defaults(func=_deadlines_evaluate)
    ix = dl_cmd.add_parser("index", help="index function of one cluster")
    ix.add_argument("instance", help="JSON instance file or - for stdin")
    ix.add_argument("--policy", choices=["io", "pi", "rb"], required=True)
    ix.add_argument("--cluster", type=int, required=True, help="cluster number, from 1")
    ix.add_argument("--upto", type=int, required=True, help="largest number of jobs x")
    ix.set_defaults(func=_deadlines_index)

    sp = parts.add_parser("serverpools", help="large flexible server pools under LQFS-LB")
    sp_cmd = sp.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ana = sp_cmd.add_parser("analyze", help="static planning LP and local fluid stability")
    ana.add_argument(
        "instance", help='JSON {"arrival_rates", "pool_sizes", "activities"} or - for stdin'
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
    json.dump(_finite_or_none(out), sys.stdout, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
