"""Helpers for the app tests: real journals written by JournalWriter, settling the app."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from journal_factory import write_bulk, write_incident  # noqa: E402

from replay_tui.journal import Journal  # noqa: E402
from replay_tui.tui.app import ReplayApp  # noqa: E402
from replay_tui.tui.screens.main import MainScreen  # noqa: E402

SIZE = (160, 45)


@pytest.fixture
def incident_path(tmp_path: Path) -> Path:
    return write_incident(tmp_path / "incident.jsonl")


@pytest.fixture
def bulk_path(tmp_path: Path) -> Path:
    return write_bulk(tmp_path / "bulk.jsonl", 3000)


def make_app(path: Path, **options: Any) -> ReplayApp:
    return ReplayApp(Journal(path), **options)


async def settle(pilot: Any, rounds: int = 200) -> MainScreen:
    """Wait until indexing, the cursor's state and tree work, and searches are done."""
    app = pilot.app
    screen = app.screen_stack[0]
    await pilot.pause(0.1)
    for _ in range(rounds):
        busy = [w for w in app.workers if w.is_running and w.group not in ("verify", "follow")]
        if not screen.indexing and not busy:
            break
        await pilot.pause(0.02)
    await pilot.pause(0.1)  # the cursor's settle timer, then the messages it causes
    for _ in range(rounds):
        if not [w for w in app.workers if w.is_running and w.group not in ("verify", "follow")]:
            break
        await pilot.pause(0.02)
    await pilot.pause()
    return screen


def seq_at_cursor(screen: MainScreen) -> int:
    return screen.journal.event(screen.timeline.cursor).seq
