"""Find secrets that redaction missed, with the detectors redaction uses (``journal.detectors``).

Every string in an event (envelope and payload) is checked with its JSON path, and so
is every object key; a number under a sensitive key counts too. Detectors, most
specific first (a value reported by one is not reported again by the next):
``format:<name>`` (a known credential shape), ``key-name`` (a value under a key such as
``password`` or in a header pair such as ``["Authorization", ...]``), ``assignment``
(``DB_PASSWORD=...``, ``?client_secret=...`` in text), JSON inside a string, ``base64``
of any of these, and ``entropy`` (a random-looking token; ids, hashes, names, URLs and
values under id or hash keys are not candidates).

Values are never kept or printed in full: a finding holds a masked preview.

From the app: ``flagged_seqs(journal, progress=..., cancelled=...)`` for the timeline
marks (in a worker thread), ``scan_event(event)`` for each event follow mode adds,
``mask_secrets(payload)`` before showing a payload.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..journal import Event, Journal, JournalError, detectors
from ..journal.progress import CancelCheck, ProgressCallback
from ..journal.skipped import UNREADABLE_EXAMPLES, add_skipped_lines

PROGRESS_EVERY = 4096
MAX_FINDINGS_KEPT = 10_000  # beyond this, findings are counted (and their seqs flagged) but not listed

MIN_KEYED_VALUE_CHARS = detectors.MIN_KEYED_VALUE_CHARS
MIN_KEY_CHARS = 8  # shorter object keys cannot hold a credential
SKIPPED_ENVELOPE_FIELDS = frozenset(
    {"event_hash", "prev_event_hash", "event_id", "parent_event_id", "run_id", "recorded_at"}
)
shannon_entropy = detectors.shannon_entropy
is_sensitive_key = detectors.is_secret_key


def mask(value: str) -> str:
    """A preview that identifies a value without revealing it: a few edge characters and the length."""
    length = len(value)
    if length <= 8:
        return "*" * length + f" ({length} chars)"
    shown = 2 if length < 16 else 4
    return f"{value[:shown]}…{value[-2:]} ({length} chars)"


# -- findings ------------------------------------------------------------------
class Finding(NamedTuple):
    """One possible secret, its value masked. A NamedTuple, not a frozen dataclass: the module is on the app's
    first-frame path (for ``mask_secrets``), where a frozen dataclass costs 3 M instructions at import."""

    seq: int
    path: str  # JSON path in the event, e.g. payload.arguments.headers.x-api-key
    detector: str  # format:<name> | key-name | entropy
    masked: str
    kind: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "path": self.path,
            "detector": self.detector,
            "masked": self.masked,
            "detail": self.detail,
        }

    def to_text(self) -> str:
        detail = f"  ({self.detail})" if self.detail else ""
        return f"seq {self.seq:>7}  {self.kind:<16} {self.path}  {self.detector}  {self.masked}{detail}"


def _path_text(parts: tuple[str | int, ...]) -> str:
    """payload.arguments.headers.x-api-key, tool_calls[0], or ["odd key"] for keys with other characters."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.replace("_", "").replace("-", "").isalnum():
            text += f".{part}" if text else part
        else:
            text += "[" + '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"' + "]"
    return text


def _reported(hit: detectors.Hit) -> str:
    return f"format:{hit.detector}" if hit.detector in detectors.FORMAT_NAMES else hit.detector


def scan_string(text: str, key: str | None) -> tuple[str, str, str] | None:
    """(detector, masked value, detail) for the first secret in ``text`` under ``key``, else None."""
    if len(text) < MIN_KEYED_VALUE_CHARS:
        return None
    hits = detectors.find_secrets(text, key, first=True)
    if not hits:
        return None
    hit = hits[0]
    shown = text if hit.detector in ("key-name", "json") or hit.end <= hit.start else text[hit.start : hit.end]
    return _reported(hit), mask(shown), hit.detail


def scan_key(key: str) -> tuple[str, str, str] | None:
    """A secret used as an object key (a token as a dict key), else None."""
    if len(key) < MIN_KEY_CHARS:
        return None
    hit = detectors.secret_in_key(key)
    return None if hit is None else (_reported(hit), mask(key), "used as a key")


def scan_number(value: Any, key: str | None) -> tuple[str, str, str] | None:
    """A number under a sensitive key (a numeric password), else None."""
    if key is None or not detectors.is_secret_number(value) or not detectors.is_secret_key(key):
        return None
    return "key-name", mask(str(value)), f"number under key {key!r}"


def scan_event(event: Event) -> list[Finding]:
    """Findings in one event, in document order (the app calls this for events that arrive in follow mode).

    An explicit stack rather than recursion: a line may nest 1,024 levels deep, past
    Python's recursion limit. A path is a chain of (parent, key) pairs, turned into
    text only for a finding.
    """
    findings: list[Finding] = []
    stack: list[tuple[Any, str | None, tuple[Any, str | int]]] = [(event.payload, None, (None, "payload"))]
    stack.extend(
        (value, name, (None, name))
        for name, value in reversed(event.raw.items())
        if name not in SKIPPED_ENVELOPE_FIELDS and name != "payload"
    )

    def found(node: tuple[Any, str | int], hit: tuple[str, str, str]) -> None:
        findings.append(Finding(event.seq, _path_text(_parts_of(node)), hit[0], hit[1], event.kind, hit[2]))

    while stack:
        value, key, node = stack.pop()
        kind = type(value)
        if kind is str:
            if len(value) >= MIN_KEYED_VALUE_CHARS:
                hit = scan_string(value, key)
                if hit is not None:
                    found(node, hit)
        elif kind is dict:
            pair = detectors.pair_name(value) if len(value) == 2 else None
            children = []
            for child_key, child in value.items():
                child_kind = type(child)
                if len(child_key) >= MIN_KEY_CHARS:
                    key_hit = scan_key(child_key)
                    if key_hit is not None:
                        found((node, child_key), key_hit)
                if child_kind is str or child_kind is dict or child_kind is list:
                    under = (
                        pair
                        if pair is not None and child_key == "value" and detectors.is_secret_key(pair)
                        else child_key
                    )
                    children.append((child, under, (node, child_key)))  # {"name": "Authorization", "value": ...}
                elif (
                    (child_kind is int or child_kind is float)
                    and detectors.is_secret_number(child)
                    and (
                        detectors.is_secret_key(child_key)
                        or child_key == "value"
                        and pair is not None
                        and detectors.is_secret_key(pair)
                    )
                ):
                    found((node, child_key), ("key-name", mask(str(child)), f"number under key {child_key!r}"))
            stack.extend(reversed(children))
        elif kind is list:
            pair_key = value[0] if detectors.pair_secret_index(value) is not None else None
            for index in range(len(value) - 1, -1, -1):
                child_key = pair_key if index == 1 and pair_key is not None else key
                child = value[index]
                if type(child) in _SCALARS:
                    number_hit = scan_number(child, child_key) if child_key is not None else None
                    if number_hit is not None:
                        found((node, index), number_hit)
                else:
                    stack.append((child, child_key, (node, index)))
    return findings


def _parts_of(node: tuple[Any, str | int] | None) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    while node is not None:
        node, part = node
        parts.append(part)
    return tuple(reversed(parts))


_SCALARS = frozenset({int, float, bool, type(None)})


MASK_MAX_DEPTH = 200


def mask_secrets(value: Any, key: str | None = None, *, _depth: int = 0) -> tuple[Any, int]:
    """A copy of a JSON value with every string, key and number a detector flags replaced by
    its masked form, and how many were masked: for reports and the app's panes.

    Anything nested deeper than MASK_MAX_DEPTH is replaced by a placeholder: nobody reads
    it on a page, and a line may nest deeper than Python's recursion limit.
    """
    kind = type(value)
    if kind is str:
        hit = scan_string(value, key)
        return (f"[masked {hit[0]}: {hit[1]}]", 1) if hit is not None else (value, 0)
    if kind is not dict and kind is not list:
        number_hit = scan_number(value, key)
        return (f"[masked {number_hit[0]}: {number_hit[1]}]", 1) if number_hit is not None else (value, 0)
    if _depth >= MASK_MAX_DEPTH:
        return f"[nested deeper than {MASK_MAX_DEPTH} levels: not shown]", 0
    total = 0
    if kind is dict:
        masked_dict = {}
        pair = detectors.pair_name(value) if len(value) == 2 else None
        for child_key, child in value.items():
            value_key = (
                pair if pair is not None and child_key == "value" and detectors.is_secret_key(pair) else child_key
            )
            masked, count = mask_secrets(child, value_key, _depth=_depth + 1)
            key_hit = scan_key(child_key)
            if key_hit is not None:
                child_key = f"[masked {key_hit[0]}: {key_hit[1]}]"
                count += 1
            masked_dict[child_key] = masked
            total += count
        return masked_dict, total
    masked_list = []
    pair_key = value[0] if detectors.pair_secret_index(value) is not None else None
    for index, child in enumerate(value):
        masked, count = mask_secrets(child, pair_key if index == 1 and pair_key else key, _depth=_depth + 1)
        masked_list.append(masked)
        total += count
    return masked_list, total


class ScanReport:
    """What a scan found, filled in as it goes. A plain class, not a dataclass, for the reason ``Finding`` is a
    NamedTuple; ``scan_events`` makes it (a dataclass's generated ``__init__``, ``__repr__`` and ``__eq__`` were
    used by nothing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.events = 0
        self.findings: list[Finding] = []
        self.total_findings = 0
        self.by_detector: Counter[str] = Counter()
        self.unreadable = 0
        self.unreadable_examples: list[str] = []
        self.ignored = 0  # findings left out by --ignore patterns
        self.complete = True
        self._flagged: array[int] = array("Q")

    @property
    def clean(self) -> bool:
        return self.total_findings == 0

    @property
    def flagged_seqs(self) -> frozenset[int]:
        """Seqs of events holding at least one finding: what the app marks in the timeline."""
        return frozenset(self._flagged)

    def add(self, findings: list[Finding]) -> None:
        if not findings:
            return
        self._flagged.append(findings[0].seq)
        self.total_findings += len(findings)
        for finding in findings:
            self.by_detector[finding.detector] += 1
        room = MAX_FINDINGS_KEPT - len(self.findings)
        if room > 0:
            self.findings.extend(findings[:room])

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "clean": self.clean,
            "complete": self.complete,
            "events": self.events,
            "total_findings": self.total_findings,
            "flagged_events": len(self._flagged),
            "by_detector": dict(self.by_detector.most_common()),
            "findings": [f.to_json() for f in self.findings],
            "findings_listed": len(self.findings),
            "ignored": self.ignored,
            "unreadable": {"count": self.unreadable, "examples": self.unreadable_examples},
        }

    def to_text(self) -> str:
        lines = [f.to_text() for f in self.findings]
        if self.total_findings > len(self.findings):
            lines.append(f"... and {self.total_findings - len(self.findings):,} more finding(s) not listed")
        if self.clean:
            summary = f"{self.path}: clean. {self.events:,} events scanned, no secrets found."
        else:
            detectors = ", ".join(f"{name} {count:,}" for name, count in self.by_detector.most_common())
            summary = (
                f"{self.path}: {self.total_findings:,} possible secret(s) in {len(self._flagged):,} event(s) "
                f"of {self.events:,} ({detectors}). Values are masked."
            )
        if self.ignored:
            summary += f" {self.ignored:,} finding(s) matched --ignore patterns and are not counted."
        if self.unreadable:
            summary += f" {self.unreadable} unreadable line(s) were skipped; first: {self.unreadable_examples[0]}"
        if not self.complete:
            summary += " Cancelled: only part of the journal was scanned."
        return "\n".join(lines + [summary])


class PathFilter:
    """Findings to leave out, by JSON path pattern: ``*`` is one path segment or index,
    ``**`` any run of them, the rest literal (``payload.result.rows[*].blob``, ``**.signature``)."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(patterns)
        self._regex = (
            re.compile("|".join(f"(?:{self._translate(p)})" for p in self.patterns)) if self.patterns else None
        )

    @staticmethod
    def _translate(pattern: str) -> str:
        parts = re.split(r"(\*\*|\*)", pattern)
        return (
            "".join(".*" if part == "**" else r"[^.\[\]]*" if part == "*" else re.escape(part) for part in parts)
            + r"\Z"
        )

    def ignores(self, finding: Finding) -> bool:
        return self._regex is not None and self._regex.match(finding.path) is not None


def scan_events(
    events: Iterable[Event | JournalError],
    *,
    path: str = "",
    total: int = 0,
    ignore: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> ScanReport:
    """Scan an event stream, leaving out findings whose path matches an ``ignore`` pattern
    (see PathFilter); stops early (``complete=False``) when ``cancelled()``."""
    report = ScanReport(path=path)
    path_filter = PathFilter(ignore)
    for done, item in enumerate(events, 1):
        if isinstance(item, JournalError):
            report.unreadable += 1
            if len(report.unreadable_examples) < UNREADABLE_EXAMPLES:
                report.unreadable_examples.append(str(item))
        else:
            report.events += 1
            findings = scan_event(item)
            if findings and path_filter.patterns:
                kept = [finding for finding in findings if not path_filter.ignores(finding)]
                report.ignored += len(findings) - len(kept)
                findings = kept
            report.add(findings)
        if done % PROGRESS_EVERY == 0:
            if progress is not None:
                progress(done, max(total, done))
            if cancelled is not None and cancelled():
                report.complete = False
                break
    return report


def scan_journal(
    journal: Journal,
    *,
    ignore: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> ScanReport:
    """Scan the events indexed in ``journal`` (call ``journal.index()`` first)."""
    report = scan_events(
        journal.events(),
        path=str(journal.path),
        total=len(journal),
        ignore=ignore,
        progress=progress,
        cancelled=cancelled,
    )
    report.unreadable += add_skipped_lines(journal, report.unreadable_examples)
    return report


def flagged_seqs(
    journal: Journal, *, progress: ProgressCallback | None = None, cancelled: CancelCheck | None = None
) -> frozenset[int]:
    """Seqs of the events with a possible secret, for the app's timeline marks."""
    return scan_journal(journal, progress=progress, cancelled=cancelled).flagged_seqs
