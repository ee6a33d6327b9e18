"""Glue between Snakemake's ``script:`` directive and the library (kept deliberately thin).

``run_script(snakemake, main)`` sends logging, warnings and stray output of ``main`` to the
rule's log file and re-raises any error after logging it, so a failed job leaves its reason
in the log and Snakemake removes its (atomically written, hence never partial) outputs.

Interruption: SIGTERM (sent by ``kill``, by Snakemake to its jobs, by SLURM at a time limit
or ``scancel``) is turned into an orderly exit, so the temporary files of
:func:`queue_routing.io.atomic_path` are removed on the way out; after a SIGKILL, which
nobody can catch, the job's stale temporaries are removed when the job is run again.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..io import remove_live_temporaries
from ..signals import SignalWatcher

__all__ = ["remove_stale_temporaries", "run_figure_script", "run_script"]


class Terminated(SystemExit):
    """Raised in the main thread when the job receives SIGTERM."""


def _terminate(signum, _frame):
    # Once only: Snakemake forwards its own SIGTERM to the jobs, so a second one often
    # follows the first, and raising again would cut short the clean-up it started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated(128 + signum)


def remove_stale_temporaries(outputs) -> list[Path]:
    """Delete leftovers ``.<name>.*.tmp`` of :func:`~queue_routing.io.atomic_path` next to
    each output (from an earlier run of the job that was killed); return what was removed."""
    removed = []
    for output in outputs:
        path = Path(output)
        if path.parent.is_dir():
            for stale in path.parent.glob(f".{path.name}.*.tmp"):
                stale.unlink(missing_ok=True)
                removed.append(stale)
    return removed


def run_script(snakemake: Any, main: Callable[[Any], None]) -> None:
    log_path = snakemake.log[0] if len(snakemake.log) else None
    stream = open(log_path, "w") if log_path else sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    log = logging.getLogger(f"rule.{snakemake.rule}")
    start = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, _terminate)

    def forced_exit(signum: int) -> None:
        # The main thread is inside a compiled kernel and cannot unwind within the grace
        # period: remove the temporaries, say so in the log, and let the watcher exit.
        remove_live_temporaries()
        log.error(
            "rule %s terminated by %s (inside compiled code)",
            snakemake.rule,
            signal.Signals(signum).name,
        )
        handler.flush()

    watch = SignalWatcher(forced_exit)
    watch.start()
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            log.info("wildcards: %s", dict(snakemake.wildcards.items()))
            for stale in remove_stale_temporaries(snakemake.output):
                log.info("removed stale temporary file %s", stale)
            main(snakemake)
        # wall time and peak memory: what the cost model (queue_routing.workflow.resources) predicts
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        log.info("done in %.2f s, peak memory %.0f MB", time.perf_counter() - start, peak_mb)
    except Terminated:
        log.error("rule %s terminated by SIGTERM", snakemake.rule)
        raise
    except Exception:
        log.exception("rule %s failed", snakemake.rule)
        raise
    finally:
        watch.stop()
        signal.signal(signal.SIGTERM, previous)
        root.removeHandler(handler)
        if stream is not sys.stderr:
            stream.close()


def run_figure_script(snakemake: Any, draw: Callable[[Any], tuple[Any, str]]) -> None:
    """:func:`run_script` for a plotting rule: ``draw(snakemake)`` returns ``(fig, caption)``.

    Writes the outputs of ``figure()`` in ``workflow/rules/common.smk``: ``pdf`` and ``png``
    (the PNG next to the PDF, same stem) with the caption drawn under the axes, and
    ``caption``, the same caption as reStructuredText for the Snakemake report.
    """
    from ..plotting import save_caption, save_figure

    def main(snakemake: Any) -> None:
        fig, caption = draw(snakemake)
        save_figure(fig, snakemake.output.pdf[: -len(".pdf")], caption)
        save_caption(caption, snakemake.output.caption)

    run_script(snakemake, main)
