"""Bookmarks and notes, kept in a sidecar file next to the journal (never in it).

``session.jsonl`` gets ``session.jsonl.replay-tui.json`` (a shard directory
``run/`` gets ``run.replay-tui.json`` beside it; a journal in a directory that cannot be
written gets one under ``$XDG_STATE_HOME/replay-tui/annotations``). Each annotation is keyed by the
event's ``event_hash``, so it stays attached to the same event across re-opens and
says so when the journal at that path is no longer the one it was made on.
Journals without a hash chain (the type/data dialect) key by ``run:<run_id>:seq:<n>``.

Every change is saved atomically: a temporary file in the same directory,
fsync, ``os.replace``, fsync of the directory. Two stores on one journal (two
app windows) merge: a save first re-reads a sidecar another process replaced and
keeps that process's changes to annotations this store did not touch. A sidecar that cannot be read is
an ``AnnotationError``; ``AnnotationStore.open_lenient`` turns it into an empty
store plus the error, so the journal still opens, and the unreadable file is
kept aside (``.corrupt-<time>``) before anything overwrites it.

From the app::

    store, problem = AnnotationStore.open_lenient(journal_path)   # show `problem` if not None
    store.toggle_bookmark(event)            # m
    store.set_note(event, text)             # a ("" removes the note)
    store.next_bookmark(current_seq)        # ' (backwards=True for the other way)
    store.bookmarks()                       # presenter mode, in seq order; .note for the big text
    store.stale(journal)                    # annotations whose event is not in this journal
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import orjson

from ..journal import Event, Journal
from ..journal.private import make_private_dirs, write_private
from ..journal.user_dirs import state_root

SIDECAR_SUFFIX = ".replay-tui.json"
FORMAT = "replay-tui-annotations"
VERSION = 1


class AnnotationError(Exception):
    """The sidecar cannot be read or written; names the file and what was wrong."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class Annotation(NamedTuple):
    """A bookmark or note on one event. A NamedTuple, not a frozen dataclass (3 M instructions at import, on
    the first frame's path: the timeline marks bookmarks)."""

    key: str  # event_hash, or run:<run_id>:seq:<n> for journals without a hash chain
    seq: int  # where the event was when annotated; used to find it again quickly
    run_id: str
    kind: str
    bookmarked: bool = False
    note: str = ""
    created_at: str = ""
    updated_at: str = ""

    @property
    def is_empty(self) -> bool:
        return not self.bookmarked and not self.note

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def installed_data_dir() -> Path:
    """Where the wheel puts the bundled demo journals and themes (inside the installed package)."""
    return Path(__file__).resolve().parents[1] / "_bundled"


def is_inside(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(directory)


def sidecar_path(journal_path: str | os.PathLike[str]) -> Path:
    """Where the annotations of a journal live: beside it, or, for the bundled demo inside the installed
    package and when that directory cannot be written and holds no sidecar yet, under
    ``$XDG_STATE_HOME/replay-tui/annotations`` with a name derived from the journal's full path."""
    path = Path(journal_path)
    beside = path.with_name(path.name + SIDECAR_SUFFIX)
    bundled = is_inside(path, installed_data_dir())  # the demo in site-packages: never write there
    if not bundled and (beside.exists() or os.access(beside.parent, os.W_OK) or not beside.parent.exists()):
        return beside
    return fallback_sidecar_path(path)


def fallback_sidecar_path(journal_path: str | os.PathLike[str]) -> Path:
    """The sidecar a journal gets when it cannot have one beside it: named by the journal's full path."""
    import hashlib  # 11 M instructions to import: only for a journal whose sidecar cannot be beside it

    path = Path(journal_path)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return fallback_dir() / f"{path.name}.{digest}{SIDECAR_SUFFIX}"


def fallback_dir() -> Path:
    """Where sidecars go when they cannot go beside their journal: ``$XDG_STATE_HOME/replay-tui/annotations``."""
    return state_root() / "annotations"


def annotation_key(event: Event) -> str:
    """The identity an annotation is stored under: the event hash when the journal has one."""
    return event.event_hash if event.event_hash else f"run:{event.run_id}:seq:{event.seq}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


_FIELDS: tuple[tuple[str, type, bool], ...] = (
    ("key", str, True),
    ("seq", int, True),
    ("run_id", str, True),
    ("kind", str, False),
    ("bookmarked", bool, False),
    ("note", str, False),
    ("created_at", str, False),
    ("updated_at", str, False),
)


def _parse(data: bytes, path: Path) -> list[Annotation]:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise AnnotationError(f"is not valid JSON ({error}); expected a {FORMAT} document", path=path) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise AnnotationError(
            f'is not a replay-tui annotations file (expected an object with "format": "{FORMAT}")', path=path
        )
    version = document.get("version")
    if version != VERSION:
        raise AnnotationError(
            f"has version {version!r}; this replay-tui reads version {VERSION} (written by a newer release?)", path=path
        )
    items = document.get("annotations")
    if not isinstance(items, list):
        raise AnnotationError('field "annotations": expected an array', path=path)
    annotations = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise AnnotationError(f"annotations[{index}]: expected an object", path=path)
        for name, expected, required in _FIELDS:
            if name not in item:
                if required:
                    raise AnnotationError(f"annotations[{index}].{name}: missing", path=path)
                continue
            value = item[name]
            # ``expected`` is only a ``type`` to mypy: the repeated int test lets it compare the seq
            if type(value) is not expected or (name == "seq" and type(value) is int and value < 1):
                wanted = {str: "a string", int: "a positive integer", bool: "true or false"}[expected]
                raise AnnotationError(f"annotations[{index}].{name}: expected {wanted}, found {value!r:.40}", path=path)
        annotations.append(Annotation(**{name: item[name] for name, _, _ in _FIELDS if name in item}))
    return annotations


class AnnotationStore:
    """The bookmarks and notes of one journal; every change is saved at once."""

    def __init__(
        self,
        journal_path: str | os.PathLike[str],
        annotations: Iterable[Annotation] = (),
        *,
        corrupt: AnnotationError | None = None,
    ) -> None:
        self.journal_path = Path(journal_path)
        self.path = sidecar_path(journal_path)
        self._by_key = {a.key: a for a in annotations}
        self._changed: set[str] = set()  # keys this store changed since the file was last read or written
        self._seen: tuple[int, int, int] | None = _identity(self.path)
        self.corrupt = corrupt  # the load error, when this store replaced an unreadable sidecar
        self.preserved_as: Path | None = None  # where that unreadable sidecar was moved on first save

    # -- opening ---------------------------------------------------------------
    @classmethod
    def open(cls, journal_path: str | os.PathLike[str]) -> "AnnotationStore":
        """Load the sidecar (an empty store when there is none); AnnotationError when unreadable."""
        path = sidecar_path(journal_path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(journal_path)
        except OSError as error:
            raise AnnotationError(f"cannot be read ({error.strerror})", path=path) from None
        return cls(journal_path, _parse(data, path))

    @classmethod
    def open_lenient(cls, journal_path: str | os.PathLike[str]) -> tuple["AnnotationStore", AnnotationError | None]:
        """Like ``open``, but an unreadable sidecar gives an empty store and the error to show."""
        try:
            return cls.open(journal_path), None
        except AnnotationError as error:
            return cls(journal_path, corrupt=error), error

    # -- reading ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, event: Event) -> Annotation | None:
        return self._by_key.get(annotation_key(event))

    def is_bookmarked(self, event: Event) -> bool:
        annotation = self.get(event)
        return annotation is not None and annotation.bookmarked

    def all(self) -> list[Annotation]:
        """Every annotation in seq order."""
        return sorted(self._by_key.values(), key=lambda a: (a.seq, a.key))

    def bookmarks(self) -> list[Annotation]:
        """Bookmarked events in seq order: the presenter's walk through an incident."""
        return [a for a in self.all() if a.bookmarked]

    def notes(self) -> list[Annotation]:
        return [a for a in self.all() if a.note]

    def next_bookmark(self, after_seq: int | None, *, backwards: bool = False) -> Annotation | None:
        """The bookmark after (or before) ``after_seq``, wrapping around; None when there are none."""
        marks = self.bookmarks()
        if not marks:
            return None
        if after_seq is None:
            return marks[-1] if backwards else marks[0]
        if backwards:
            earlier = [a for a in marks if a.seq < after_seq]
            return earlier[-1] if earlier else marks[-1]
        later = [a for a in marks if a.seq > after_seq]
        return later[0] if later else marks[0]

    def stale(self, journal: Journal) -> list[Annotation]:
        """Annotations whose event is not at their seq in ``journal`` (another journal now has this path)."""
        missing = []
        for annotation in self.all():
            position = journal.position_of_seq(annotation.seq)
            event = journal.try_event(position) if position is not None else None
            if not isinstance(event, Event) or annotation_key(event) != annotation.key:
                missing.append(annotation)
        return missing

    # -- changing --------------------------------------------------------------
    def refresh(self) -> None:
        """Take in what another process saved since (changes made here and not yet saved win)."""
        self._merge_concurrent_changes()

    def toggle_bookmark(self, event: Event) -> bool:
        """Bookmark or un-bookmark ``event``; returns whether it is now bookmarked."""
        self.refresh()
        current = self.get(event)
        bookmarked = not (current is not None and current.bookmarked)
        self._put(event, current, bookmarked=bookmarked)
        return bookmarked

    def set_bookmark(self, event: Event, bookmarked: bool = True) -> None:
        self.refresh()
        self._put(event, self.get(event), bookmarked=bookmarked)

    def set_note(self, event: Event, text: str) -> None:
        """Attach ``text`` to ``event``; blank text removes the note."""
        self.refresh()
        self._put(event, self.get(event), note=text.strip())

    def _put(self, event: Event, current: Annotation | None, **changes: Any) -> None:
        now = _now()
        if current is None:
            current = Annotation(annotation_key(event), event.seq, event.run_id, event.kind, created_at=now)
        updated = current._replace(updated_at=now, **changes)
        if updated.is_empty:
            self._by_key.pop(updated.key, None)
        else:
            self._by_key[updated.key] = updated
        self._changed.add(updated.key)
        self.save()

    def _merge_concurrent_changes(self) -> None:
        """Another process (a second app, a presenter) saved since we read: keep its changes to
        annotations we did not touch, ours win on the ones we did."""
        if self.corrupt is not None or _identity(self.path) == self._seen:
            return
        try:
            theirs = {a.key: a for a in _parse(self.path.read_bytes(), self.path)}
        except (OSError, AnnotationError):
            return  # unreadable now: our copy is what gets written
        for key in set(theirs) | set(self._by_key):
            if key not in self._changed:
                if key in theirs:
                    self._by_key[key] = theirs[key]
                else:
                    self._by_key.pop(key, None)
        self._seen = _identity(self.path)

    # -- saving ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        run_ids = sorted({a.run_id for a in self._by_key.values()})
        return {
            "format": FORMAT,
            "version": VERSION,
            "journal": self.journal_path.name,
            "run_id": run_ids[0] if len(run_ids) == 1 else None,
            "annotations": [a.to_json() for a in self.all()],
        }

    def save(self) -> None:
        """Write the sidecar atomically; AnnotationError (naming the file) when it cannot be written."""
        directory = self.path.parent
        self._merge_concurrent_changes()
        if not directory.exists() and directory != self.journal_path.parent:
            try:  # the fallback location under XDG_STATE_HOME, made on first save (0700)
                make_private_dirs(directory)
            except OSError as error:
                raise AnnotationError(f"cannot be written ({error.strerror or error})", path=self.path) from None
        data = orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
        try:
            if self.corrupt is not None and self.preserved_as is None and self.path.exists():
                stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
                self.preserved_as = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
                os.replace(self.path, self.preserved_as)
            write_private(self.path, data)  # a temporary file, fsync, os.replace; 0600
            _fsync_directory(directory)
            self._seen = _identity(self.path)
            self._changed.clear()
        except OSError as error:
            raise AnnotationError(f"cannot be written ({error.strerror or error})", path=self.path) from None


def _identity(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of the sidecar: changes whenever any process replaces it."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
