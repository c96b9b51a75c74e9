"""--follow on a journal that already holds many events: it opens at the end, sticks there as
events are appended, the header says so, and G brings the status bar back at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from tui_helpers import SIZE, make_app, settle

from replay_tui.journal import JournalWriter
from tests.journal_factory import run_started

pytestmark = pytest.mark.asyncio
STARTED = run_started(snapshot_every=10)


def write_open_journal(path: Path, events: int) -> None:
    writer = JournalWriter(path, run_id="run-follow-open", fsync="never")
    writer.append("run.started", STARTED)
    for index in range(events - 1):
        writer.append("input.received", {"role": "user", "content": f"message {index}"})
    writer.close()


def append_events(path: Path, count: int) -> None:
    """Append ``count`` chained events the way a running harness would (one write)."""
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    extra = path.with_name("extra.jsonl")
    extra.unlink(missing_ok=True)
    writer = JournalWriter(
        extra, run_id="run-follow-open", fsync="never", start_after=(last["seq"], last["event_hash"])
    )
    for index in range(count):
        writer.append("input.received", {"role": "user", "content": f"later {index}"})
    writer.close()
    with open(path, "ab") as handle:
        handle.write(extra.read_bytes())


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await pilot.pause(0.05)


def visible(timeline: Any) -> bool:
    top = timeline.scroll_offset.y
    return top <= timeline.row_of(timeline.cursor) < top + timeline.scrollable_content_region.height


async def test_follow_opens_at_the_end_and_sticks(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    write_open_journal(path, 1500)
    app = make_app(path, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        timeline = screen.timeline
        assert timeline.cursor == 1499 and visible(timeline) and timeline.scroll_offset.y > 0
        assert "following" in str(screen.query_one("RunHeader").render())
        append_events(path, 20)
        await wait_for(pilot, lambda: timeline.count == 1520)
        await wait_for(pilot, lambda: timeline.cursor == 1519)
        await pilot.pause(0.2)
        assert visible(timeline)


async def test_G_while_following_updates_the_status_at_once(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    write_open_journal(path, 300)
    app = make_app(path, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("g")
        append_events(path, 5)
        await wait_for(pilot, lambda: "newer events below" in str(screen.status.render()))
        await pilot.press("G")
        await pilot.pause(0.1)
        assert "newer events below" not in str(screen.status.render())
        assert "back at the end" in str(screen.status.render())


async def test_seq_scrolls_the_timeline_to_it(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    write_open_journal(path, 1500)
    app = make_app(path, start_seq=1444)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert screen.timeline.cursor == 1443 and visible(screen.timeline)
