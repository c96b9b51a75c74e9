"""Owner-only files and directories: what replay-tui creates (journals, shards, sidecars, caches, manifests,
logs) is 0600 (files) and 0700 (directories) whatever the umask.

A journal holds model answers and tool results: another account on the machine has no business reading
it, and a umask of 022 (the usual default) would let it. Each helper creates with the owner-only mode
(the umask can only take bits away from it, so nothing is ever more open than that, not even for a
moment) and then sets the mode exactly (a umask that took the owner's own bits away is undone).
Only what these helpers create is changed: an existing directory keeps its mode.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for ``open``/``io.FileIO``: a file it creates is 0600 (the name stays the path's)."""
    descriptor = os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
    if flags & os.O_CREAT:
        try:
            os.fchmod(descriptor, FILE_MODE)
        except OSError:
            os.close(descriptor)
            raise
    return descriptor


def make_private_dirs(path: str | os.PathLike[str], *, exist_ok: bool = True) -> Path:
    """``mkdir -p`` whose new directories are 0700; existing ones are left as they are (``exist_ok=False``:
    ``path`` itself must be new, FileExistsError otherwise)."""
    path = Path(path)
    if not exist_ok and (path.exists() or path.is_symlink()):
        raise FileExistsError(f"{path} exists already")
    missing: list[Path] = []
    probe = path
    while not probe.is_dir():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIRECTORY_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # another process made it meanwhile: its mode is its own
        os.chmod(directory, DIRECTORY_MODE)
    return path


def make_private_temp_dir(*, prefix: str, dir: str | os.PathLike[str] | None = None) -> Path:
    """``tempfile.mkdtemp`` (0700 by itself, less under a umask that takes owner bits) set to exactly 0700."""
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    os.chmod(made, DIRECTORY_MODE)
    return made


def create_private(path: str | os.PathLike[str], *, exclusive: bool = True) -> BinaryIO:
    """A new file for writing (``exclusive``: refused when it exists), 0600."""
    return open(path, "xb" if exclusive else "wb", opener=private_opener)


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, then a rename), 0600."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def copy_private(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """``shutil.copyfile`` whose new file is 0600 (an existing target is replaced whole, atomically)."""
    target = Path(target)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "wb") as out, open(source, "rb") as data:
            while chunk := data.read(1 << 20):
                out.write(chunk)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created 0600): one process at a time changes what it guards."""
    with open(path, "ab", opener=private_opener) as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def lock_path(path: Path) -> Path:
    """The lock file that guards ``path`` (beside it, hidden)."""
    return path.with_name(f"{'' if path.name.startswith('.') else '.'}{path.name}.lock")


def append_line(path: str | os.PathLike[str], line: bytes) -> None:
    """Append one line to a log (created 0600) in one ``write`` under the log's lock: lines from several
    threads and processes never interleave, and a rewrite (``rewrite_lines``) never loses one."""
    path = Path(path)
    with locked(lock_path(path)), open(path, "ab", buffering=0, opener=private_opener) as log:
        log.write(line if line.endswith(b"\n") else line + b"\n")


def read_lines(path: str | os.PathLike[str]) -> list[bytes]:
    """The complete lines of a log (none when it does not exist)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return [line for line in data.split(b"\n")[: -1 if not data.endswith(b"\n") else None] if line]


def rewrite_lines(path: str | os.PathLike[str], keep: Callable[[bytes], bool]) -> int:
    """Drop the lines ``keep`` refuses from a log (atomically, under its lock); returns how many went."""
    path = Path(path)
    if not path.exists():
        return 0
    with locked(lock_path(path)):
        lines = read_lines(path)
        kept = [line for line in lines if keep(line)]
        if len(kept) != len(lines):
            if kept:
                write_private(path, b"".join(line + b"\n" for line in kept))
            else:
                path.unlink()
        return len(lines) - len(kept)
