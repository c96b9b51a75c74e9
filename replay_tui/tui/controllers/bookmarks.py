"""Bookmarks (``m``, ``'``), notes (``a``) and presenter mode (``p``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...analysis.annotations import Annotation, AnnotationError, AnnotationStore, annotation_key
from ...journal import Event
from ..messages import Notice
from ..widgets.annotation_marks import GLYPHS
from . import ScreenParts

if TYPE_CHECKING:  # the causal index loads with the first chain shown, not for the first frame
    from ...analysis.causal import CausalIndex


class BookmarksController:
    """The annotation store of one journal and the keys that edit and visit it."""

    def __init__(self, parts: ScreenParts, *, causal: Callable[[], CausalIndex]) -> None:
        self.parts = parts
        self.causal = causal  # the screen's causal index (a journal reset makes a new one)
        self.annotations, problem = AnnotationStore.open_lenient(parts.journal.path)
        if problem is not None:
            parts.app.notify(
                f"{problem} — starting with no bookmarks; the file is moved aside on the next save",
                title="bookmarks",
                severity="warning",
                timeout=10,
            )

    def _event_under_cursor(self, action: str) -> Event | None:
        event = self.parts.timeline.cursor_event()
        if isinstance(event, Event):
            return event
        why = "no events yet" if event is None else "the line under the cursor is unreadable"
        self.parts.status.say(f"nothing to {action}: {why}")
        return None

    def _saved(self, change: str) -> None:
        self.parts.timeline.invalidate()
        self.parts.status.say(change)

    def check_stale(self) -> None:
        """Warn (from a worker) about notes made on another journal at this path."""
        self.parts.run_thread(self._check_stale, group="annotations")

    def _check_stale(self) -> None:
        stale = self.annotations.stale(self.parts.journal) if len(self.annotations) else []
        if stale:
            seqs = ", ".join(str(a.seq) for a in stale[:5]) + (" …" if len(stale) > 5 else "")
            self.parts.post_message(
                Notice(
                    f"{len(stale)} bookmark(s)/note(s) were made on another journal at this "
                    f"path (seq {seqs}); they are kept but not shown",
                    "warning",
                )
            )

    def toggle_bookmark(self) -> None:
        event = self._event_under_cursor("bookmark")
        if event is None:
            return
        try:
            on_now = self.annotations.toggle_bookmark(event)
        except AnnotationError as error:
            self.parts.app.notify(str(error), title="bookmark not saved", severity="error", timeout=10)
            return
        count = len(self.annotations.bookmarks())
        if on_now:
            self._saved(
                f"{GLYPHS['bookmark']} seq {event.seq} bookmarked ({count} in all: ' cycles, a adds a note, p presents)"
            )
        else:
            self._saved(f"seq {event.seq}: bookmark removed ({count} left)")

    def edit_note(self) -> None:
        from ..screens.prompt import PromptScreen  # a dialog: loaded when first opened, not for the first frame

        event = self._event_under_cursor("annotate")
        if event is None:
            return
        current = self.annotations.get(event)

        def chosen(text: str | None) -> None:
            if text is None:
                return
            try:
                self.annotations.set_note(event, text)
            except AnnotationError as error:
                self.parts.app.notify(str(error), title="note not saved", severity="error", timeout=10)
                return
            self._saved(f"seq {event.seq}: note saved" if text.strip() else f"seq {event.seq}: note removed")

        hint = "enter saves · empty text removes the note · escape cancels · m bookmarks the event for presenter mode"
        prompt = PromptScreen(
            f"Note on seq {event.seq} ({event.kind})",
            hint,
            value=current.note if current else "",
            placeholder="what happened here, for the team",
        )
        self.parts.app.push_screen(prompt, chosen)

    def in_this_journal(self, annotation: Annotation) -> bool:
        """The annotated event is at its seq here (not one made on another journal at this path)."""
        journal = self.parts.journal
        position = journal.position_of_seq(annotation.seq)
        event = journal.try_event(position) if position is not None else None
        return isinstance(event, Event) and annotation_key(event) == annotation.key

    def next_bookmark(self) -> None:
        self.annotations.refresh()
        event = self.parts.timeline.cursor_event()
        current = event.seq if isinstance(event, Event) else None
        mark = self.annotations.next_bookmark(current)
        for _ in range(len(self.annotations)):  # skip bookmarks of another journal at this path
            if mark is None or self.in_this_journal(mark):
                break
            mark = self.annotations.next_bookmark(mark.seq)
        if mark is None or not self.in_this_journal(mark):
            self.parts.status.say("no bookmarks yet: m bookmarks the event under the cursor")
            return
        if mark.seq == current:
            self.parts.status.say(f"{GLYPHS['bookmark']} seq {mark.seq} is the only bookmark")
            return
        self.parts.goto_seq(mark.seq)

    def say_annotation(self, position: int) -> None:
        """The status line names the bookmark and note of the event the cursor rests on."""
        journal = self.parts.journal
        event = journal.try_event(position) if position < len(journal) else None
        annotation = self.annotations.get(event) if isinstance(event, Event) else None
        if annotation is None:
            return
        text = ""
        if annotation.bookmarked:
            marks = self.annotations.bookmarks()
            index = next((i for i, a in enumerate(marks, 1) if a.key == annotation.key), 0)
            text = f"{GLYPHS['bookmark']} bookmark {index} of {len(marks)}"
        if annotation.note:
            text += (" · " if text else "") + f"{GLYPHS['note']} {annotation.note}"
        self.parts.status.say(text)

    def present(self) -> None:
        self.annotations.refresh()
        marks = [a for a in self.annotations.bookmarks() if self.in_this_journal(a)]
        if not marks:
            self.parts.status.say("nothing to present: m bookmarks the event under the cursor, a adds a note to it")
            return
        event = self.parts.timeline.cursor_event()
        cursor_seq = event.seq if isinstance(event, Event) else None
        start = next((i for i, a in enumerate(marks) if a.seq == cursor_seq), 0)
        from ..screens.presenter import PresenterScreen  # loaded when first presented, not for the first frame

        def closed(seq: int | None) -> None:
            if seq is not None:
                self.parts.goto_seq(seq)

        self.parts.app.push_screen(PresenterScreen(self.parts.journal, self.causal(), marks, start), closed)
