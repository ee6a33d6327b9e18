"""SIGINT and SIGTERM end any command or job within about a second, even in compiled code.

Python runs a signal handler only between bytecodes of the main thread, so a handler alone
waits for a compiled (numba) kernel to return: a simulation replication can take minutes.
Nor may the handler raise wherever it runs: an exception raised asynchronously inside numba's
dispatcher, its compiler or its cache loader (the first seconds of any simulation) leaves it
broken -- "SystemError: CPUDispatcher(...) returned a result with an exception set", or a
segmentation fault later. :class:`SignalExit` therefore works in two steps:

1. the Python handler only records the signal; the computation raises :class:`Interrupted`
   at its next safe point, :func:`checkpoint` (called once per unit of work by
   :class:`~queue_routing.progress.Progress`, and by the command before it writes its
   output), so that it unwinds normally (``finally`` blocks, atomic outputs cleaned up) and
   the caller reports one line and exits with status ``128 + signal number`` (130, 143);
2. the fallback: the signal also wakes a watcher thread (through :func:`signal.set_wakeup_fd`,
   which the C-level handler writes to at once). If the process is still alive ``grace``
   seconds later -- the main thread is inside a kernel, compiling one, or between two safe
   points -- the watcher calls ``on_force`` (one line on stderr or in the log, temporary files
   removed) and ends the process with :func:`os._exit`, which runs no clean-up that could
   meet numba half-way. The long kernels are compiled with ``nogil=True`` so that the
   watcher can run while they do.

Exactly one of the two reports the signal (:meth:`SignalExit.claim`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

__all__ = ["Interrupted", "SignalExit", "SignalWatcher", "checkpoint", "exit_status"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The :class:`SignalExit` in force, if any (what :func:`checkpoint` looks at).
_ACTIVE: list[SignalExit] = []


class Interrupted(BaseException):
    """Raised in the main thread on SIGINT or SIGTERM (a ``BaseException``, like
    ``KeyboardInterrupt``, so that ``except Exception`` does not swallow it)."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)


def exit_status(signum: int) -> int:
    """The shell's status of a process ended by ``signum``: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def checkpoint() -> None:
    """A safe point: raise :class:`Interrupted` if a signal came to the :class:`SignalExit`
    in force (once; a no-op outside one, or in a thread other than the main one).

    >>> checkpoint()  # no SignalExit in force: nothing to do
    """
    if _ACTIVE and threading.current_thread() is threading.main_thread():
        _ACTIVE[-1].raise_pending()


class SignalExit:
    """Context manager: inside it, SIGINT/SIGTERM are recorded (:attr:`signum`) and raised as
    :class:`Interrupted` at the next :func:`checkpoint`; should the main thread not report
    the exit within ``grace`` seconds, ``on_force(signum)`` runs in a watcher thread and the
    process exits with :func:`exit_status`. Only the first signal counts."""

    def __init__(self, on_force: Callable[[int], None], *, grace: float = 1.0) -> None:
        self.on_force = on_force
        self.grace = grace
        self.signum: int | None = None  # the first signal received, if any
        self._raised = False
        self._previous: dict[int, object] = {}
        self._fds: tuple[int, int] | None = None
        self._old_wakeup = -1
        self._claim = threading.Lock()
        self.done = threading.Event()  # set by the caller once it has reported the exit

    def _handler(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is None:  # a second signal (Snakemake forwards its own) changes nothing
            self.signum = int(signum)

    def raise_pending(self) -> None:
        """Raise :class:`Interrupted` for the signal received, the first time only."""
        if self.signum is not None and not self._raised:
            self._raised = True
            raise Interrupted(self.signum)

    def claim(self) -> bool:
        """True for the first caller only: the one that reports the exit (the main thread's
        handler of :class:`Interrupted`, or the watcher). A main thread that gets False must
        not report: the watcher is ending the process."""
        return self._claim.acquire(blocking=False)

    def _watch(self, read_fd: int) -> None:
        try:
            data = os.read(read_fd, 1)
        except OSError:
            return
        if not data:  # closed on exit from the context: no signal came
            os.close(read_fd)
            return
        signum = data[0]
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            if self.done.wait(0.05):
                return
        if not self.claim():
            return  # the main thread is reporting it
        self.on_force(signum)
        os._exit(exit_status(signum))

    def __enter__(self) -> SignalExit:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self._fds = (read_fd, write_fd)
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handler)
        self._old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(read_fd,), daemon=True).start()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        signal.set_wakeup_fd(self._old_wakeup)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        if self._fds is not None:
            os.close(self._fds[1])  # wakes the watcher with end-of-file; it closes its end
            self._fds = None


class SignalWatcher:
    """Only the fallback of :class:`SignalExit`, for code that keeps its own signal handlers
    (the pipeline's :func:`~queue_routing.workflow.scripts.run_script` turns SIGTERM into an orderly
    exit): the first SIGINT/SIGTERM wakes a watcher thread, which, if the process is still
    alive ``grace`` seconds later, calls ``on_force(signum)`` and exits with
    :func:`exit_status`. The handlers in place must be Python handlers (the wakeup fd is
    written by the C-level handler that every Python handler installs)."""

    def __init__(self, on_force: Callable[[int], None], *, grace: float = 1.0) -> None:
        self._exit = SignalExit(on_force, grace=grace)
        self._old_wakeup = -1

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self._exit._fds = (read_fd, write_fd)
        self._old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        threading.Thread(target=self._exit._watch, args=(read_fd,), daemon=True).start()

    def stop(self) -> None:
        self._exit.done.set()
        signal.set_wakeup_fd(self._old_wakeup)
        if self._exit._fds is not None:
            os.close(self._exit._fds[1])
            self._exit._fds = None
