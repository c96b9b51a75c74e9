"""The marks of an event the timeline shows and ``is:`` filters on: error, timeout, redacted, and what the
last replay said of it. Apart from the search (``search.py``), which loads with the first search or filter:
the first frame draws marks, and finds nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import orjson

from ..journal import Event, Journal, JournalError
from ..journal.dialects import V1
from ..journal.model import MODEL_RESPONSE, RUN_ENDED, TOOL_RESULT

# Marks shown in the timeline and usable as `is:` filters.
ERROR, TIMEOUT, REDACTED, DIVERGENT, UNUSED, CONSUMED = (
    "error",
    "timeout",
    "redacted",
    "divergent",
    "unused",
    "consumed",
)
REDACTION_MARKERS = (b"[REDACTED", b"\xc2\xabredacted", b'"redacted":true', b'"redactions":')


def has_redaction(line: bytes) -> bool:
    """True if the line carries a redaction marker the harness writes."""
    return any(marker in line for marker in REDACTION_MARKERS)


class ReplayMarks(NamedTuple):
    """What a replay said about each recorded seq; fed to the app by the replay view. A NamedTuple, not a
    frozen dataclass (3 M instructions at import, on the first frame's path).

    ``divergent``: seqs where replay disagreed with the recording (the first one is
    where replay stopped). ``consumed``: seqs replay served or matched. ``unused``:
    recorded seqs replay never reached.
    """

    divergent: frozenset[int] = frozenset()
    consumed: frozenset[int] = frozenset()
    unused: frozenset[int] = frozenset()
    label: str = "replay"

    @property
    def first_divergence(self) -> int | None:
        return min(self.divergent) if self.divergent else None

    def mark_of(self, seq: int) -> str | None:
        if seq in self.divergent:
            return DIVERGENT
        if seq in self.unused:
            return UNUSED
        if seq in self.consumed:
            return CONSUMED
        return None


def event_marks(event: Event | JournalError, line: bytes = b"", replay: ReplayMarks | None = None) -> frozenset[str]:
    """Marks of one event: error, timeout, redacted, and the replay mark if any."""
    if isinstance(event, JournalError):
        return frozenset({ERROR})
    marks: set[str] = set()
    payload = event.payload
    error = payload.get("error") if event.kind in (TOOL_RESULT, MODEL_RESPONSE, RUN_ENDED) else None
    if error or (event.kind == RUN_ENDED and payload.get("status") == "error"):
        marks.add(ERROR)
    if isinstance(error, dict) and (error.get("timeout") is True or "timeout" in str(error.get("type", "")).lower()):
        marks.add(TIMEOUT)
    raw_line = line or orjson.dumps(event.raw)
    if has_redaction(raw_line):
        marks.add(REDACTED)
    if replay is not None:
        mark = replay.mark_of(event.seq)
        if mark:
            marks.add(mark)
    return frozenset(marks)


def line_of(journal: Journal, position: int, event: Event | JournalError | None = None) -> bytes:
    """The bytes a query is tested on: the recorded line (v1) or the event re-serialised."""
    if journal.dialect == V1:
        return journal.line_bytes(position)
    event = journal.try_event(position) if event is None else event
    return orjson.dumps(event.raw) if isinstance(event, Event) else b""
