"""Where journals are kept: a local directory or a storage prefix (any fsspec URL), seen the same way.

A place lists its files (name, size, time of last change) and groups them into journals the way
``replay/corpus/runs.py`` finds them: every ``*.jsonl`` / ``*.jsonl.gz`` file is one journal, except in a
directory whose journal files are all rotated shards (``NAME.000001.jsonl[.gz]``), which is one journal
as a whole. Names starting with a dot are replay-tui's own (manifests, ledgers, removals under way) and
never journals.

A journal is removed whole or not at all. Locally a shard directory is first renamed out of sight (one
atomic rename) and then deleted; a leftover ``.removing-*`` directory (a crash in between) is finished by
the next prune. An object store has no rename: every object of the journal goes in one batch request,
then the listing is checked, and an object still there is tried once more and else reported by name.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, ContextManager

from ..journal.identity import run_id_in
from ..journal.private import lock_path, locked, make_private_dirs, write_private
from ..journal.urls import StorageError, explain, filesystem, is_url, shown
from ..journal.writer import SHARD_NAME

JOURNAL_SUFFIXES = (".jsonl", ".jsonl.gz")
REMOVING_PREFIX = ".removing-"


class PlaceError(StorageError):
    """A place that cannot be listed, read or changed; the message names it."""


@dataclass(frozen=True)
class StoredFile:
    name: str  # relative to the place, "/"-separated
    size: int
    mtime: float  # seconds since the epoch


@dataclass(frozen=True)
class StoredJournal:
    name: str  # a file's name, or a shard directory's, relative to the place
    files: tuple[StoredFile, ...]
    directory: bool

    @property
    def mtime(self) -> float:
        """When it last changed: its newest file's time (a growing journal is never old)."""
        return max((file.mtime for file in self.files), default=0.0)

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def parent(self) -> str:
        return self.name.rpartition("/")[0]

    @property
    def base(self) -> str:
        return self.name.rpartition("/")[2]

    @property
    def first_file(self) -> StoredFile:
        return min(self.files, key=lambda file: file.name)


def hidden(name: str) -> bool:
    return any(part.startswith(".") for part in name.split("/"))


def group_journals(files: list[StoredFile]) -> list[StoredJournal]:
    """The journals among a place's files (see the module docstring). When the place itself is a shard
    directory, it is the one journal, named ""."""
    by_directory: dict[str, list[StoredFile]] = {}
    for file in files:
        if not hidden(file.name):
            by_directory.setdefault(file.name.rpartition("/")[0], []).append(file)
    found: list[StoredJournal] = []
    shard_directories: list[str] = []
    for directory in sorted(by_directory, key=lambda name: (name.count("/") + bool(name), name)):
        if "" in shard_directories or any(directory.startswith(taken + "/") for taken in shard_directories):
            continue  # inside a shard directory: part of that journal
        members = [file for file in by_directory[directory] if file.name.endswith(JOURNAL_SUFFIXES)]
        if members and all(SHARD_NAME.search(file.name) for file in members):  # the place itself, when ""
            shard_directories.append(directory)
            found.append(StoredJournal(directory, tuple(sorted(members, key=lambda f: f.name)), True))
        else:
            found.extend(StoredJournal(file.name, (file,), False) for file in members)
    return sorted(found, key=lambda journal: journal.name)


class Place:
    """A local directory or a storage prefix."""

    shown: str

    def files(self) -> list[StoredFile]:
        raise NotImplementedError

    def journals(self) -> list[StoredJournal]:
        return group_journals(self.files())

    def where(self, name: str) -> str:
        """The path or URL (as it may be printed) of ``name``."""
        raise NotImplementedError

    def open(self, name: str) -> IO[bytes]:
        raise NotImplementedError

    def read(self, name: str) -> bytes | None:
        raise NotImplementedError

    def write(self, name: str, data: bytes) -> None:
        raise NotImplementedError

    def lock(self, name: str) -> ContextManager[None]:
        """Held while ``name`` is read, changed and written back (local: a file lock; a store has none)."""
        return nullcontext()

    def remove_files(self, names: list[str]) -> None:
        raise NotImplementedError

    def remove_journal(self, journal: StoredJournal) -> None:
        raise NotImplementedError

    def run_id(self, journal: StoredJournal) -> str | None:
        """The run ``journal`` holds (its first file's first line), or None when that cannot be read."""
        first = journal.first_file
        try:
            with self.open(first.name) as stream:
                return run_id_in(stream, compressed=first.name.endswith(".gz"))
        except (OSError, PlaceError):
            return None


class LocalPlace(Place):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.shown = str(root)

    def files(self) -> list[StoredFile]:
        found = []
        for directory, subdirectories, names in os.walk(self.root):
            subdirectories.sort()
            here = Path(directory)
            for name in names:
                path = here / name
                try:
                    stat = path.lstat()
                except OSError:
                    continue  # removed while listed
                if path.is_symlink():
                    continue  # a link is not the journal: never followed, never removed through
                found.append(StoredFile(path.relative_to(self.root).as_posix(), stat.st_size, stat.st_mtime))
        return found

    def path(self, name: str) -> Path:
        return self.root.joinpath(*name.split("/")) if name else self.root

    def where(self, name: str) -> str:
        return str(self.path(name))

    def open(self, name: str) -> IO[bytes]:
        return open(self.path(name), "rb")

    def read(self, name: str) -> bytes | None:
        try:
            return self.path(name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        target = self.path(name)
        make_private_dirs(target.parent)
        write_private(target, data)

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        with locked(lock_path(self.path(name))):
            yield

    def remove_files(self, names: list[str]) -> None:
        for name in names:
            self.path(name).unlink(missing_ok=True)

    def remove_journal(self, journal: StoredJournal) -> None:
        path = self.path(journal.name)
        if not journal.directory:
            path.unlink(missing_ok=True)
            return
        aside = path.with_name(f"{REMOVING_PREFIX}{path.name}-{uuid.uuid4().hex[:12]}")
        try:
            os.rename(path, aside)  # the journal leaves every listing at once, whole
        except FileNotFoundError:
            return
        except OSError as error:
            # the caller names the journal: prune and forget report "FAILED <journal>: <this>"
            raise PlaceError(f"cannot be removed ({error.strerror or error}); nothing of it was") from None
        shutil.rmtree(aside, ignore_errors=True)  # what is left (a crash) is finished by the next prune

    def leftovers(self) -> list[Path]:
        """Shard directories renamed for removal whose deletion did not finish."""
        return sorted(path for path in self.root.rglob(f"{REMOVING_PREFIX}*") if path.is_dir())


class RemotePlace(Place):
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.shown = shown(self.url)
        self.fs, path = filesystem(self.url)
        self.base = path.rstrip("/")

    def _key(self, name: str) -> str:
        return f"{self.base}/{name}" if name else self.base

    def where(self, name: str) -> str:
        return f"{self.shown}/{name}" if name else self.shown

    def _fail(self, name: str, error: BaseException) -> PlaceError:
        return PlaceError(str(explain(self.where(name), error)))

    def files(self) -> list[StoredFile]:
        try:
            self.fs.invalidate_cache(self.base)
            found = self.fs.find(self.base, detail=True)
        except FileNotFoundError:
            return []
        except Exception as error:  # every client has its own exception tree
            raise self._fail("", error) from None
        files = []
        for key, info in found.items():
            if info.get("type") == "directory" or not key.startswith(self.base + "/"):
                continue
            files.append(StoredFile(key[len(self.base) + 1 :], int(info.get("size") or 0), _mtime_of(info)))
        return files

    def open(self, name: str) -> IO[bytes]:
        try:
            stream: IO[bytes] = self.fs.open(self._key(name), "rb")
        except Exception as error:
            raise self._fail(name, error) from None
        return stream

    def read(self, name: str) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(self._key(name))
        except FileNotFoundError:
            return None
        except Exception as error:
            raise self._fail(name, error) from None
        return data

    def write(self, name: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(self._key(name), data)
        except Exception as error:
            raise self._fail(name, error) from None

    def remove_files(self, names: list[str]) -> None:
        if not names:
            return
        keys = [self._key(name) for name in names]
        for _attempt in range(2):
            try:
                self.fs.rm(keys)  # one batch request (S3 DeleteObjects) for up to a thousand keys
            except FileNotFoundError:
                pass
            except Exception as error:
                raise self._fail(names[0], error) from None
            self.fs.invalidate_cache(self.base)
            keys = [key for key in keys if self._exists(key)]
            if not keys:
                return
        left = ", ".join(key[len(self.base) + 1 :] for key in keys)
        raise PlaceError(f"{self.shown}: {left} could not be removed (the rest was); run the command again")

    def _exists(self, key: str) -> bool:
        try:
            return bool(self.fs.exists(key))
        except Exception:
            return True  # not known to be gone: said so

    def remove_journal(self, journal: StoredJournal) -> None:
        self.remove_files([file.name for file in journal.files])


def _mtime_of(info: dict[str, Any]) -> float:
    """The time an object last changed, whichever field the store's client names it by."""
    for key in ("LastModified", "last_modified", "mtime", "updated", "modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return 0.0


def journals_under(place: Place, listing: list[StoredFile] | None = None) -> list[StoredJournal]:
    """The journals of a place of journals (from ``listing`` when it was listed already); PlaceError when the
    place is itself one (a shard directory), which a command for places must not take apart shard by shard."""
    journals = group_journals(place.files() if listing is None else listing)
    if any(journal.name == "" for journal in journals):
        raise PlaceError(
            f"{place.shown}: one journal (a directory of rotated shards), not a directory of journals; "
            "name the directory that holds it"
        )
    return journals


def place_of(argument: str) -> Place:
    """The place an argument names: a URL (a prefix) or a local directory."""
    if is_url(argument):
        return RemotePlace(argument)
    path = Path(argument).expanduser()
    if not path.is_dir():
        raise PlaceError(f"{argument}: no such directory")
    return LocalPlace(path)


def locate(argument: str) -> tuple[Place, StoredJournal]:
    """The place holding the journal ``argument`` names (a file, a shard directory, an object, a prefix of
    shards) and the journal in it; PlaceError when there is none."""
    if is_url(argument):
        url = argument.rstrip("/")
        parent, _, base = url.rpartition("/")
        remote = RemotePlace(parent)
        inside = [file for file in remote.files() if file.name == base or file.name.startswith(base + "/")]
        return remote, _journal_named(remote.where(base), base, inside, argument.endswith("/"))
    path = Path(argument).expanduser()
    if path.is_symlink() or not path.exists():
        raise PlaceError(f"{argument}: no such journal (a file or a shard directory)")
    local = LocalPlace(path.resolve().parent)
    base = path.resolve().name
    if path.is_dir():
        inside = [file for file in LocalPlace(path).files() if "/" not in file.name]
        inside = [StoredFile(f"{base}/{file.name}", file.size, file.mtime) for file in inside]
    else:
        stat = path.stat()
        inside = [StoredFile(base, stat.st_size, stat.st_mtime)]
    return local, _journal_named(str(path), base, inside, path.is_dir())


def _journal_named(shown_as: str, base: str, files: list[StoredFile], directory: bool) -> StoredJournal:
    if not directory and any(file.name == base for file in files):
        if not base.endswith(JOURNAL_SUFFIXES):
            raise PlaceError(f"{shown_as}: not a journal (expected a .jsonl or .jsonl.gz file, or a shard directory)")
        return StoredJournal(base, tuple(file for file in files if file.name == base), False)
    shards = [file for file in files if file.name.rpartition("/")[0] == base and file.name.endswith(JOURNAL_SUFFIXES)]
    if not shards or not all(SHARD_NAME.search(file.name) for file in shards):
        raise PlaceError(f"{shown_as}: no such journal (a file or a directory of rotated shards)")
    return StoredJournal(base, tuple(sorted(shards, key=lambda file: file.name)), True)
