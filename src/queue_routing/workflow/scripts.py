"""Glue between Snakemake's ``script:`` directive and the library (kept deliberately thin).

``run_script(snakemake, main)`` sends logging, warnings and stray output of ``main`` to the
rule's log file and re-raises any error after logging it, so a failed job leaves its reason
in the log and Snakemake removes its (atomically written, hence never partial) outputs.

Interruption: SIGTERM (sent by ``kill``, by Snakemake to its jobs, by SLURM at a time limit
or ``scancel``) and SIGINT are turned into an orderly exit, so the temporary files of
:func:`queue_routing.io.atomic_path` are removed on the way out. The handler never raises
where the signal lands (inside numba's dispatcher or compiler that would crash the job): it
records the signal (:class:`queue_routing.signals.SignalExit`), the job unwinds at its next
safe point (:func:`queue_routing.signals.checkpoint`), and if none comes within a second the
watcher removes the temporaries, logs the reason and ends the job with status 128 + signal
number. After a SIGKILL, which nobody can catch, the job's stale temporaries are removed
when the job is run again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..io import remove_live_temporaries
from ..signals import Interrupted, SignalExit, checkpoint, exit_status

__all__ = ["remove_stale_temporaries", "run_figure_script", "run_script", "use_threads"]


def use_threads(threads: int) -> int:
    """Give numba's parallel kernels (Part A's value iteration) the job's ``threads``, so
    jobs run side by side do not oversubscribe the cores; returns the count. Their results
    do not depend on it. Where numba is loaded already, at most its own count
    (``NUMBA_NUM_THREADS``, the cores by default); else through that variable, which numba
    reads when it loads (a script that draws a figure does not load numba for this)."""
    count = max(1, int(threads))
    numba = sys.modules.get("numba")
    if numba is None:
        os.environ["NUMBA_NUM_THREADS"] = str(count)
        return count
    count = min(count, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(count)
    return count


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

    def forced_exit(signum: int) -> None:
        # The main thread reached no safe point within the grace period (it is inside a
        # compiled kernel, or compiling one): remove the temporaries, say so in the log, and
        # let the watcher end the job.
        remove_live_temporaries()
        log.error(
            "rule %s terminated by %s (no safe point within the grace period)",
            snakemake.rule,
            signal.Signals(signum).name,
        )
        handler.flush()

    # Only the first signal counts: Snakemake forwards its own SIGTERM to the jobs, so a
    # second one often follows the first and must not cut short the clean-up it started.
    guard = SignalExit(forced_exit)
    try:
        with guard, contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            log.info("wildcards: %s", dict(snakemake.wildcards.items()))
            for stale in remove_stale_temporaries(snakemake.output):
                log.info("removed stale temporary file %s", stale)
            use_threads(snakemake.threads)
            main(snakemake)
            checkpoint()  # a signal that came after the last safe point of main
        # wall time and peak memory: what the cost model (queue_routing.workflow.resources) predicts
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        log.info("done in %.2f s, peak memory %.0f MB", time.perf_counter() - start, peak_mb)
    except Interrupted as stop:
        if not guard.claim():  # the watcher is ending the job and reports it
            time.sleep(guard.grace + 1.0)
        log.error("rule %s terminated by %s", snakemake.rule, signal.Signals(stop.signum).name)
        raise SystemExit(exit_status(stop.signum)) from None
    except Exception:
        if guard.signum is not None and guard.claim():  # an error caused by the signal
            log.error("rule %s terminated by %s", snakemake.rule, signal.Signals(guard.signum).name)
            raise SystemExit(exit_status(guard.signum)) from None
        log.exception("rule %s failed", snakemake.rule)
        raise
    finally:
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
