"""What a foreign trace may put into a journal: plain JSON within limits, or a named refusal.

A trace is as hostile as a journal. Every record an importer makes goes through ``plain_record``
(and a whole YAML document through ``plain_json`` before it is mapped), which leaves only what a
journal line can hold: objects with string keys, lists, strings in UTF-8, finite numbers (integers
beyond JSON's exact range become text, as OTLP's int64 do), true, false and null; nested at most
``MAX_DEPTH`` levels (the journal's writer writes 255, and the record sits a few levels down in its
event). Each record is weighed (characters, escapes counted at their worst) so that no event line
outgrows what the journal's reader takes, and all the records of one import share a ``TextBudget``
(a small trace can repeat one text many times). For YAML (aliases share one object between many
places) the number of values visited is bounded, so an alias bomb ("billion laughs") is refused
after ``max_values`` steps instead of being expanded, and an alias that holds itself is refused.
Names the trace chose become file names and run ids only through ``safe_id``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..journal.canonical import MAX_EXACT_INT
from .errors import TraceImportError

MAX_DEPTH = 200
#: Characters of text in one record (escapes counted at six each); the journal's reader takes
#: lines of 16 MiB, and a record's text can appear twice in its events (a body and its summary).
MAX_RECORD_CHARS = 6 * 2**20
#: Values visited in a whole YAML document, aliases expanded.
MAX_YAML_VALUES = 2_000_000
#: Characters of text in all the records of one import: a small trace can repeat one big text many
#: times (YAML aliases, Inspect attachments and input_refs), each repeat written out in the journal.
MAX_IMPORT_CHARS = 2**30
_KEY_SPELLING = {True: "true", False: "false", None: "null"}


class _Refused(Exception):
    def __init__(self, trail: list[Any], expected: str) -> None:
        super().__init__(expected)
        self.trail = list(trail)
        self.expected = expected


def shown(text: Any, limit: int = 40) -> str:
    """A key or value of the trace as a short printable ASCII string, for error messages."""
    spelled = "".join(char if " " <= char <= "~" else "?" for char in str(text)[:limit])
    return spelled + ("..." if len(str(text)) > limit else "")


def trail_text(trail: list[Any]) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else f".{shown(key)}" for key in trail).lstrip(".")


@dataclass
class TextBudget:
    """The text one import may still write (shared by its records; see ``MAX_IMPORT_CHARS``)."""

    limit: int = field(default_factory=lambda: MAX_IMPORT_CHARS)
    left: int = -1

    def __post_init__(self) -> None:
        self.left = self.limit if self.left < 0 else self.left


class _Walk:
    def __init__(
        self, *, keep_bytes: bool, max_values: int | None, max_chars: int, budget: TextBudget | None = None
    ) -> None:
        self.budget = budget
        self.keep_bytes = keep_bytes
        self.max_values = max_values
        self.max_chars = max_chars
        self.values = 0
        self.chars = 0
        self.trail: list[Any] = []
        self.open: set[int] = set()  # containers being walked: meeting one again is a cycle

    def refuse(self, expected: str) -> _Refused:
        return _Refused(self.trail, expected)

    def text(self, value: str) -> str:
        weight = len(value) if value.isascii() and value.isprintable() else 6 * len(value)
        self.chars += weight
        if self.budget is not None:
            self.budget.left -= weight
            if self.budget.left < 0:
                raise self.refuse(
                    f"an import of at most {self.budget.limit >> 20:,} MiB of text once aliases and references "
                    "are followed (a trace that repeats one text without end?)"
                )
        if self.chars > self.max_chars:
            raise self.refuse(
                f"a record of at most {self.max_chars // 2**20} MiB of text (a journal line holds at most 16 MiB)"
            )
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise self.refuse("text in UTF-8 (found a lone surrogate, which no UTF-8 text holds)") from None
        return value

    def key(self, key: Any) -> str:
        if type(key) is str:
            return self.text(key)
        if key is None or type(key) is bool:
            return _KEY_SPELLING[key]
        if type(key) is int or (type(key) is float and math.isfinite(key)):
            return str(key)
        raise self.refuse(f"object keys that are strings (found a key of type {type(key).__name__})")

    def walk(self, value: Any, depth: int) -> Any:
        if self.max_values is not None:
            self.values += 1
            if self.values > self.max_values:
                raise self.refuse(f"at most {self.max_values:,} values once YAML aliases are expanded (an alias bomb?)")
        kind = type(value)
        if kind is str:
            return self.text(value)
        if value is None or kind is bool:
            return value
        if kind is int:
            return value if -MAX_EXACT_INT <= value <= MAX_EXACT_INT else str(value)
        if kind is float:
            if not math.isfinite(value):
                raise self.refuse(f"a finite number (found {value})")
            return value
        if kind is dict or kind is list or kind is tuple:
            return self.container(value, depth)
        if kind is bytes and self.keep_bytes:
            self.chars += 2 * len(value)
            return value
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        raise self.refuse(f"a JSON value (found a {kind.__name__})")

    def container(self, value: Any, depth: int) -> Any:
        if depth >= MAX_DEPTH:
            raise self.refuse(f"values nested at most {MAX_DEPTH} levels deep")
        if id(value) in self.open:
            raise self.refuse("values that do not contain themselves (a YAML alias inside its own anchor)")
        self.open.add(id(value))
        trail = self.trail
        try:
            if type(value) is dict:
                copied: dict[str, Any] = {}
                for key, item in value.items():
                    trail.append(key if type(key) is str else str(key))
                    copied[self.key(key)] = self.walk(item, depth + 1)
                    trail.pop()
                return copied
            items = []
            for index, item in enumerate(value):
                trail.append(index)
                items.append(self.walk(item, depth + 1))
                trail.pop()
            return items
        finally:
            self.open.discard(id(value))


def plain_json(
    value: Any,
    path: Path,
    where: str | None,
    *,
    keep_bytes: bool = False,
    max_values: int | None = None,
    max_chars: int = MAX_RECORD_CHARS,
    budget: TextBudget | None = None,
) -> Any:
    """``value`` as plain JSON (a copy); raises TraceImportError naming ``where`` and the path inside it."""
    walk = _Walk(keep_bytes=keep_bytes, max_values=max_values, max_chars=max_chars, budget=budget)
    try:
        return walk.walk(value, 0)
    except _Refused as refused:
        inside = trail_text(refused.trail)
        record = ": ".join(part for part in (where, inside) if part) or None
        raise TraceImportError(str(path), record, refused.expected) from None
    except RecursionError:
        raise TraceImportError(str(path), where, f"values nested at most {MAX_DEPTH} levels deep") from None


#: The fields of a record that hold no trace content (flags and the agent scope).
_NOT_CONTENT = frozenset({"scope", "content_complete", "missing"})


def plain_record(record: Any, path: Path, where: str | None, budget: TextBudget | None = None) -> Any:
    """``record`` (a records.* dataclass) with every field of content made plain JSON, weighed as one
    record (and against the import's ``budget``); raises TraceImportError naming ``where`` and the field."""
    walk = _Walk(keep_bytes=False, max_values=None, max_chars=MAX_RECORD_CHARS, budget=budget)
    if getattr(record, "at", None) is not None:
        record.at = rfc3339_or_none(record.at)
    try:
        for field in dataclasses.fields(record):
            if field.name not in _NOT_CONTENT:
                walk.trail = [field.name]
                setattr(record, field.name, walk.walk(getattr(record, field.name), 1))
    except _Refused as refused:
        raise TraceImportError(str(path), f"{where}: {trail_text(refused.trail)}", refused.expected) from None
    except RecursionError:
        raise TraceImportError(str(path), where, f"values nested at most {MAX_DEPTH} levels deep") from None
    return record


def rfc3339_or_none(text: Any) -> str | None:
    """``text`` when it is an RFC 3339 time (what ``recorded_at`` holds), else None: the writer stamps the
    event instead, and the record's source still points at what the trace said."""
    if not isinstance(text, str) or not 10 <= len(text) <= 40 or not text.isascii() or not text.isprintable():
        return None
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return text


def safe_id(text: str, limit: int = 100) -> str:
    """An id built from ones the trace chose, as letters, digits, ``-`` and ``_`` (at most ``limit``): no
    dots, slashes or controls, so it is safe as a file name too."""
    spelled = "".join(char if char.isascii() and (char.isalnum() or char in "-_") else "_" for char in text)
    return spelled[:limit]


def run_file_names(names: list[str]) -> list[str]:
    """A journal file name for each run name (built from ids the trace chose): ``safe_id`` of it, unique
    (a clash, case aside, gets ``-2``, ``-3``...)."""
    chosen: list[str] = []
    taken: set[str] = set()
    for name in names:
        base = safe_id(name) or "run"
        candidate, number = base, 1
        while candidate.lower() in taken:
            number += 1
            candidate = f"{base}-{number}"
        taken.add(candidate.lower())
        chosen.append(candidate + ".jsonl")
    return chosen
