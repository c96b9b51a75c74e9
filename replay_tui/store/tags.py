"""Tags on journals (``incident``), kept in a manifest beside them, never in the journal itself.

Each directory (or storage prefix) that holds tagged journals has one ``.replay-tui-tags.json``::

    {"format": "replay-tui-tags", "version": 1,
     "journals": {"run-7f3a.jsonl": {"run_id": "run-7f3a",
                                     "tags": {"incident": {"note": "INC-2211", "by": "ana", "at": "2026-…Z"}}}}}

keyed by the journal's name in that directory (a shard directory's name for a sharded journal). A
tagged journal is kept by ``replay-tui prune`` whatever its age. A local manifest is changed under a
file lock and replaced atomically (0600); on object storage it is read, changed and written back (two
people tagging in one prefix at the same moment: the last write wins).

A manifest that cannot be read is an error naming it, and prune keeps every journal beside it: what is
tagged there cannot be known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ..journal import JournalError
from ..journal.writer import utc_now
from .audit import current_user
from .places import Place, StoredJournal, locate

MANIFEST_NAME = ".replay-tui-tags.json"
FORMAT = "replay-tui-tags"
VERSION = 1
TAG_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NOTE_LIMIT = 4000


class TagError(JournalError):
    """A bad tag or note, or a manifest that cannot be read or written; names the file."""


def manifest_name(directory: str) -> str:
    return f"{directory}/{MANIFEST_NAME}" if directory else MANIFEST_NAME


def read_manifest(place: Place, directory: str) -> dict[str, dict[str, Any]]:
    """The journals entry of the manifest in ``directory`` of ``place`` ({} when there is none)."""
    name = manifest_name(directory)
    data = place.read(name)
    if data is None:
        return {}
    where = place.where(name)
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise TagError(f"{where}: not valid JSON ({error}); expected a {FORMAT} manifest") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TagError(f'{where}: not a replay-tui tags manifest (expected "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise TagError(f"{where}: manifest version {document.get('version')!r}; this replay-tui reads {VERSION}")
    journals = document.get("journals")
    if not isinstance(journals, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("tags"), dict) for entry in journals.values()
    ):
        raise TagError(f'{where}: "journals" must map each journal name to an object with "tags"')
    return journals


def write_manifest(place: Place, directory: str, journals: dict[str, dict[str, Any]]) -> None:
    name = manifest_name(directory)
    if not journals:
        place.remove_files([name])
        return
    document = {"format": FORMAT, "version": VERSION, "journals": dict(sorted(journals.items()))}
    place.write(name, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def tags_of(manifest: dict[str, dict[str, Any]], journal: StoredJournal) -> dict[str, Any]:
    entry = manifest.get(journal.base)
    tags = entry.get("tags") if isinstance(entry, dict) else None
    return tags if isinstance(tags, dict) else {}


@dataclass(frozen=True)
class TagChange:
    journal: str  # where it is, as it may be printed
    manifest: str
    tag: str | None
    tags: dict[str, Any]  # the journal's tags afterwards
    changed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "journal": self.journal,
            "manifest": self.manifest,
            "tag": self.tag,
            "tags": self.tags,
            "changed": self.changed,
        }


def tag(argument: str, name: str, note: str | None = None) -> TagChange:
    """Tag the journal ``argument`` names with ``name`` (again: the note is replaced)."""
    if not TAG_PATTERN.fullmatch(name):
        raise TagError(f"{name!r}: a tag is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if note is not None and len(note) > NOTE_LIMIT:
        raise TagError(f"the note is {len(note)} characters; at most {NOTE_LIMIT}")
    place, journal = locate(argument)
    manifest_at = manifest_name(journal.parent)
    with place.lock(manifest_at):
        journals = read_manifest(place, journal.parent)
        entry = journals.setdefault(journal.base, {"run_id": place.run_id(journal), "tags": {}})
        entry["tags"][name] = {"note": note or "", "by": current_user(), "at": utc_now()}
        write_manifest(place, journal.parent, journals)
    return TagChange(place.where(journal.name), place.where(manifest_at), name, entry["tags"], True)


def untag(argument: str, name: str | None = None) -> TagChange:
    """Remove the tag ``name`` (every tag when None) from the journal ``argument`` names."""
    place, journal = locate(argument)
    manifest_at = manifest_name(journal.parent)
    with place.lock(manifest_at):
        journals = read_manifest(place, journal.parent)
        entry = journals.get(journal.base)
        tags = dict(entry["tags"]) if entry else {}
        changed = bool(tags) if name is None else name in tags
        if changed:
            if name is None:
                tags.clear()
            else:
                del tags[name]
            if tags:
                journals[journal.base] = {**journals[journal.base], "tags": tags}
            else:
                del journals[journal.base]
            write_manifest(place, journal.parent, journals)
    return TagChange(place.where(journal.name), place.where(manifest_at), name, tags, changed)


def drop_entries(place: Place, directory: str, bases: set[str]) -> bool:
    """Remove the entries of ``bases`` from the manifest in ``directory`` (forget); True when one went."""
    manifest_at = manifest_name(directory)
    with place.lock(manifest_at):
        journals = read_manifest(place, directory)
        if not bases & set(journals):
            return False
        write_manifest(place, directory, {key: value for key, value in journals.items() if key not in bases})
    return True
