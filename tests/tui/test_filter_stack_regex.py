"""`&` filters stack (each narrows the last) and come off one by one with escape; `/` takes re: regexes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tui_helpers import SIZE, make_app, open_prompt, settle

from replay_tui.analysis.search import QueryError, find_next, matching_positions, parse_query
from replay_tui.journal import open_journal


async def add_filter(pilot: Any, text: str) -> None:
    (await open_prompt(pilot, "ampersand")).value = text
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_filters_stack_and_come_off_one_by_one(incident_path: Path) -> None:
    journal = open_journal(incident_path)
    tools = list(matching_positions(journal, parse_query("kind:tool")))
    both = [p for p in tools if p in set(matching_positions(journal, parse_query("is:error")))]
    journal.close()
    assert 0 < len(both) < len(tools)
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        await add_filter(pilot, "kind:tool")
        assert list(timeline.rows) == tools
        await add_filter(pilot, "is:error")
        assert list(timeline.rows) == both
        assert "kind:tool & is:error" in str(timeline.border_title)
        await pilot.press("escape")
        await settle(pilot)
        assert list(timeline.rows) == tools and "is:error" not in str(timeline.border_title)
        await pilot.press("escape")
        await settle(pilot)
        assert timeline.rows is None


def test_re_queries(incident_path: Path) -> None:
    journal = open_journal(incident_path)
    try:
        whole = parse_query(r're:"seq":1\d\b')
        assert [f.name for f in whole.filters] == ["re"]
        hits = list(matching_positions(journal, whole))
        assert [journal.event(p).seq for p in hits] == list(range(10, 20))
        mixed = parse_query(r"kind:tool.call re:'\"seq\":1\d\b'")
        assert all(journal.event(p).kind == "tool.call" for p in matching_positions(journal, mixed))
        assert find_next(journal, parse_query("re:no such text \\d{9}"), 0, 1, wrap=True) is None
        with pytest.raises(QueryError, match="not a regular expression"):
            parse_query("re:(unclosed")
    finally:
        journal.close()


@pytest.mark.asyncio  # not module-wide: the module has sync tests too
async def test_slash_accepts_a_regex(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        (await open_prompt(pilot, "slash")).value = r're:"seq":1[2-4]\b'
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).seq == 12
