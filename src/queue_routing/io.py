"""Atomic, deterministic file output for the pipeline.

Every writer goes through a temporary file in the target directory and ``os.replace``, so an
interrupted or failed job never leaves a truncated file that looks complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["atomic_path", "read_json", "remove_live_temporaries", "write_json", "write_table"]

#: Temporary files of :func:`atomic_path` that exist right now (removed by a forced exit).
_LIVE: set[str] = set()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        _LIVE.add(tmp)
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
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
