"""Long rows in the timeline (issue 14, reading long values): `o` wraps each row's summary over as
many lines as it needs, ←/→ scroll the summaries sideways (within their length), and the cursor,
G, page keys and clicks keep working on wrapped rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tui_helpers import make_app, settle

from replay_tui.tui.actions import all_actions, palette_actions
from replay_tui.tui.format import SUMMARY_LIMIT, summary_of
from replay_tui.tui.widgets.timeline import SIDEWAYS_STEP, Timeline

NARROW = (100, 30)  # the timeline pane is narrower than most summaries


def screen_lines(timeline: Timeline) -> list[str]:
    return [timeline.render_line(y).text for y in range(timeline.scrollable_content_region.height)]


def longest_summary(timeline: Timeline) -> tuple[int, str]:
    """The position and summary of the event whose summary is longest."""
    journal = timeline.journal
    position = max(range(len(journal)), key=lambda p: len(summary_of(journal.try_event(p))))
    return position, summary_of(journal.try_event(position))


def joined(lines: list[str]) -> str:
    """Screen lines glued back together, without the padding and the continuation indents."""
    return "".join(line.strip() for line in lines)


@pytest.mark.asyncio
async def test_o_wraps_long_rows_and_o_again_gives_one_line_each(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        position, summary = longest_summary(timeline)
        width = timeline.scrollable_content_region.width
        assert len(summary) > width  # the summary does not fit on one line
        timeline.move_to(position, center=True)
        await pilot.pause()
        one_line = screen_lines(timeline)
        assert summary not in joined(one_line)
        await pilot.press("o")
        await pilot.pause()
        assert timeline.wrap and timeline.border_subtitle == "wrapped (o)"
        wrapped = screen_lines(timeline)
        assert summary.replace(" ", "") in joined(wrapped).replace(" ", "")  # every character is on screen
        seq = str(timeline.journal.event(position).seq)
        first = next(y for y, line in enumerate(wrapped) if line[4:12].strip() == seq)
        assert wrapped[first + 1].startswith(" " * 12)  # continuation lines start under the kind
        assert all(len(line) == width for line in wrapped)
        await pilot.press("o")
        await pilot.pause()
        assert not timeline.wrap and screen_lines(timeline) == one_line


@pytest.mark.asyncio
async def test_the_cursor_row_stays_whole_on_screen_while_wrapping(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        await pilot.press("o")
        await pilot.press("G")
        await pilot.pause()
        last = timeline.journal.event(len(timeline.journal) - 1)
        assert timeline.cursor == len(timeline.journal) - 1
        assert last.kind == "run.ended"
        lines = screen_lines(timeline)
        assert summary_of(last).replace(" ", "") in joined(lines).replace(" ", "")
        await pilot.press("g")
        await pilot.pause()
        assert timeline.scroll_offset.y == 0 and timeline.cursor == 0
        height = timeline.scrollable_content_region.height
        for _ in range(len(timeline.journal) - 1):  # walk down row by row: the cursor never leaves the screen
            await pilot.press("j")
            cursor_seq = str(timeline.journal.event(timeline.cursor).seq)
            rows_on_screen = [line[4:12].strip() for line in screen_lines(timeline) if line[4:12].strip()]
            assert cursor_seq in rows_on_screen
        assert len(screen_lines(timeline)) == height
        await pilot.press("pageup")
        await pilot.pause()
        assert timeline.cursor < len(timeline.journal) - 1


@pytest.mark.asyncio
async def test_a_click_on_a_continuation_line_selects_its_row(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        await pilot.press("o")
        await pilot.pause()
        layout = timeline._layout()
        y = next(y for y, (row, part) in enumerate(layout) if part == 1 and row > 0)
        await pilot.click(Timeline, offset=(5, y + 1))  # +1: the pane's top border
        await pilot.pause()
        assert timeline.cursor == timeline.position_at(layout[y][0])


@pytest.mark.asyncio
async def test_left_and_right_stop_within_the_summaries_and_say_so(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        for _ in range(SUMMARY_LIMIT // SIDEWAYS_STEP + 5):
            await pilot.press("right")
        assert 0 < timeline.sideways <= SUMMARY_LIMIT - SIDEWAYS_STEP
        assert timeline.border_subtitle == f"summaries → {timeline.sideways} (← back)"
        await pilot.press("o")  # wrapping shows everything: the sideways scroll is dropped
        await pilot.pause()
        assert timeline.sideways == 0
        await pilot.press("right")
        assert timeline.sideways == 0
        await pilot.press("o")
        for _ in range(3):
            await pilot.press("left")
        assert timeline.sideways == 0 and timeline.border_subtitle == ""


def test_wrap_is_one_registry_entry_bound_in_the_timeline_and_listed_in_the_palette() -> None:
    wrap: Any = next(action for action in all_actions() if action.id == "toggle_wrap")
    assert wrap.keys == "o" and wrap.owner == "timeline"
    assert wrap in palette_actions()
    bound = {binding.action: binding.key for binding in Timeline.BINDINGS if hasattr(binding, "action")}
    assert bound["toggle_wrap"] == "o"
    assert callable(Timeline.action_toggle_wrap)


@pytest.mark.asyncio
async def test_the_palette_entry_wraps_the_timeline(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=NARROW) as pilot:
        screen = await settle(pilot)
        commands = {command.title: command for command in app.get_system_commands(screen)}
        commands["Wrap long rows"].callback()
        await pilot.pause()
        assert screen.timeline.wrap
