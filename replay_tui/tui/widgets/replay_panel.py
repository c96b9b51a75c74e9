"""The replay strip under the main screen: a view of the replay the controller runs.

``controllers/replay.py`` starts the child, hears its progress and keeps the result; it tells
this strip what to show (attributes down). The strip only draws: the progress line, the elapsed
time while a run is on, then the run's one-line result and the keys that use it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from ...journal.safe_text import safe_line
from ...replay.parent.statuses import (
    CANCELLED,
    CRASHED,
    DIVERGED,
    FAILED,
    MATCH,
    TIMEOUT,
    UNRECORDED_CALL,
    UNUSED_EVENTS,
)
from . import replay_format
from .assembled_later import AssembledLater

if TYPE_CHECKING:  # the runner loads with the first replay, not the first frame
    from ...jobs.replay import ReplayRequest
    from ...replay.parent.runner import Progress
    from ..controllers.replay import ReplayResult

__all__ = ["ReplayPanel", "ReplayProgressLine", "result_keys"]

# Each repaint of the strip competes with the keys for the UI thread: two clock ticks a second
# are smooth enough to watch (the controller's progress arrives at most four times a second).
TICK_S = 0.5
BAR_WIDTH = 60
PHASE_LABELS = {
    "verify": "verifying the journal",
    "load": "child loading the journal",
    "fast-forward": "fast-forwarding",
    "replay": "replaying",
}


STATUS_CLASSES = {
    MATCH: "-ok",
    DIVERGED: "-bad",
    UNUSED_EVENTS: "-bad",
    UNRECORDED_CALL: "-bad",
    CANCELLED: "-warn",
    TIMEOUT: "-bad",
    CRASHED: "-bad",
    FAILED: "-bad",
}


class ReplayProgressLine(Widget):
    """Label, bar, events and elapsed time on one line, drawn by this widget alone:
    an update repaints one line and never asks for a layout pass, so progress
    costs the keys nothing."""

    DEFAULT_CSS = """
    ReplayProgressLine { height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = ""
        self.consumed = 0
        self.total = 0
        self.seq: int | None = None
        self.unit = "events"  # or "bytes" while the child loads the journal
        self.failed = False  # the run ended badly: the bar turns to the error colour
        self.elapsed = ""

    def set(self, **fields: object) -> None:
        for name, value in fields.items():
            setattr(self, name, value)
        self.refresh()

    @property
    def counts(self) -> str:
        if not self.total:
            return ""
        if self.unit == "bytes":
            return f"{self.consumed / 1e6:,.1f} of {self.total / 1e6:,.1f} MB read"
        where = f" · seq {self.seq}" if self.seq is not None else ""
        return f"{self.consumed:,} of {self.total:,} events{where}"

    @property
    def text(self) -> str:
        """The line as plain text (what tests and the bench read)."""
        return " ".join(part for part in (self.label, self.counts, self.elapsed) if part)

    def render(self) -> Content:
        filled = round(BAR_WIDTH * self.consumed / self.total) if self.total else 0
        share = f" {100 * self.consumed / self.total:3.0f}%" if self.total else "     "
        return Content.assemble(
            (f"{self.label:<36.36} ", "bold"),
            ("━" * filled, "$error" if self.failed else "$success"),
            ("━" * (BAR_WIDTH - filled), "$foreground 20%"),
            (share, ""),
            (f"  {self.counts:<34}", "$foreground-muted"),
            (f" {self.elapsed}", "$foreground-muted"),
        )


class ReplayPanel(AssembledLater):
    """Progress of the running replay, then its one-line result. Hidden until the first run."""

    DEFAULT_CSS = """
    ReplayPanel {
        height: auto;
        display: none;
        background: $panel;
        padding: 0 1;
    }
    ReplayPanel.-shown { display: block; }
    ReplayPanel #replay-result { height: auto; }
    ReplayPanel #replay-result.-ok { color: $success; }
    ReplayPanel #replay-result.-bad { color: $error; text-style: bold; }
    ReplayPanel #replay-result.-warn { color: $warning; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.started = 0.0  # when the run shown started: the elapsed time counts from here
        self._label = "replay"  # the run's label, before its phase
        self._tick: Timer | None = None

    def parts(self) -> Iterable[Widget]:
        return (ReplayProgressLine(id="replay-line"), Static("", id="replay-result", markup=False))

    @property
    def line(self) -> ReplayProgressLine:
        return self.part(ReplayProgressLine)

    @property
    def result_line(self) -> Static:
        return self.part(Static, "#replay-result")

    # -- what the controller shows ---------------------------------------------
    def show_started(self, request: ReplayRequest) -> None:
        """A run started: show the strip, an empty bar and the clock."""
        self._label = request.label
        self.started = time.perf_counter()
        self.add_class("-shown")
        self.line.set(
            label=f"{request.label}: starting the child…", consumed=0, total=0, seq=None, unit="events", failed=False
        )
        self.result_line.set_classes("")
        self.result_line.update(f"agent {safe_line(request.agent or '(as recorded)')} · escape cancels")
        self._tick = self.set_interval(TICK_S, self._show_elapsed)
        self._show_elapsed()

    def show_isolation(self, isolation: str, agent: str | None) -> None:
        """The child said hello: how it is isolated."""
        self.result_line.update(
            f"isolation: {safe_line(isolation)} · agent {safe_line(agent or '(as recorded)')} · escape cancels"
        )

    def show_progress(self, progress: Progress) -> None:
        phase = PHASE_LABELS.get(progress.phase) or safe_line(progress.phase, 40)
        label = f"{self._label}: {phase}"
        self.line.elapsed = replay_format.elapsed_text(
            time.perf_counter() - self.started
        )  # repainted with the progress below
        if progress.phase in ("replay", "fast-forward") and progress.total:
            self.line.set(
                label=label, consumed=progress.consumed, total=progress.total, seq=progress.seq, unit="events"
            )
        elif progress.phase == "load" and progress.total:
            self.line.set(label=label, consumed=progress.consumed, total=progress.total, seq=None, unit="bytes")
        else:
            self.line.set(label=label)

    def show_cancelling(self) -> None:
        self.line.set(label="cancelling…")

    def show_result(self, result: ReplayResult) -> None:
        """The run ended: its status on the bar, its headline and the keys that use it below."""
        if self._tick is not None:
            self._tick.stop()
            self._tick = None
        outcome = result.outcome
        self.line.set(
            label=f"{result.request.label}: {outcome.status}",
            consumed=outcome.consumed,
            total=outcome.total,
            seq=None,
            unit="events",
            failed=STATUS_CLASSES.get(outcome.status) == "-bad",
        )
        self._show_elapsed()  # as the user waited: start-up, replay and the environment check
        self.result_line.set_classes(STATUS_CLASSES.get(outcome.status, ""))
        self.result_line.update(Content(safe_line(f"{outcome.headline()}  [{result_keys(result)}]")))

    def _show_elapsed(self) -> None:
        self.line.set(elapsed=replay_format.elapsed_text(time.perf_counter() - self.started))


def result_keys(result: ReplayResult) -> str:
    """The keys that do something with this result."""
    keys = ["v report"]
    if result.outcome.divergence is not None:
        keys.append("d divergence")
    if result.outcome.out:
        keys.append("c compare")
    keys.append("r replay again")
    return " · ".join(keys)
