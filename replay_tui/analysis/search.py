"""Find events: free text plus field filters (the marks they filter on are in ``marks.py``).

A query is words and ``field:value`` filters, all of which must match::

    kind:tool.result tool:customer_query timeout
    is:error step:step-03 "connection reset"
    seq:100..200 payload.arguments.customer_id:42

Searching walks positions in order and is cancellable; each line is tested on
its bytes first so only plausible lines are parsed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator

import orjson

from ..journal import Event, Journal, JournalError
from ..journal.dialects import V1
from ..journal.model import MODEL_RESPONSE
from ..journal.progress import CancelCheck
from .marks import (
    CONSUMED,
    DIVERGENT,
    ERROR,
    REDACTED,
    TIMEOUT,
    UNUSED,
    ReplayMarks,
    event_marks,
    has_redaction,
    line_of,
)

BLOCK_BYTES = 1 << 20
BACKWARD_BLOCK_LINES = 2048

FIELD_HELP = {
    "kind": "event kind; a prefix before a dot matches the family (kind:tool = tool.call and tool.result)",
    "tool": "tool name of a tool.call/tool.result, or a tool asked for in a model.response",
    "step": "step_id",
    "seq": "one seq (seq:12) or a range (seq:10..20)",
    "parent": "parent_event_id (full id or its seq)",
    "call": "call_id",
    "status": "run.ended status",
    "is": "error, timeout, redacted, divergent, unused, consumed, observation",
    "re": "a Python regular expression searched in the event's line (re:'a\\d+' quoted; a query that starts with re: is one regex)",
}


class QueryError(ValueError):
    """A query that cannot be understood; the message says what was expected."""


@dataclass(frozen=True)
class Filter:
    name: str
    value: str

    def matches(self, event: Event | JournalError, line: bytes, replay: ReplayMarks | None) -> bool:
        if self.name == "re":
            return _regex(self.value).search(line.decode("utf-8", "replace")) is not None
        if self.name == "is":
            if self.value == "observation":
                return isinstance(event, Event) and event.is_observation
            return self.value in event_marks(event, line, replay)
        if isinstance(event, JournalError):
            return False
        payload = event.payload
        if self.name == "kind":
            return event.kind == self.value or event.kind.startswith(self.value.rstrip(".*") + ".")
        if self.name == "tool":
            if payload.get("tool") == self.value:
                return True
            response = payload.get("response") if event.kind == MODEL_RESPONSE else None
            calls = response.get("tool_calls") if isinstance(response, dict) else None
            return isinstance(calls, list) and any(isinstance(c, dict) and c.get("name") == self.value for c in calls)
        if self.name == "step":
            return event.step_id == self.value
        if self.name == "seq":
            low, _, high = self.value.partition("..")
            if not _:
                return event.seq == int(low)
            return (not low or event.seq >= int(low)) and (not high or event.seq <= int(high))
        if self.name == "parent":
            parent = event.parent_event_id or ""
            return parent == self.value or (self.value.isdigit() and parent.endswith(":" + self.value))
        if self.name == "call":
            return payload.get("call_id") == self.value
        if self.name == "status":
            return payload.get("status") == self.value
        return _scalar_text(_dotted(event.raw, self.name)) == self.value

    def prefilter(self) -> tuple[str, bytes] | None:
        """How a line can be rejected without parsing: ("bytes", needle) that every
        matching line contains, ("lower", needle) in its lowercase form, or
        ("redaction", b"") for the redaction markers. None: it must be parsed."""
        if self.name in ("kind", "tool", "step", "call", "status") and self.value.isascii():
            return "bytes", self.value.rstrip(".*").encode()
        if self.name == "is" and self.value == REDACTED:
            return "redaction", b""
        if self.name == "is" and self.value == TIMEOUT:
            return "lower", b"timeout"
        if (self.name == "seq" and ".." not in self.value) or ("." in self.name and self.value.isascii()):
            return "bytes", self.value.encode()
        return None


@dataclass(frozen=True)
class Query:
    source: str
    words: tuple[str, ...] = ()  # lowercased free text
    filters: tuple[Filter, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not self.words and not self.filters

    def matches(self, event: Event | JournalError, line: bytes, replay: ReplayMarks | None = None) -> bool:
        if self.words:
            text = line.decode("utf-8", "replace").lower()
            if isinstance(event, JournalError):
                text += " " + str(event).lower()
            if not all(word in text for word in self.words):
                return False
        return all(f.matches(event, line, replay) for f in self.filters)

    @cached_property
    def _plan(self) -> tuple[tuple[bytes, ...], tuple[bytes, ...], bool]:
        """(needles in the line, needles in the lowercased line, needs a redaction marker)."""
        exact: list[bytes] = []
        lowered: list[bytes] = [word.encode() for word in self.words if word.isascii()]
        redaction = False
        for f in self.filters:
            plan = f.prefilter()
            if plan is None:
                continue
            kind, needle = plan
            if kind == "bytes":
                exact.append(needle)
            elif kind == "lower":
                lowered.append(needle)
            else:
                redaction = True
        return tuple(exact), tuple(lowered), redaction

    def may_match(self, line: bytes) -> bool:
        """Byte-level test that never rejects a match (so parsing can be skipped)."""
        exact, lowered, redaction = self._plan
        for needle in exact:
            if needle not in line:
                return False
        if redaction and not has_redaction(line):
            return False
        if lowered and line.isascii():
            text = line.lower()
            for needle in lowered:
                if needle not in text:
                    return False
        return True


def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)  # the re module caches compiled patterns


def _checked_regex_filter(pattern: str) -> Filter:
    try:
        _regex(pattern)
    except re.error as error:
        raise QueryError(f"re:{pattern} — not a regular expression ({error})") from None
    return Filter("re", pattern)


def parse_query(text: str) -> Query:
    """Parse a query; raises QueryError naming the term it cannot use. A query that starts with
    ``re:`` is one regular expression, spaces and backslashes included."""
    if text.startswith("re:") and text[3:]:
        return Query(source=text, filters=(_checked_regex_filter(text[3:]),))
    try:
        terms = shlex.split(text)
    except ValueError as error:
        raise QueryError(f"cannot split the query ({error}); close the quote") from None
    words: list[str] = []
    filters: list[Filter] = []
    for term in terms:
        name, colon, value = term.partition(":")
        if colon and name and value and (name in FIELD_HELP or "." in name):
            if name == "seq" and not _is_seq_value(value):
                raise QueryError(f"seq:{value} — expected a seq like seq:12 or a range like seq:10..20")
            if name == "is" and value not in (ERROR, TIMEOUT, REDACTED, DIVERGENT, UNUSED, CONSUMED, "observation"):
                raise QueryError(f"is:{value} — expected one of: {FIELD_HELP['is']}")
            filters.append(_checked_regex_filter(value) if name == "re" else Filter(name, value))
        elif colon and name.isidentifier() and value and not value.startswith("/"):
            known = ", ".join(sorted(FIELD_HELP))
            raise QueryError(f"unknown filter '{name}:' — known filters: {known}, or a dotted path like payload.tool:")
        else:
            words.append(term.lower())
    return Query(source=text, words=tuple(words), filters=tuple(filters))


def iter_lines(journal: Journal, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """(position, line bytes) for ``start <= position < stop``, reading big blocks.

    One read per block instead of one per line is what makes a full scan of a
    million-line journal take a second or two. Other dialects fall back to
    re-serialising each event.
    """
    stop = min(stop, len(journal))
    if journal.dialect != V1:
        for position in range(start, stop):
            yield position, line_of(journal, position)
        return
    position = start
    while position < stop:
        for line in journal.line_run(position, BLOCK_BYTES)[: stop - position]:
            yield position, line
            position += 1


def iter_lines_backwards(journal: Journal, start: int, stop: int = -1) -> Iterator[tuple[int, bytes]]:
    """(position, line bytes) for ``start >= position > stop``, newest first."""
    high = min(start, len(journal) - 1)
    while high > stop:
        low = max(stop + 1, high - BACKWARD_BLOCK_LINES + 1)
        yield from reversed(list(iter_lines(journal, low, high + 1)))
        high = low - 1


def iter_matches(
    journal: Journal,
    query: Query,
    lines: Iterable[tuple[int, bytes]],
    cancelled: CancelCheck | None = None,
    replay: ReplayMarks | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[int]:
    """The positions among ``lines`` (from iter_lines) whose event matches ``query``.

    ``progress(scanned)`` is called every few thousand lines.
    """
    for count, (position, line) in enumerate(lines):
        if count % 4096 == 0:
            if cancelled is not None and cancelled():
                return
            if progress is not None and count:
                progress(count)
        if journal.dialect == V1 and not query.may_match(line):
            continue
        event = journal.try_event(position)
        if query.matches(event, line or line_of(journal, position, event), replay):
            yield position


def find_next(
    journal: Journal,
    query: Query,
    start: int,
    direction: int = 1,
    wrap: bool = True,
    cancelled: CancelCheck | None = None,
    replay: ReplayMarks | None = None,
    progress: Callable[[int], None] | None = None,
) -> int | None:
    """The first match after (``direction`` 1) or before (-1) ``start``, wrapping around once."""
    count = len(journal)
    if count == 0:
        return None
    if direction > 0:
        order: Iterable[tuple[int, bytes]] = iter_lines(journal, start + 1, count)
        if wrap:
            order = _chain(order, iter_lines(journal, 0, min(start + 1, count)))
    else:
        order = iter_lines_backwards(journal, start - 1)
        if wrap:
            order = _chain(order, iter_lines_backwards(journal, count - 1, max(start - 1, -1)))
    return next(iter_matches(journal, query, order, cancelled, replay, progress), None)


def matching_positions(
    journal: Journal, query: Query, start: int = 0, stop: int | None = None, **options: Any
) -> Iterator[int]:
    """Every match in ``[start, stop)`` in order (for filters, exports and tests)."""
    return iter_matches(journal, query, iter_lines(journal, start, len(journal) if stop is None else stop), **options)


def _chain(*parts: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    for part in parts:
        yield from part


def _is_seq_value(value: str) -> bool:
    low, sep, high = value.partition("..")
    if not sep:
        return low.isdigit()
    return (not low or low.isdigit()) and (not high or high.isdigit()) and bool(low or high)


def _dotted(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(obj, dict):
            obj = obj.get(part)
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return None
    return obj


def _scalar_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return orjson.dumps(value).decode()
