"""Secret marks: events the secret scan flags are marked in the timeline, at open and while following."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, settle, wait_for_file, wait_until

from replay_tui.analysis.secrets import flagged_seqs
from replay_tui.journal import JournalWriter, call_key_of, open_journal
from replay_tui.tui.widgets.annotation_marks import GLYPHS, SECRET
from tests.journal_factory import run_started

pytestmark = pytest.mark.asyncio
WRITER = Path(__file__).with_name("follow_writer.py")
LEAKED = "sk-proj-" + "Zq7xR2mK9vL4pW8nT3bY6cH1dF5gJ0sA"


def write_leaky(path: Path) -> Path:
    writer = JournalWriter(path, run_id="run-leaky", fsync="never")
    writer.append("run.started", run_started(snapshot_every=10))
    writer.append("input.received", {"role": "user", "content": "look up customer 7"})
    arguments = {"id": 7, "headers": {"Authorization": f"Bearer {LEAKED}"}}
    key = call_key_of("crm", arguments)
    writer.append("tool.call", {"call_id": "c1", "call_key": key, "tool": "crm", "arguments": arguments}, step_id="s1")
    writer.append(
        "tool.result",
        {"call_id": "c1", "call_key": key, "tool": "crm", "result": {"name": "Ada"}, "duration_ms": 4},
        step_id="s1",
    )
    writer.append(
        "tool.result",
        {
            "call_id": "c2",
            "call_key": key,
            "tool": "crm",
            "result": {"db_password": "hunter2-but-longer"},
            "duration_ms": 4,
        },
        step_id="s1",
    )
    writer.close()
    return path


def row_text(screen, position: int) -> str:  # type: ignore[no-untyped-def]
    timeline = screen.timeline
    return timeline.render_line(timeline.row_of(position) - timeline.scroll_offset.y).text


async def test_flagged_events_are_marked_at_open(tmp_path: Path) -> None:
    path = write_leaky(tmp_path / "leaky.jsonl")
    expected = flagged_seqs(open_journal(path))
    assert expected == {3, 5}
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        for _ in range(100):
            if screen.live.opening_scanned:
                break
            await pilot.pause(0.02)
        await pilot.pause()
        assert screen.live.secret_seqs == expected
        assert GLYPHS[SECRET] in row_text(screen, 2) and GLYPHS[SECRET] in row_text(screen, 4)
        assert GLYPHS[SECRET] not in row_text(screen, 3)
        assert "2 events may hold a secret" in str(screen.status.render())
        assert screen.marks.of(screen.journal.event(2)) == [(GLYPHS[SECRET], SECRET)]


async def test_the_clean_fixture_has_no_marks(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await wait_until(pilot, lambda: screen.live.opening_scanned, "the opening scan")
        assert not screen.live.secret_seqs


async def test_followed_events_are_scanned_as_they_arrive(tmp_path: Path) -> None:
    path, go = tmp_path / "live.jsonl", tmp_path / "go"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(WRITER),
            str(path),
            "--events",
            "120",
            "--rate",
            "400",
            "--go",
            str(go),
            "--secret-every",
            "40",
        ]
    )
    try:
        wait_for_file(path)
        app = make_app(path, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            go.touch()
            await wait_until(
                pilot,
                lambda: screen.timeline.count == 121 and len(screen.live.secret_seqs) == 3,
                "all 121 events, three of them flagged",
            )
            assert screen.live.secret_seqs == {2, 42, 82}
            assert screen.live.secret_seqs == set(flagged_seqs(open_journal(path)))
            await wait_until(pilot, lambda: GLYPHS[SECRET] in row_text(screen, 81), "the secret mark on row 81")
    finally:
        writer.kill()
