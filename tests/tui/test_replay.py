"""Replays from inside the app, through the real child process and real journals.

Each test opens a copy of a fixture journal (or one the wobbly agent records
through the real harness) and drives the app with Pilot: r, R, escape, v, d.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from replay_helpers import (
    WOBBLY_AGENT,
    fixture_copy,
    panel_of,
    record_wobbly,
    replays_of,
    slow_wobbly,
    wait_for_replay,
    wait_until,
)
from tui_helpers import SIZE, make_app, seq_at_cursor, settle

from replay_tui.analysis.marks import CONSUMED, DIVERGENT, UNUSED
from replay_tui.jobs.replay import ReplayRequest
from replay_tui.tui.screens.replay_dialog import ReplayDialog
from replay_tui.tui.screens.replay_report import ReplayReportScreen, report_sections
from replay_tui.tui.widgets.panes import EventDetail

pytestmark = pytest.mark.asyncio


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_r_replays_a_passing_journal_and_marks_every_event_consumed(tmp_path: Path) -> None:
    journal = fixture_copy("crm.jsonl", tmp_path)
    before = digest(journal)
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        # r's action returns at once and the child runs in a worker. Called directly: pilot.press waits for the
        # app to go idle, and on a quiet machine the whole 175-event replay ends inside that wait.
        screen.replays.replay()
        assert replays_of(pilot).running and replays_of(pilot).last is None
        replays = await wait_for_replay(pilot)
        first = replays.last
        await pilot.press("r")  # the key runs it again
        await wait_until(pilot, lambda: replays.last is not first and not replays.running, 60, "the second replay")
        outcome = replays.last.outcome
        assert outcome.status == "match", outcome.to_text()
        assert (outcome.consumed, outcome.total) == (175, 175)
        assert outcome.isolation is not None
        marks = replays.marks
        assert (
            marks is not None
            and marks.consumed == frozenset(range(1, 176))
            and not marks.divergent
            and not marks.unused
        )
        assert marks.mark_of(100) == CONSUMED
        panel = panel_of(pilot)
        result_text = str(panel.query_one("#replay-result").render())
        assert "Replay matched: 175 of 175 events consumed" in result_text
        assert "175 of 175 events" in panel.line.text
        await pilot.press("d")
        assert "no divergence to show: Replay matched" in str(screen.status.render())
        await pilot.press("v")
        assert isinstance(app.screen, ReplayReportScreen)
        titles = [title for title, _ in report_sections(app.screen.result)]
        assert titles[:2] == ["Result", "Isolation"] and "Environment: recorded vs current code" in titles
        await pilot.press("escape")
        assert app.screen is screen
    assert digest(journal) == before  # the journal is never written


async def test_the_step_23_divergence_view(tmp_path: Path) -> None:
    """crm-incident replayed with the fixed agent: the divergence at seq 144, step-23."""
    journal = fixture_copy("crm-incident.jsonl", tmp_path)
    app = make_app(journal, replay_agent="fixtures.agents.crm:agent")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("r")
        replays = await wait_for_replay(pilot)
        outcome = replays.last.outcome
        assert outcome.status == "diverged"
        assert outcome.divergence.seq == 144 and outcome.divergence.step == "step-23"
        marks = replays.marks
        assert marks.mark_of(144) == DIVERGENT and marks.mark_of(143) == CONSUMED and marks.mark_of(175) == UNUSED
        assert marks.consumed == frozenset(range(1, 144))

        await pilot.press("d")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "DivergenceScreen", what="the divergence view")
        view = app.screen
        await wait_until(pilot, lambda: view.position is not None, what="state and chain")
        await pilot.pause(0.1)
        assert seq_at_cursor(screen) == 144  # d also moved the timeline
        header = str(view.query_one("#divergence-header").render())
        assert "diverged at seq=144" in header and "step-23" in header and "call_key differs" in header
        assert "include_inactive" in str(view.query_one("#divergence-diff-text").render())
        # Expected vs actual: the removed argument is highlighted on the expected side only.
        expected = view.query_one("#divergence-expected-json")
        actual = view.query_one("#divergence-actual-json")
        assert [line.change for line in expected.lines if line.pointer == "/arguments/include_inactive"] == ["removed"]
        assert not [line for line in actual.lines if line.pointer == "/arguments/include_inactive"]
        # State before seq 144, verified against the recorded hashes.
        state_pane = view.query_one("#divergence-state")
        assert "seq 144" in str(state_pane.border_title)
        assert state_pane.view.document.value["pages_fetched"] == 21
        # The causal chain from the root down to the divergent event.
        tree = view.query_one("#divergence-tree")
        chain_seqs = [screen.journal.event(position).seq for position in tree.chain]
        assert chain_seqs[0] == 2 and chain_seqs[-1] == 144
        assert [ref.seq for ref in outcome.divergence.causal_chain][-1] == 144
        # the cursor lands on the divergent event once the new nodes have lines (after a refresh)
        await wait_until(
            pilot,
            lambda: tree.cursor_node is not None and tree.cursor_node.data.position == tree.chain[-1],
            what="the tree's cursor on the divergent event",
        )
        await pilot.press("escape")
        assert app.screen is screen
        # The marks reach the event pane, the timeline's row and the search (is:divergent).
        await settle(pilot)
        assert seq_at_cursor(screen) == 144
        detail = screen.query_one(EventDetail).view
        assert any("marks: divergent" in line.parts[0][0] for line in detail.lines[:5])
        row = screen.timeline.render_line(screen.timeline.cursor - screen.timeline.scroll_offset.y).text
        assert "≠" in row and " 144 " in row
        await pilot.press("g")
        await pilot.press("slash", *"is:divergent", "enter")
        await settle(pilot)
        assert seq_at_cursor(screen) == 144


async def test_the_replay_dialog_chooses_the_agent(tmp_path: Path) -> None:
    journal = fixture_copy("crm-incident.jsonl", tmp_path)
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("R")
        assert isinstance(app.screen, ReplayDialog)
        app.screen.query_one("#replay-agent").value = "not an entry point"
        await pilot.press("enter")
        assert "is not an entry point" in str(app.screen.query_one("#replay-dialog-error").render())
        app.screen.query_one("#replay-agent").value = "fixtures.agents.crm:agent"
        await pilot.press("enter")
        replays = await wait_for_replay(pilot)
        assert replays.last.request.agent == "fixtures.agents.crm:agent"
        assert replays.last.outcome.divergence.seq == 144
        # r repeats with the same choice.
        first = replays.last
        await pilot.press("r")
        await wait_until(pilot, lambda: replays.last is not first and not replays.running, 60, "the second replay")
        assert replays.last.outcome.divergence.seq == 144


async def test_escape_cancels_a_running_replay_and_kills_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 60)
    slow_wobbly(monkeypatch, "0.2")  # ~12 s of replay: long enough to cancel mid-run
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("r")
        panel, replays = panel_of(pilot), replays_of(pilot)
        await wait_until(pilot, lambda: replays.child_pid is not None, what="the child")
        pid = replays.child_pid
        await wait_until(pilot, lambda: "events" in panel.line.text, what="progress")
        # Keys still work while the child runs.
        await pilot.press("j", "j")
        assert seq_at_cursor(screen) == 3
        await pilot.press("escape")
        await wait_for_replay(pilot, timeout_s=10)
        outcome = replays.last.outcome
        assert outcome.status == "cancelled"
        assert 0 < outcome.consumed < outcome.total
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped, and its process group killed
        assert "cancelled" in str(panel.query_one("#replay-result").render())
        assert replays.marks is not None and replays.marks.mark_of(1) == CONSUMED
        await pilot.press("d")
        assert "no divergence to show: Replay cancelled" in str(screen.status.render())


async def test_a_crashing_agent_is_reported_with_its_last_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 10)
    monkeypatch.setenv("WOBBLY_CRASH_AT", "4")
    monkeypatch.setenv("REPLAY_TUI_PASS_ENV", "WOBBLY_SLEEP_S,WOBBLY_CRASH_AT")  # the sandbox scrubs the rest
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        replays = await wait_for_replay(pilot)
        assert replays.last.outcome.status == "crashed"
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayReportScreen), what="the report")
        sections = dict(report_sections(app.screen.result))
        assert "crashed (killed by SIGABRT)" in sections["Result"][0]
        assert "wobbly: native crash in step 4" in sections["Child stderr (last lines)"]
        assert "crashed" in str(panel_of(pilot).query_one("#replay-result").render())
        await pilot.press("escape")
        await pilot.press("j")  # the app is alive and answers keys
        assert app.is_running


async def test_an_agent_that_does_not_import_and_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 30)
    app = make_app(journal, replay_agent="tests.tui.replay_agents.no_such_module:agent")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("r")
        replays = await wait_for_replay(pilot)
        outcome = replays.last.outcome
        assert outcome.status == "error" and outcome.error["kind"] == "agent_import"
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayReportScreen), what="the report")
        error_lines = dict(report_sections(app.screen.result))["Child error"]
        assert "no_such_module" in error_lines[0]
        await pilot.press("escape")

        slow_wobbly(monkeypatch, "0.5")
        first = replays.last
        screen.replays.start(ReplayRequest(agent=WOBBLY_AGENT, timeout_s=2))
        await wait_until(pilot, lambda: replays.last is not first and not replays.running, 15, "the timed-out replay")
        assert replays.last.outcome.status == "timeout"
        assert "timed out after 2 s" in replays.last.outcome.headline()
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayReportScreen), what="the report")


async def test_quitting_mid_replay_kills_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 60)
    slow_wobbly(monkeypatch, "0.3")
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        replays = replays_of(pilot)
        await wait_until(pilot, lambda: replays.child_pid is not None, what="the child")
        pid = replays.child_pid
        started = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - started < 10  # not the ~18 s the replay would take
    deadline = time.monotonic() + 5  # the worker thread kills and reaps the child as it ends
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"replay child {pid} still exists after the app quit")
