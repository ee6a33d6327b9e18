"""What the handlers of the ``queue-routing`` subcommands share when they run: reading the
instance, the progress line, stdout kept for the result, and the one ``compare-policies``
handler of Parts A and B."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class CliError(Exception):
    """An error reported to the user as one line on stderr (exit status 1)."""


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Inside, file descriptor 1 is stderr's, so that nothing but the command's result reaches
    stdout: the command computes, and loads user policies, inside it. Not a user policy's
    ``print`` (which :mod:`queue_routing.user_policy` sends to stderr too) nor a write of
    its own or of compiled code to the descriptor. Without a usable stdout, nothing changes."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        saved = None
    if saved is not None:
        try:
            os.dup2(2, 1)
        except OSError:
            os.close(saved)
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                if sys.stdout is not None:
                    sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def read_json(source: str) -> Any:
    """The JSON value of the file ``source``, or of stdin if ``source`` is ``-``; a
    :class:`CliError` if the file is missing or not JSON."""
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


def terminal_progress(total: int | None, label: str, unit: str = "replication"):
    """A status line on stderr when it is a terminal; silent otherwise (pipes, files, CI)."""
    from ..progress import Progress

    return Progress(total, label, unit=unit, stream=sys.stderr)


def compare_policies(args: argparse.Namespace) -> dict[str, Any]:
    """``multiskill compare-policies`` and ``deadlines compare-policies``: the part's
    ``compare_policies`` (``args.part`` names the part; its baseline is simulated too, even
    when not asked), with ``--job-sizes`` where the part has it."""
    part = importlib.import_module(f"..{args.part}", __package__)
    comparison = importlib.import_module(f"..{args.part}.policy_comparison", __package__)
    instance = part.Instance.from_dict(read_json(args.instance))
    n_sims = len(set(args.policies) | {comparison.BASELINE})
    progress = terminal_progress(n_sims * args.replications, "simulating policies")
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
