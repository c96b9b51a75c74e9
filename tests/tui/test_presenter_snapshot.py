"""Snapshots of the walkthrough screens on the bundled incident: the presenter, the stats
screen, and the timeline with bookmark and note marks (fixed size, workers awaited)."""

from __future__ import annotations

from pathlib import Path

from test_presenter import annotate
from test_snapshots import demo, settle_all  # noqa: F401  (demo is a fixture)
from tui_helpers import SIZE, make_app

NOTES = {
    10: "first page of customers: only part of the list will be read",
    40: "the replica answers with stale data from here on",
    2: "",
}


def test_presenter_page(snap_compare, demo: Path) -> None:  # noqa: F811
    annotate(demo, NOTES)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle_all(pilot)
        await pilot.press("p", "right", "right")
        await settle_all(pilot)

    assert snap_compare(make_app(demo), terminal_size=SIZE, run_before=run_before)


def test_stats_screen(snap_compare, demo: Path) -> None:  # noqa: F811
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle_all(pilot)
        await pilot.press("s")
        await settle_all(pilot)

    assert snap_compare(make_app(demo), terminal_size=SIZE, run_before=run_before)


def test_timeline_with_bookmarks_and_notes(snap_compare, demo: Path) -> None:  # noqa: F811
    annotate(demo, NOTES)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle_all(pilot)
        await pilot.press("apostrophe")
        await settle_all(pilot)
        await pilot.press("apostrophe")
        await settle_all(pilot)

    assert snap_compare(make_app(demo), terminal_size=SIZE, run_before=run_before)
