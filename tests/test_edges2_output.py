"""Writing an output (``-o`` and every pipeline writer, :func:`queue_routing.io.atomic_path`)
to a path of any kind: what the path refers to is written, never replaced by something else.

The reference for each kind is what a shell redirection ``> path`` does: through a symbolic
link it writes the link's target, a device or a named pipe is written in place, a directory
is an error; and a new file gets the mode ``0666 & ~umask``, an existing file keeps its own.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.cli import main
from queue_routing.io import write_json
from queue_routing.multiskill.instances import TABLE1

KINDS = (
    "missing",
    "missing-in-new-directory",
    "regular",
    "link-to-regular",
    "dangling-link",
    "link-chain",
    "fifo",
    "char-device",
    "link-to-char-device",
    "directory",
    "link-to-directory",
    "link-loop",
)
ERRORS = {"directory", "link-to-directory", "link-loop"}


def _char_device(where: Path) -> Path:
    """A device like /dev/null of our own (``mknod`` as root), else /dev/null itself."""
    node = where / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return Path(os.devnull)
    return node


def _make(kind: str, where: Path, mode: int, chain: int) -> tuple[Path, Path | None]:
    """The path handed to the writer, and the file that must hold the output (None for a
    device, a pipe or an error)."""
    target = where / "target.json"
    if kind == "missing":
        return target, target
    if kind == "missing-in-new-directory":
        path = where / "a" / "b" / "out.json"
        return path, path
    if kind in ("regular", "link-to-regular", "link-chain"):
        target.write_text("old contents, longer than what replaces them " * 20)
        os.chmod(target, mode)
    if kind == "regular":
        return target, target
    if kind in ("link-to-regular", "dangling-link", "link-chain"):
        previous = target
        for i in range(chain if kind == "link-chain" else 1):
            link = where / f"link{i}"
            link.symlink_to(previous.name)  # relative, resolved in its own directory
            previous = link
        return previous, target
    if kind == "fifo":
        os.mkfifo(target)
        return target, None
    if kind == "char-device":
        return _char_device(where), None
    if kind == "link-to-char-device":
        link = where / "link"
        link.symlink_to(_char_device(where))
        return link, None
    if kind == "directory":
        target.mkdir()
        return target, None
    if kind == "link-to-directory":
        target.mkdir()
        link = where / "link"
        link.symlink_to(target)
        return link, None
    if kind == "link-loop":
        (where / "a").symlink_to("b")
        (where / "b").symlink_to("a")
        return where / "a", None
    raise AssertionError(kind)


def _snapshot(where: Path) -> dict[str, tuple]:
    """Each entry of ``where`` (recursively): its kind and, for a link, where it points."""
    out = {}
    for root, dirs, files in os.walk(where):
        for name in dirs + files:
            p = Path(root) / name
            st_ = os.lstat(p)
            out[str(p.relative_to(where))] = (
                stat.S_IFMT(st_.st_mode),
                os.readlink(p) if stat.S_ISLNK(st_.st_mode) else None,
            )
    return out


def _write_and_read(path: Path, write, kind: str) -> bytes | None:
    """Run ``write``; for a named pipe, what a reader thread got from it."""
    if kind != "fifo":
        write()
        return None
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(Path(path).read_bytes()), daemon=True)
    reader.start()
    write()
    reader.join(timeout=30)
    assert not reader.is_alive(), "the pipe's reader got no end of file"
    return got[0]


def _check_written(kind, where, path, holder, before, text, umask, mode, received):
    after = _snapshot(where)
    # links stay links pointing where they did; no temporary file is left behind
    for name, (fmt, points_to) in before.items():
        assert after[name] == (fmt, points_to), name
    assert not [n for n in after if n.endswith(".tmp")], after
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)
        assert received.decode() == text
    elif kind in ("char-device", "link-to-char-device"):
        assert stat.S_ISCHR(os.stat(path).st_mode)
    else:
        assert holder.read_text() == text
        assert Path(path).read_text() == text
        expected = mode if kind in ("regular", "link-to-regular", "link-chain") else 0o666 & ~umask
        assert stat.S_IMODE(os.stat(holder).st_mode) == expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(KINDS),
    umask=st.sampled_from([0o022, 0o002, 0o077, 0o027]),
    mode=st.sampled_from([0o644, 0o600, 0o664, 0o640, 0o444]),
    chain=st.integers(1, 4),
    value=st.dictionaries(st.text(max_size=5), st.integers(), max_size=4),
)
def test_write_json_writes_what_the_path_refers_to(
    tmp_path_factory, kind, umask, mode, chain, value
):
    where = tmp_path_factory.mktemp("out")
    path, holder = _make(kind, where, mode, chain)
    before = _snapshot(where)
    text = json.dumps(value, indent=1, sort_keys=True) + "\n"
    old = os.umask(umask)
    try:
        if kind in ERRORS:
            with pytest.raises(OSError) as info:
                write_json(value, path)
            assert str(path) in str(info.value)
            assert _snapshot(where) == before
            return
        received = _write_and_read(path, lambda: write_json(value, path), kind)
    finally:
        os.umask(old)
    _check_written(kind, where, path, holder, before, text, umask, mode, received)


@pytest.mark.parametrize("kind", KINDS)
def test_cli_output_writes_what_the_path_refers_to(tmp_path, capsys, kind):
    """``-o`` of a subcommand: the same, and an error is one line with exit status 1."""
    instance = tmp_path / "table1.json"
    instance.write_text(json.dumps(TABLE1))
    where = tmp_path / "w"
    where.mkdir()
    path, holder = _make(kind, where, 0o640, 3)
    before = _snapshot(where)
    argv = ["multiskill", "compare", str(instance), "-o", str(path)]
    old = os.umask(0o022)
    try:
        if kind in ERRORS:
            code = main(argv)
            out, err = capsys.readouterr()
            assert code == 1 and out == ""
            assert err.count("\n") == 1
            assert err.startswith(f"queue-routing: error: cannot write the output {path}: ")
            assert _snapshot(where) == before
            return
        codes = []
        received = _write_and_read(path, lambda: codes.append(main(argv)), kind)
    finally:
        os.umask(old)
    out, err = capsys.readouterr()
    assert codes == [0] and out == "" and err == ""
    main(["multiskill", "compare", str(instance)])
    text = capsys.readouterr().out
    _check_written(kind, where, path, holder, before, text, 0o022, 0o640, received)


def test_output_to_dev_stdout_reaches_the_reader(tmp_path):
    """``-o /dev/stdout`` (here through a link of our own to it) prints the result."""
    instance = tmp_path / "table1.json"
    instance.write_text(json.dumps(TABLE1))
    link = tmp_path / "stdout"
    link.symlink_to("/dev/stdout")
    cmd = [sys.executable, "-m", "queue_routing.cli", "multiskill", "compare", str(instance)]
    plain = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    proc = subprocess.run([*cmd, "-o", str(link)], capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == plain
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
