"""Atomic, deterministic file output for the pipeline and the command's ``-o``.

Every writer goes through :func:`atomic_path`: a regular file (or a path where nothing is
yet) is written as a temporary file in the target's directory and moved into place with
``os.replace``, so an interrupted or failed job never leaves a truncated file that looks
complete. What the path refers to is what gets written: through a symbolic link (or a chain of
them, or one whose target does not exist yet), the link's target; a character device
(``/dev/null``, a terminal) or a named pipe is written directly, as a shell redirection would;
a directory, a socket or a block device is refused with an :class:`OSError` naming the path.
A new file gets the permissions of any new file (``0666`` less the umask); a replaced file
keeps its permission bits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .signals import checkpoint

if TYPE_CHECKING:  # pandas is not imported at run time: the command loads this module first
    import pandas as pd

__all__ = [
    "atomic_path",
    "output_kind",
    "read_json",
    "remove_live_temporaries",
    "write_json",
    "write_table",
]

#: Temporary files of :func:`atomic_path` that exist right now (removed by a forced exit).
_LIVE: set[str] = set()


def output_kind(path: str | os.PathLike) -> tuple[str, Path]:
    """How :func:`atomic_path` writes ``path``, and the path it writes.

    Returns
    -------
    (kind, target):
        ``("replace", target)``: ``target`` (``path`` itself, or the file a symbolic link
        leads to, existing or not) is a regular file or nothing yet, replaced atomically;
        ``("direct", path)``: a character device or a named pipe, opened and written in
        place (no temporary file, nothing replaced).

    Raises
    ------
    OSError
        For a directory, a socket, a block device, or a link that cannot be resolved (a
        loop), with the error number and ``path`` as the file name.

    >>> output_kind("/dev/null")
    ('direct', PosixPath('/dev/null'))
    """
    path = Path(path)
    try:
        st = os.stat(path)  # follows every link, /proc's "magic" ones (/dev/stdout) too
    except FileNotFoundError:
        if not os.path.islink(path):
            return "replace", path
        # a dangling link (or chain): write the file it names, as ``open(path, "w")`` would
        return "replace", Path(os.path.realpath(path))
    mode = st.st_mode
    if stat.S_ISREG(mode):
        target = Path(os.path.realpath(path))
        with contextlib.suppress(OSError):
            there = os.stat(target)
            if (there.st_dev, there.st_ino) == (st.st_dev, st.st_ino):
                return "replace", target
        return "direct", path  # a file reached through /proc (a deleted file, an open fd)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "direct", path
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    what = "a socket" if stat.S_ISSOCK(mode) else "a block device"
    raise OSError(errno.EINVAL, f"is {what}, not a file", str(path))


def _new_temporary(target: Path, mode: int | None) -> str:
    """Create an empty ``.<name>.<random>.tmp`` beside ``target``: permissions ``mode`` (those
    of the file it replaces) or, for a new file, ``0666`` less the umask, as ``open`` gives."""
    while True:
        tmp = str(target.parent / f".{target.name}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        break
    try:
        if mode is not None:
            os.fchmod(fd, mode)
    except OSError:
        os.unlink(tmp)
        raise
    finally:
        os.close(fd)
    _LIVE.add(tmp)
    return tmp


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield the path to write for ``path``; for a regular file, a temporary file moved into
    place only on success (see the module's docstring for links, devices and pipes).

    The parent directories of ``path`` are created if missing (not those of a link's target).
    """
    path = Path(path)
    if not os.path.lexists(path):
        path.parent.mkdir(parents=True, exist_ok=True)
    kind, target = output_kind(path)
    if kind == "direct":
        yield target
        return
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = None
    try:
        tmp = _new_temporary(target, mode)
        yield Path(tmp)
        checkpoint()  # a SIGINT/SIGTERM already received: no output (signals.py), not a late one
        os.replace(tmp, target)
    finally:
        if tmp is not None:
            _LIVE.discard(tmp)
            if os.path.exists(tmp):
                os.unlink(tmp)


def remove_live_temporaries() -> None:
    """Delete the temporary files of every :func:`atomic_path` still open (for an exit that
    cannot unwind, see :mod:`queue_routing.signals`)."""
    for tmp in list(_LIVE):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _LIVE.discard(tmp)


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in the file ``path`` (the file is closed before returning)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as indented JSON (sorted keys, so reruns are byte-identical)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n")


def write_table(
    df: pd.DataFrame,
    csv_path: str | os.PathLike,
    markdown_path: str | os.PathLike | None = None,
    *,
    title: str = "",
    float_format: str = "%.10g",
) -> None:
    """Write a tidy table as CSV (full precision) and optionally as a Markdown rendering."""
    with atomic_path(csv_path) as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
    if markdown_path is not None:
        body = df.to_markdown(index=False, floatfmt=float_format.strip("%"))
        text = (f"# {title}\n\n" if title else "") + body + "\n"
        with atomic_path(markdown_path) as tmp:
            tmp.write_text(text)
