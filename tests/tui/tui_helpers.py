"""Helpers for the app tests: real journals written by JournalWriter, settling the app."""

from __future__ import annotations

import asyncio
import html
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandList, CommandPalette
from textual.widgets import Input
from textual.worker import WorkerCancelled, WorkerFailed

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from journal_factory import write_bulk, write_incident  # noqa: E402

from replay_tui.journal import Journal  # noqa: E402
from replay_tui.tui.app import ReplayApp  # noqa: E402
from replay_tui.tui.screens.main import SETTLE_S, MainScreen  # noqa: E402
from replay_tui.tui.screens.prompt import PromptScreen  # noqa: E402

SIZE = (160, 45)


@pytest.fixture
def incident_path(tmp_path: Path) -> Path:
    return write_incident(tmp_path / "incident.jsonl")


@pytest.fixture
def bulk_path(tmp_path: Path) -> Path:
    return write_bulk(tmp_path / "bulk.jsonl", 3000)


def make_app(path: Path, **options: Any) -> ReplayApp:
    return ReplayApp(Journal(path), **options)


BACKGROUND_GROUPS = ("verify", "follow")  # run for the app's whole life (or until the chain is checked)
DEADLINE_S = 60.0


def busy_workers(app: Any, ignore: tuple[str, ...] = BACKGROUND_GROUPS) -> list[Any]:
    return [worker for worker in app.workers if worker.is_running and worker.group not in ignore]


async def wait_for_workers(
    pilot: Any, ignore: tuple[str, ...] = BACKGROUND_GROUPS, timeout_s: float = DEADLINE_S
) -> None:
    """Wait until no worker runs (but those in ``ignore``) and the messages they posted are handled.

    Built on ``app.workers.wait_for_complete``; a worker started by a message of another one is
    waited for too, and the whole wait has a deadline."""
    app = pilot.app
    deadline = time.monotonic() + timeout_s
    while True:
        busy = busy_workers(app, ignore)
        if not busy:
            await pilot.pause()  # the messages the last workers posted
            if not busy_workers(app, ignore):
                return
            continue
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"workers still running after {timeout_s} s: {[w.name or w.group for w in busy]}"
        try:
            await asyncio.wait_for(app.workers.wait_for_complete(busy), remaining)
        except (asyncio.TimeoutError, WorkerCancelled, WorkerFailed):
            pass  # a cancelled or failed worker has ended too (the tests check what it left)


async def wait_until(pilot: Any, condition: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    """Poll ``condition`` between frames until it holds; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        await pilot.pause(0.02)


def wait_for_file(path: Path, timeout_s: float = DEADLINE_S) -> None:
    """Block until ``path`` exists and is not empty (a writer process started it)."""
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and path.stat().st_size):
        assert time.monotonic() < deadline, f"{path} was not written within {timeout_s} s"
        time.sleep(0.01)


async def settle(pilot: Any, rounds: int | None = None) -> MainScreen:
    """Wait until indexing, the cursor's state and tree work, and searches are done.

    ``rounds`` is accepted for older callers and ignored: the waits end on events, with a deadline."""
    app = pilot.app
    screen = app.screen_stack[0]
    await wait_until(pilot, lambda: not screen.indexing, "indexing")
    await wait_for_workers(pilot)
    # the panes follow the cursor once it rests (a timer): then their workers run
    await pilot.pause(SETTLE_S + 0.02)
    await wait_for_workers(pilot)
    return screen


def seq_at_cursor(screen: MainScreen) -> int:
    return screen.journal.event(screen.timeline.cursor).seq


def screen_text(app: Any) -> str:
    """The text the terminal shows now, one line per row, read from Textual's public screenshot
    (an SVG whose text elements carry their row in ``y``)."""
    rows: dict[float, list[str]] = {}
    for attributes, text in re.findall(r"<text([^>]*)>(.*?)</text>", app.export_screenshot(), re.S):
        row = re.search(r'\by="([\d.]+)"', attributes)
        cell = html.unescape(re.sub(r"<[^>]+>", "", text)).replace("\xa0", " ")
        rows.setdefault(float(row.group(1)) if row else -1.0, []).append(cell)
    return "\n".join("".join(cells) for _y, cells in sorted(rows.items()))


def palette_query(app: Any) -> str | None:
    """What is typed in the open palette; None when no palette is open."""
    return app.screen.query_one(Input).value if isinstance(app.screen, CommandPalette) else None


def palette_highlights(app: Any, text: str) -> bool:
    """The open palette's highlighted hit mentions ``text`` (its hits arrive from a background search)."""
    if not isinstance(app.screen, CommandPalette):
        return False
    option = app.screen.query_one(CommandList).highlighted_option
    return option is not None and text.lower() in str(option.prompt).lower()


async def run_from_palette(pilot: Any, typed: str, hit: str | None = None) -> None:
    """Open the palette, type ``typed``, and run the highlighted hit once it mentions ``hit`` (default: ``typed``).

    Each step waits for what it needs (the palette, then its background search's hit), never a fixed time:
    under load the hits can arrive after any pause, and enter would run nothing or the wrong command."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), "the command palette")
    await pilot.press(*typed)
    wanted = typed if hit is None else hit
    await wait_until(pilot, lambda: palette_highlights(app, wanted), f"{wanted!r} highlighted in the palette")
    await pilot.press("enter")
    await wait_until(pilot, lambda: not isinstance(app.screen, CommandPalette), "the palette to close")


async def open_prompt(pilot: Any, *keys: str) -> Input:
    """Press ``keys`` (a binding that asks for text: /, &, T, m...) and return the prompt's input once it is up:
    keys typed before the prompt is pushed would go to the timeline's bindings instead."""
    await pilot.press(*keys)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PromptScreen), "the prompt")
    return pilot.app.screen.query_one(Input)
