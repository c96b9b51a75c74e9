"""The app's replay: r, R, x, v, c, d, and escape while a replay runs. One owner for all of it.

``ReplayController`` holds the next strict replay's request, the running job, the last result and
the timeline's replay marks; the replay strip (``widgets/replay_panel.py``) only shows what it is
told. Neither the agent nor the replay's referee runs in this process: from a thread worker, the
jobs runner runs ``jobs.replay.ReplayJob`` in a child of its own, which drives the sandboxed
``python -m replay_tui.replay.child.main``. A cancel asks the job to stop (it kills the sandbox's process
group and answers with the outcome so far); a job that cannot start is a failed outcome; the runner
throttles its progress. The worker only posts messages (``messages.Replay*``), so the timeline keeps
answering keys while a long replay runs; when the child ends, the outcome, the replay marks and the
environment comparison arrive together in one ``ReplayFinished``, which ``finished`` alone handles.

The screens these keys open are imported when first opened: the first frame draws none of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ...analysis.marks import ReplayMarks
from ...jobs import JobCancelled, JobError, JobRun
from ...journal import Event
from ...journal.progress import ProgressCallback
from ...replay.parent.statuses import CANCELLED, CRASHED, FAILED, TIMEOUT
from ..messages import ReplayChildSpawned, ReplayChildStarted, ReplayFinished, ReplayProgressed
from ..widgets.replay_panel import ReplayPanel
from . import Handlers, ScreenParts

if TYPE_CHECKING:  # the replay job, runner, sandbox and environment job load with the first replay, not the first frame
    from ...jobs.replay import ReplayJobRequest, ReplayRequest
    from ...replay.parent.outcome import ReplayOutcome
    from ...replay.parent.runner import Progress
    from ..widgets.replay_environment import EnvironmentComparison

__all__ = ["ReplayController", "ReplayResult", "marks_of", "step_reports"]

POST_EVERY_S = 0.25  # progress reaches the UI at most this often, whatever the child sends


class ReplayResult(NamedTuple):
    """A finished run as the app keeps it (a NamedTuple: the module is on the first frame's path, where a
    dataclass compiles three methods at import)."""

    request: ReplayRequest
    outcome: ReplayOutcome
    marks: ReplayMarks | None
    environment: EnvironmentComparison | None


class ReplayController:
    """Runs replays and experiments in a child, shows them in the replay strip, keeps what they found."""

    def __init__(self, parts: ScreenParts, panel: ReplayPanel, *, replay_agent: str | None) -> None:
        self.parts = parts
        self.panel = panel
        self._replay_agent = replay_agent
        self._request: ReplayRequest | None = None  # made by ``request`` when first asked for
        self.run: JobRun[ReplayJobRequest, ReplayOutcome] | None = None  # the running replay job
        self.running: ReplayRequest | None = None  # what the running job was asked
        self.child_pid: int | None = None  # the sandboxed child, once spawned: it leads its process group
        self.last: ReplayResult | None = None  # the last run that ended
        self.marks: ReplayMarks | None = None  # the last strict replay's marks, shown on the timeline

    @property
    def request(self) -> ReplayRequest:
        """The next strict replay: --agent, then what R chose."""
        if self._request is None:
            from ...jobs.replay import ReplayRequest  # with the first replay: the first frame needs no job module

            self._request = ReplayRequest(agent=self._replay_agent)
        return self._request

    @request.setter
    def request(self, request: ReplayRequest) -> None:
        self._request = request

    def handlers(self) -> Handlers:
        return {
            ReplayProgressed: self.progressed,
            ReplayChildSpawned: self.child_spawned,
            ReplayChildStarted: self.child_started,
            ReplayFinished: self.finished,
        }

    def recorded_agent(self) -> str | None:
        journal = self.parts.journal
        first = journal.try_event(0) if len(journal) else None
        agent = first.payload.get("agent") if isinstance(first, Event) else None
        return agent if isinstance(agent, str) else None

    # -- starting ---------------------------------------------------------------
    def start(self, request: ReplayRequest) -> None:
        status = self.parts.status
        if len(self.parts.journal) == 0:
            status.say("nothing to replay yet: the journal has no events")
        elif self.run is not None:
            status.say("a replay is running: escape cancels it")
        else:
            self._start(request, Path(self.parts.journal.path))
            status.say(f"{request.label} started in a child process (escape cancels)")

    def _start(self, request: ReplayRequest, journal: Path) -> None:
        from ...jobs.replay import ReplayJob, ReplayJobRequest  # loaded with the first replay, not the first frame

        post = self.parts.post_message
        keep_step, report_step = step_reports(lambda step: post(ReplayProgressed(step)))
        job_request = ReplayJobRequest.of(
            request,
            journal,
            os.getcwd(),  # where `replay-tui` was started: the agent's project, as for the CLI
            on_progress=keep_step,
            on_isolation=lambda summary: post(ReplayChildStarted(summary)),
            on_child=lambda pid: post(ReplayChildSpawned(pid)),
        )
        self.run = JobRun(ReplayJob(), job_request, progress=report_step, every_s=POST_EVERY_S)
        self.running = request
        self.child_pid = None
        self.panel.show_started(request)
        self.parts.run_thread(partial(run_replay, self.run, request, journal, post), group="replay")

    def replay(self) -> None:
        self.start(self.request)

    def replay_dialog(self) -> None:
        from ..screens.replay_dialog import ReplayDialog

        def chosen(request: ReplayRequest | None) -> None:
            if request is not None:
                self.request = request
                self.start(request)

        self.parts.app.push_screen(ReplayDialog(self.request, self.recorded_agent()), chosen)

    def experiments(self) -> None:
        from ..screens.experiments import ExperimentsScreen, find_configs

        def chosen(request: ReplayRequest | None) -> None:
            if request is not None:
                self.start(request)

        journal = Path(self.parts.journal.path)
        configs = find_configs(journal.resolve(), Path(os.getcwd()))
        self.parts.app.push_screen(ExperimentsScreen(journal, self.request, configs), chosen)

    def cancel(self) -> bool:
        """Escape: cancel the running child (the job kills its process group); False when none runs."""
        if self.run is None:
            return False
        self.run.cancel()
        self.panel.show_cancelling()
        self.parts.status.say("cancelling the replay: the child's process group is killed")
        return True

    def stop(self) -> None:
        """The screen goes (the app quits): a running child is killed too, and the worker thread ends."""
        if self.run is not None:
            self.run.cancel()

    # -- what the worker posts ------------------------------------------------------
    def child_spawned(self, message: ReplayChildSpawned) -> None:
        if self.run is not None:
            self.child_pid = message.pid

    def progressed(self, message: ReplayProgressed) -> None:
        if self.run is not None:
            self.panel.show_progress(message.progress)

    def child_started(self, message: ReplayChildStarted) -> None:
        if self.running is not None:
            self.panel.show_isolation(message.isolation, self.running.agent)

    def finished(self, message: ReplayFinished) -> None:
        """The one handler of a finished run: the strip, the marks, the status line, then the report or comparison."""
        from ..screens.replay_report import ReplayReportScreen

        self.run = self.running = self.child_pid = None
        result = message.result
        self.last = result
        self.panel.show_result(result)
        outcome = result.outcome
        if outcome.experiment is None:  # an experiment's seqs belong to its own journal
            self.marks = result.marks
            self.parts.timeline.set_replay_marks(result.marks)
        self.parts.status.say(next_steps(result))
        if outcome.status in (CRASHED, TIMEOUT, FAILED):
            self.parts.app.notify(outcome.headline(), title=result.request.label, severity="error", timeout=10)
            self.parts.app.push_screen(ReplayReportScreen(result))
        elif outcome.experiment is not None and outcome.out and Path(outcome.out).exists():
            self.compare_last()

    # -- results --------------------------------------------------------------------
    def report(self) -> None:
        from ..screens.replay_report import ReplayReportScreen

        if self.last is None:
            self.parts.status.say("no replay yet: r replays this journal, x runs an experiment")
            return
        self.parts.app.push_screen(ReplayReportScreen(self.last))

    def compare_last(self) -> None:
        from ..screens.compare import CompareScreen

        last = self.last
        if last is None or not last.outcome.out:
            self.parts.status.say("no experiment journal to compare: x runs an experiment")
            return
        out = Path(last.outcome.out)
        if not out.exists():
            self.parts.status.say(f"{out}: the experiment wrote no journal")
            return
        recorded = Path(self.parts.journal.path)
        screen = CompareScreen(
            recorded, out, label_a=f"recorded: {recorded.name}", label_b=f"{last.request.mode}: {out.name}"
        )
        self.parts.app.push_screen(screen)

    def divergence(self) -> None:
        """`d`: jump to the last run's divergence and open the divergence view."""
        last = self.last
        if last is None:
            self.parts.status.say("no replay results yet: run a replay of this journal to find its first divergence")
            return
        report = last.outcome.divergence
        if report is None:
            self.parts.status.say(f"no divergence to show: {last.outcome.headline()}")
            return
        self.parts.goto_seq(report.seq)  # a recorded seq, for experiments too

        from ..screens.divergence import DivergenceScreen

        def closed(position: int | None) -> None:
            if position is not None:
                self.parts.timeline.move_to(position, center=True)

        self.parts.app.push_screen(DivergenceScreen(self.parts.journal, report, last.request.label), closed)


# -- the worker thread ----------------------------------------------------------------------------


def run_replay(
    run: JobRun[ReplayJobRequest, ReplayOutcome],
    request: ReplayRequest,
    journal: Path,
    post: Callable[[ReplayFinished], object],
) -> None:
    """Wait for the job (in a thread worker) and post its result, whatever happened: the app
    always hears that the run ended, so it never waits for ever."""
    from ...replay.parent.outcome import ReplayOutcome
    from ..widgets.replay_environment import compare_environment

    try:
        outcome: ReplayOutcome = run.result()
    except JobCancelled as cancelled:  # the outcome says so, with the events consumed before the kill
        before_start = ReplayOutcome(status=CANCELLED, journal=str(journal.resolve()), mode=request.mode)
        outcome = cancelled.partial or before_start
    except JobError as error:  # the job's own child could not start, or ended without an answer
        outcome = ReplayOutcome.failed(run.request.spec, "internal", str(error))
    except Exception as error:  # whatever it is, the run is over
        outcome = ReplayOutcome.failed(run.request.spec, "internal", f"{type(error).__name__}: {error}")
    marks = environment = None
    try:
        marks = marks_of(outcome, request.label)
        if outcome.status not in (CANCELLED,):
            environment = compare_environment(first_environment(journal), Path(os.getcwd()))
    finally:
        post(ReplayFinished(ReplayResult(request, outcome, marks, environment)))


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


def first_environment(journal: Path) -> object:
    """The environment recorded in the journal's run.started (None when absent or unreadable)."""
    from ...journal import Journal, JournalError

    try:
        with Journal(journal) as opened:
            opened.index(cancelled=lambda: len(opened) > 0)
            first = opened.try_event(0) if len(opened) else None
    except JournalError:
        return None
    return first.payload.get("environment") if isinstance(first, Event) else None


def next_steps(result: ReplayResult) -> str:
    """The status line after a run: what to look at next (the strip shows the headline)."""
    outcome = result.outcome
    if outcome.status in (CRASHED, TIMEOUT, FAILED):
        return "the child failed: the report shows its error and last output (v shows it again)"
    if outcome.experiment is not None:
        return "c compares the two trajectories · v: report (isolation, environment, live calls)"
    if outcome.divergence is not None:
        return f"d: divergence view at seq {outcome.divergence.seq} · v: report (isolation, environment, child output)"
    return "v: report (isolation, environment differences, child output) · r: replay again"
