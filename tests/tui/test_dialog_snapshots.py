"""Every dialog and the presenter fit the terminal: pictures at 80x24 and at 160x45, plus a check that
nothing but scrollable content reaches past the screen's edge.

Update with ``--snapshot-update`` after a deliberate change, and look at the pictures before committing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from journal_factory import write_incident
from tui_helpers import make_app, settle

from replay_tui.tui.launch import DEMO_JOURNAL, demo_journal_path

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
DIALOGS = {"help": ("question_mark",), "replay_dialog": ("R",), "experiments": ("x",), "presenter": ("m", "p")}


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    target = tmp_path / DEMO_JOURNAL
    source = demo_journal_path()
    if source is not None:
        shutil.copyfile(source, target)
    else:
        write_incident(target)
    return target


def open_dialog(keys: tuple[str, ...]):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.3)
        for inputs in pilot.app.screen.query("Input"):
            inputs.cursor_blink = False
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.2)

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dialog", DIALOGS)
def test_dialog_snapshot(snap_compare, demo: Path, dialog: str, size: str) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(demo), terminal_size=SIZES[size], run_before=open_dialog(DIALOGS[dialog]))


@pytest.mark.asyncio
@pytest.mark.parametrize("dialog", DIALOGS)
async def test_nothing_runs_off_an_80x24_screen(demo: Path, dialog: str) -> None:
    app = make_app(demo)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(DIALOGS[dialog])(pilot)
        screen = app.screen
        assert type(screen).__name__ != "MainScreen"
        outside = []
        for widget in screen.walk_children():
            if not widget.display or widget.region.area == 0:
                continue
            if any(
                getattr(ancestor, "is_scrollable", False) for ancestor in widget.ancestors if ancestor is not screen
            ):
                continue  # inside a scrolling container: reachable by scrolling
            region = widget.region
            if region.x < 0 or region.y < 0 or region.right > 80 or region.bottom > 24:
                outside.append((type(widget).__name__, widget.id, tuple(region)))
        assert not outside
