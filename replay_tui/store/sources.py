"""What a command-line journal argument names, resolved to a local journal.

``resolve_source(arg)`` is the single entry point every command and the app launcher
call with the argument as the user typed it:

* a journal (file, gzip, shard directory, corpus directory) or a path that does not
  exist is returned as is (the caller's own checks and messages apply);
* a foreign trace (OTLP/JSON, OpenAI Agents SDK export, Inspect AI log, vcrpy
  cassette), detected by content, is imported once into a cache keyed by the source's
  sha256 (``<cache>/imports/<sha256>/``, ``<cache>`` being ``journal.user_dirs.cache_root()``) and the cached journal is
  returned; the next open of the same bytes reads the cache.

* a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``file://``) is first brought
  into the local cache by ``storage.fetch`` (an object, or a prefix of shards or of a
  corpus), then resolved like a local path; ``url`` keeps the URL (credentials never
  included) for messages.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

from ..journal.errors import JournalOpenError
from ..journal.files import check_readable_path, open_regular_binary
from ..journal.private import create_private, make_private_dirs, make_private_temp_dir
from ..journal.urls import is_url
from ..journal.user_dirs import cache_root
from . import audit

if TYPE_CHECKING:
    from ..importers import ImportedJournal

MANIFEST = "import.json"
FIRST_LINE_BYTES = 64 * 1024
#: Top-level fields every schema-v1 event line has (and no foreign trace's first record has).
V1_LINE_FIELDS = ("schema_version", "run_id", "seq", "kind", "event_hash")


class ResolvedSource(NamedTuple):
    """The local journal to open for one argument. A NamedTuple, not a frozen dataclass (3 M instructions at
    import): the app resolves its journal before the first frame."""

    argument: str
    path: Path
    #: Every journal the source became (an Inspect log holds one per sample and epoch).
    journals: tuple[Path, ...] = ()
    #: Set when the argument was a foreign trace: ``{"format", "file_name", "sha256"}``.
    imported: dict[str, str] | None = None
    notes: tuple[str, ...] = ()
    #: The URL the journal was fetched from (userinfo and query left out), when it was one.
    url: str | None = None

    def __str__(self) -> str:
        return str(self.path)

    def shown(self, text: str) -> str:
        """``text`` (a report, an error) with the local cache path replaced by the URL it came from,
        so a message about a fetched journal names what the user typed."""
        return text.replace(str(self.path), self.url.rstrip("/")) if self.url else text


def imports_cache_dir() -> Path:
    """Where opened traces are imported to: under the one cache root the object cache uses too."""
    return cache_root() / "imports"


def resolve_source(argument: str) -> ResolvedSource:
    """The journal ``argument`` names; raises TraceImportError or StorageError (JournalErrors), or AuditError
    when the read audit is on and its log cannot be written (store/audit.py: every open is logged here)."""
    source = _resolve(argument)
    audit.record_read(source)
    return source


def _resolve(argument: str) -> ResolvedSource:
    if is_url(argument):
        from . import storage  # see imports_cache_dir

        fetched = storage.fetch(argument)
        return _resolve(str(fetched.local))._replace(argument=argument, url=storage.shown(argument))
    path = Path(argument).expanduser()
    check_readable_path(path)  # a FIFO, a device, a socket: refused here, for every command and the app
    if not path.is_file() or _starts_with_a_v1_event(path):
        return ResolvedSource(argument, path, (path,))
    # Only now the importers (their package loads the builders): opening a journal never pays for them.
    from ..importers import IMPORTER_VERSION, detect_format
    from ..importers.detect import JOURNAL
    from ..journal.hashing import file_sha256  # with hashlib, as the importers: a journal needs neither

    try:
        fmt = detect_format(path)
    except OSError:
        return ResolvedSource(argument, path, (path,))  # unreadable: the caller says so in its own words
    if fmt in (None, JOURNAL):
        return ResolvedSource(argument, path, (path,))
    digest = file_sha256(path)
    target = imports_cache_dir() / f"{digest}-v{IMPORTER_VERSION}"
    journals = _cached(target)
    if journals is None:
        if target.exists() or target.is_symlink():
            _set_aside(target)  # truncated, edited or half-removed: never trusted, imported again
        journals = _import_into(path, target, fmt, digest)
    imported = {"format": fmt, "file_name": path.name, "sha256": digest}
    notes = (
        (
            f"{path.name} holds {len(journals)} runs; opened the first ({journals[0].name}), "
            f"the others are in {journals[0].parent}",
        )
        if len(journals) > 1
        else ()
    )
    return ResolvedSource(argument, journals[0], tuple(journals), imported, notes)


def _starts_with_a_v1_event(path: Path) -> bool:
    """The cheap case first: a first line holding a schema-v1 event's own fields is a journal
    (``detect_format`` would say so too); anything else goes to the importers' detection."""
    try:
        with open_regular_binary(path) as handle:
            head = handle.read(FIRST_LINE_BYTES)
    except (OSError, JournalOpenError):
        return False
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return False  # no whole first line within the sniff: let detect_format decide
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(first, dict) and all(field in first for field in V1_LINE_FIELDS)


def _cached(target: Path) -> list[Path] | None:
    """The journals of a complete cache entry, or None: an entry is trusted only when its manifest lists
    plain files inside it whose sizes and sha256 match what the import wrote (a truncated, edited or
    swapped journal is not served; the caller imports again)."""
    from ..journal.hashing import file_sha256

    try:
        manifest = orjson.loads((target / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    entries = manifest.get("journals") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    journals = []
    for entry in entries:
        if not isinstance(entry, dict) or not _plain_relative(entry.get("path")):
            return None
        journal = target / entry["path"]
        try:
            if journal.is_symlink() or not journal.is_file() or journal.stat().st_size != entry.get("size"):
                return None
            if file_sha256(journal) != entry.get("sha256"):
                return None
        except (OSError, JournalOpenError):  # gone, or no longer a regular file: imported again
            return None
        journals.append(journal)
    return journals


def _plain_relative(name: object) -> bool:
    """A path that stays inside the cache entry: relative, no ``..``, no empty or dot parts."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _set_aside(target: Path) -> None:
    """Move a damaged cache entry out of the way (atomically: another process may be reading it) and
    remove it; one that another process already moved or replaced is left to it."""
    stale = target.parent / f".stale-{os.getpid()}-{uuid.uuid4().hex}"
    try:
        os.rename(target, stale)
    except OSError:
        return
    shutil.rmtree(stale, ignore_errors=True)


def _import_into(path: Path, target: Path, fmt: str, digest: str) -> list[Path]:
    """Import into a fresh directory, then move it into place (two processes may race: the
    first one in wins and the other uses its result)."""
    from ..importers import TraceImportError, import_trace
    from ..journal.hashing import file_sha256

    try:
        make_private_dirs(target.parent)
        staging = make_private_temp_dir(prefix=".importing-", dir=target.parent)
    except OSError as error:
        raise TraceImportError(
            str(path),
            None,
            f"a writable import cache ({target.parent}: {error.strerror}); set REPLAY_TUI_CACHE_DIR or XDG_CACHE_HOME, "
            "or write the journal yourself with 'replay-tui import SRC -o OUT.jsonl'",
        ) from None
    try:
        out = staging / (Path(path.name).stem + ".jsonl")
        results: list[ImportedJournal] = import_trace(path, out, format=fmt, sha256=digest)
        names = [str(result.path.relative_to(staging)) for result in results]
        entries = [
            {"path": name, "size": (staging / name).stat().st_size, "sha256": file_sha256(staging / name)}
            for name in names
        ]
        manifest = {"source": path.name, "format": fmt, "journals": entries}
        with create_private(staging / MANIFEST) as written:  # last: an entry without it is incomplete
            written.write(orjson.dumps(manifest))
        for _attempt in range(3):
            try:
                os.rename(staging, target)  # atomic: readers see no entry or a whole one
                return [target / name for name in names]
            except OSError:
                cached = _cached(target)  # another process was first: its entry, if whole, is as good
                if cached is not None:
                    return cached
                _set_aside(target)
        raise OSError(f"{target} keeps being replaced by a damaged entry")
    except OSError as error:
        raise TraceImportError(
            str(path), None, f"a writable import cache ({target.parent}: {error.strerror or error})"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when it became the entry
