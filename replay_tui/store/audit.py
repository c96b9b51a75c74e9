"""The read audit, opt in: with ``[audit] log = PATH`` in the settings (store/settings.py) or
``$REPLAY_TUI_AUDIT_LOG``, every open of a journal by the app or a command appends one line::

    {"at": "2026-12-01T09:14:05.123456Z", "op": "read", "user": "ana", "uid": 1000, "pid": 4242,
     "command": "verify", "journal": "/srv/sessions/run-7f3a.jsonl", "sha256": "9c1e…"}

``journal`` is what was named (a URL as it may be printed, or an absolute path); ``sha256`` is of the
bytes read (``journal.hashing.file_sha256``: a shard directory's files in name order), with
``read_from`` when those bytes were a local copy (a download, an import) and ``source_sha256`` for an
imported trace. A corpus directory gives a line per journal in it. ``prune`` and ``forget`` append an
``"op": "delete"`` line for each journal they remove.

The log is only ever appended to (``O_APPEND``, one ``write`` a line, so lines from many processes
never interleave), created 0600, and refused when it is a symbolic link or not a regular file. When it
cannot be written the journal is not opened: an audit that fails quietly is no audit. Each command
writes one line per journal it opens, however many times its code opens it; hashing reads the journal
and never changes it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..journal import JournalError
from ..journal.private import FILE_MODE, make_private_dirs
from .settings import load_settings

if TYPE_CHECKING:
    from .sources import ResolvedSource

READ, DELETE = "read", "delete"
#: The command named in lines written outside any command (replay-tui used as a library).
LIBRARY = "library"


class AuditError(JournalError):
    """The audit log cannot be written: the journal is not opened."""


class _Scope:
    """The command the lines are by, and the journals it has a line for. (Not a dataclass: every start-up
    makes one, and a dataclass compiled its methods at import.)"""

    def __init__(self, command: str) -> None:
        self.command = command
        self.seen: set[tuple[str, str]] = set()


_scope: ContextVar[_Scope | None] = ContextVar("replay_tui_audit_scope", default=None)


@contextmanager
def command_scope(command: str) -> Iterator[None]:
    """Lines written inside are by ``command``, one per journal however often it is opened."""
    token = _scope.set(_Scope(command))
    try:
        yield
    finally:
        _scope.reset(token)


def current_user() -> str:
    import getpass  # only when a line is written: the audit is opt in, and every start-up passes here

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def record_read(source: ResolvedSource) -> None:
    """The lines for one resolved journal argument (none when the audit is off or nothing is there)."""
    log = load_settings().audit_log
    if log is None or not (source.path.exists() or source.path.is_symlink()):
        return
    named = source.url.rstrip("/") if source.url else os.path.abspath(source.argument)
    for local, name in _journals_behind(source.path, named):
        extra: dict[str, Any] = {}
        if source.url or source.imported:
            extra["read_from"] = str(local)
        if source.imported:
            extra["source_sha256"] = source.imported["sha256"]
        _append(log, READ, name, _sha256(local), extra)


def record_delete(journal: str, local: Path | None) -> None:
    """The line for one journal ``prune`` or ``forget`` is about to remove (its sha256 when it is local)."""
    log = load_settings().audit_log
    if log is not None:
        _append(log, DELETE, journal, _sha256(local) if local is not None else None, {})


def _journals_behind(path: Path, named: str) -> list[tuple[Path, str]]:
    """(local path, name) of each journal an opened path holds: itself, or each journal of a corpus."""
    if not path.is_dir():
        return [(path, named)]
    from .places import LocalPlace

    journals = LocalPlace(path).journals()
    if not journals or journals[0].name == "":
        return [(path, named)]  # a shard directory is one journal (named "" in its own place)
    return [(path / journal.name, f"{named.rstrip('/')}/{journal.name}") for journal in journals]


def _sha256(path: Path) -> str | None:
    from ..journal.hashing import file_sha256  # with hashlib (11 M instructions): only when a line is written

    try:
        return file_sha256(path)
    except OSError:
        return None


def _append(log: Path, op: str, journal: str, sha256: str | None, extra: dict[str, Any]) -> None:
    from ..journal.writer import utc_now  # only when a line is written (see current_user)

    scope = _scope.get()
    if scope is not None:
        if (op, journal) in scope.seen:
            return
        scope.seen.add((op, journal))
    line = {
        "at": utc_now(),
        "op": op,
        "user": current_user(),
        "uid": os.getuid(),
        "pid": os.getpid(),
        "command": scope.command if scope is not None else LIBRARY,
        "journal": journal,
        "sha256": sha256,
        **extra,
    }
    data = orjson.dumps(line) + b"\n"
    try:
        make_private_dirs(log.parent)
        descriptor = _open_log(log)
    except OSError as error:
        why = "it is a symbolic link" if error.errno == errno.ELOOP else error.strerror or str(error)
        raise AuditError(f"audit log {log}: cannot be written ({why}); {journal} was not opened") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise AuditError(f"audit log {log}: not a regular file; {journal} was not opened")
        if os.write(descriptor, data) != len(data):
            raise AuditError(f"audit log {log}: a line was cut short (disk full?); {journal} was not opened")
    except OSError as error:
        raise AuditError(
            f"audit log {log}: cannot be written ({error.strerror or error}); {journal} was not opened"
        ) from None
    finally:
        os.close(descriptor)


def _open_log(log: Path) -> int:
    """The log for appending: created 0600 (exactly, whatever the umask), or as it is when it exists."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(log, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return os.open(log, flags)
    os.fchmod(descriptor, FILE_MODE)
    return descriptor
