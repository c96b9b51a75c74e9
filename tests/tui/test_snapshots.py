"""Snapshots of the main screen (pytest-textual-snapshot, Textual pinned in pyproject).

The journal is the bundled incident demo when it exists, at a fixed terminal
size; workers are awaited before the picture is taken and the only blinking
cursor (the prompt's Input) is frozen. Update with ``--snapshot-update`` after a
deliberate change, and look at the pictures before committing them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from journal_factory import write_incident
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.launch import DEMO_JOURNAL, demo_journal_path

REPO_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "journals" / DEMO_JOURNAL


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The incident journal under its demo name (the header shows the file name)."""
    target = tmp_path / DEMO_JOURNAL
    source = demo_journal_path()
    if source is not None:
        shutil.copyfile(source, target)
    else:
        write_incident(target)
    return target


async def settle_all(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    for _ in range(300):
        if not any(worker.is_running for worker in pilot.app.workers):
            break
        await pilot.pause(0.02)
    await pilot.pause(0.1)


async def first_error_then_its_state_change(pilot) -> None:  # type: ignore[no-untyped-def]
    """The incident's first error, then the transition after it: marks, a long causal
    chain, and changed/added/removed state paths are all on screen."""
    await settle_all(pilot)
    await pilot.press("e")
    await settle_all(pilot)
    await pilot.press("j")
    await settle_all(pilot)


def test_main_screen_dark(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo), terminal_size=SIZE, run_before=first_error_then_its_state_change)


def test_main_screen_light(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo, theme="light"), terminal_size=SIZE, run_before=first_error_then_its_state_change)


def test_main_screen_high_contrast(snap_compare, demo: Path) -> None:
    assert snap_compare(
        make_app(demo, theme="high-contrast"), terminal_size=SIZE, run_before=first_error_then_its_state_change
    )


def test_search_prompt(snap_compare, demo: Path) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle_all(pilot)
        await pilot.press("slash", *"kind:tool.result")
        pilot.app.screen.query_one("Input").cursor_blink = False
        await pilot.pause(0.1)

    assert snap_compare(make_app(demo), terminal_size=SIZE, run_before=run_before)
