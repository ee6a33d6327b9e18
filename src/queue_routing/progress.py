"""Progress of long computations: log lines for the pipeline, a status line on a terminal.

The simulators and solvers take an optional ``progress`` callback and call it once per unit
of work (a replication, a value-iteration sweep, a sweep point); they know nothing about
where the report goes. Each call is also a safe point at which a pending SIGINT/SIGTERM ends
the computation (:mod:`queue_routing.signals`). :class:`Progress` is the callback the
pipeline and the CLI pass:

* with a ``logger`` it logs ``<label>: replication i of R, elapsed 3.1 s, about 9.4 s left``
  at INFO level (the pipeline's rule scripts send INFO to the rule's log file);
* with a ``stream`` that is a terminal it redraws one status line in place (a bar, the count,
  the elapsed time and the estimate) and clears it when done; on a stream that is not a
  terminal (a pipe, a file, CI) it writes nothing at all.

Within one long unit (a replication of hours of simulated time) the compiled kernels store
the simulated time they have reached in a one-element array every 2^16 events, and
:func:`observe` reads it from a thread of its own while the kernel runs (the kernels release
the GIL), reporting the fraction of the unit done: ``<label>: replication 1 of 1, 37%,
elapsed 51.0 s, about 86.8 s left`` every ``within_every`` seconds. The kernel still runs in
the main thread, where the signal handling of :mod:`queue_routing.signals` expects it; the
observer only reads and reports, so results do not depend on it.

>>> import io
>>> p = Progress(3, "demo", stream=io.StringIO())  # not a terminal: silent
>>> for _ in range(3):
...     p.advance()
>>> p.done, p.total
(3, 3)
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from .signals import checkpoint

__all__ = ["Progress", "observe"]

_BAR = 24


class Progress:
    """Counts ``total`` units of work (a callable: each call advances by one).

    Parameters
    ----------
    total:
        Number of units (>= 1); ``None`` for an open-ended loop (no estimate, no bar).
    label:
        What is being done, e.g. ``"pi on C=50 #3"``.
    unit:
        Name of one unit in the messages (``"replication"``, ``"iteration"``, ...).
    logger:
        Where to log one INFO line per unit (at most one per ``log_every`` seconds).
    stream:
        Where to draw the status line, only if ``stream.isatty()``.
    within_every:
        Seconds between two reports of the fraction of one unit done (:func:`observe`).
    """

    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        unit: str = "replication",
        logger: logging.Logger | None = None,
        stream: TextIO | None = None,
        log_every: float = 0.0,
        draw_every: float = 0.1,
        within_every: float = 10.0,
    ) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.logger = logger
        self.stream = stream if stream is not None and _isatty(stream) else None
        self.log_every = log_every
        self.draw_every = draw_every
        self.within_every = within_every
        self.done = 0
        self.start = time.perf_counter()
        self._last_log = -math.inf
        self._last_draw = -math.inf
        self._drawn = False

    def message(self, extra: str = "", fraction: float | None = None, units: int = 1) -> str:
        """``<label>: <unit> i of R, elapsed E s, about T s left`` (the log line); with the
        ``fraction`` (0 to 1) done of the ``units`` under way, ``<unit> i+1 of R, 37%, ...``
        (``<unit> i+1-i+k of R`` for ``k`` units run together)."""
        elapsed = time.perf_counter() - self.start
        done = self.done if fraction is None else self.done + units * fraction
        if fraction is None:
            text = f"{self.label}: {self.unit} {self.done}"
        elif units == 1:
            text = f"{self.label}: {self.unit} {self.done + 1}"
        else:
            text = f"{self.label}: {self.unit} {self.done + 1}-{self.done + units}"
        if self.total:
            text += f" of {self.total}"
        if fraction is not None:
            text += f", {100.0 * fraction:.0f}%"
        text += f", elapsed {elapsed:.1f} s"
        if self.total and 0 < done < self.total:
            text += f", about {elapsed / done * (self.total - done):.1f} s left"
        return text + (f", {extra}" if extra else "")

    def advance(self, n: int = 1, extra: str = "") -> None:
        """Record ``n`` more units done; ``extra`` is appended to the message. A safe point
        for a pending SIGINT/SIGTERM (:func:`queue_routing.signals.checkpoint`)."""
        checkpoint()
        self.done += n
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if self.logger is not None and (finished or now - self._last_log >= self.log_every):
            self._last_log = now
            self.logger.info("%s", self.message(extra))
        if self.stream is not None and (finished or now - self._last_draw >= self.draw_every):
            self._last_draw = now
            self._draw(extra)
        if finished:
            self.close()

    __call__ = advance

    def within(self, fraction: float, units: int = 1) -> None:
        """Report that ``fraction`` (0 to 1) of the ``units`` under way is done (called by
        :func:`observe`'s thread while a kernel runs): one log line, or the status line
        redrawn. Counts nothing and is no safe point (it may run outside the main thread)."""
        fraction = min(max(float(fraction), 0.0), 1.0)
        if self.logger is not None:
            self.logger.info("%s", self.message(fraction=fraction, units=units))
        if self.stream is not None:
            self._draw("", fraction, units)

    def _draw(self, extra: str, fraction: float | None = None, units: int = 1) -> None:
        bar = ""
        if self.total:
            done = self.done if fraction is None else self.done + units * fraction
            filled = round(_BAR * min(done, self.total) / self.total)
            bar = "[" + "#" * filled + "." * (_BAR - filled) + "] "
        self.stream.write("\r\033[K" + bar + self.message(extra, fraction, units))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Clear the status line (if one was drawn)."""
        if self.stream is not None and self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real file
        return False


@contextlib.contextmanager
def observe(progress: Any, end: float, units: int = 1) -> Iterator[np.ndarray]:
    """Context manager around one kernel call, the next ``units`` units of ``progress``:
    yields ``clock``, a one-element float array the kernel stores how far it is in (its
    simulated time, or its step, every 2^16 events); while inside, a daemon thread reports
    ``clock[0] / end`` (the fraction of the run up to ``end`` done) through
    ``progress.within`` every ``progress.within_every`` seconds, and stops (joined) on exit,
    before the caller advances ``progress``. Without a ``progress`` that has ``within``
    (``None``, a plain callback), no thread runs.

    >>> import io, logging
    >>> p = Progress(1, "demo", logger=logging.getLogger("demo"), within_every=0.01)
    >>> with observe(p, 10.0) as clock:
    ...     clock[0] = 2.5  # what a kernel does as it runs
    ...     time.sleep(0.05)
    >>> clock.shape, float(clock[0])
    ((1,), 2.5)
    """
    clock = np.zeros(1)
    report = getattr(progress, "within", None)
    if report is None or not end > 0:
        yield clock
        return
    every = float(getattr(progress, "within_every", 10.0))
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(every):
            report(float(clock[0]) / end, units)

    thread = threading.Thread(target=watch, name="progress-observer", daemon=True)
    thread.start()
    try:
        yield clock
    finally:
        stop.set()
        thread.join()
