"""The main screen's replay keys, kept out of main.py: r, R, x, v, c, d and escape.

``MainScreen`` mixes this in; it provides ``journal``, ``status``, ``timeline``,
``set_replay_marks`` and ``_goto_seq``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...journal import Event
from ...replay.runner import CRASHED, FAILED, TIMEOUT
from ..widgets.replay_panel import ReplayFinished, ReplayPanel, ReplayRequest, ReplayResult
from .compare import CompareScreen
from .divergence import DivergenceScreen
from .experiments import ExperimentsScreen, find_configs
from .replay_dialog import ReplayDialog
from .replay_report import ReplayReportScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    _Base = Screen[None]
else:
    _Base = object


class ReplayActions(_Base):
    """Replay and experiment actions of the main screen."""

    journal: Any
    status: Any
    timeline: Any
    _replay_request: ReplayRequest | None = None

    @property
    def replay_panel(self) -> ReplayPanel:
        return self.query_one(ReplayPanel)

    @property
    def replay_request(self) -> ReplayRequest:
        """The settings of the next strict replay (the app's --agent, then what R chose)."""
        if self._replay_request is None:
            self._replay_request = ReplayRequest(agent=getattr(self.app, "replay_agent", None))
        return self._replay_request

    def recorded_agent(self) -> str | None:
        first = self.journal.try_event(0) if len(self.journal) else None
        return first.payload.get("agent") if isinstance(first, Event) else None

    # -- starting ---------------------------------------------------------------
    def start_replay(self, request: ReplayRequest) -> None:
        if len(self.journal) == 0:
            self.status.say("nothing to replay yet: the journal has no events")
            return
        if not self.replay_panel.start(request, Path(self.journal.path)):
            self.status.say("a replay is running: escape cancels it")
            return
        self.status.say(f"{request.label} started in a child process (escape cancels)")

    def action_replay(self) -> None:
        self.start_replay(self.replay_request)

    def action_replay_dialog(self) -> None:
        def chosen(request: ReplayRequest | None) -> None:
            if request is not None:
                self._replay_request = request
                self.start_replay(request)

        self.app.push_screen(ReplayDialog(self.replay_request, self.recorded_agent()), chosen)

    def action_experiments(self) -> None:
        def chosen(request: ReplayRequest | None) -> None:
            if request is not None:
                self.start_replay(request)

        journal = Path(self.journal.path)
        configs = find_configs(journal.resolve(), Path(os.getcwd()))
        self.app.push_screen(ExperimentsScreen(journal, self.replay_request, configs), chosen)

    def cancel_replay(self) -> bool:
        """Escape: cancel the running replay; False when none runs."""
        if self.replay_panel.cancel():
            self.status.say("cancelling the replay: the child's process group is killed")
            return True
        return False

    # -- results --------------------------------------------------------------------
    def on_replay_finished(self, message: ReplayFinished) -> None:
        result = message.result
        outcome = result.outcome
        if outcome.experiment is None:
            self.set_replay_marks(result.marks)  # type: ignore[attr-defined]
        self.status.say(next_steps(result))
        if outcome.status in (CRASHED, TIMEOUT, FAILED):
            self.notify(outcome.headline(), title=result.request.label, severity="error", timeout=10)
            self.app.push_screen(ReplayReportScreen(result))
        elif outcome.experiment is not None and outcome.out and Path(outcome.out).exists():
            self.action_compare_last()

    def action_replay_report(self) -> None:
        last = self.replay_panel.last
        if last is None:
            self.status.say("no replay yet: r replays this journal, x runs an experiment")
            return
        self.app.push_screen(ReplayReportScreen(last))

    def action_compare_last(self) -> None:
        last = self.replay_panel.last
        if last is None or not last.outcome.out:
            self.status.say("no experiment journal to compare: x runs an experiment")
            return
        out = Path(last.outcome.out)
        if not out.exists():
            self.status.say(f"{out}: the experiment wrote no journal")
            return
        self.app.push_screen(CompareScreen(Path(self.journal.path), out, label_a=f"recorded: {Path(self.journal.path).name}", label_b=f"{last.request.mode}: {out.name}"))

    def open_divergence_view(self) -> bool:
        """`d` after a replay with a divergence report: jump there and open the view."""
        last = self.replay_panel.last
        if last is None:
            return False
        report = last.outcome.divergence
        if report is None:
            self.status.say(f"no divergence to show: {last.outcome.headline()}")
            return True
        self._goto_seq(report.seq)  # type: ignore[attr-defined]  # a recorded seq, for experiments too

        def closed(position: int | None) -> None:
            if position is not None:
                self.timeline.move_to(position, center=True)

        self.app.push_screen(DivergenceScreen(self.journal, report, last.request.label), closed)
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
