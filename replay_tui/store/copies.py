"""Every copy replay-tui itself made of a run, found so ``forget`` and ``prune`` can remove it.

A copy is recognised by the run id on its first line (``journal.identity``), so a copy is found
whatever it was named and wherever the original went. The places replay-tui writes copies, each with
the code that writes there:

=====================  ==================================================  ================================
kind                   where                                               written by
=====================  ==================================================  ================================
import cache           ``<cache>/imports/<sha256>-vN/``                    store/sources.py (a trace opened)
object cache           ``<cache>/objects/<key>/``                          store/storage.py (a URL opened)
storage mirror         ``<cache>/prefixes/<digest>/`` (one journal in it)  store/storage.py (a prefix)
follow copy            ``<cache>/follow/<digest>/``                        store/storage.py (--follow URL)
annotations            ``J.replay-tui.json`` beside the journal (and its   analysis/annotations.py
                       ``.corrupt-*`` copies), or under
                       ``$XDG_STATE_HOME/replay-tui/annotations/``
experiment output      ``$TMPDIR/replay-tui-experiments-*/``               tui/screens/experiments.py
replay scratch copy    ``$TMPDIR/replay-tui-scratch-*/``,                  replay/parent/sandbox_launch.py,
                       ``$TMPDIR/replay-tui-ray-*/``,                      replay/corpus/executors.py,
                       ``$TMPDIR/replay-tui-shuffle-*/`` (a killed replay) replay/parent/shuffle_runs.py
corpus index rows      every index ``replay-tui index`` built (listed in   analysis/corpus_index.py
                       ``$XDG_STATE_HOME/replay-tui/indexes.ndjson``)
=====================  ==================================================  ================================

``<cache>`` is ``journal.user_dirs.cache_root()``. An experiment's output and a killed replay's scratch copy
are of the run ``<run_id>-<mode>`` or ``<run_id>``. Files the user named (``export -o``, ``replay --out``,
``import -o``) are the user's, not copies replay-tui keeps, and are not looked for. Shipped copies,
shipping ledger lines and tags are found from the journal's own directory (store/forget.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ..analysis.annotations import SIDECAR_SUFFIX, fallback_dir, fallback_sidecar_path
from ..journal.identity import run_id_of
from ..journal.private import write_private
from ..journal.shipping import MANIFEST_PREFIX
from ..journal.user_dirs import cache_root
from .places import JOURNAL_SUFFIXES, LocalPlace, Place, StoredJournal
from .sources import MANIFEST, imports_cache_dir

IMPORT_CACHE = "import cache"
OBJECT_CACHE = "object cache"
STORAGE_MIRROR = "storage mirror"
FOLLOW_COPY = "follow copy"
ANNOTATIONS = "annotations"
EXPERIMENT_OUTPUT = "experiment output"
SCRATCH_COPY = "replay scratch copy"
INDEX_ROWS = "corpus index rows"
MANIFEST_LINES = "shipped manifest lines"
#: The replay modes whose output journals are the run ``<run_id>-<mode>`` (replay/child/engine.py names them so;
#: tests/lifecycle/test_forget.py holds this list to replay/protocol.py's MODES).
DERIVED_MODES = ("strict", "new-code", "model-live", "tools-live", "shuffle")
#: Temporary directories replay-tui makes that may hold a journal when their process was killed.
TEMP_PREFIXES = {
    "replay-tui-experiments-": EXPERIMENT_OUTPUT,
    "replay-tui-scratch-": SCRATCH_COPY,
    "replay-tui-ray-": SCRATCH_COPY,
    "replay-tui-shuffle-": SCRATCH_COPY,
}


@dataclass
class Found:
    """One thing to remove: what it is, where (as it may be printed), and how."""

    kind: str
    where: str
    remove: Callable[[], object] = field(repr=False)
    detail: str = ""
    run_id: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail or None, "run_id": self.run_id}


@dataclass
class Runs:
    """What identifies the data to forget: run ids, the sha256 of imported sources, journal paths."""

    run_ids: set[str] = field(default_factory=set)
    source_sha256s: set[str] = field(default_factory=set)
    journals: list[Path] = field(default_factory=list)  # local journals: their sidecars, wherever they are

    def matches(self, run_id: str | None, *, derived: bool = False) -> bool:
        """``run_id`` is one to forget (``derived``: or an experiment's run made from one, ``<run_id>-<mode>``)."""
        if run_id is None:
            return False
        if run_id in self.run_ids:
            return True
        return derived and any(run_id == f"{base}-{mode}" for base in self.run_ids for mode in DERIVED_MODES)


def find_copies(
    runs: Runs, *, indexes: Iterable[Path] = (), with_indexes: bool = True
) -> tuple[list[Found], list[str]]:
    """Every copy of ``runs`` replay-tui made, and the places it could not look into (said, not skipped);
    ``with_indexes=False``: all but index rows (``index_rows``)."""
    problems: list[str] = []
    found: list[Found] = []
    for finder in (_import_cache, _object_cache, _mirrors, _follow_copies, _annotations, _temporary):
        try:
            found.extend(finder(runs))
        except OSError as error:
            problems.append(f"{finder.__name__.strip('_').replace('_', ' ')}: {error}")
    if with_indexes:
        found.extend(index_rows(runs, indexes, problems))
    return found, problems


def _remove_tree(path: Path) -> Callable[[], None]:
    def remove() -> None:
        if path.exists():
            shutil.rmtree(path)

    return remove


def _remove_file(path: Path) -> Callable[[], None]:
    return lambda: path.unlink(missing_ok=True)


def _directories(root: Path) -> list[Path]:
    try:
        return sorted(path for path in root.iterdir() if path.is_dir() and not path.is_symlink())
    except FileNotFoundError:
        return []


def _journal_files(directory: Path) -> list[Path]:
    return sorted(
        path
        for path in directory.rglob("*")
        if path.is_file() and not path.is_symlink() and path.name.endswith(JOURNAL_SUFFIXES)
    )


def _import_cache(runs: Runs) -> list[Found]:
    found = []
    for entry in _directories(imports_cache_dir()):
        digest = entry.name.partition("-v")[0]
        matched = [run_id_of(path) for path in _journal_files(entry)]
        hit = next((run_id for run_id in matched if runs.matches(run_id)), None)
        if digest in runs.source_sha256s or hit is not None:
            source = _import_source(entry)
            found.append(Found(IMPORT_CACHE, str(entry), _remove_tree(entry), source, hit))
    return found


def _import_source(entry: Path) -> str:
    try:
        manifest = orjson.loads((entry / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return ""
    source = manifest.get("source") if isinstance(manifest, dict) else None
    return f"imported from {source}" if isinstance(source, str) else ""


def _object_cache(runs: Runs) -> list[Found]:
    objects = cache_root() / "objects"
    found = []
    for key in _directories(objects):
        hit = next((r for r in map(run_id_of, _journal_files(key)) if runs.matches(r)), None)
        if hit is not None:
            found.append(Found(OBJECT_CACHE, str(key), _remove_tree(key), run_id=hit))
    for partial in sorted(objects.glob(".partial-*")) if objects.is_dir() else []:
        run_id = run_id_of(partial)
        if runs.matches(run_id):
            found.append(Found(OBJECT_CACHE, str(partial), _remove_file(partial), "a download cut short", run_id))
    return found


def _mirrors(runs: Runs) -> list[Found]:
    """A mirrored prefix holds many journals: only the forgotten ones go, and leave its manifest too (so a
    later fetch takes them again only if they are still in the store). A mirror of nothing else goes whole."""
    found = []
    for root in _directories(cache_root() / "prefixes"):
        place = LocalPlace(root)
        journals = [(journal, place.run_id(journal)) for journal in place.journals()]
        hits = [(journal, run_id) for journal, run_id in journals if runs.matches(run_id)]
        if hits and len(hits) == len(journals):
            found.append(Found(STORAGE_MIRROR, str(root), _remove_tree(root), run_id=hits[0][1]))
            continue
        for journal, run_id in hits:
            where = str(place.path(journal.name))
            removal = _journal_removal(place, journal, then=_leave_mirror_manifest(place, journal))
            found.append(Found(STORAGE_MIRROR, where, removal, run_id=run_id))
    return found


def _journal_removal(
    place: LocalPlace, journal: StoredJournal, then: Callable[[], None] | None = None
) -> Callable[[], None]:
    """Remove a copy of a journal (whole) and the annotations beside it, then ``then``."""

    def remove() -> None:
        place.remove_journal(journal)
        for sidecar in _sidecars_beside(place.path(journal.name)):
            sidecar.unlink(missing_ok=True)
        if then is not None:
            then()

    return remove


def _leave_mirror_manifest(place: LocalPlace, journal: StoredJournal) -> Callable[[], None]:
    """Drop a removed journal's entries from its mirror's manifest (store/storage.py's ``.manifest.json``)."""

    def drop() -> None:
        manifest = place.root / ".manifest.json"
        try:
            entries = orjson.loads(manifest.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(entries, dict):
            kept = {
                name: stamp
                for name, stamp in entries.items()
                if name != journal.name and not name.startswith(journal.name + "/")
            }
            write_private(manifest, orjson.dumps(kept))

    return drop


def _follow_copies(runs: Runs) -> list[Found]:
    found = []
    for directory in _directories(cache_root() / "follow"):
        files = [path for path in directory.iterdir() if path.is_file()]
        hit = next((r for r in map(run_id_of, files) if runs.matches(r)), None)
        if hit is not None:
            found.append(Found(FOLLOW_COPY, str(directory), _remove_tree(directory), run_id=hit))
    return found


def _sidecars_beside(journal: Path) -> list[Path]:
    """A journal's annotations sidecar beside it and the unreadable ones kept aside (``.corrupt-*``)."""
    beside = journal.with_name(journal.name + SIDECAR_SUFFIX)
    try:
        return sorted(path for path in beside.parent.glob(f"{beside.name}*") if path.is_file())
    except OSError:
        return []


def sidecars_of(journal: Path) -> list[Found]:
    """The annotations of one journal: beside it, and in the fallback directory when they went there."""
    paths = _sidecars_beside(journal)
    fallback = fallback_sidecar_path(journal)
    paths.extend(path for path in fallback.parent.glob(f"{fallback.name}*") if path.is_file())
    return [Found(ANNOTATIONS, str(path), _remove_file(path)) for path in paths]


def _annotations(runs: Runs) -> list[Found]:
    """Sidecars in the fallback directory that name a forgotten run (sidecars beside journals go with them)."""
    found: list[Found] = []
    for journal in runs.journals:
        found.extend(sidecars_of(journal))
    known = {item.where for item in found}
    directory = fallback_dir()
    for path in sorted(directory.glob(f"*{SIDECAR_SUFFIX}*")) if directory.is_dir() else []:
        if str(path) in known or not path.is_file():
            continue
        run_id = next((r for r in _sidecar_run_ids(path) if runs.matches(r)), None)
        if run_id is not None:
            found.append(Found(ANNOTATIONS, str(path), _remove_file(path), run_id=run_id))
    return found


def _sidecar_run_ids(path: Path) -> set[str]:
    try:
        document = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return set()
    if not isinstance(document, dict):
        return set()
    run_ids = {document.get("run_id")}
    for annotation in document.get("annotations") or []:
        if isinstance(annotation, dict):
            run_ids.add(annotation.get("run_id"))
    return {run_id for run_id in run_ids if isinstance(run_id, str)}


def _temporary(runs: Runs) -> list[Found]:
    """Journals in replay-tui's own temporary directories (this user's): an experiment's output, the
    copy a replay gave its child, when the process that made them did not get to remove them."""
    found = []
    temp = Path(tempfile.gettempdir())
    for directory in _directories(temp):
        kind = next((kind for prefix, kind in TEMP_PREFIXES.items() if directory.name.startswith(prefix)), None)
        try:
            if kind is None or directory.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue  # gone meanwhile: its process removed it
        place = LocalPlace(directory)
        for journal in place.journals():
            run_id = place.run_id(journal)
            if runs.matches(run_id, derived=True):
                path = place.path(journal.name)
                found.append(Found(kind, str(path), _journal_removal(place, journal), run_id=run_id))
    return found


def index_rows(runs: Runs, extra: Iterable[Path], problems: list[str]) -> list[Found]:
    """The rows of ``runs`` in every index replay-tui built (and in ``extra``); one item per index."""
    from ..analysis.corpus_index import CorpusIndexError, registered_indexes, remove_runs, rows_of_runs

    databases = list(dict.fromkeys([*registered_indexes(), *extra]))
    if not databases or not runs.run_ids:
        return []
    found = []
    run_ids = sorted(runs.run_ids)
    for database in databases:
        try:
            rows = rows_of_runs(database, run_ids)
        except CorpusIndexError as error:
            problems.append(f"{INDEX_ROWS}: {error}")
            continue
        if rows:
            detail = ", ".join(f"{count} in {table}" for table, count in sorted(rows.items()))
            found.append(Found(INDEX_ROWS, str(database), functools.partial(remove_runs, database, run_ids), detail))
    return found


def manifest_lines_of(place: Place, journal: StoredJournal, listing: set[str] | None = None) -> list[Found]:
    """The manifest lines shipping wrote for the files of ``journal`` when ``place`` is a shipping target
    (``listing``: the names the place holds, when already listed; else each line is looked up)."""
    names = [f"{MANIFEST_PREFIX}/{file.name}.json" for file in journal.files]
    present = [name for name in names if (name in listing if listing is not None else place.read(name) is not None)]
    if not present:
        return []
    return [Found(MANIFEST_LINES, place.where(MANIFEST_PREFIX), lambda: place.remove_files(present), f"{len(present)}")]
