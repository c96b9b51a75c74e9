"""The one error every importer raises on bad input."""

from __future__ import annotations

from ..journal.errors import JournalError


class TraceImportError(JournalError, ValueError):
    """A foreign trace that cannot be imported. The message names the file, the record
    (line, span id, interaction index, zip member) and what was expected; the CLI prints
    it as one line, like every journal error."""

    def __init__(self, path: str, record: str | None, expected: str) -> None:
        super().__init__(f"{record}: {expected}" if record else expected, path=path)
        self.record = record
        self.expected = expected


def not_json(path: str, record: str, expected: str, reason: str) -> TraceImportError:
    """The error for a record that does not decode: what was expected, then why (orjson's message)."""
    return TraceImportError(path, record, f"{expected} (cut short or not JSON: {reason})")
