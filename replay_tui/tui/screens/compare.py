"""Two trajectories side by side, aligned by step and call keys (``replay.compare``).

Opened after an experiment (recorded journal vs the experiment's journal) and by
``replay-tui compare A B`` for any two journals. The first differing decision is
focused; the summary line counts the rest by status, kind and step. The rows
below show the selected pair's logical payloads with the differing paths marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from ...analysis.diff import diff_values
from ...journal import Journal, JournalError
from ...journal.model import strip_diagnostics
from ...journal.safe_text import safe, safe_line
from ...replay.compare import DECISION_KINDS, AlignedPair, Alignment, align_journals
from ...replay.report import EventRef, short
from ..widgets.json_view import JsonDocument, JsonView

#: Above this many aligned rows the table lists the differences only (the summary counts all).
MAX_ROWS = 5_000
STATUS_MARK = {"same": "=", "changed": "≠", "only_a": "A only", "only_b": "B only"}
COLUMNS = ("", "step", "kind", "A seq / key", "B seq / key", "differs in")


@dataclass
class AlignmentReady(Message):
    alignment: Alignment | None
    error: str | None = None


def event_cell(ref_event: object) -> str:
    if ref_event is None:
        return "—"
    ref = EventRef.of(ref_event)  # type: ignore[arg-type]
    return f"{ref.seq:>6} {ref.key_name}={short(ref.key)}"  # short() escapes


def pair_cells(pair: AlignedPair) -> tuple[Text, ...]:
    """One table row, cells as Text: a DataTable reads a str cell as markup, and these are journal text."""
    return (
        Text(STATUS_MARK[pair.status]),
        Text(safe_line(pair.step_id, 60) if pair.step_id else "(run)"),
        Text(safe_line(pair.kind)),
        Text(event_cell(pair.a)),
        Text(event_cell(pair.b)),
        Text(", ".join(pair.differs_in)),
    )


def column_widths(rows: list[tuple[Text, ...]]) -> list[int]:
    """Each column's width: its widest cell or label (the cells are single lines)."""
    widths = [cell_len(label) for label in COLUMNS]
    for cells in rows:
        widths = [max(width, cell.cell_len) for width, cell in zip(widths, cells)]
    return widths


def summary_text(alignment: Alignment, focused: AlignedPair | None) -> str:
    summary = alignment.summary()
    lines = [
        f"A: {alignment.a_label} ({alignment.a_events:,} events)   B: {alignment.b_label} ({alignment.b_events:,} events)"
    ]
    if alignment.setup:
        lines.append("run setup differs (not counted): " + ", ".join(alignment.setup))
    if focused is None:
        lines.append("No difference: every event aligns on kind, step, parent, key and logical payload.")
        return "\n".join(lines)
    lines.append(
        f"First differing decision: {focused.describe()} — differs in {', '.join(focused.differs_in) or 'presence'}"
    )
    rest = summary["differences"] - 1
    by_kind = ", ".join(f"{safe_line(kind)} {count}" for kind, count in summary["by_kind"].items())
    steps = summary["steps"]
    shown_steps = ", ".join(safe_line(step, 60) for step in steps[:8]) + (
        f", … {len(steps) - 8} more" if len(steps) > 8 else ""
    )
    lines.append(
        f"{summary['differences']:,} differences ({rest:,} after it): {summary['changed']:,} changed, "
        f"{summary['only_a']:,} only in A, {summary['only_b']:,} only in B · by kind: {by_kind}"
    )
    lines.append(f"steps that differ: {shown_steps}")
    return "\n".join(lines)


class CompareScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("n", "next_difference", "Next difference"),
        Binding("N", "previous_difference", "Previous difference"),
        Binding("f", "first_decision", "First differing decision"),
        Binding("tab", "focus_next", "Next pane", show=False),
    ]
    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen #compare-summary { height: auto; background: $panel; padding: 0 1; }
    CompareScreen #compare-table { height: 1fr; border: round $border-blurred; background: $surface; }
    CompareScreen #compare-table:focus { border: round $border; }
    CompareScreen #compare-detail { height: 1fr; }
    CompareScreen .compare-side { width: 1fr; border: round $border-blurred; border-title-color: $foreground-muted; background: $surface; }
    CompareScreen .compare-side:focus-within { border: round $border; }
    CompareScreen .compare-side-title { height: auto; color: $foreground-muted; padding: 0 1; }
    """

    def __init__(self, path_a: Path, path_b: Path, *, label_a: str | None = None, label_b: str | None = None) -> None:
        super().__init__()
        self.path_a = path_a
        self.path_b = path_b
        self.label_a = label_a or str(path_a)
        self.label_b = label_b or str(path_b)
        self.alignment: Alignment | None = None
        self.rows: list[AlignedPair] = []
        self.focused_pair: AlignedPair | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content(safe_line(f"aligning {self.label_a} with {self.label_b}…")), id="compare-summary")
        table: DataTable[Text] = DataTable(id="compare-table", cursor_type="row", zebra_stripes=False)
        table.border_title = "Aligned trajectories (A | B)"
        yield table
        with Horizontal(id="compare-detail"):
            for side, label in (("a", self.label_a), ("b", self.label_b)):
                with Vertical(classes="compare-side") as box:
                    box.border_title = f"{side.upper()}: {Path(label).name}"
                    yield Static("", classes="compare-side-title", id=f"compare-{side}-title", markup=False)
                    yield JsonView(id=f"compare-{side}-json")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)  # the header while aligning; _ready gives them their widths
        table.focus()
        self.align()

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def align(self) -> None:
        worker = get_current_worker()
        try:
            with Journal(self.path_a) as a, Journal(self.path_b) as b:
                a.index(cancelled=lambda: worker.is_cancelled)
                b.index(cancelled=lambda: worker.is_cancelled)
                alignment = align_journals(a, b, cancelled=lambda: worker.is_cancelled)
        except JournalError as error:
            self.post_message(AlignmentReady(None, str(error)))
            return
        except InterruptedError:
            return
        alignment.a_label, alignment.b_label = self.label_a, self.label_b
        self.post_message(AlignmentReady(alignment))

    @on(AlignmentReady)
    def _ready(self, message: AlignmentReady) -> None:
        summary = self.query_one("#compare-summary", Static)
        if message.alignment is None:
            summary.update(Content(safe(f"cannot compare: {message.error}", multiline=True)))
            summary.add_class("-bad")
            self.notify(
                safe(str(message.error), multiline=True), title="compare", severity="error", timeout=10, markup=False
            )
            return
        alignment = self.alignment = message.alignment
        self.focused_pair = alignment.first_difference(DECISION_KINDS) or alignment.first_difference()
        summary.update(Content(safe(summary_text(alignment, self.focused_pair), multiline=True)))
        self.rows = alignment.pairs if len(alignment.pairs) <= MAX_ROWS else alignment.differences[:MAX_ROWS]
        table = self.query_one(DataTable)
        if len(self.rows) < len(alignment.pairs):
            table.border_title = f"Differences only ({len(self.rows):,} of {len(alignment.differences):,}; {len(alignment.pairs):,} aligned rows)"
        rows = [pair_cells(pair) for pair in self.rows]
        # Fixed widths, measured here: an auto-width column only widens in the table's next idle, and a row
        # painted before that (the cursor row is, when a paint comes first) kept its cut-off cells on screen.
        table.clear(columns=True)
        for label, width in zip(COLUMNS, column_widths(rows)):
            table.add_column(label, width=width)
        for number, cells in enumerate(rows):
            table.add_row(*cells, key=str(number))
        focused_row = self._row_of(self.focused_pair)
        if focused_row is not None:
            self._focus_row(focused_row)
        self._show_pair(table.cursor_row)

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        self._show_pair(message.cursor_row)

    def _show_pair(self, row: int) -> None:
        if not 0 <= row < len(self.rows):
            return
        pair = self.rows[row]
        a_payload = strip_diagnostics(pair.a.payload) if pair.a else None
        b_payload = strip_diagnostics(pair.b.payload) if pair.b else None
        # Also on a "same" row: run.started setup fields (plugins, config hash) differ without counting.
        found = diff_values(a_payload, b_payload)  # deep-safe, unlike != on 1,024-level payloads
        diff = None if found.empty else found
        for side, event, payload, change_side in (
            ("a", pair.a, a_payload, "before"),
            ("b", pair.b, b_payload, "after"),
        ):
            title = self.query_one(f"#compare-{side}-title", Static)
            step = safe_line(event.step_id, 80) if event and event.step_id else "run level"
            title.update(
                f"seq {event.seq} · {safe_line(event.kind)} · {step}" if event else "no counterpart in this journal"
            )
            self.query_one(f"#compare-{side}-json", JsonView).show(
                JsonDocument(payload, diff=diff, side=change_side, empty_text="(nothing)")
            )

    def _move_to_difference(self, direction: int) -> None:
        table = self.query_one(DataTable)
        start = table.cursor_row
        candidates = range(start + 1, len(self.rows)) if direction > 0 else range(start - 1, -1, -1)
        for row in candidates:
            if self.rows[row].status != "same":
                self._focus_row(row)
                return
        self.notify("no further difference in that direction", timeout=2)

    def action_next_difference(self) -> None:
        self._move_to_difference(1)

    def action_previous_difference(self) -> None:
        self._move_to_difference(-1)

    def action_first_decision(self) -> None:
        row = self._row_of(self.focused_pair)
        if row is not None:
            self._focus_row(row)

    def action_close(self) -> None:
        if self.app.screen_stack[0] is self:  # `replay-tui compare A B`: this is the app
            self.app.exit()
        else:
            self.dismiss()

    def _focus_row(self, row: int) -> None:
        """Cursor on ``row``, scrolled to the middle so the rows before it show the lead-up."""
        table = self.query_one(DataTable)
        table.move_cursor(row=row, scroll=False)

        def center() -> None:
            table.scroll_to(y=max(0, row - table.scrollable_content_region.height // 2), animate=False)

        self.call_after_refresh(center)

    def _row_of(self, pair: AlignedPair | None) -> int | None:
        return next((number for number, row in enumerate(self.rows) if row is pair), None)
