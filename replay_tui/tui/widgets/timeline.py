"""The timeline: one Line-API ScrollView over the journal's offset index.

Only the rows on screen are parsed (the journal keeps an LRU of parsed events)
and rendered rows are kept in an LRU of strips, so a million-event journal
scrolls like a short one. Rows appear while the index is still being built.
"""

from __future__ import annotations

import bisect
from array import array
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from ...analysis.marks import (
    CONSUMED,
    DIVERGENT,
    ERROR,
    REDACTED,
    TIMEOUT,
    UNUSED,
    ReplayMarks,
    event_marks,
    line_of,
)
from ...journal import Event, Journal, JournalError
from ...journal.safe_text import safe_line
from ..actions import bindings_for
from ..format import SUMMARY_LIMIT, summary_of
from ..messages import CursorMoved
from .component_styles import ComponentStyles
from .timeline_time import StepFold, format_duration, format_offset, parse_time, parse_when

if TYPE_CHECKING:  # the search loads with the first search or filter, not for the first frame
    from ...analysis.search import Query

# (mark, glyph), most important first; one glyph per mark, two columns at most.
MARK_GLYPHS = ((DIVERGENT, "≠"), (ERROR, "✗"), (TIMEOUT, "◷"), (REDACTED, "▒"), (UNUSED, "·"), (CONSUMED, "✓"))
KIND_WIDTH = 16
STEP_WIDTH = 12
WRAP_INDENT = 12  # continuation lines of a wrapped row start under the kind, past the marks and the seq
MIN_WRAP_TEXT = 16  # narrower than this after the indent: continuation lines use the whole width
SIDEWAYS_STEP = 8


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
        Binding("pagedown,ctrl+f,space", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("left,h", f"scroll_sideways(-{SIDEWAYS_STEP})", "Left", show=False),
        Binding("right,l", f"scroll_sideways({SIDEWAYS_STEP})", "Right", show=False),
        *bindings_for("timeline"),  # first, last, go to time, time column, fold, wrap: tui/actions.py
    ]

    def __init__(self, journal: Journal, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.journal = journal
        self.cursor = 0  # a position in the journal, filtered or not
        self.count = 0  # events readable so far
        self.rows: array[int] | None = None  # positions shown while a filter is on, in order
        self.rows_complete = True
        self.replay_marks: ReplayMarks | None = None
        self.search_query: Query | None = None  # rows that match are underlined (not `query`: DOMNode.query)
        self.indexing = True
        self._strips: LRUCache[tuple[int, int, bool, int, bool, int, bool], Strip] = LRUCache(4096)
        self.wrap = False  # o: a row's whole summary over as many lines as it needs
        self._wrapped: LRUCache[tuple[int, int, bool, int, bool, bool], list[Strip]] = LRUCache(1024)
        self._wrap_layout: tuple[tuple[object, ...], list[tuple[int, int]]] | None = None
        self._style = ComponentStyles(self)
        self._generation = 0
        # Extra marks shown first, e.g. bookmarks and secrets: (glyph, mark) pairs per event.
        self.mark_source: Callable[[Event | JournalError], list[tuple[str, str]]] | None = None
        self.show_time = False  # the time column: offset from the run's start, and a duration
        self.sideways = 0  # columns the summary is scrolled left by (←/→)
        self.folds: dict[int, StepFold] | None = None  # z: one row per step run, keyed by its first position
        self._run_start: datetime | None | bool = False  # False: not read yet

    # -- attributes set by the screen ---------------------------------------
    def set_count(self, count: int, indexing: bool) -> None:
        """More events are readable; grow the scrollable area (the cursor stays)."""
        self.count = count
        self.indexing = indexing
        self._resize()

    def set_rows(self, rows: array[int] | None, complete: bool = True) -> None:
        """Show only these positions (a filter), or every event (None); either ends folding by step."""
        self.folds = None
        self.rows = rows
        self.rows_complete = complete
        self._resize()
        if rows is None or (len(rows) and rows[self.row_of(self.cursor)] != self.cursor):
            self.move_to(self.cursor, center=True)  # onto a shown row, and into view
        else:
            self._scroll_to_cursor(center=True)

    def _resize(self) -> None:
        busy = self.indexing if self.rows is None else not self.rows_complete
        # Wrapping, scroll_offset.y stays the top row; rows are taller than one line, so the last
        # row may be at the top (the lines below it are blank).
        room = max(0, self.scrollable_content_region.height - 1) if self.wrap else 0
        self.virtual_size = Size(1, self.shown + (1 if busy else 0) + room)
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
        if query != self.search_query:
            self.search_query = query
            self.invalidate()

    def set_replay_marks(self, marks: ReplayMarks | None) -> None:
        self.replay_marks = marks
        self.invalidate()

    def invalidate(self) -> None:
        """Forget rendered rows (theme, marks or the journal changed)."""
        self._generation += 1
        self._strips.clear()
        self._wrapped.clear()
        self._style.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style.clear()
        self._strips.clear()
        self._wrapped.clear()

    def on_resize(self) -> None:
        if self.wrap:
            self._resize()
            self._scroll_to_cursor(center=False)

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
        if self.wrap:
            target = self._wrapped_top(row, top, height, center)
        elif center and not top <= row < top + height:
            target = max(0, row - height // 2)
        elif row < top:
            target = row
        elif row >= top + height:
            target = row - height + 1
        if target is None:
            return
        if not self.wrap:
            target = min(target, max(0, self.shown - height))
        self.scroll_to(y=target, animate=False, immediate=True)
        if self.scroll_offset.y != target and retries:
            # A grown virtual size (or the first layout) is applied on the next refresh, and
            # scroll_to clamps to the old size until then: scroll again once it is.
            self.call_after_refresh(self._scroll_to_cursor, center, retries - 1)

    def _wrapped_top(self, row: int, top: int, height: int, center: bool) -> int | None:
        """The top row that shows ``row`` whole when rows wrap (None: it already is)."""
        if top <= row and self._lines_between(top, row + 1, height) <= height:
            return None
        if row < top and not center:
            return row
        budget = max(1, height // 2) if center else height
        target, used = row, self._row_height(row)
        while target > 0:
            above = self._row_height(target - 1)
            if used + above > budget:
                break
            target, used = target - 1, used + above
        return target

    def _lines_between(self, first: int, end: int, limit: int) -> int:
        """Screen lines rows ``first`` to ``end`` take when wrapped (counting stops past ``limit``)."""
        lines = 0
        for row in range(first, min(end, self.shown)):
            lines += self._row_height(row)
            if lines > limit:
                break
        return lines

    def _row_height(self, row: int) -> int:
        position = self.position_at(row)
        return len(self._wrapped_row(position, self.scrollable_content_region.width, position == self.cursor))

    @property
    def page(self) -> int:
        height = max(1, self.scrollable_content_region.height)
        if self.wrap:  # the rows on screen, whole
            top, lines, rows = self.scroll_offset.y, 0, 0
            while top + rows < self.shown and lines + self._row_height(top + rows) <= height:
                lines += self._row_height(top + rows)
                rows += 1
            return max(1, rows - 1)
        return max(1, height - 1)

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
        if offset is None:
            return
        row = self._layout()[offset.y][0] if self.wrap else self.scroll_offset.y + offset.y
        if row < self.shown:
            self.move_to(self.position_at(row))

    # -- rendering --------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if self.wrap:
            layout = self._layout()
            row, part = layout[y] if y < len(layout) else (self.shown + 1, 1)
            if row < self.shown:
                position = self.position_at(row)
                return self._wrapped_row(position, width, position == self.cursor)[part]
            if part:
                return Strip.blank(width, self.rich_style)
        else:
            row = self.scroll_offset.y + y
        if row >= self.shown:
            if row == self.shown and (self.indexing if self.rows is None else not self.rows_complete):
                text = " opening journal…" if not self.count else " indexing…" if self.rows is None else " filtering…"
                return Strip([Segment(text.ljust(width), self.rich_style + self._style("timeline--placeholder"))]).crop(
                    0, width
                )
            if row == 0 and self.rows is not None:
                return Strip(
                    [
                        Segment(
                            " no event matches the filter (escape clears it)".ljust(width),
                            self.rich_style + self._style("timeline--placeholder"),
                        )
                    ]
                ).crop(0, width)
            return Strip.blank(width, self.rich_style)
        position = self.position_at(row)
        key = (
            position,
            width,
            position == self.cursor,
            self._generation,
            self.show_time,
            self.sideways,
            self.folds is not None,
        )
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._render_row(position, width, position == self.cursor)
        return strip

    def _layout(self) -> list[tuple[int, int]]:
        """Wrapping: (row, line of that row) for each screen line, from the top row down; a row
        past the last is the placeholder or blank."""
        height = max(1, self.scrollable_content_region.height)
        key = (
            self.scroll_offset.y,
            height,
            self.scrollable_content_region.width,
            self.shown,
            id(self.rows),
            self._generation,
            self.show_time,
            self.folds is not None,
        )
        if self._wrap_layout is not None and self._wrap_layout[0] == key:
            return self._wrap_layout[1]
        layout: list[tuple[int, int]] = []
        row = self.scroll_offset.y
        while len(layout) < height:
            lines = self._row_height(row) if row < self.shown else 1
            layout.extend((row, part) for part in range(lines))
            row += 1
        layout = layout[:height]
        self._wrap_layout = (key, layout)
        return layout

    def _wrapped_row(self, position: int, width: int, is_cursor: bool) -> list[Strip]:
        """A row cut into lines of ``width``; lines after the first start under the kind column."""
        key = (position, width, is_cursor, self._generation, self.show_time, self.folds is not None)
        lines = self._wrapped.get(key)
        if lines is not None:
            return lines
        whole, style = self._row_strip(position, is_cursor)
        lines = [whole.crop_extend(0, width, style)]
        indent = WRAP_INDENT if width - WRAP_INDENT >= MIN_WRAP_TEXT else 0
        start, step = width, max(1, width - indent)
        while start < whole.cell_length:
            piece = whole.crop(start, start + step)
            lines.append(Strip([Segment(" " * indent, style), *piece]).crop_extend(0, width, style))
            start += step
        self._wrapped[key] = lines
        return lines

    def _render_row(self, row: int, width: int, is_cursor: bool) -> Strip:
        whole, style = self._row_strip(row, is_cursor)
        return whole.crop_extend(0, width, style)

    def _row_strip(self, row: int, is_cursor: bool) -> tuple[Strip, Style]:
        """One event's row at its natural width, and the style its padding takes."""
        try:
            event = self.journal.try_event(row)
        except (OSError, IndexError):
            # The journal is being reopened under us (follow mode saw it truncated or replaced).
            return Strip([Segment(" …", self.rich_style)]), self.rich_style
        line = line_of(self.journal, row, event)
        marks = event_marks(event, line, self.replay_marks)
        hit = self.search_query is not None and self.search_query.matches(event, line, self.replay_marks)
        base = self.rich_style
        cursor = self._style("timeline--cursor") if is_cursor else Style()

        def styled(text: str, part: str | None = None) -> Segment:
            return Segment(text, base + (self._style(part) if part else Style()) + cursor)

        glyphs = [
            *(self.mark_source(event) if self.mark_source is not None else ()),
            *((glyph, mark) for mark, glyph in MARK_GLYPHS if mark in marks),
        ][:2]
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
            if self.show_time:
                segments.append(styled(self._time_cells(row, event), "timeline--seq"))
            kind_part = next((f"timeline--{m}" for m in (DIVERGENT, ERROR, TIMEOUT) if m in marks), "timeline--kind")
            segments.append(styled(f"{safe_line(event.kind):<{KIND_WIDTH}} ", kind_part))
            step = safe_line(event.step_id) if event.step_id else "–"
            if len(step) > STEP_WIDTH:
                step = "…" + step[-(STEP_WIDTH - 1) :]
            segments.append(styled(f"{step:<{STEP_WIDTH}} ", "timeline--step"))
            fold = self.folds.get(row) if self.folds is not None else None
            if fold is not None and fold.count > 1:
                segments.append(styled(f"▸ {fold.count} events{fold.duration_text()} · ", "timeline--step"))
            summary = summary_of(event)
            sideways = 0 if self.wrap else self.sideways
            segments.append(styled("…" + summary[sideways:] if sideways else summary))
        return Strip(segments), base + cursor

    # -- time column, sideways scroll, folding by step ----------------------------
    def run_start(self) -> datetime | None:
        """recorded_at of the first event (None when it has none a person can read)."""
        if self._run_start is False:
            first = self.journal.try_event(0) if len(self.journal) else None
            self._run_start = parse_time(first.recorded_at) if isinstance(first, Event) else None
        return self._run_start if isinstance(self._run_start, datetime) else None

    def _time_cells(self, position: int, event: Event) -> str:
        """``+MM:SS.mmm`` from the run's start, then how long: a tool's duration_ms, else the gap since the event before."""
        start, when = self.run_start(), parse_time(event.recorded_at)
        offset = format_offset(when, start)
        duration = event.payload.get("duration_ms") if event.kind == "tool.result" else None
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            took = format_duration(duration / 1000)
        elif position > 0 and when is not None:
            before = self.journal.try_event(position - 1)
            previous = parse_time(before.recorded_at) if isinstance(before, Event) else None
            took = "+" + format_duration((when - previous).total_seconds()) if previous is not None else ""
        else:
            took = ""
        return f"{offset:>11} {took:>8} "

    def action_toggle_time(self) -> None:
        self.show_time = not self.show_time
        self.refresh()
        self.notify(
            "time column: offset from the run's start and duration (i hides it)"
            if self.show_time
            else "time column hidden (i shows it)",
            timeout=3,
        )

    def action_scroll_sideways(self, columns: int) -> None:
        """←/→: the summaries move left or right (seq, kind and step stay); nothing to do when wrapping."""
        if self.wrap:
            self.notify("long rows wrap: all of each summary is shown (o: one line each, then ←/→)", timeout=3)
            return
        self.sideways = max(0, min(self.sideways + columns, SUMMARY_LIMIT - SIDEWAYS_STEP))
        self._show_mode()
        self.refresh()

    def action_toggle_wrap(self) -> None:
        """o: wrap each row's summary over as many lines as it needs, or one line each (←/→ scroll)."""
        self.wrap = not self.wrap
        self.sideways = 0
        self._wrap_layout = None
        self._resize()
        self._scroll_to_cursor(center=False)
        self._show_mode()
        self.notify(
            "timeline rows wrap (o: one line each, ←/→ scroll)" if self.wrap else "one line each: ←/→ scroll (o wraps)",
            timeout=3,
        )

    def _show_mode(self) -> None:
        """The pane's subtitle says when rows wrap or the summaries are scrolled."""
        if self.wrap:
            self.border_subtitle = "wrapped (o)"
        elif self.sideways:
            self.border_subtitle = f"summaries → {self.sideways} (← back)"
        else:
            self.border_subtitle = ""

    def action_toggle_fold_steps(self) -> None:
        """z: one row per run of a step's events (with their count and duration), or every event again."""
        if self.folds is not None:
            self.folds = None
            self.set_rows(None)
            self.border_title = "Timeline"
            return
        if self.indexing:
            self.notify("still indexing: z folds by step once the journal is read", severity="warning")
            return
        self.border_title = "Timeline · folding by step…"
        self.run_worker(self._fold_steps, thread=True, exclusive=True, group="fold", exit_on_error=False)

    def _fold_steps(self) -> None:
        worker = get_current_worker()
        folds: dict[int, StepFold] = {}
        rows: array[int] = array("Q")
        current: StepFold | None = None
        for position in range(len(self.journal)):
            if worker.is_cancelled:
                return
            step, when = self._step_and_time(position)
            if current is not None and step is not None and step == current.step:
                current.add(when)
                continue
            current = StepFold(step, when)
            folds[position] = current
            rows.append(position)
        self.app.call_from_thread(self._folded, folds, rows)

    def _step_and_time(self, position: int) -> tuple[str | None, datetime | None]:
        event = self.journal.try_event(position)
        if not isinstance(event, Event):
            return None, None
        return event.step_id, parse_time(event.recorded_at)

    def _folded(self, folds: dict[int, StepFold], rows: array[int]) -> None:
        self.set_rows(rows)
        self.folds = folds  # after set_rows, which drops folding for a filter's rows
        steps = sum(1 for fold in folds.values() if fold.step is not None)
        self.border_title = f"Timeline · {len(rows):,} rows, {steps:,} step runs · folded by step (z unfolds)"

    def action_goto_time(self) -> None:
        from ..screens.prompt import PromptScreen

        start = self.run_start()
        if start is None:
            self.notify("this journal's first event has no readable recorded_at", severity="warning")
            return

        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            target = parse_when(text.strip(), start)
            if target is None:
                self.notify(f"'{text}' is not a time: +MM:SS, HH:MM:SS or a full RFC 3339 time", severity="warning")
                return
            position = self._first_at_or_after(target)
            if position is None:
                self.notify(f"no event at or after {target.isoformat()}", severity="warning")
                return
            self.move_to(position, center=True)

        hint = f"the run started {start.isoformat()}; +MM:SS from the start, HH:MM:SS that day, or a full time"
        self.app.push_screen(PromptScreen("Go to time", hint, placeholder="+01:30"), chosen)

    def _first_at_or_after(self, target: datetime) -> int | None:
        """Binary search over recorded_at (for people only, but in practice in order)."""
        low, high = 0, len(self.journal)
        while low < high:
            middle = (low + high) // 2
            _, when = self._step_and_time(middle)
            if when is not None and when < target:
                low = middle + 1
            else:
                high = middle
        return low if low < len(self.journal) else None

    def cursor_event(self) -> Event | JournalError | None:
        return self.journal.try_event(self.cursor) if self.shown else None
