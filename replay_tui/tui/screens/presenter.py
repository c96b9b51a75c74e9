"""Presenter mode (``p``): the bookmarks of an incident, one per page, for a room.

Each page shows the bookmark's note large, the event in a few words, and the
causal chain that led to it — root cause first, the bookmarked event highlighted —
so the audience sees why it happened, not only what. The chain is looked up in a
thread worker (a parent can be far back in a big journal). Dismisses with the seq
of the page shown last, so the debugger opens where the talk ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker

from ...analysis.annotations import Annotation
from ...analysis.causal import CausalIndex, describe
from ...analysis.secrets import mask_secrets
from ...journal import Event, Journal
from ...journal.safe_text import safe, safe_line
from ..format import summary_of

CHAIN_SHOWN = 12  # the links nearest the bookmarked event; the root is always shown


@dataclass
class ChainFound(Message):
    page: int
    chain: list[int]


class PresenterScreen(Screen[int | None]):
    """Full screen, one bookmark at a time; keys to go next, previous and out."""

    BINDINGS = [
        Binding("right,l,n,space,pagedown,j", "next", "Next"),
        Binding("left,h,N,b,pageup,k", "previous", "Previous"),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("escape,q,p", "leave", "Back to the debugger"),
    ]

    DEFAULT_CSS = """
    PresenterScreen { layout: vertical; background: $background; padding: 1 4; }
    PresenterScreen #presenter-position { height: 1; color: $foreground-muted; }
    PresenterScreen #presenter-note {
        height: auto; min-height: 7; max-height: 60%;
        border: heavy $accent; padding: 1 3; margin: 1 0;
        text-style: bold; color: $foreground; content-align: center middle;
    }
    PresenterScreen #presenter-event { height: 1; color: $primary; text-style: bold; margin-bottom: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    PresenterScreen #presenter-chain { height: 1fr; border: round $border; border-title-color: $accent; padding: 0 1; }
    PresenterScreen #presenter-chain-text { text-wrap: nowrap; text-overflow: ellipsis; }
    PresenterScreen #presenter-keys { height: 1; color: $foreground-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, journal: Journal, causal: CausalIndex, bookmarks: list[Annotation], start: int = 0) -> None:
        super().__init__()
        self.journal = journal
        self.causal = causal
        self.bookmarks = bookmarks
        self.page = max(0, min(start, len(bookmarks) - 1))
        self.chain: list[int] | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="presenter-position", markup=False)
            yield Static("", id="presenter-note", markup=False)
            yield Static("", id="presenter-event", markup=False)
            with VerticalScroll(id="presenter-chain") as chain:
                chain.border_title = "How it came to this (root cause first)"
                yield Static("", id="presenter-chain-text", markup=False)
            yield Static(
                "→ / space next · ← previous · home/end first/last · escape back to the debugger at this event",
                id="presenter-keys",
                markup=False,
            )

    def on_mount(self) -> None:
        self.show_page()

    @property
    def current(self) -> Annotation:
        return self.bookmarks[self.page]

    def _event(self, annotation: Annotation) -> tuple[int | None, Event | None]:
        position = self.journal.position_of_seq(annotation.seq)
        event = self.journal.try_event(position) if position is not None else None
        return position, event if isinstance(event, Event) else None

    def show_page(self) -> None:
        annotation = self.current
        position, event = self._event(annotation)
        self.query_one("#presenter-position", Static).update(
            f"bookmark {self.page + 1} of {len(self.bookmarks)} · seq {annotation.seq} · {safe_line(annotation.kind)}"
        )
        note, _ = mask_secrets(annotation.note) if annotation.note else ("(no note: a adds one in the debugger)", 0)
        self.query_one("#presenter-note", Static).update(Text(safe(str(note), multiline=True), justify="center"))
        summary = summary_of(event) if event else "not in this journal"
        self.query_one("#presenter-event", Static).update(
            f"seq {annotation.seq}  {safe_line(annotation.kind)}  {summary}"
        )
        self.chain = None
        self.query_one("#presenter-chain-text", Static).update("following the causal chain…")
        if position is not None:
            self.find_chain(self.page, position)

    @work(thread=True, exclusive=True, group="presenter-chain", exit_on_error=False)
    def find_chain(self, page: int, position: int) -> None:
        chain = self.causal.chain_to_root(position)
        if not get_current_worker().is_cancelled:
            self.post_message(ChainFound(page, chain))

    @on(ChainFound)
    def _chain_found(self, message: ChainFound) -> None:
        if message.page != self.page:
            return
        self.chain = message.chain
        self.query_one("#presenter-chain-text", Static).update(self.chain_text(message.chain))

    def chain_text(self, chain: list[int]) -> Text:
        """Root first, the bookmarked event last, starred and highlighted; a long middle is elided."""
        shown = chain if len(chain) <= CHAIN_SHOWN + 1 else [chain[0], -1, *chain[-CHAIN_SHOWN:]]
        text = Text(no_wrap=True, overflow="ellipsis")  # one line per link, however long its summary
        bookmarked = {a.seq for a in self.bookmarks}
        for depth, position in enumerate(shown):
            if position == -1:
                text.append(f"   ⋮ {len(chain) - CHAIN_SHOWN - 1} more causes\n", style="dim")
                continue
            event = self.journal.try_event(position)
            last = position == chain[-1]
            arrow = "   " if depth == 0 else "└→ "
            line = f"{'★ ' if last else '  '}{'  ' * min(depth, 10)}{arrow}{safe_line(describe(event))}  {summary_of(event)}"
            style = "bold reverse" if last else "bold" if isinstance(event, Event) and event.seq in bookmarked else ""
            text.append(line + "\n", style=style)
        if len(chain) == 1:
            text.append("\n(a root event: nothing recorded caused it)", style="dim")
        return text

    def _go(self, page: int) -> None:
        page = max(0, min(page, len(self.bookmarks) - 1))
        if page != self.page:
            self.page = page
            self.show_page()

    def action_next(self) -> None:
        if self.page == len(self.bookmarks) - 1:
            self.notify("last bookmark (escape goes back to the debugger)", timeout=2)
        self._go(self.page + 1)

    def action_previous(self) -> None:
        self._go(self.page - 1)

    def action_first(self) -> None:
        self._go(0)

    def action_last(self) -> None:
        self._go(len(self.bookmarks) - 1)

    def action_leave(self) -> None:
        self.dismiss(self.current.seq)
