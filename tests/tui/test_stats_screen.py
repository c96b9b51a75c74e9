"""The stats screen (s): computed in a worker, drawn by stats_render, updated while following."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, screen_text, settle, wait_for_file

from replay_tui.tui.screens.stats_screen import StatsScreen

pytestmark = pytest.mark.asyncio
WRITER = Path(__file__).with_name("follow_writer.py")


async def until_ready(pilot, screen: StatsScreen, events: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(300):
        if screen.shown_events == events:
            return
        await pilot.pause(0.05)
    raise AssertionError(f"stats never showed {events} events (showing {screen.shown_events})")


def plain(screen: StatsScreen) -> str:
    """The text on screen now."""
    return screen_text(screen.app)


async def until_drawn(pilot, screen: StatsScreen, text: str) -> str:  # type: ignore[no-untyped-def]
    """The screen's text once it shows ``text``: the count can change a frame before the drawing does."""
    for _ in range(60):
        shown = plain(screen)
        if text in shown:
            return shown
        await pilot.pause(0.05)
    return plain(screen)


async def test_s_shows_the_stats_of_the_journal(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        await pilot.press("s")
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        await until_ready(pilot, screen, 26)
        text = await until_drawn(pilot, screen, "customer_query")
        for expected in ("tool.result", "customer_query", "charges_query", "refund", "timeout"):
            assert expected in text, expected
        assert "█" in text or "▇" in text, "bars are drawn"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main


async def test_stats_keep_up_while_following(tmp_path: Path) -> None:
    path, go = tmp_path / "live.jsonl", tmp_path / "go"
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), "--events", "300", "--rate", "300", "--go", str(go)]
    )
    try:
        wait_for_file(path)
        app = make_app(path, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            main = await settle(pilot)
            await pilot.press("s")
            screen = app.screen
            await until_ready(pilot, screen, 1)
            go.touch()
            await until_ready(pilot, screen, 301)
            assert "customer_query" in await until_drawn(pilot, screen, "customer_query")
            assert main.live.stats_collected == 301, "each event collected once"
    finally:
        writer.kill()
