"""The options of the ``queue-routing`` subcommands, each declared once.

A part's module (:mod:`.multiskill`, :mod:`.deadlines`, :mod:`.serverpools`) builds its
subcommands with :func:`command` and the ``add_*`` factories below; a factory fixes an
option's name, argument type and default, and the part gives what differs between
subcommands (its help text, a default horizon, a minimum number of replications). The
argument types turn a bad value into a usage error (one line, exit status 2).

Nothing here imports a part of the library at module level: the parser is built at every
start of the command.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence

from ..user_policy import DEFAULT_TABLE_SIZE

SEED_HELP = "root seed of the random streams"
HORIZON_HELP = "measured time per replication (time units)"
WARMUP_HELP = "discarded time before the measurement (time units); default 10%% of the horizon"


class Parser(argparse.ArgumentParser):
    """The command's parsers: an error is one line and exit status 2, as argparse's but
    terse."""

    def error(self, message: str) -> None:
        self.exit(2, f"{self.prog}: error: {message}\n")


class PartParser(Parser):
    """The parser of a part (``queue-routing multiskill`` ...): its subcommands are added by
    the part's ``register`` when it first parses, so that a command imports only its own
    part of the library (and ``queue-routing --help`` none)."""

    def __init__(self, *args, register: Callable | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._register = register

    def add_commands(self) -> None:
        """Adds the part's subcommands, once."""
        if self._register is not None:
            register, self._register = self._register, None
            register(self.add_subparsers(dest="command", required=True, parser_class=Parser))

    def parse_known_args(self, args=None, namespace=None):
        self.add_commands()
        return super().parse_known_args(args, namespace)


class HelpWithDefaults(argparse.HelpFormatter):
    """Appends "(default: X)" to the help of every option that has a default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if action.option_strings and default is not None and default is not argparse.SUPPRESS:
            text += " (default: %(default)s)"
        return text


# -- argument types ---------------------------------------------------------------------------
def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 that is not a time, such as the scale r
    (:func:`queue_routing.checks.positive`)."""
    from ..checks import positive

    try:
        return positive("value", float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}") from None


def int_at_least(low: int) -> Callable[[str], int]:
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


def nonnegative_time(text: str) -> float:
    """An argparse type: a finite duration >= 0 (time units)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def positive_time(text: str) -> float:
    """An argparse type: a finite duration > 0 (time units)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
    return value


def _check_policy_name(name: str, known: Sequence[str], unknown: str = "unknown policy") -> str:
    """``name`` if it is in ``known`` or a user policy ``path/to/file.py:name`` that loads
    (:func:`~queue_routing.user_policy.load_policy`); an argparse usage error otherwise."""
    from ..user_policy import UserPolicyError, is_spec, load_policy

    if name in known:
        return name
    if not is_spec(name):
        raise argparse.ArgumentTypeError(
            f"{unknown} {name!r} (choose from {', '.join(known)}, or give your own as "
            "path/to/file.py:name)"
        )
    from .common import stdout_to_stderr

    try:
        with stdout_to_stderr():  # the user's module runs: stdout is kept for the result
            load_policy(name)
    except UserPolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def one_policy(known: Sequence[str]) -> Callable[[str], str]:
    """An argparse type: a name from ``known`` or a user policy ``path/to/file.py:name``."""

    def parse(text: str) -> str:  # worded as argparse's choices were
        return _check_policy_name(text.strip(), known, "invalid choice:")

    return parse


def policy_list(known: Sequence[str]) -> Callable[[str], list[str]]:
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


def policy_help(descriptions: Mapping[str, str], user: bool = False) -> str:
    """``name: meaning`` of each policy, joined by "; "; with ``user``, also how to give
    your own index policy."""
    text = "; ".join(f"{name}: {t}" for name, t in descriptions.items())
    if user:
        text += (
            "; path/to/file.py:name: your own index policy, the function name(server, jobs, "
            "instance) of that file (docs/your-own-policy.md)"
        )
    return text


# -- the subcommand and its options -----------------------------------------------------------
def command(
    subparsers: argparse._SubParsersAction, name: str, text: str, instance_help: str
) -> argparse.ArgumentParser:
    """A subcommand ``name`` of a part, described by ``text``: it reads one instance (a file
    described by ``instance_help``, or ``-`` for stdin) and has ``-o/--output``; its
    ``--help`` shows every option's default."""
    sub = subparsers.add_parser(name, help=text, description=text, formatter_class=HelpWithDefaults)
    sub.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the JSON object to FILE (atomically: complete or not at all) instead of stdout",
    )
    sub.add_argument("instance", help=f"{instance_help}, or - for stdin")
    return sub


def add_policy(sub: argparse.ArgumentParser, descriptions: Mapping[str, str]) -> None:
    """``--policy`` (required): one of ``descriptions`` or a user policy ``path.py:name``."""
    sub.add_argument(
        "--policy",
        type=one_policy(list(descriptions)),
        required=True,
        help=policy_help(descriptions, user=True),
    )


def add_policies(sub: argparse.ArgumentParser, descriptions: Mapping[str, str]) -> None:
    """``--policies``: comma-separated names of ``descriptions`` (default: all of them) or
    user policies ``path.py:name``."""
    sub.add_argument(
        "--policies",
        type=policy_list(list(descriptions)),
        default=",".join(descriptions),
        help="comma-separated policies; " + policy_help(descriptions, user=True),
    )


def add_seed(sub: argparse.ArgumentParser, help: str = SEED_HELP) -> None:
    """``--seed``: an integer >= 0, default 0."""
    sub.add_argument("--seed", type=int_at_least(0), default=0, help=help)


def add_horizon(sub: argparse.ArgumentParser, default: float, help: str = HORIZON_HELP) -> None:
    """``--horizon``: the measured time per replication, a finite time > 0."""
    sub.add_argument("--horizon", type=positive_time, default=default, help=help)


def add_warmup(sub: argparse.ArgumentParser, help: str = WARMUP_HELP) -> None:
    """``--warmup``: the discarded time before the measurement, a finite time >= 0; default
    None (the library derives it)."""
    sub.add_argument("--warmup", type=nonnegative_time, default=None, help=help)


def add_replications(
    sub: argparse.ArgumentParser, help: str, *, default: int = 10, minimum: int = 2
) -> None:
    """``--replications``: an integer >= ``minimum``."""
    sub.add_argument("--replications", type=int_at_least(minimum), default=default, help=help)


def add_table_size(sub: argparse.ArgumentParser, help: str) -> None:
    """``--table-size``: an index table's length, an integer >= 1, default
    :data:`queue_routing.user_policy.DEFAULT_TABLE_SIZE`."""
    sub.add_argument("--table-size", type=int_at_least(1), default=DEFAULT_TABLE_SIZE, help=help)


class _Renamed(argparse.Action):
    """An option that was renamed: using it is a usage error naming the new option."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was renamed: use {self.new}")


def add_renamed(sub: argparse.ArgumentParser, old: str, new: str) -> None:
    """``old`` (hidden from the help) refused with one line naming ``new`` (exit status 2)."""
    sub.add_argument(old, action=_Renamed, new=new, dest=argparse.SUPPRESS)
