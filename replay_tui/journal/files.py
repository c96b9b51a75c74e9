"""Opening what a user names as a journal or a trace: a regular file, or a directory of them.

Every reader opens journal and trace bytes through ``open_regular`` (the reader's shards, verify,
the import sniffers and importers, the app's launcher, follow mode's reopen): a FIFO would block
``open`` for ever before the first byte, a symlink to ``/dev/zero`` reads for ever (or, sized 0, as
an empty journal that is "clean"), a socket or a device is no journal either. The descriptor is opened
``O_NONBLOCK`` (so a FIFO cannot block the open), checked with ``fstat`` (the file actually opened,
not the name a moment before) and only then used; anything but a regular file is a JournalOpenError
naming what the path is.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from .errors import JournalOpenError

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a FIFO (named pipe)", "a character device", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str | os.PathLike[str], mode: int, what: str = "journal") -> JournalOpenError:
    """The error for a path that is something other than a regular file (through a symlink: named)."""
    through = ""
    try:
        if os.path.islink(path):
            through = f" (a symlink to {os.path.realpath(path)})"
    except OSError:
        pass
    where = "a regular file or a directory of them" if what == "journal" else "a regular file"
    return JournalOpenError(
        f"is {kind_of(mode)}{through}, not a regular file: a {what} is read from {where}", path=str(path)
    )


def open_regular(path: str | os.PathLike[str], what: str = "journal") -> int:
    """A read-only descriptor of the regular file at ``path`` (its caller closes it). Never blocks: a FIFO,
    a device or a socket is refused with a JournalOpenError, and so are a missing or unreadable path."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise JournalOpenError("no such file", path=str(path)) from None
    except IsADirectoryError:
        raise JournalOpenError(f"is a directory, expected a {what} file", path=str(path)) from None
    except OSError as error:
        check_readable_path(path, what)  # a socket cannot be opened at all (ENXIO): say what it is
        raise JournalOpenError(f"cannot be read: {error.strerror}", path=str(path)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(path, mode, what)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def open_regular_binary(path: str | os.PathLike[str], what: str = "journal", buffering: int = -1) -> BinaryIO:
    """``open(path, "rb")`` through ``open_regular``."""
    return os.fdopen(open_regular(path, what), "rb", buffering=buffering)


def check_readable_path(path: str | os.PathLike[str], what: str = "journal") -> None:
    """Refuse a path that exists and is neither a regular file nor a directory (a FIFO, a device, a socket,
    a symlink to one), without opening it; a missing path is left to the caller's own message."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise not_regular(path, mode, what)
