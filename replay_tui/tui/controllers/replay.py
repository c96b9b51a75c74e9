"""The replay keys of the main screen: r, R, x, v, c, d, and escape while a replay runs.

The screens these keys open are imported when first opened: the first frame draws none of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ...analysis.search import ReplayMarks
from ...journal import Event
from ...replay.parent.statuses import CRASHED, FAILED, TIMEOUT
from ..widgets.replay_panel import ReplayFinished, ReplayPanel, ReplayRequest, ReplayResult
from . import ScreenParts


class ReplayController:
    """Starts replays and experiments in the replay panel and shows what they found."""

    def __init__(
        self,
        parts: ScreenParts,
        panel: ReplayPanel,
        *,
        replay_agent: str | None,
        set_replay_marks: Callable[[ReplayMarks | None], None],
    ) -> None:
        self.parts = parts
        self.panel = panel
        self.set_replay_marks = set_replay_marks
        self.request = ReplayRequest(agent=replay_agent)  # the next strict replay: --agent, then what R chose

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
        elif not self.panel.start(request, Path(self.parts.journal.path)):
            status.say("a replay is running: escape cancels it")
        else:
            status.say(f"{request.label} started in a child process (escape cancels)")

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
        """Escape: cancel the running replay; False when none runs."""
        if self.panel.cancel():
            self.parts.status.say("cancelling the replay: the child's process group is killed")
            return True
        return False

    # -- results --------------------------------------------------------------------
    def finished(self, message: ReplayFinished) -> None:
        from ..screens.replay_report import ReplayReportScreen

        result = message.result
        outcome = result.outcome
        if outcome.experiment is None:
            self.set_replay_marks(result.marks)
        self.parts.status.say(next_steps(result))
        if outcome.status in (CRASHED, TIMEOUT, FAILED):
            self.parts.app.notify(outcome.headline(), title=result.request.label, severity="error", timeout=10)
            self.parts.app.push_screen(ReplayReportScreen(result))
        elif outcome.experiment is not None and outcome.out and Path(outcome.out).exists():
            self.compare_last()

    def report(self) -> None:
        from ..screens.replay_report import ReplayReportScreen

        last = self.panel.last
        if last is None:
            self.parts.status.say("no replay yet: r replays this journal, x runs an experiment")
            return
        self.parts.app.push_screen(ReplayReportScreen(last))

    def compare_last(self) -> None:
        from ..screens.compare import CompareScreen

        last = self.panel.last
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

    def open_divergence_view(self) -> bool:
        """`d` after a replay with a divergence report: jump there and open the view."""
        last = self.panel.last
        if last is None:
            return False
        report = last.outcome.divergence
        if report is None:
            self.parts.status.say(f"no divergence to show: {last.outcome.headline()}")
            return True
        self.parts.goto_seq(report.seq)  # a recorded seq, for experiments too

        from ..screens.divergence import DivergenceScreen

        def closed(position: int | None) -> None:
            if position is not None:
                self.parts.timeline.move_to(position, center=True)

        self.parts.app.push_screen(DivergenceScreen(self.parts.journal, report, last.request.label), closed)
        return True


def next_steps(result: ReplayResult) -> str:
    """The status line after a run: what to look at next (the panel shows the headline)."""
    outcome = result.outcome
    if outcome.status in (CRASHED, TIMEOUT, FAILED):
        return "the child failed: the report shows its error and last output (v shows it again)"
    if outcome.experiment is not None:
        return "c compares the two trajectories · v: report (isolation, environment, live calls)"
    if outcome.divergence is not None:
        return f"d: divergence view at seq {outcome.divergence.seq} · v: report (isolation, environment, child output)"
    return "v: report (isolation, environment differences, child output) · r: replay again"
