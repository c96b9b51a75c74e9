"""The timeline: one Line-API ScrollView over the journal's offset index.

Only the rows on screen are parsed (the journal keeps an LRU of parsed events)
and rendered rows are kept in an LRU of strips, so a million-event journal
scrolls like a short one. Rows appear while the index is still being built.
"""

from __future__ import annotations

import bisect
from array import array
from typing import Callable

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...analysis.search import (
    CONSUMED,
    DIVERGENT,
    ERROR,
    REDACTED,
    TIMEOUT,
    UNUSED,
    Query,
    ReplayMarks,
    event_marks,
    line_of,
)
from ...journal import Event, Journal, JournalError
from ...journal.safe_text import safe_line
from ..format import summary_of
from ..messages import CursorMoved

# (mark, glyph), most important first; one glyph per mark, two columns at most.
MARK_GLYPHS = ((DIVERGENT, "≠"), (ERROR, "✗"), (TIMEOUT, "◷"), (REDACTED, "▒"), (UNUSED, "·"), (CONSUMED, "✓"))
KIND_WIDTH = 16
STEP_WIDTH = 12


class Timeline(ScrollView, can_focus=True):
    """Seq, kind, step and a summary per event, with marks; a cursor row."""

    COMPONENT_CLASSES = {
        "timeline--cursor",
        "timeline--seq",
        "timeline--kind",
        "timeline--step",
        "timeline--error",
        "timeline--timeout",
        "timeline--redacted",
        "timeline--divergent",
        "timeline--unused",
        "timeline--consumed",
        "timeline--hit",
        "timeline--placeholder",
        "timeline--bookmark",
        "timeline--note",
        "timeline--secret",
    }
    DEFAULT_CSS = """
    Timeline > .timeline--bookmark { color: $accent; text-style: bold; }
    Timeline > .timeline--note { color: $accent; }
    Timeline > .timeline--secret { color: $warning; text-style: bold; }
    """

    BINDINGS = [
        Binding("j,down", "cursor_down", "Down", show=False),
        Binding("k,up", "cursor_up", "Up", show=False),
        Binding("g,home", "first", "First", show=False),
        Binding("G,end", "last", "Last", show=False),
        Binding("pagedown,ctrl+f,space", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
    ]

    def __init__(self, journal: Journal, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.journal = journal
        self.cursor = 0  # a position in the journal, filtered or not
        self.count = 0  # events readable so far
        self.rows: array[int] | None = None  # positions shown while a filter is on, in order
        self.rows_complete = True
        self.replay_marks: ReplayMarks | None = None
        self.query: Query | None = None  # rows that match are underlined
        self.indexing = True
        self._strips: LRUCache[tuple[int, int, bool, int], Strip] = LRUCache(4096)
        self._styles: dict[str, Style] = {}
        self._generation = 0
        # Extra marks shown first, e.g. bookmarks and secrets: (glyph, mark) pairs per event.
        self.mark_source: Callable[[Event | JournalError], list[tuple[str, str]]] | None = None

    # -- attributes set by the screen ---------------------------------------
    def set_count(self, count: int, indexing: bool) -> None:
        """More events are readable; grow the scrollable area (the cursor stays)."""
        self.count = count
        self.indexing = indexing
        self._resize()

    def set_rows(self, rows: array[int] | None, complete: bool = True) -> None:
        """Show only these positions (a filter), or every event (None)."""
        self.rows = rows
        self.rows_complete = complete
        self._resize()
        if rows is None or (len(rows) and rows[self.row_of(self.cursor)] != self.cursor):
            self.move_to(self.cursor, center=True)  # onto a shown row, and into view
        else:
            self._scroll_to_cursor(center=True)

    def _resize(self) -> None:
        busy = self.indexing if self.rows is None else not self.rows_complete
        self.virtual_size = Size(1, self.shown + (1 if busy else 0))
        self.refresh()

    @property
    def shown(self) -> int:
        """Rows in the timeline: every event, or the filter's matches."""
        return self.count if self.rows is None else len(self.rows)

    def position_at(self, row: int) -> int:
        return row if self.rows is None else self.rows[row]

    def row_of(self, position: int) -> int:
        """The row showing ``position``, or the next row after it when filtered out."""
        if self.rows is None:
            return position
        return min(bisect.bisect_left(self.rows, position), max(0, len(self.rows) - 1))

    def set_query(self, query: Query | None) -> None:
        if query != self.query:
            self.query = query
            self.invalidate()

    def set_replay_marks(self, marks: ReplayMarks | None) -> None:
        self.replay_marks = marks
        self.invalidate()

    def invalidate(self) -> None:
        """Forget rendered rows (theme, marks or the journal changed)."""
        self._generation += 1
        self._strips.clear()
        self._styles.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()

    # -- cursor -----------------------------------------------------------
    def move_to(self, position: int, *, center: bool = False) -> None:
        """Put the cursor on ``position`` (with a filter on: on the first shown row from it)."""
        if position >= self.count and position < len(self.journal):
            # The index worker has already read further than the last progress message said.
            self.set_count(len(self.journal), self.indexing)
        if self.shown == 0:
            return
        position = max(0, min(position, self.count - 1))
        if self.rows is not None:
            position = self.rows[self.row_of(position)]
        previous = self.cursor
        self.cursor = position
        self._scroll_to_cursor(center)
        self.refresh_lines(self.row_of(previous))
        self.refresh_lines(self.row_of(position))
        if position != previous:
            self.post_message(CursorMoved(position))

    def move_rows(self, delta: int) -> None:
        if self.shown:
            row = max(0, min(self.row_of(self.cursor) + delta, self.shown - 1))
            self.move_to(self.position_at(row))

    def _scroll_to_cursor(self, center: bool, retries: int = 3) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        row = self.row_of(self.cursor)
        target: int | None = None
        if center and not top <= row < top + height:
            target = max(0, row - height // 2)
        elif row < top:
            target = row
        elif row >= top + height:
            target = row - height + 1
        if target is None:
            return
        target = min(target, max(0, self.shown - height))
        self.scroll_to(y=target, animate=False, immediate=True)
        if self.scroll_offset.y != target and retries:
            # A grown virtual size (or the first layout) is applied on the next refresh, and
            # scroll_to clamps to the old size until then: scroll again once it is.
            self.call_after_refresh(self._scroll_to_cursor, center, retries - 1)

    @property
    def page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_cursor_down(self) -> None:
        self.move_rows(1)

    def action_cursor_up(self) -> None:
        self.move_rows(-1)

    def action_first(self) -> None:
        if self.shown:
            self.move_to(self.position_at(0))

    def action_last(self) -> None:
        if self.shown:
            self.move_to(self.position_at(self.shown - 1))

    def action_page_down(self) -> None:
        # The view and the cursor move together, so the cursor keeps its row on screen.
        self.scroll_to(y=self.scroll_offset.y + self.page, animate=False, immediate=True)
        self.move_rows(self.page)

    def action_page_up(self) -> None:
        self.scroll_to(y=max(0, self.scroll_offset.y - self.page), animate=False, immediate=True)
        self.move_rows(-self.page)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and self.scroll_offset.y + offset.y < self.shown:
            self.move_to(self.position_at(self.scroll_offset.y + offset.y))

    # -- rendering --------------------------------------------------------
    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name, partial=True)
        return style

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if row >= self.shown:
            if row == self.shown and (self.indexing if self.rows is None else not self.rows_complete):
                text = " opening journal…" if not self.count else " indexing…" if self.rows is None else " filtering…"
                return Strip([Segment(text.ljust(width), self.rich_style + self._style("timeline--placeholder"))]).crop(0, width)
            if row == 0 and self.rows is not None:
                return Strip([Segment(" no event matches the filter (escape clears it)".ljust(width), self.rich_style + self._style("timeline--placeholder"))]).crop(0, width)
            return Strip.blank(width, self.rich_style)
        position = self.position_at(row)
        key = (position, width, position == self.cursor, self._generation)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._render_row(position, width, position == self.cursor)
        return strip

    def _render_row(self, row: int, width: int, is_cursor: bool) -> Strip:
        try:
            event = self.journal.try_event(row)
        except (OSError, IndexError):
            # The journal is being reopened under us (follow mode saw it truncated or replaced).
            return Strip([Segment(" …".ljust(width), self.rich_style)]).crop(0, width)
        line = line_of(self.journal, row, event)
        marks = event_marks(event, line, self.replay_marks)
        hit = self.query is not None and self.query.matches(event, line, self.replay_marks)
        base = self.rich_style
        cursor = self._style("timeline--cursor") if is_cursor else Style()

        def styled(text: str, part: str | None = None) -> Segment:
            return Segment(text, base + (self._style(part) if part else Style()) + cursor)

        glyphs = [*(self.mark_source(event) if self.mark_source is not None else ()), *((glyph, mark) for mark, glyph in MARK_GLYPHS if mark in marks)][:2]
        segments = [styled(" ")]
        segments.extend(styled(glyph, f"timeline--{mark}") for glyph, mark in glyphs)
        segments.append(styled(" " * (3 - len(glyphs))))
        if isinstance(event, JournalError):
            where = f"line {event.line}" if event.line else "?"
            segments.append(styled(f"{where:>8} ", "timeline--seq"))
            segments.append(styled(summary_of(event), "timeline--error"))
        else:
            segments.append(styled(f"{event.seq:>8}", "timeline--hit" if hit else "timeline--seq"))
            segments.append(styled(" "))
            kind_part = next((f"timeline--{m}" for m in (DIVERGENT, ERROR, TIMEOUT) if m in marks), "timeline--kind")
            segments.append(styled(f"{safe_line(event.kind):<{KIND_WIDTH}} ", kind_part))
            step = safe_line(event.step_id) if event.step_id else "–"
            if len(step) > STEP_WIDTH:
                step = "…" + step[-(STEP_WIDTH - 1):]
            segments.append(styled(f"{step:<{STEP_WIDTH}} ", "timeline--step"))
            segments.append(styled(summary_of(event)))
        return Strip(segments).crop_extend(0, width, base + cursor)

    def cursor_event(self) -> Event | JournalError | None:
        return self.journal.try_event(self.cursor) if self.shown else None
