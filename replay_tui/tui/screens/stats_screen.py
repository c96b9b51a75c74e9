"""The stats screen (``s``): what `replay-tui stats` prints, with its bars and sparklines.

Stats are collected in a cancellable thread worker (``LiveAnalysis.render_stats``,
which only reads events not collected before, so reopening the screen or following
a growing journal costs only the new events) and drawn by ``stats_render``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import get_current_worker

from ...analysis.stats import RunStats
from ...jobs import JobCancelled, JobRun
from ...jobs.stats import StatsJob, StatsRequest
from ...journal import Journal
from ..live_analysis import LiveAnalysis

REFRESH_WHILE_FOLLOWING_S = 1.0
PROGRESS_EVERY_S = 0.1


@dataclass
class StatsProgress(Message):
    done: int
    total: int


@dataclass
class StatsReady(Message):
    rendered: Group
    events: int
    complete: bool


class StatsScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,s,q", "close", "Back"),
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("space,pagedown", "page_down", "Page down", show=False),
        Binding("pageup,b", "page_up", "Page up", show=False),
    ]
    DEFAULT_CSS = """
    StatsScreen { background: $background; }
    StatsScreen #stats-scroll { border: round $border; border-title-color: $accent; background: $surface; padding: 0 1; }
    StatsScreen #stats-status { height: 1; padding: 0 1; color: $foreground-muted; }
    """

    def __init__(self, live: LiveAnalysis, journal: Journal) -> None:
        super().__init__()
        self.live = live
        self.journal = journal
        self.shown_events = 0
        self._pending: Timer | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="stats-scroll") as scroll:
            scroll.border_title = f"Stats · {self.journal.path.name}"
            yield Static("collecting…", id="stats-body")
        yield Static("collecting stats… (escape goes back and stops)", id="stats-status", markup=False)

    def on_mount(self) -> None:
        self.query_one("#stats-scroll").focus()
        self.collect()

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def collect(self) -> None:
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            self.post_message(StatsProgress(done, total))

        job: StatsJob[tuple[RunStats, Group]] = StatsJob()
        request = StatsRequest(self.live, max(60, self.size.width - 4))
        run = JobRun(job, request, progress=progress, every_s=PROGRESS_EVERY_S, cancelled=lambda: worker.is_cancelled)
        try:
            stats, rendered = run.result()
        except JobCancelled:
            return
        self.post_message(StatsReady(rendered, stats.events + stats.unreadable, stats.complete))

    @on(StatsProgress)
    def _progress(self, message: StatsProgress) -> None:
        share = message.done / message.total if message.total else 1.0
        self.query_one("#stats-status", Static).update(
            f"collecting stats… {message.done:,} of {message.total:,} events ({share:.0%}) · escape goes back and stops"
        )

    @on(StatsReady)
    def _ready(self, message: StatsReady) -> None:
        self.shown_events = message.events
        self.query_one("#stats-body", Static).update(message.rendered)
        following = " · updates while following" if getattr(self.app.screen_stack[0], "follow", False) else ""
        self.query_one("#stats-status", Static).update(
            f"{message.events:,} events{following} · j/k scroll · escape back"
        )

    def journal_grew(self) -> None:
        """Follow mode added events: collect them, at most once a second."""
        if self._pending is None:
            self._pending = self.set_timer(REFRESH_WHILE_FOLLOWING_S, self._refresh_now)

    def _refresh_now(self) -> None:
        self._pending = None
        if not any(w.is_running for w in self.workers if w.group == "stats"):
            self.collect()

    def _scroll(self) -> VerticalScroll:
        return self.query_one("#stats-scroll", VerticalScroll)

    def action_scroll_down(self) -> None:
        self._scroll().scroll_down(animate=False)

    def action_scroll_up(self) -> None:
        self._scroll().scroll_up(animate=False)

    def action_page_down(self) -> None:
        self._scroll().scroll_page_down(animate=False)

    def action_page_up(self) -> None:
        self._scroll().scroll_page_up(animate=False)

    def action_close(self) -> None:
        self.workers.cancel_group(self, "stats")
        self.dismiss(None)
