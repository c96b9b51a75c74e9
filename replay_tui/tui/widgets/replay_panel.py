"""The replay strip under the main screen: starts a replay child, follows it, cancels it.

Neither the agent nor the replay's referee runs in this process: from a thread worker, the jobs
runner runs ``jobs.replay.ReplayJob`` in a child of its own, which drives the sandboxed
``python -m replay_tui.replay.child.main``. A cancel asks the job to stop (it kills the sandbox's process
group and answers with the outcome so far); a job that cannot start is a failed outcome; the runner
throttles its progress. The callbacks only post messages, so the timeline keeps answering keys while a
long replay runs. When the child ends, the outcome, the replay marks for the timeline and the
environment comparison arrive together in one ``ReplayFinished``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.search import ReplayMarks
from ...jobs import JobCancelled, JobError, JobRun
from ...jobs.replay import ReplayJob, ReplayJobRequest, ReplayRequest
from ...journal.progress import ProgressCallback
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

if TYPE_CHECKING:  # the runner, sandbox and environment job load with the first replay, not the first frame
    from ...replay.parent.outcome import ReplayOutcome
    from ...replay.parent.runner import Progress
    from .replay_environment import EnvironmentComparison

__all__ = ["ReplayFinished", "ReplayPanel", "ReplayRequest", "ReplayResult", "marks_of"]

# Each repaint of the strip competes with the keys for the UI thread: four progress
# updates and two clock ticks a second are smooth enough to watch.
TICK_S = 0.5
POST_EVERY_S = 0.25  # progress reaches the UI at most this often, whatever the child sends
BAR_WIDTH = 60
PHASE_LABELS = {
    "verify": "verifying the journal",
    "load": "child loading the journal",
    "fast-forward": "fast-forwarding",
    "replay": "replaying",
}


@dataclass
class ReplayResult:
    """A finished run as the app keeps it."""

    request: ReplayRequest
    outcome: ReplayOutcome
    marks: ReplayMarks | None
    environment: EnvironmentComparison | None


@dataclass
class ReplayProgressed(Message):
    progress: Progress

    def can_replace(self, message: Message) -> bool:
        """A newer step (the next message) makes this one, still in the queue, pointless.
        Deliberate twin of ``tui.messages.IndexProgress.can_replace``: each message replaces only its own kind."""
        return isinstance(message, ReplayProgressed)


@dataclass
class ReplayChildSpawned(Message):
    """The job spawned the sandboxed child: its pid leads the child's process group."""

    pid: int


@dataclass
class ReplayChildStarted(Message):
    """The child said hello: it is isolated and about to load the journal."""

    isolation: str


@dataclass
class ReplayFinished(Message):
    result: ReplayResult


def marks_of(outcome: ReplayOutcome, label: str) -> ReplayMarks | None:
    """Timeline marks for an outcome: consumed seqs, the divergent seq, unused seqs."""
    divergent = frozenset({outcome.divergence.seq}) if outcome.divergence else frozenset()
    if outcome.experiment is not None:  # an experiment's seqs belong to the new journal
        return ReplayMarks(divergent=divergent, label=label) if divergent else None
    end = outcome.divergence.seq - 1 if outcome.divergence else outcome.last_seq
    consumed: frozenset[int] = frozenset()
    if end is not None and outcome.consumed:
        consumed = frozenset(range(max(1, end - outcome.consumed + 1), end + 1))
    unused: frozenset[int] = frozenset()
    if outcome.unused and outcome.unused.get("count") and outcome.unused.get("first_seq") is not None:
        first = int(outcome.unused["first_seq"])
        unused = frozenset(range(first, first + int(outcome.unused["count"]))) - divergent
    if not (divergent or consumed or unused):
        return None
    return ReplayMarks(divergent=divergent, consumed=consumed, unused=unused, label=label)


def step_reports(post: Callable[[Progress], object]) -> tuple[Callable[[Progress], None], ProgressCallback]:
    """The replay job's two progress hooks, both on the worker thread: every runner step heard is kept
    (cheap), and each count the jobs runner lets through (throttled) posts the latest step, so the
    line shows the phase and seq with the counts."""
    latest: list[Progress] = []

    def keep(step: Progress) -> None:
        latest[:] = (step,)

    def report(done: int, total: int) -> None:
        if latest:
            post(latest[0])

    return keep, report


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


class ReplayPanel(Vertical):
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
        self.replay_run: JobRun[ReplayJobRequest, ReplayOutcome] | None = None  # the running replay job
        self.child_pid: int | None = None  # the sandboxed child, once spawned: it leads its process group
        self.request: ReplayRequest | None = None
        self.last: ReplayResult | None = None
        self.started = 0.0
        self._tick: Timer | None = None

    def compose(self) -> ComposeResult:
        yield ReplayProgressLine(id="replay-line")
        yield Static("", id="replay-result", markup=False)

    @property
    def line(self) -> ReplayProgressLine:
        return self.query_one(ReplayProgressLine)

    @property
    def running(self) -> bool:
        return self.replay_run is not None

    # -- start / cancel -----------------------------------------------------
    def start(self, request: ReplayRequest, journal: Path) -> bool:
        """Start a run unless one is running; False when one is."""
        if self.running:
            return False
        keep_step, report_step = step_reports(lambda step: self.post_message(ReplayProgressed(step)))
        job_request = ReplayJobRequest.of(
            request,
            journal,
            os.getcwd(),  # where `replay-tui` was started: the agent's project, as for the CLI
            on_progress=keep_step,
            on_isolation=lambda summary: self.post_message(ReplayChildStarted(summary)),
            on_child=lambda pid: self.post_message(ReplayChildSpawned(pid)),
        )
        self.replay_run = JobRun(ReplayJob(), job_request, progress=report_step, every_s=POST_EVERY_S)
        self.child_pid = None
        self.request = request
        self.started = time.perf_counter()
        self.add_class("-shown")
        self.line.set(
            label=f"{request.label}: starting the child…", consumed=0, total=0, seq=None, unit="events", failed=False
        )
        result = self.query_one("#replay-result", Static)
        result.set_classes("")
        result.update(f"agent {safe_line(request.agent or '(as recorded)')} · escape cancels")
        self._tick = self.set_interval(TICK_S, self._show_elapsed)
        self._show_elapsed()
        self._run(self.replay_run, request, journal)
        return True

    def cancel(self) -> bool:
        """Cancel the running child (the job kills its process group); False when none runs."""
        if self.replay_run is None:
            return False
        self.replay_run.cancel()
        self.line.set(label="cancelling…")
        return True

    def on_unmount(self) -> None:
        """Quitting the app mid-run kills the child too (and lets the worker thread end)."""
        if self.replay_run is not None:
            self.replay_run.cancel()

    # -- the worker -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _run(self, run: JobRun[ReplayJobRequest, ReplayOutcome], request: ReplayRequest, journal: Path) -> None:
        from ...replay.parent.outcome import ReplayOutcome
        from .replay_environment import compare_environment

        try:
            outcome: ReplayOutcome = run.result()
        except JobCancelled as cancelled:  # the outcome says so, with the events consumed before the kill
            before_start = ReplayOutcome(status=CANCELLED, journal=str(journal.resolve()), mode=request.mode)
            outcome = cancelled.partial or before_start
        except JobError as error:  # the job's own child could not start, or ended without an answer
            outcome = ReplayOutcome.failed(run.request.spec, "internal", str(error))
        except Exception as error:  # whatever it is, the panel hears the run ended: it never waits for ever
            outcome = ReplayOutcome.failed(run.request.spec, "internal", f"{type(error).__name__}: {error}")
        marks = environment = None
        try:
            marks = marks_of(outcome, request.label)
            if outcome.status not in (CANCELLED,):
                environment = compare_environment(first_environment(journal), Path(os.getcwd()))
        finally:
            self.post_message(ReplayFinished(ReplayResult(request, outcome, marks, environment)))

    # -- messages ----------------------------------------------------------------
    @on(ReplayChildSpawned)
    def _child_spawned(self, message: ReplayChildSpawned) -> None:
        if self.replay_run is not None:
            self.child_pid = message.pid

    @on(ReplayProgressed)
    def _progressed(self, message: ReplayProgressed) -> None:
        if self.replay_run is None:
            return
        progress = message.progress
        phase = PHASE_LABELS.get(progress.phase) or safe_line(progress.phase, 40)
        label = f"{self.request.label if self.request else 'replay'}: {phase}"
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

    @on(ReplayChildStarted)
    def _child_started(self, message: ReplayChildStarted) -> None:
        if self.replay_run is not None and self.request is not None:
            agent = safe_line(self.request.agent or "(as recorded)")
            self.query_one("#replay-result", Static).update(
                f"isolation: {safe_line(message.isolation)} · agent {agent} · escape cancels"
            )

    @on(ReplayFinished)
    def _finished(self, message: ReplayFinished) -> None:
        self.replay_run = None
        self.child_pid = None
        if self._tick is not None:
            self._tick.stop()
            self._tick = None
        self.last = message.result
        outcome = message.result.outcome
        self.line.set(
            label=f"{message.result.request.label}: {outcome.status}",
            consumed=outcome.consumed,
            total=outcome.total,
            seq=None,
            unit="events",
            failed=STATUS_CLASSES.get(outcome.status) == "-bad",
        )
        self._show_elapsed()  # as the user waited: start-up, replay and the environment check
        result = self.query_one("#replay-result", Static)
        result.set_classes(STATUS_CLASSES.get(outcome.status, ""))
        result.update(Content(safe_line(f"{outcome.headline()}  [{result_keys(message.result)}]")))

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


def first_environment(journal: Path) -> object:
    """The environment recorded in the journal's run.started (None when absent or unreadable)."""
    from ...journal import Event, Journal, JournalError

    try:
        with Journal(journal) as opened:
            opened.index(cancelled=lambda: len(opened) > 0)
            first = opened.try_event(0) if len(opened) else None
    except JournalError:
        return None
    return first.payload.get("environment") if isinstance(first, Event) else None
