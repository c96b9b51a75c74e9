"""Every screen of the app on a hostile journal, driven with the pilot: no crash, nothing raw on the screen.

What is checked is what the app would write to the terminal: the text of every segment of every strip the
compositor renders for the current screen (toasts included), plus the app's title.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_helpers import wait_for_replay, wait_until
from tui_helpers import SIZE, settle

from replay_tui.journal import Journal, call_key_of
from replay_tui.tui.app import ReplayApp
from replay_tui.tui.screens.compare_app import CompareApp

from ..replay.helpers import rechained_copy
from .conftest import REPO
from .hostile_journal import ATTACK, KEY, assert_nothing_raw

pytestmark = pytest.mark.asyncio


def screen_text(app: Any) -> str:
    """Everything the current screen draws, as the terminal would get it (less the style codes)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def check_screen(app: Any, where: str) -> str:
    text = screen_text(app)
    assert_nothing_raw(text, where)
    assert "PWNED" not in app.title and "PWNED" not in (app.sub_title or ""), "the title took journal text"
    return text


async def test_every_event_and_pane_of_the_main_screen(hostile: Path) -> None:
    app = ReplayApp(Journal(hostile))
    title = app.title
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        check_screen(app, "main screen")
        for number in range(len(screen.journal)):  # every event under the cursor: row, tree, panes, detail
            await pilot.press("j")
            await settle(pilot)
            check_screen(app, f"main screen, event {number + 2}")
        await pilot.press("F")  # the detail, everything unfolded
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            check_screen(app, "pane focus")
        assert "\\x1b]52;" in check_screen(app, "unfolded detail")  # shown escaped, not dropped
        await pilot.press("slash")
        await pilot.press(*"PWNED")
        await pilot.press("enter")
        await settle(pilot)
        check_screen(app, "search")
        await pilot.press("escape")
        assert app.title == title
        assert app.is_running


async def test_stats_help_and_presenter(hostile: Path) -> None:
    app = ReplayApp(Journal(hostile))
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("s")
        await wait_until(
            pilot, lambda: "collecting" not in str(app.screen.query_one("#stats-status").render()), what="the stats"
        )
        assert "\\x1b]52;" in check_screen(app, "stats")
        await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        check_screen(app, "help")
        await pilot.press("escape")
        for _ in range(6):
            await pilot.press("j")
        await settle(pilot)
        await pilot.press("m")  # bookmark a tool.call, then present it
        await pilot.pause()
        await pilot.press("p")
        await wait_until(pilot, lambda: app.screen is not screen, what="the presenter")
        await wait_until(
            pilot,
            lambda: "following" not in str(app.screen.query_one("#presenter-chain-text").render()),
            what="the presenter's chain",
        )
        check_screen(app, "presenter")
        await pilot.press("escape")
        await pilot.pause()
        check_screen(app, "back from the presenter")
        assert app.is_running


async def test_a_failed_replay_of_the_hostile_journal_and_its_report(hostile: Path, monkeypatch: Any) -> None:
    """The journal's agent name is attack text: the replay fails to import it, and says so safely."""
    monkeypatch.chdir(REPO)
    app = ReplayApp(Journal(hostile))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        panel = await wait_for_replay(pilot, timeout_s=120)
        assert panel.last is not None and panel.last.outcome.status != "match"
        check_screen(app, "failed replay")
        await pilot.press("v")
        await pilot.pause()
        check_screen(app, "replay report")
        await pilot.press("escape")
        assert app.is_running


async def test_divergence_view_of_a_hostile_edit(recorded_hostile: Path, tmp_path: Path, monkeypatch: Any) -> None:
    def edit(events):
        for event in events:
            if event["kind"] == "tool.call":
                event["payload"]["arguments"][KEY] = ATTACK + " edited"
                event["payload"]["call_key"] = call_key_of(event["payload"]["tool"], event["payload"]["arguments"])
            yield event

    edited = rechained_copy(recorded_hostile, tmp_path / "edited.jsonl", edit)
    monkeypatch.chdir(REPO)
    app = ReplayApp(Journal(edited))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        panel = await wait_for_replay(pilot, timeout_s=120)
        assert panel.last is not None and panel.last.outcome.status == "diverged", panel.last.outcome.to_text()
        check_screen(app, "diverged replay")
        await pilot.press("d")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "DivergenceScreen", what="the divergence")
        view = app.screen
        await wait_until(pilot, lambda: view.position is not None, what="state and chain")
        await pilot.pause(0.1)
        text = check_screen(app, "divergence")
        assert "\\x1b]52;" in text
        await pilot.press("escape")
        await pilot.press("v")
        await pilot.pause()
        check_screen(app, "replay report of the divergence")
        assert app.is_running


async def test_compare_two_hostile_journals(hostile: Path, hostile_variant: Path) -> None:
    app = CompareApp(hostile, hostile_variant)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot,
            lambda: "aligning" not in str(app.screen.query_one("#compare-summary").render()),
            what="the alignment",
        )
        await pilot.pause(0.1)
        assert "First differing" in check_screen(app, "compare")
        for _ in range(8):
            await pilot.press("down")
            await pilot.pause()
            check_screen(app, "compare rows")
        assert app.is_running
