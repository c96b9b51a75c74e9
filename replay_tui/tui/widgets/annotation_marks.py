"""Timeline marks from the walkthrough: bookmarks, notes and possible secrets.

The timeline asks ``WalkthroughMarks.of(event)`` for each row it draws; the answer
comes first in the row's two mark columns (a bookmark or note, then a secret),
ahead of the error/replay marks.
"""

from __future__ import annotations

from ...analysis.annotations import AnnotationStore
from ...journal import Event, JournalError

BOOKMARK, NOTE, SECRET = "bookmark", "note", "secret"
GLYPHS = {BOOKMARK: "★", NOTE: "✎", SECRET: "⚠"}
MEANINGS = {
    BOOKMARK: "bookmarked (' cycles, p presents); the note shows in the status bar",
    NOTE: "has a note (a edits it)",
    SECRET: "may hold a secret that redaction missed (replay-tui scan lists them)",
}


class WalkthroughMarks:
    """Looks up the marks of one event: O(1), safe to call for every row drawn."""

    def __init__(self, store: AnnotationStore | None = None, secret_seqs: set[int] | None = None) -> None:
        self.store = store
        self.secret_seqs: set[int] = secret_seqs if secret_seqs is not None else set()

    def of(self, event: Event | JournalError) -> list[tuple[str, str]]:
        """(glyph, mark name) pairs, most important first."""
        if isinstance(event, JournalError):
            return []
        marks: list[tuple[str, str]] = []
        annotation = self.store.get(event) if self.store is not None else None
        if annotation is not None and annotation.bookmarked:
            marks.append((GLYPHS[BOOKMARK], BOOKMARK))
        elif annotation is not None and annotation.note:
            marks.append((GLYPHS[NOTE], NOTE))
        if event.seq in self.secret_seqs:
            marks.append((GLYPHS[SECRET], SECRET))
        return marks
