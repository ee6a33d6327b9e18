"""The ``queue-routing`` command: parses the arguments, calls the library, prints JSON.

Every subcommand reads one instance as JSON (a file path, or ``-`` for stdin) and prints one
JSON object to stdout. Errors go to stderr as a single line ``queue-routing: error: ...``
with a non-zero exit status (2 for usage errors, including a user policy ``--policy
path.py:name`` that does not load or gives a bad index value; 1 for bad or unstable
instances).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .io import atomic_path, remove_live_temporaries
from .signals import Interrupted, SignalExit, exit_status
from .user_policy import UserPolicyError

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

    instance = Instance.from_dict(_read_json(args.instance))
    progress = _terminal_progress(args.replications, f"simulating {args.policy}")
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
    ).to_dict()


def _compare_policies(args: argparse.Namespace) -> dict[str, Any]:
    """``multiskill compare-policies`` and ``deadlines compare-policies``: the part's
    ``compare_policies`` (``args.part`` names the part; its baseline is simulated too, even
    when not asked), with ``--job-sizes`` where the part has it."""
    part = importlib.import_module(f"{__package__}.{args.part}")
    comparison = importlib.import_module(f"{__package__}.{args.part}.policy_comparison")
    instance = part.Instance.from_dict(_read_json(args.instance))
    n_sims = len(set(args.policies) | {comparison.BASELINE})
    progress = _terminal_progress(n_sims * args.replications, "simulating policies")
    extra = {"job_sizes": args.job_sizes} if "job_sizes" in args else {}
    return comparison.compare_policies(
        instance,
        args.policies,
        horizon=args.horizon,
        warmup=args.warmup,
        replications=args.replications,
        seed=args.seed,
        keys=("cli",),
        table_size=args.table_size,
        progress=progress,
        **extra,
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
        keys=("cli",),  # never the policy: compare-policies sees the same jobs
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

    return analyze(ServerPoolSystem.from_dict(_read_json(args.instance))).to_dict()


def _serverpools_simulate(args: argparse.Namespace) -> dict[str, Any]:
    from .serverpools import ServerPoolSystem, time_average

    return time_average(
        ServerPoolSystem.from_dict(_read_json(args.instance)),
        args.scale,
        horizon=args.horizon,
        warmup=args.warmup,
        replications=args.replications,
        seed=args.seed,
        keys=("cli",),
    ).to_dict()


def _positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 that is not a time, such as the scale r
    (:func:`queue_routing.checks.positive`)."""
    from .checks import positive

    try:
        return positive("value", float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}") from None


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low`` (a usage error, exit 2, otherwise)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    return parse


def _check_policy_name(name: str, known: Sequence[str], unknown: str = "unknown policy") -> str:
    """``name`` if it is in ``known`` or a user policy ``path/to/file.py:name`` that loads
    (:func:`~queue_routing.user_policy.load_policy`); an argparse usage error otherwise."""
    from .user_policy import UserPolicyError, is_spec, load_policy

    if name in known:
        return name
    if not is_spec(name):
        raise argparse.ArgumentTypeError(
            f"{unknown} {name!r} (choose from {', '.join(known)}, or give your own as "
            "path/to/file.py:name)"
        )
    try:
        load_policy(name)
    except UserPolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def _one_policy(known: Sequence[str]):
    """An argparse type: a name from ``known`` or a user policy ``path/to/file.py:name``."""

    def parse(text: str) -> str:  # worded as argparse's choices were
        return _check_policy_name(text.strip(), known, "invalid choice:")

    return parse


def _policy_list(known: Sequence[str]):
    """An argparse type: comma-separated distinct names from ``known`` or user policies
    ``path/to/file.py:name`` (usage error otherwise)."""

    def parse(text: str) -> list[str]:
        names = [p.strip() for p in text.split(",") if p.strip()]
        if not names:
            raise argparse.ArgumentTypeError("must name at least one policy")
        for name in names:
            _check_policy_name(name, known)
        if len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(f"a policy is repeated in {text!r}")
        return names

    return parse


def _job_sizes(text: str):
    """An argparse type: a job-size law of mean 1 (``multiskill.sizes.job_sizes``)."""
    from .multiskill.sizes import JobSizeError, job_sizes

    try:
        return job_sizes(text)
    except JobSizeError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("job sizes: ")) from None


def _add_job_sizes(sub: argparse.ArgumentParser) -> None:
    from .multiskill.sizes import SPEC_HELP

    sub.add_argument(
        "--job-sizes",
        type=_job_sizes,
        default="exponential",
        metavar="LAW",
        help=f"job-size law of mean 1 (work units): {SPEC_HELP}; SCV = squared coefficient "
        "of variation; exponential uses the uniformised chain, the others the event-driven "
        "simulator",
    )


def _nonnegative_time(text: str) -> float:
    """An argparse type: a finite duration >= 0 (time units)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def _positive_time(text: str) -> float:
    """An argparse type: a finite duration > 0 (time units)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
    return value


class _HelpWithDefaults(argparse.HelpFormatter):
    """Appends "(default: X)" to the help of every option that has a default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if action.option_strings and default is not None and default is not argparse.SUPPRESS:
            text += " (default: %(default)s)"
        return text


def _policy_help(descriptions: dict[str, str], user: bool = False) -> str:
    text = "; ".join(f"{name}: {t}" for name, t in descriptions.items())
    if user:
        text += (
            "; path/to/file.py:name: your own index policy, the function name(server, jobs, "
            "instance) of that file (README, 'Your own policy')"
        )
    return text


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .deadlines.policies import INDEX_POLICIES
    from .deadlines.policies import POLICY_DESCRIPTIONS as DEADLINE_POLICIES
    from .multiskill.policies import POLICY_DESCRIPTIONS as MULTISKILL_POLICIES
    from .user_policy import DEFAULT_TABLE_SIZE

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
        "--seed",
        type=_int_at_least(0),
        default=0,
        help="seed for --init random and --update single",
    )
    solve.set_defaults(func=_multiskill_solve)

    cmp_ = command(ms_cmd, "compare", "cost of multi-skilled vs no / all sharing", ms_instance)
    cmp_.set_defaults(func=_multiskill_compare)

    sim = command(
        ms_cmd, "simulate", "mean holding cost of a routing policy, simulated", ms_instance
    )
    sim.add_argument(
        "--policy",
        type=_one_policy(list(MULTISKILL_POLICIES)),
        required=True,
        help=_policy_help(MULTISKILL_POLICIES, user=True),
    )
    sim.add_argument(
        "--horizon",
        type=_positive_time,
        default=1000.0,
        help="measured time per replication (time units), after a warm-up of 10%% of it",
    )
    sim.add_argument(
        "--replications",
        type=_int_at_least(2),
        default=10,
        help="independent replications for the 95%% confidence interval",
    )
    sim.add_argument(
        "--seed", type=_int_at_least(0), default=0, help="root seed of the random streams"
    )
    sim.add_argument(
        "--start",
        choices=["bernoulli", "empty"],
        default="bernoulli",
        help="initial state: stationary law of optimal Bernoulli routing, or empty",
    )
    _add_job_sizes(sim)
    sim.add_argument(
        "--table-size",
        type=_int_at_least(1),
        default=DEFAULT_TABLE_SIZE,
        help="your own policy: its index is tabulated for 0..TABLE_SIZE jobs per server "
        "(arrivals beyond are counted and reported)",
    )
    sim.set_defaults(func=_multiskill_simulate)

    cp = command(
        ms_cmd,
        "compare-policies",
        "paired comparison of routing policies (common random numbers, Bernoulli control "
        "variate): cost, ratio to the exact optimal Bernoulli cost, ranking, best",
        ms_instance,
    )
    cp.add_argument(
        "--policies",
        type=_policy_list(list(MULTISKILL_POLICIES)),
        default=",".join(MULTISKILL_POLICIES),
        help="comma-separated policies; " + _policy_help(MULTISKILL_POLICIES, user=True),
    )
    cp.add_argument(
        "--horizon",
        type=_positive_time,
        default=1000.0,
        help="measured time per replication (time units)",
    )
    cp.add_argument(
        "--warmup",
        type=_nonnegative_time,
        default=None,
        help="discarded time before the measurement (time units); default 10%% of the horizon",
    )
    cp.add_argument(
        "--replications",
        type=_int_at_least(3),
        default=10,
        help="paired replications (every policy on the same random numbers)",
    )
    cp.add_argument(
        "--seed", type=_int_at_least(0), default=0, help="root seed of the random streams"
    )
    _add_job_sizes(cp)
    cp.add_argument(
        "--table-size",
        type=_int_at_least(1),
        default=DEFAULT_TABLE_SIZE,
        help="your own policies: index tabulated for 0..TABLE_SIZE jobs per server (an "
        "arrival beyond it is an error: raise the size)",
    )
    cp.set_defaults(func=_compare_policies)

    dl = parts.add_parser("deadlines", help="Part B: soft real-time jobs on multiclusters")
    dl_cmd = dl.add_subparsers(dest="command", required=True, parser_class=_Parser)
    dl_instance = (
        'JSON file {"arrival_rate", "servers", "service_rates", "rejection_cost", "deadline"}'
    )
    ev = command(dl_cmd, "evaluate", "cost, rejection and miss rates of a policy", dl_instance)
    ev.add_argument(
        "--policy",
        type=_one_policy(list(DEADLINE_POLICIES)),
        required=True,
        help=_policy_help(DEADLINE_POLICIES, user=True),
    )
    ev.add_argument(
        "--method",
        choices=["exact", "simulation"],
        default="exact",
        help="exact: the truncated Markov chain (up to 3 clusters); simulation: 95%% CI",
    )
    ev.add_argument(
        "--truncation",
        type=_int_at_least(1),
        default=None,
        help="exact: jobs per cluster kept in the truncated chain (default: from 60, or 30 for "
        "three clusters, raised until the cost is stable)",
    )
    ev.add_argument(
        "--horizon",
        type=_positive_time,
        default=20000.0,
        help="simulation: measured time per replication (time units), after a warm-up of "
        "10%% of it",
    )
    ev.add_argument(
        "--replications",
        type=_int_at_least(2),
        default=10,
        help="simulation: independent replications",
    )
    ev.add_argument(
        "--table-size",
        type=_int_at_least(1),
        default=DEFAULT_TABLE_SIZE,
        help="simulation: index table length per cluster (beyond it a cluster counts as full)",
    )
    ev.add_argument("--seed", type=_int_at_least(0), default=0, help="simulation: root seed")
    ev.set_defaults(func=_deadlines_evaluate)
    from .deadlines.policy_comparison import COMPARED_POLICIES

    dcp = command(
        dl_cmd,
        "compare-policies",
        "paired comparison of policies by simulation (common random numbers): cost, ratio "
        "to PI, ranking, best",
        dl_instance,
    )
    dcp.add_argument(
        "--policies",
        type=_policy_list(list(COMPARED_POLICIES)),
        default=",".join(COMPARED_POLICIES),
        help="comma-separated policies; "
        + _policy_help({k: DEADLINE_POLICIES[k] for k in COMPARED_POLICIES}, user=True),
    )
    dcp.add_argument(
        "--horizon",
        type=_positive_time,
        default=20000.0,
        help="measured time per replication (time units)",
    )
    dcp.add_argument(
        "--warmup",
        type=_nonnegative_time,
        default=None,
        help="discarded time before the measurement (time units); default 10%% of the horizon",
    )
    dcp.add_argument(
        "--replications",
        type=_int_at_least(2),
        default=10,
        help="paired replications (every policy on the same jobs)",
    )
    dcp.add_argument(
        "--table-size",
        type=_int_at_least(1),
        default=400,
        help="index table length per cluster (beyond it a cluster counts as full)",
    )
    dcp.add_argument(
        "--seed", type=_int_at_least(0), default=0, help="root seed of the random streams"
    )
    dcp.set_defaults(func=_compare_policies)
    ix = command(dl_cmd, "index", "index function of one cluster", dl_instance)
    ix.add_argument(
        "--policy",
        choices=list(INDEX_POLICIES),
        required=True,
        help=_policy_help({k: DEADLINE_POLICIES[k] for k in INDEX_POLICIES}),
    )
    ix.add_argument(
        "--cluster", type=_int_at_least(1), required=True, help="cluster number, from 1"
    )
    ix.add_argument("--upto", type=_int_at_least(0), required=True, help="largest number of jobs x")
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
    spsim = command(
        sp_cmd,
        "simulate",
        "stationary time average of the diffusion-scaled deviation |X^r - r x*|/sqrt(r) of "
        "the r-th system under LQFS-LB, with its 95%% interval and a stationarity test",
        'JSON file {"arrival_rates", "pool_sizes", "activities": [{"class", "pool", "rate"}]}',
    )
    spsim.add_argument(
        "--scale",
        type=_positive_number,
        required=True,
        metavar="R",
        help="scale r: arrival rates r lambda_i, round(r beta_j) servers",
    )
    spsim.add_argument(
        "--horizon",
        type=_positive_time,
        default=100.0,
        help="measured time per replication after the warm-up (time units of 1/mu)",
    )
    spsim.add_argument(
        "--warmup",
        type=_nonnegative_time,
        default=None,
        help="discarded time from the nominal start r x* (time units); default derived from "
        "the leading eigenvalue gamma of A_u and r: ln(1000)/(2|gamma|) if stable, "
        "(ln(r)/2 + ln(1000))/gamma if unstable",
    )
    spsim.add_argument(
        "--replications",
        type=_int_at_least(2),
        default=5,
        help="independent replications for the 95%% interval",
    )
    spsim.add_argument(
        "--seed", type=_int_at_least(0), default=0, help="root seed of the random streams"
    )
    spsim.set_defaults(func=_serverpools_simulate)
    return parser


def _say(kind: str, message: str) -> None:
    """One line on stderr: ``queue-routing: <kind>: <message>`` (newlines folded)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"queue-routing: {kind}: {' '.join(str(message).split())}\n")
        sys.stderr.flush()


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    _say("warning", f"{message} ({category.__name__})")


def _write_output(text: str, output: str | None) -> None:
    if output is not None:
        with atomic_path(output) as tmp:
            tmp.write_text(text)
        return
    if sys.stdout is None:
        raise OSError("standard output is closed")
    sys.stdout.write(text)
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``queue-routing`` console script.

    Exit status: 0 on success; 1 for an instance or result the command refuses (one line on
    stderr); 2 for a usage error (an option's value, or an option that does not fit the
    instance; a user policy ``path.py:name`` that does not load, or whose index is not a
    finite number >= 0 on this instance); 3 for an internal error (a bug: one line naming
    the exception); 130 / 143 when interrupted by SIGINT / SIGTERM (one line, also inside
    compiled code, within a second).
    """
    parser = _build_parser()
    args = parser.parse_args(argv)

    def forced_exit(signum: int) -> None:  # the main thread is inside a compiled kernel
        remove_live_temporaries()
        _say("error", f"interrupted by {signal.Signals(signum).name}")

    with SignalExit(forced_exit) as guard, warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _one_line_warning
        try:
            out = args.func(args)
            _write_output(json.dumps(_finite_or_none(out), allow_nan=False) + "\n", args.output)
        except Interrupted as exc:
            _say("error", f"interrupted by {signal.Signals(exc.signum).name}")
            guard.done.set()
            return exit_status(exc.signum)
        except BrokenPipeError:
            # The reader went away (``| head``): say so once; nothing more can be written.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            _say("error", "standard output was closed before the result was written")
            return 1
        except UserPolicyError as exc:  # your own policy fails on this instance: a usage error
            _say("error", str(exc))
            return 2
        except (CliError, ValueError) as exc:
            msg = " ".join(str(exc).split())  # guarantee a single line
            argument = getattr(exc, "argument", None)  # a library argument that is an option
            if argument and msg.startswith(argument):
                _say("error", "--" + argument.replace("_", "-") + msg[len(argument) :])
                return 2
            _say("error", msg)
            return 1
        except OSError as exc:  # the output cannot be written (disk full, closed stdout, ...)
            _say("error", f"cannot write the output: {exc.strerror or exc}")
            return 1
        except Exception as exc:  # a bug: still one line, and a status of its own
            _say("error", f"internal error, please report it: {type(exc).__name__}: {exc}")
            return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
