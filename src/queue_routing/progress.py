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

>>> import io
>>> p = Progress(3, "demo", stream=io.StringIO())  # not a terminal: silent
>>> for _ in range(3):
...     p.advance()
>>> p.done, p.total
(3, 3)
"""

from __future__ import annotations

import logging
import math
import time
from typing import TextIO

from .signals import checkpoint

__all__ = ["Progress"]

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
    ) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.logger = logger
        self.stream = stream if stream is not None and _isatty(stream) else None
        self.log_every = log_every
        self.draw_every = draw_every
        self.done = 0
        self.start = time.perf_counter()
        self._last_log = -math.inf
        self._last_draw = -math.inf
        self._drawn = False

    def message(self, extra: str = "") -> str:
        """``<label>: <unit> i of R, elapsed E s, about T s left`` (the log line)."""
        elapsed = time.perf_counter() - self.start
        text = f"{self.label}: {self.unit} {self.done}"
        if self.total:
            text += f" of {self.total}"
        text += f", elapsed {elapsed:.1f} s"
        if self.total and 0 < self.done < self.total:
            text += f", about {elapsed / self.done * (self.total - self.done):.1f} s left"
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

    def _draw(self, extra: str) -> None:
        bar = ""
        if self.total:
            filled = round(_BAR * min(self.done, self.total) / self.total)
            bar = "[" + "#" * filled + "." * (_BAR - filled) + "] "
        self.stream.write("\r\033[K" + bar + self.message(extra))
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
