"""``replay-tui forget JOURNAL|RUN_ID``: remove a journal and every copy replay-tui made of it.

A target is a journal (a file, a shard directory, an object or a prefix of shards in a store), a
foreign trace that was opened (its import cache entry goes, found by the trace's sha256), or a run id.
A run id's journals are looked for in the ``--in`` places. For each journal removed, also:

* its annotations sidecars, its tags (the manifest entry beside it);
* what it was shipped as (the ``shipped`` lines of the shipping ledger beside it name each object) and
  those objects' manifest lines, and the ledger's lines about it;
* the copies of store/copies.py: import and object caches, storage mirrors, follow copies, annotations
  elsewhere, experiment outputs and replay scratch copies, corpus index rows.

Each removal is reported (``removed`` or, with ``--dry-run``, what would be); one that fails is reported
with its reason and the others go on (exit 1). The audit log gets a ``delete`` line per journal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..journal import JournalError
from ..journal.hashing import file_sha256
from ..journal.private import rewrite_lines
from ..journal.shipping import LEDGER_NAME, MANIFEST_PREFIX, SHIPPED, ledger_entries
from ..journal.urls import explain, filesystem, is_url
from . import audit
from .copies import Found, Runs, find_copies, manifest_lines_of, sidecars_of
from .places import LocalPlace, Place, PlaceError, StoredJournal, journals_under, locate, place_of
from .sources import MANIFEST, imports_cache_dir
from .tags import TagError, drop_entries, manifest_name, read_manifest

JOURNAL, TRACE, TAG, SHIPPED_COPY, LEDGER_LINES = "journal", "trace", "tag", "shipped copy", "shipping ledger lines"


class ForgetError(JournalError):
    """A target that names nothing to forget."""


@dataclass
class ForgetReport:
    targets: list[str]
    dry_run: bool
    removed: list[Found] = field(default_factory=list)
    failed: list[tuple[Found, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # places that could not be searched

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or self.problems else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": self.targets,
            "dry_run": self.dry_run,
            "removed": [item.to_json() for item in self.removed],
            "failed": [{**item.to_json(), "error": error} for item, error in self.failed],
            "problems": self.problems,
        }

    def to_text(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        lines = [
            f"{verb} {item.kind}: {item.where}" + (f" ({item.detail})" if item.detail else "") for item in self.removed
        ]
        lines += [f"FAILED {item.kind}: {item.where}: {error}" for item, error in self.failed]
        lines += [f"not searched: {problem}" for problem in self.problems]
        total = f"{verb} {len(self.removed)} item(s)" + (f", {len(self.failed)} failed" if self.failed else "")
        if not self.removed and not self.failed:
            total = "nothing of it was found"
        return "\n".join([*lines, f"{', '.join(self.targets)}: {total}."])


def forget(
    targets: Sequence[str], *, search: Sequence[str] = (), indexes: Sequence[str] = (), dry_run: bool = False
) -> ForgetReport:
    """Remove ``targets`` and their copies (``search``: places to look for a run id's journals; ``indexes``:
    corpus indexes besides those replay-tui built)."""
    report = ForgetReport(list(targets), dry_run)
    runs = Runs()
    plan: list[Found] = []
    journals: list[tuple[Place, StoredJournal]] = []
    for target in targets:
        _resolve(target, runs, journals, plan)
    for argument in search:
        place = place_of(argument)
        for journal in journals_under(place):
            known = {known_place.where(known.name) for known_place, known in journals}
            if place.where(journal.name) not in known and runs.matches(place.run_id(journal)):
                journals.append((place, journal))
        if isinstance(place, LocalPlace):
            plan.extend(_shipped_by_run(place, runs))
    for place, journal in journals:
        plan.extend(_with_journal(place, journal, runs))
    copies, report.problems = find_copies(runs, indexes=[Path(index) for index in indexes])
    plan.extend(copies)
    for item in _unique(plan):
        if dry_run:
            report.removed.append(item)
            continue
        try:
            item.remove()
        except (OSError, JournalError) as error:
            report.failed.append((item, getattr(error, "strerror", None) or str(error)))
        else:
            report.removed.append(item)
    return report


def _unique(items: list[Found]) -> list[Found]:
    seen: set[tuple[str, str]] = set()
    unique = []
    for item in items:
        if (item.kind, item.where) not in seen:
            seen.add((item.kind, item.where))
            unique.append(item)
    return unique


def _resolve(target: str, runs: Runs, journals: list[tuple[Place, StoredJournal]], plan: list[Found]) -> None:
    """What one target names: a journal, a trace that was imported, or a run id."""
    path = Path(target).expanduser()
    if is_url(target) or path.is_dir() or (path.name.endswith((".jsonl", ".jsonl.gz")) and path.exists()):
        place, journal = locate(target)
        run_id = place.run_id(journal)
        if run_id is not None:
            runs.run_ids.add(run_id)
        journals.append((place, journal))
        return
    if path.is_file() and not path.is_symlink():
        from ..importers import detect_format
        from ..importers.detect import JOURNAL as JOURNAL_FORMAT

        try:
            fmt = detect_format(path)
        except OSError as error:
            raise ForgetError(f"{target}: cannot be read ({error.strerror or error})") from None
        if fmt in (None, JOURNAL_FORMAT):
            raise ForgetError(
                f"{target}: neither a journal (.jsonl, .jsonl.gz, a shard directory) nor a trace replay-tui "
                "imports; nothing was removed"
            )
        digest = file_sha256(path)
        runs.source_sha256s.add(digest)
        runs.run_ids.update(_imported_run_ids(digest))
        runs.journals.append(path.resolve())
        plan.append(_local_removal(TRACE, path, lambda: path.unlink(missing_ok=True)))
        return
    if os.sep in target or path.exists() or path.is_symlink() or target.endswith((".jsonl", ".jsonl.gz", ".json")):
        raise ForgetError(f"{target}: no such journal (a file, a shard directory or a URL), nor a run id")
    runs.run_ids.add(target)


def _imported_run_ids(digest: str) -> set[str]:
    """The runs an opened trace became (its import cache entries' journals)."""
    from ..journal.identity import run_id_of

    run_ids: set[str] = set()
    cache = imports_cache_dir()
    for entry in sorted(cache.glob(f"{digest}-v*")) if cache.is_dir() else []:
        if (entry / MANIFEST).is_file():
            run_ids.update(r for r in map(run_id_of, entry.rglob("*.jsonl")) if r is not None)
    return run_ids


def _local_removal(kind: str, path: Path, remove: Callable[[], object]) -> Found:
    def audited() -> object:
        audit.record_delete(str(path.resolve()), path)
        return remove()

    return Found(kind, str(path), audited)


def _with_journal(place: Place, journal: StoredJournal, runs: Runs) -> list[Found]:
    """The journal itself and what lies beside it: sidecars, tags, shipped copies, manifest lines."""
    where = place.where(journal.name)
    local = place.path(journal.name) if isinstance(place, LocalPlace) else None

    def remove() -> None:
        audit.record_delete(where, local)
        place.remove_journal(journal)

    items = [Found(JOURNAL, where, remove, run_id=place.run_id(journal))]
    if local is not None:
        runs.journals.append(local.resolve())
        items.extend(sidecars_of(local))
    try:
        if journal.base in read_manifest(place, journal.parent):
            items.append(
                Found(
                    TAG,
                    place.where(manifest_name(journal.parent)),
                    lambda: drop_entries(place, journal.parent, {journal.base}),
                )
            )
    except TagError as error:
        items.append(Found(TAG, place.where(manifest_name(journal.parent)), _raise(error)))
    items.extend(manifest_lines_of(place, journal))
    if isinstance(place, LocalPlace):
        items.extend(
            _shipped(place, journal.parent, lambda name: name == journal.name or name.startswith(journal.name + "/"))
        )
    return items


def _raise(error: Exception) -> Callable[[], None]:
    def fail() -> None:
        raise error

    return fail


def _shipped_by_run(place: LocalPlace, runs: Runs) -> list[Found]:
    """Shipped copies of a forgotten run that the ledgers under ``place`` name (the local file may be gone)."""
    found = []
    for ledger in sorted(place.root.rglob(LEDGER_NAME)):
        directory = ledger.parent.relative_to(place.root).as_posix()
        names = {
            e["name"] for e in ledger_entries(ledger.parent) if e.get("op") == SHIPPED and runs.matches(e.get("run_id"))
        }
        if names:
            found.extend(_shipped(place, "" if directory == "." else directory, names.__contains__))
    return found


def _shipped(place: LocalPlace, directory: str, belongs: Callable[[str], bool]) -> list[Found]:
    """The objects a ledger says the files matching ``belongs`` were shipped as, their manifest lines, and
    the ledger's lines about them."""
    root = place.path(directory)
    entries = [entry for entry in ledger_entries(root) if belongs(entry["name"])]
    items = []
    for entry in entries:
        url = entry.get("url")
        if entry.get("op") == SHIPPED and isinstance(url, str) and is_url(url):
            manifest = url[: len(url) - len(entry["name"])] + f"{MANIFEST_PREFIX}/{entry['name']}.json"
            items.append(
                Found(SHIPPED_COPY, url, _remove_objects(url, manifest), "and its manifest line", entry.get("run_id"))
            )
    if entries:
        names = {entry["name"] for entry in entries}

        def drop() -> None:
            rewrite_lines(root / LEDGER_NAME, lambda line: _ledger_name(line) not in names)

        items.append(Found(LEDGER_LINES, str(root / LEDGER_NAME), drop, f"{len(entries)} line(s)"))
    return items


def _ledger_name(line: bytes) -> str | None:
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return entry.get("name") if isinstance(entry, dict) else None


def _remove_objects(url: str, manifest: str) -> Callable[[], None]:
    def remove() -> None:
        audit.record_delete(url, None)
        for target in (url, manifest):
            fs, path = filesystem(target)
            try:
                fs.rm(path)
            except FileNotFoundError:
                pass
            except Exception as error:
                raise PlaceError(str(explain(target, error))) from None

    return remove
