"""The replay strip over the jobs runner: the child's hello shows as its isolation, the line shows
the phase, counts and seq of the latest step, and a pending progress message is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import panel_of, record_wobbly, slow_wobbly, wait_for_replay, wait_until
from tui_helpers import SIZE, make_app, settle

from replay_tui.replay.parent.runner import Progress
from replay_tui.tui.controllers.replay import step_reports
from replay_tui.tui.messages import IndexProgress, ReplayChildStarted, ReplayProgressed


@pytest.mark.asyncio
async def test_the_strip_shows_isolation_phase_and_seq_while_the_child_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 40)
    slow_wobbly(monkeypatch, "0.2")  # ~8 s of replay: long enough to watch
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        panel = panel_of(pilot)

        def result_text() -> str:
            return str(panel.query_one("#replay-result").render())

        await wait_until(pilot, lambda: result_text().startswith("isolation: "), what="the child's hello")
        assert "escape cancels" in result_text()
        await wait_until(pilot, lambda: "replay: replaying" in panel.line.text, what="the replay phase")
        await wait_until(pilot, lambda: " · seq " in panel.line.text, what="a matched seq")
        assert " events · seq " in panel.line.text
        await pilot.press("escape")
        replays = await wait_for_replay(pilot, timeout_s=15)
        outcome = replays.last.outcome
        assert outcome.status == "cancelled" and outcome.isolation is not None
        assert not replays.running and replays.run is None and replays.child_pid is None


def test_a_pending_progress_message_is_replaced_by_the_next() -> None:
    older = ReplayProgressed(Progress("replay", 1, 10, 1))
    assert older.can_replace(ReplayProgressed(Progress("replay", 2, 10, 2)))
    assert not older.can_replace(ReplayChildStarted("namespaces"))
    index = IndexProgress(10, 100, 1000)  # the same rule serves the index's counts, each for its own kind
    assert index.can_replace(IndexProgress(20, 200, 1000)) and not index.can_replace(older)
    assert not older.can_replace(index)


def test_each_count_report_posts_the_latest_step() -> None:
    posted: list[Progress] = []
    keep, report = step_reports(posted.append)
    report(0, 0)  # no step yet: nothing to say
    keep(Progress("load", 5, 10, None))
    keep(Progress("replay", 3, 10, 3))
    report(3, 10)
    assert posted == [Progress("replay", 3, 10, 3)]
