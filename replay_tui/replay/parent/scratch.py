"""The child's scratch directory, and what is left of it when a run is killed.

Each run makes a fresh ``replay-tui-scratch-*`` directory in the temp directory (the journal copy,
the child's working directory and HOME) and removes it when it ends. A run killed outright
(SIGKILL, the machine's OOM killer) cannot remove it: so the run holds an ``flock`` on the directory
for as long as it lives (the kernel drops the lock when the process dies, however it dies), and
every run starts by removing the scratch directories that nobody holds any more. A directory
younger than ``ORPHAN_AGE_S`` is left alone: its run may be between making it and locking it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

PREFIX = "replay-tui-scratch-"
ORPHAN_AGE_S = 30.0


@dataclass
class Scratch:
    """A scratch directory and the open, locked descriptor that says its run is alive."""

    path: str
    fd: int

    @classmethod
    def make(cls) -> Scratch:
        """Remove orphans, then a fresh directory, locked."""
        remove_orphans()
        path = os.path.realpath(tempfile.mkdtemp(prefix=PREFIX))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX)  # our own new directory: nobody else holds it
        return cls(path, fd)

    def remove(self) -> None:
        """The directory, then the lock (in that order: unlocked, it would look like an orphan)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def remove_orphans(directory: str | None = None, *, age_s: float = ORPHAN_AGE_S) -> list[str]:
    """Remove the scratch directories in ``directory`` (the temp directory) whose run is gone; their paths."""
    directory = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or now - entry.stat(follow_symlinks=False).st_mtime < age_s:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone meanwhile, or another user's
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its run is alive
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(entry.path)
    return removed
