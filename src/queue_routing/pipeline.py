"""Glue between Snakemake's ``script:`` directive and the library (kept deliberately thin).

``run_script(snakemake, main)`` sends logging, warnings and stray output of ``main`` to the
rule's log file and re-raises any error after logging it, so a failed job leaves its reason
in the log and Snakemake removes its (atomically written, hence never partial) outputs.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["run_script"]


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
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            log.info("wildcards: %s", dict(snakemake.wildcards.items()))
            main(snakemake)
        log.info("done in %.2f s", time.perf_counter() - start)
    except Exception:
        log.exception("rule %s failed", snakemake.rule)
        raise
    finally:
        root.removeHandler(handler)
        if stream is not sys.stderr:
            stream.close()
