"""``replay-tui prune DIR|URL --older-than 15d``: remove the journals nobody needs any more.

A journal expires when its newest file is older than the age (a journal still being written is never
old). A tagged journal (store/tags.py) is kept whatever its age, and so is every journal beside a tags
manifest that cannot be read. An expired journal is removed whole (store/places.py) together with the
copies replay-tui made of it (store/copies.py: caches, annotations, experiment outputs, index rows) —
except copies of a run that a kept journal in the same place still holds. What was shipped elsewhere
is another place with its own retention (prune that URL); ``forget`` removes shipped copies too.

The age is ``--older-than``, else ``[retention] older_than`` in the settings, else 15 days.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..journal import JournalError
from . import audit
from .copies import Found, Runs, find_copies, index_rows, manifest_lines_of, sidecars_of
from .places import LocalPlace, Place, StoredJournal, journals_under, place_of
from .settings import DEFAULT_OLDER_THAN, load_settings
from .tags import TagError, read_manifest, tags_of

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
REMOVED, KEPT_TAGGED, KEPT_UNKNOWN_TAGS, FAILED = "removed", "kept: tagged", "kept: tags unreadable", "failed"


class RetentionError(JournalError):
    """A bad age."""


def parse_age(text: str) -> float:
    """Seconds in ``15d``, ``36h``, ``90m``, ``2w``, ``45s``; RetentionError naming the text otherwise."""
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise RetentionError(f"{text!r}: an age is a number and a unit (s, m, h, d, w), e.g. 15d or 36h")
    return float(match.group(1)) * UNITS[match.group(2)]


def age_in_force(older_than: str | None) -> tuple[str, float, str]:
    """(age as written, seconds, where it came from)."""
    if older_than is not None:
        return older_than, parse_age(older_than), "--older-than"
    settings = load_settings()
    if settings.older_than is not None:
        try:
            return settings.older_than, parse_age(settings.older_than), str(settings.source)
        except RetentionError as error:
            raise RetentionError(f"{settings.source}: [retention] older_than {error}") from None
    return DEFAULT_OLDER_THAN, parse_age(DEFAULT_OLDER_THAN), "the default"


@dataclass
class Decision:
    journal: str
    action: str
    age_s: float
    size: int
    tags: list[str] = field(default_factory=list)
    copies: list[Found] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "journal": self.journal,
            "action": self.action,
            "age_days": round(self.age_s / 86400, 3),
            "bytes": self.size,
            "tags": self.tags,
            "copies": [copy.to_json() for copy in self.copies],
            "error": self.error,
        }


@dataclass
class PruneReport:
    place: str
    older_than: str
    source: str
    dry_run: bool
    decisions: list[Decision] = field(default_factory=list)
    kept_young: int = 0
    finished: list[str] = field(default_factory=list)  # removals a crash had left half done
    index_rows: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def removed(self) -> list[Decision]:
        return [decision for decision in self.decisions if decision.action == REMOVED]

    @property
    def exit_code(self) -> int:
        """1 when something needs a person: a journal that could not be removed, a tags manifest that could
        not be read (its journals were kept), a place that could not be searched for copies."""
        attention = any(decision.action in (FAILED, KEPT_UNKNOWN_TAGS) for decision in self.decisions)
        return 1 if attention or self.problems else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "place": self.place,
            "older_than": self.older_than,
            "older_than_from": self.source,
            "dry_run": self.dry_run,
            "removed": len(self.removed),
            "removed_bytes": sum(decision.size for decision in self.removed),
            "kept_young": self.kept_young,
            "journals": [decision.to_json() for decision in self.decisions],
            "index_rows": [copy.to_json() for copy in self.index_rows],
            "finished_removals": self.finished,
            "problems": self.problems,
        }

    def to_text(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        lines = []
        for decision in self.decisions:
            age = f"{decision.age_s / 86400:.1f} days old"
            if decision.action == REMOVED:
                lines.append(f"{verb} {decision.journal} ({age}, {decision.size} bytes)")
                lines.extend(f"  and its {copy.kind}: {copy.where}" for copy in decision.copies)
            elif decision.action == FAILED:
                lines.append(f"FAILED {decision.journal}: {decision.error}")
            else:
                why = f"tagged {', '.join(decision.tags)}" if decision.tags else f"its {decision.error}"
                lines.append(f"kept {decision.journal} ({age}): {why}")
        lines.extend(f"{verb} {copy.kind}: {copy.where} ({copy.detail})" for copy in self.index_rows)
        lines.extend(f"finished removing {path}" for path in self.finished)
        lines.extend(f"PROBLEM: {problem}" for problem in self.problems)
        failed = sum(decision.action == FAILED for decision in self.decisions)
        kept = len(self.decisions) - len(self.removed) - failed + self.kept_young
        lines.append(
            f"{self.place}: {len(self.removed)} journal(s) unchanged for more than {self.older_than} ({self.source}) "
            f"{'to remove' if self.dry_run else 'removed'}"
            + (f", {failed} failed" if failed else "")
            + f", {kept} kept."
        )
        return "\n".join(lines)


def prune(
    argument: str, older_than: str | None = None, *, dry_run: bool = False, now: float | None = None
) -> PruneReport:
    """Remove the journals of ``argument`` (a directory or a storage prefix) unchanged for longer than the age."""
    written, limit, source = age_in_force(older_than)
    place = place_of(argument)
    report = PruneReport(place.shown, written, source, dry_run)
    if isinstance(place, LocalPlace) and not dry_run:
        report.finished = _finish_removals(place)
    now = time.time() if now is None else now
    listing = place.files()
    journals = journals_under(place, listing)
    expired, kept_runs = _sort_out(place, journals, now, limit, report)
    run_ids = {journal.name: place.run_id(journal) for journal in expired}
    runs = Runs({run_id for run_id in run_ids.values() if run_id is not None} - kept_runs)
    copies, report.problems = find_copies(runs, with_indexes=False) if runs.run_ids else ([], [])
    names = {file.name for file in listing}
    gone = Runs()
    for journal in expired:
        run_id = run_ids[journal.name]
        decision = Decision(place.where(journal.name), REMOVED, now - journal.mtime, journal.size)
        decision.copies = [copy for copy in copies if copy.run_id is not None and copy.run_id == run_id]
        copies = [copy for copy in copies if copy not in decision.copies]  # two files of one run: copies go once
        if isinstance(place, LocalPlace):
            decision.copies[:0] = sidecars_of(place.path(journal.name))
        decision.copies.extend(manifest_lines_of(place, journal, names))
        report.decisions.append(decision)
        if not dry_run:
            try:
                audit.record_delete(
                    decision.journal, place.path(journal.name) if isinstance(place, LocalPlace) else None
                )
                place.remove_journal(journal)
            except (OSError, JournalError) as error:
                decision.action, decision.error = FAILED, getattr(error, "strerror", None) or str(error)
                continue
            _remove_all(decision.copies, report.problems)
        gone.run_ids.update(runs.run_ids & {run_id})
    # index rows are found per index, not per run: once, for the runs whose journals went
    report.index_rows = index_rows(gone, (), report.problems)
    if not dry_run:
        _remove_all(report.index_rows, report.problems)
    return report


def _sort_out(
    place: Place, journals: list[StoredJournal], now: float, limit: float, report: PruneReport
) -> tuple[list[StoredJournal], set[str]]:
    """The expired journals, and the runs the kept ones hold (their copies stay). A tagged journal is kept,
    and so is every journal beside a tags manifest that cannot be read (what is tagged there is unknown)."""
    expired: list[StoredJournal] = []
    kept_runs: set[str] = set()
    manifests: dict[str, dict[str, dict[str, Any]] | TagError] = {}
    for journal in journals:
        if journal.parent not in manifests:
            try:
                manifests[journal.parent] = read_manifest(place, journal.parent)
            except TagError as error:
                manifests[journal.parent] = error
        manifest = manifests[journal.parent]
        unreadable = isinstance(manifest, TagError)
        tags = [] if isinstance(manifest, TagError) else sorted(tags_of(manifest, journal))
        age = now - journal.mtime
        if age > limit and not tags and not unreadable:
            expired.append(journal)
            continue
        run_id = place.run_id(journal)
        if run_id is not None:
            kept_runs.add(run_id)
        if age <= limit:
            report.kept_young += 1
            continue
        action = KEPT_UNKNOWN_TAGS if unreadable else KEPT_TAGGED
        why = str(manifest) if unreadable else None
        report.decisions.append(Decision(place.where(journal.name), action, age, journal.size, tags, error=why))
    return expired, kept_runs


def _remove_all(copies: list[Found], problems: list[str]) -> None:
    for copy in copies:
        try:
            copy.remove()
        except (OSError, JournalError) as error:
            problems.append(f"{copy.kind} {copy.where}: {getattr(error, 'strerror', None) or error}")


def _finish_removals(place: LocalPlace) -> list[str]:
    import shutil

    finished = []
    for leftover in place.leftovers():
        shutil.rmtree(leftover, ignore_errors=True)
        if not leftover.exists():
            finished.append(str(leftover))
    return finished
