"""The ``queue-routing`` command: parses the arguments, calls the library, prints JSON.

Every subcommand reads one instance as JSON (a file path, or ``-`` for stdin) and prints one
JSON object to stdout. Errors go to stderr as a single line ``queue-routing: error: ...``
with a non-zero exit status (2 for usage errors, including a user policy ``--policy
path.py:name`` that does not load or gives a bad index value; 1 for bad or unstable
instances).

This module is what every subcommand shares (the parser's frame, the error mapping, the exit
statuses, writing the output, the signals); each part's subcommands are in its own module
(:mod:`.multiskill`, :mod:`.deadlines`, :mod:`.serverpools`), built from the options of
:mod:`.options`, with the handlers' shared pieces in :mod:`.common`.
"""

from __future__ import annotations

# Only what SIGINT/SIGTERM handling needs is imported here: the console script imports this
# module before :func:`main` runs, and every moment before ``main`` enters the guard is one
# at which a signal gets Python's default (a traceback, or death by SIGTERM). The rest, the
# library and argparse included, is imported under the guard.
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence

from ..signals import Interrupted, SignalExit, checkpoint, exit_status

__all__ = ["main"]

#: The parts' command modules, imported by :func:`main` once SIGINT/SIGTERM are guarded.
PARTS = ("multiskill", "deadlines", "serverpools")


def _build_parser(*, lazy: bool = False):
    """The whole parser (an :class:`argparse.ArgumentParser`); with ``lazy``, a part's
    subcommands are added when it parses."""
    import importlib

    from .. import __version__
    from .options import Parser, PartParser

    parser = Parser(
        prog="queue-routing",
        description="Solvers and simulators for routing in multi-server queueing systems. "
        "Every command reads one JSON instance and prints one JSON object.",
    )
    parser.add_argument("--version", action="version", version=f"queue-routing {__version__}")
    parts = parser.add_subparsers(dest="part", required=True, parser_class=PartParser)
    for name in PARTS:
        part = importlib.import_module(f".{name}", __package__)
        sub = parts.add_parser(name, help=part.HELP, register=part.register)
        if not lazy:
            sub.add_commands()
    return parser


def build_parser():
    """The command's whole parser (an :class:`argparse.ArgumentParser`), every part's
    subcommands added: what the documentation's command-line reference is generated from
    (``docs/gen_reference.py``). The command itself builds it lazily.

    >>> args = build_parser().parse_args(["serverpools", "analyze", "instance.json"])
    >>> args.part, args.command, args.instance
    ('serverpools', 'analyze', 'instance.json')
    """
    return _build_parser()


def _finite_or_none(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite_or_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite_or_none(v) for v in x]
    return x


def _say(kind: str, message: str) -> None:
    """One line on stderr: ``queue-routing: <kind>: <message>`` (newlines folded)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"queue-routing: {kind}: {' '.join(str(message).split())}\n")
        sys.stderr.flush()


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    _say("warning", f"{message} ({category.__name__})")


def _write_output(text: str, output: str | None) -> None:
    from ..io import atomic_path

    if output is not None:
        with atomic_path(output) as tmp:
            tmp.write_text(text)
        return
    if sys.stdout is None:
        raise OSError("standard output is closed")
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): its write
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    # Every byte, by the descriptor: an unbuffered text stream (PYTHONUNBUFFERED=1) drops the
    # rest of a partial write without an error, so a closed pipe would end in silence.
    sys.stdout.flush()
    data = memoryview(text.encode())
    while data:
        data = data[os.write(fd, data) :]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``queue-routing`` console script.

    Exit status: 0 on success; 1 for an instance or result the command refuses (one line on
    stderr); 2 for a usage error (an option's value, or an option that does not fit the
    instance; a user policy ``path.py:name`` that does not load, or whose index is not a
    finite number >= 0 on this instance); 3 for an internal error (a bug: one line naming
    the exception); 130 / 143 when interrupted by SIGINT / SIGTERM (one line, whatever the
    moment: loading a user policy, compiling or inside a compiled kernel, within a second;
    nothing on stdout unless the signal came while the result was being written).
    """

    def forced_exit(signum: int) -> None:  # the watcher thread: the main one is not at a
        io = sys.modules.get("queue_routing.io")  # safe point (compiling, in a kernel): no
        if io is not None:  # import, no lock (without the module, no temporary file exists)
            io.remove_live_temporaries()
        line = f"queue-routing: error: interrupted by {signal.Signals(signum).name}\n"
        with contextlib.suppress(OSError):
            os.write(2, line.encode())

    with SignalExit(forced_exit, grace=0.5) as guard:
        try:
            status = _run(argv, guard)
        except BaseException as exc:
            interrupted = isinstance(exc, Interrupted | KeyboardInterrupt)
            if guard.signum is None and not interrupted:
                raise  # argparse's exit (usage error, --help)
            signum = guard.signum
            if signum is None:
                signum = getattr(exc, "signum", signal.SIGINT)
        else:
            signum = guard.signum
        if signum is None:
            return status
        if not guard.claim():  # the watcher is reporting it and ending the process
            threading.Event().wait()
        _say("error", f"interrupted by {signal.Signals(signum).name}")
        guard.done.set()
        return exit_status(signum)


def _run(argv: Sequence[str] | None, guard: SignalExit) -> int:
    """Parse (a user policy is loaded then), run the command and write its output; the exit
    status, or :class:`~queue_routing.signals.Interrupted` once a signal has come."""
    import json
    import warnings

    from ..user_policy import UserPolicyError
    from .common import CliError, stdout_to_stderr

    parser = _build_parser(lazy=True)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _one_line_warning
        try:
            with stdout_to_stderr():
                out = args.func(args)
            checkpoint()
            _write_output(json.dumps(_finite_or_none(out), allow_nan=False) + "\n", args.output)
            checkpoint()
        except Exception as exc:
            if guard.signum is not None:  # the signal decides, not what it may have caused
                raise Interrupted(guard.signum) from exc
            if isinstance(exc, BrokenPipeError):
                # The reader went away (``| head``): say so once; nothing more can be written.
                with contextlib.suppress(OSError):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                _say("error", "standard output was closed before the result was written")
                return 1
            if isinstance(exc, UserPolicyError):  # your own policy fails here: a usage error
                _say("error", str(exc))
                return 2
            if isinstance(exc, CliError | ValueError):
                msg = " ".join(str(exc).split())  # guarantee a single line
                argument = getattr(exc, "argument", None)  # a library argument, an option
                if argument and msg.startswith(argument):
                    _say("error", "--" + argument.replace("_", "-") + msg[len(argument) :])
                    return 2
                _say("error", msg)
                return 1
            if isinstance(exc, OSError):  # the output cannot be written (disk full, ...)
                where = f" {exc.filename}" if exc.filename else ""
                _say("error", f"cannot write the output{where}: {exc.strerror or exc}")
                return 1
            if isinstance(exc, MemoryError):  # not a bug: the run does not fit this machine
                _say("error", "not enough memory for this run: ask for a smaller one")
                return 1
            # a bug: still one line, and a status of its own
            _say("error", f"internal error, please report it: {type(exc).__name__}: {exc}")
            return 3
    return 0
