"""Time and grouping in the timeline (time column, T, z, sideways scroll) and copying (y, Y, ctrl+y)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tui_helpers import SIZE, make_app, open_prompt, settle

from replay_tui.tui.widgets.json_view import JsonView
from replay_tui.tui.widgets.timeline_time import format_duration, format_offset, parse_time, parse_when


def row_text(timeline: Any, y: int) -> str:
    return timeline.render_line(y).text


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_time_column_shows_offsets_and_durations(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        assert "+00:00.000" not in row_text(timeline, 0)
        await pilot.press("i")
        await pilot.pause()
        assert "+00:00.000" in row_text(timeline, 0)
        start = parse_time(screen.journal.event(0).recorded_at)
        for y in range(1, 8):
            event = screen.journal.event(y)
            assert format_offset(parse_time(event.recorded_at), start) in row_text(timeline, y)
        results = [
            p
            for p in range(len(screen.journal))
            if screen.journal.event(p).kind == "tool.result"
            and isinstance(screen.journal.event(p).payload.get("duration_ms"), (int, float))
        ]
        if results:
            position = results[0]
            timeline.move_to(position, center=True)
            await pilot.pause()
            y = timeline.row_of(position) - timeline.scroll_offset.y
            assert format_duration(screen.journal.event(position).payload["duration_ms"] / 1000) in row_text(
                timeline, y
            )


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_T_goes_to_a_time(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        journal = screen.journal
        start = parse_time(journal.event(0).recorded_at)
        times = [parse_time(journal.event(p).recorded_at) for p in range(len(journal))]
        middle = times[len(times) // 2]
        offset = (middle - start).total_seconds()
        await open_prompt(pilot, "T")
        await pilot.press(*f"+{offset:.3f}", "enter")
        await settle(pilot)
        expected = next(p for p, when in enumerate(times) if when >= start + (middle - start))
        assert screen.timeline.cursor == expected


def test_parse_when_forms() -> None:
    start = parse_time("2026-11-30T10:00:00Z")
    assert start is not None
    assert parse_when("+01:30", start) == parse_time("2026-11-30T10:01:30Z")
    assert parse_when("+90s", start) == parse_time("2026-11-30T10:01:30Z")
    assert parse_when("10:02", start) == parse_time("2026-11-30T10:02:00Z")
    assert parse_when("2026-11-30T10:03:00Z", start) == parse_time("2026-11-30T10:03:00Z")
    assert parse_when("soon", start) is None and parse_when("25:00", start) is None


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_z_folds_by_step_and_unfolds(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        total = timeline.shown
        await pilot.press("z")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert timeline.folds is not None and 0 < timeline.shown < total
        assert "folded by step" in str(timeline.border_title)
        folded = [fold for fold in timeline.folds.values() if fold.count > 1]
        assert folded and sum(fold.count for fold in timeline.folds.values()) == total
        text = "\n".join(row_text(timeline, y) for y in range(min(timeline.shown, 30)))
        assert "▸" in text and " events" in text
        await pilot.press("z")
        await pilot.pause()
        assert timeline.folds is None and timeline.shown == total


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_left_and_right_scroll_long_summaries(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        before = row_text(screen.timeline, 1)
        await pilot.press("right")
        await pilot.pause()
        after = row_text(screen.timeline, 1)
        assert after != before and "…" in after
        await pilot.press("left")
        await pilot.pause()
        assert row_text(screen.timeline, 1) == before


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_y_Y_and_ctrl_y_copy_with_a_notice(incident_path: Path) -> None:
    app = make_app(incident_path)
    copied: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        screen = await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        event = screen.journal.event(screen.timeline.cursor)
        await pilot.press("y")
        assert json.loads(copied[-1]) == event.payload
        await pilot.press("ctrl+y")
        assert copied[-1].encode() == screen.journal.line_bytes(screen.timeline.cursor)
        await pilot.press("Y")  # nothing: the timeline has no JSON path
        assert len(copied) == 2
        detail = screen.query_one("#detail").query_one(JsonView)
        detail.focus()
        await pilot.pause()
        while detail.cursor_pointer in (None, ""):
            await pilot.press("j")
        pointer = detail.cursor_pointer
        await pilot.press("Y")
        assert copied[-1] == pointer
        await pilot.press("y")
        from replay_tui.tui.clipboard import as_text, value_at

        assert copied[-1] == as_text(value_at(event.payload, pointer))
        notices = [str(n.message) for n in app._notifications]
        assert any("copied the" in n for n in notices)


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_left_and_right_scroll_a_json_pane_sideways(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await settle(pilot)
        widest = max(range(len(screen.journal)), key=lambda p: len(screen.journal.line_bytes(p)))
        screen.timeline.move_to(widest, center=True)
        await settle(pilot)
        detail = screen.query_one("#detail").query_one(JsonView)
        detail.focus()
        await pilot.pause()
        assert detail.virtual_size.width > detail.scrollable_content_region.width
        await pilot.press("right", "right", "right")
        await pilot.pause()
        assert detail.scroll_x > 0
        await pilot.press("left", "left", "left")
        await pilot.pause()
        assert detail.scroll_x == 0


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_o_wraps_long_lines_in_a_json_pane(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await settle(pilot)
        widest = max(range(len(screen.journal)), key=lambda p: len(screen.journal.line_bytes(p)))
        screen.timeline.move_to(widest, center=True)
        await settle(pilot)
        detail = screen.query_one("#detail").query_one(JsonView)
        detail.focus()
        await pilot.pause()
        before = len(detail.lines)
        pane = detail.scrollable_content_region.width
        assert detail.virtual_size.width > pane
        await pilot.press("o")
        await pilot.pause()
        assert detail.wrap and len(detail.lines) > before and detail.virtual_size.width <= pane
        await pilot.press("o")
        await pilot.pause()
        assert not detail.wrap and len(detail.lines) == before
