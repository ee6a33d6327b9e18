"""Provenance of a pipeline run: which code, which environment and which configuration.

Every run of the pipeline writes ``results/provenance.json`` (rule ``provenance`` in
``workflow/Snakefile``; docs/README.md#reproducibility-and-provenance). The record holds

``config_sha256``  SHA-256 of the merged configuration (``default.yaml``, any
                   ``--configfile`` and ``--config`` merged by Snakemake) as canonical JSON
                   (:func:`canonical_json`), so two runs with the same parameters share it;
``git``            ``{"commit": ..., "dirty": ...}`` of the checkout the workflow was run from
                   (``"unknown"`` for both outside a git checkout or without git); ``dirty``
                   is True when a tracked file differs from the commit (untracked files are
                   ignored: the pipeline's own outputs are git-ignored or regenerated);
``package``        ``{"name": "queue-routing", "version": ...}``;
``python``         the Python version;
``libraries``      the versions of numpy, scipy, numba, pandas, matplotlib and snakemake
                   (``"not installed"`` where one is missing);
``platform``       operating system, release and machine (processor architecture).

It holds no time stamp and no host name: a record depends only on code, environment and
configuration, so rerunning in the same setting writes the same bytes. Tables and figures
never embed any of it (they stay byte-stable); provenance lives in its own file only.

:func:`provenance_record` assembles a record from given parts and does nothing else (it is
what the tests pin down); :func:`git_state`, :func:`library_versions` and
:func:`platform_summary` measure the parts, :func:`collect` does both.

>>> config_digest({"b": [1, 2.5], "a": "x"}) == config_digest({"a": "x", "b": [1, 2.5]})
True
>>> canonical_json({"b": 1, "a": {"d": None, "c": True}})
'{"a":{"c":true,"d":null},"b":1}'
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "LIBRARIES",
    "UNKNOWN",
    "canonical_json",
    "collect",
    "config_digest",
    "git_state",
    "library_versions",
    "platform_summary",
    "provenance_record",
    "write_provenance",
]

#: The libraries whose versions a record lists (the ones that decide the numbers and figures).
LIBRARIES = ("numpy", "scipy", "numba", "pandas", "matplotlib", "snakemake")
#: The value of a field that cannot be determined (no git checkout, no git executable).
UNKNOWN = "unknown"
_NOT_INSTALLED = "not installed"
_GIT_TIMEOUT = 20.0  # seconds


def canonical_json(obj: Any) -> str:
    """``obj`` as JSON with sorted keys and no whitespace (UTF-8 text, not ASCII-escaped).

    The same data always give the same string, whatever the order in which a mapping was
    built. Only JSON types are accepted (a validated config has no others); ``NaN`` and
    infinities are written as JavaScript's tokens, deterministically.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_digest(config: Mapping[str, Any]) -> str:
    """SHA-256 (hexadecimal) of :func:`canonical_json` of ``config``, encoded as UTF-8."""
    return hashlib.sha256(canonical_json(dict(config)).encode("utf-8")).hexdigest()


def provenance_record(
    *,
    config_sha256: str,
    git: Mapping[str, Any],
    package_version: str,
    python: str,
    libraries: Mapping[str, str],
    platform_info: Mapping[str, str],
) -> dict[str, Any]:
    """The provenance record from its parts (pure: no measurement, no I/O).

    >>> rec = provenance_record(config_sha256="0" * 64, git={"commit": "unknown",
    ...     "dirty": "unknown"}, package_version="0.1.0", python="3.11.7",
    ...     libraries={"numpy": "2.4.6"}, platform_info={"system": "Linux"})
    >>> sorted(rec)
    ['config_sha256', 'git', 'libraries', 'package', 'platform', 'python']
    >>> rec["package"]
    {'name': 'queue-routing', 'version': '0.1.0'}
    """
    if not (len(config_sha256) == 64 and all(c in "0123456789abcdef" for c in config_sha256)):
        raise ValueError(f"config_sha256 must be 64 lower-case hex digits, got {config_sha256!r}")
    missing = {"commit", "dirty"} - set(git)
    if missing:
        raise ValueError(f"git needs the keys commit and dirty, missing {sorted(missing)}")
    return {
        "config_sha256": config_sha256,
        "git": {"commit": git["commit"], "dirty": git["dirty"]},
        "package": {"name": "queue-routing", "version": str(package_version)},
        "python": str(python),
        "libraries": {str(k): str(v) for k, v in sorted(libraries.items())},
        "platform": {str(k): str(v) for k, v in sorted(platform_info.items())},
    }


def _git(path: Path, *args: str) -> str | None:
    """Output of ``git -C path args`` (stripped), or None if git fails or is missing."""
    # GIT_OPTIONAL_LOCKS=0: `git status` must not refresh (write) the index of a checkout
    # that someone may be using at the same time.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=_GIT_TIMEOUT,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def git_state(path: str | os.PathLike) -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool}`` of the git checkout whose top level is ``path``.

    ``path`` is the repository root (the directory of the top-level Snakefile). Both values
    are :data:`UNKNOWN` when ``path`` is not the top level of a git work tree (an unpacked
    archive; a copy inside some other repository does not borrow that repository's commit),
    when git is not installed, or when git refuses the directory. ``dirty`` counts changes
    to tracked files only (``git status --porcelain --untracked-files=no``).
    """
    path = Path(path).resolve()
    unknown = {"commit": UNKNOWN, "dirty": UNKNOWN}
    top = _git(path, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != path:
        return unknown
    commit = _git(path, "rev-parse", "--verify", "HEAD")
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    if commit is None:  # a repository without any commit yet
        return unknown
    return {"commit": commit, "dirty": UNKNOWN if status is None else bool(status)}


def library_versions(names: Iterable[str] = LIBRARIES) -> dict[str, str]:
    """Installed version of each distribution in ``names`` (``"not installed"`` if absent)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = _NOT_INSTALLED
    return out


def platform_summary() -> dict[str, str]:
    """Operating system, its release, the machine architecture and the Python implementation
    (no host name: the record must not identify the machine)."""
    return {
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
    }


def collect(
    config: Mapping[str, Any],
    source_dir: str | os.PathLike | None = None,
    *,
    git: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure everything and return :func:`provenance_record` for this process.

    ``source_dir`` is the repository root (for :func:`git_state`); ``git`` replaces that
    measurement (the pipeline measures git once, when the workflow is parsed, and passes the
    result to the job that writes the record).
    """
    from .. import __version__

    if git is None:
        if source_dir is None:
            raise ValueError("collect needs source_dir (the repository root) or git")
        git = git_state(source_dir)
    return provenance_record(
        config_sha256=config_digest(config),
        git=git,
        package_version=__version__,
        python=platform.python_version(),
        libraries=library_versions(),
        platform_info=platform_summary(),
    )


def write_provenance(record: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write ``record`` as indented JSON with sorted keys (atomically, see :mod:`.io`)."""
    from ..io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
