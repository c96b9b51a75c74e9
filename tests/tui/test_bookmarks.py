"""Bookmarks (m, '), notes (a) in the app: saved in the sidecar by event hash, never in the
journal, shown in the timeline, and still there after a re-open."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from tui_helpers import SIZE, make_app, seq_at_cursor, settle

from replay_tui.analysis.annotations import AnnotationStore, sidecar_path
from replay_tui.tui.screens.prompt import PromptScreen
from replay_tui.tui.widgets.annotation_marks import BOOKMARK, NOTE

pytestmark = pytest.mark.asyncio


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def goto(pilot, screen, seq: int) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("colon", *str(seq), "enter")
    await settle(pilot)
    assert seq_at_cursor(screen) == seq


def status_text(screen) -> str:  # type: ignore[no-untyped-def]
    return str(screen.status.render())


async def test_m_bookmarks_by_event_hash_in_the_sidecar_never_the_journal(incident_path: Path) -> None:
    before = digest(incident_path)
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await goto(pilot, screen, 12)
        await pilot.press("m")
        event = screen.journal.event(11)
        assert "bookmarked" in status_text(screen)
        assert screen.marks.of(event) == [("★", BOOKMARK)]
        row = screen.timeline.render_line(screen.timeline.row_of(11) - screen.timeline.scroll_offset.y)
        assert "★" in row.text and "12" in row.text
    document = orjson.loads(sidecar_path(incident_path).read_bytes())
    assert [(a["key"], a["seq"], a["bookmarked"]) for a in document["annotations"]] == [(event.event_hash, 12, True)]
    assert digest(incident_path) == before, "the journal is never written"


async def test_a_adds_a_note_in_a_dialog_and_m_again_removes_the_bookmark(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await goto(pilot, screen, 7)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"lookup ok", "enter")
        await pilot.pause()
        assert "note saved" in status_text(screen)
        event = screen.journal.event(6)
        assert screen.annotations.get(event).note == "lookup ok"
        assert screen.marks.of(event) == [("✎", NOTE)]
        await pilot.press("m", "m")
        assert "bookmark removed" in status_text(screen)
        assert screen.annotations.get(event).note == "lookup ok", "the note stays"
        await pilot.press("a")  # escape leaves the note as it was
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert screen.annotations.get(event).note == "lookup ok"
        await pilot.press("a")  # an empty note removes it
        await pilot.pause()
        app.screen.query_one("Input").value = ""
        await pilot.press("enter")
        await pilot.pause()
        assert screen.annotations.get(event) is None
        assert "note removed" in status_text(screen)


async def test_apostrophe_cycles_bookmarks_and_they_survive_a_reopen(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("apostrophe")
        assert "no bookmarks yet" in status_text(screen)
        for seq in (20, 5, 12):
            await goto(pilot, screen, seq)
            await pilot.press("m")
        await goto(pilot, screen, 12)
        await pilot.press("a", *"the timeout", "enter")
        await pilot.pause()
    reopened = make_app(incident_path)
    async with reopened.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        visited = []
        for _ in range(4):
            await pilot.press("apostrophe")
            await settle(pilot)
            visited.append(seq_at_cursor(screen))
        assert visited == [5, 12, 20, 5], "in seq order, wrapping around"
        await pilot.press("apostrophe")
        await settle(pilot)
        assert "bookmark 2 of 3" in status_text(screen) and "the timeout" in status_text(screen)
        assert screen.marks.of(screen.journal.event(11)) == [("★", BOOKMARK)]


async def test_an_unreadable_sidecar_is_reported_and_the_journal_still_opens(incident_path: Path) -> None:
    sidecar_path(incident_path).write_text("{not json")
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert any("not valid JSON" in str(n.message) for n in app._notifications)
        assert len(screen.journal) == 26
        await pilot.press("m")
    kept_aside = list(incident_path.parent.glob("*.corrupt-*"))
    assert len(kept_aside) == 1 and kept_aside[0].read_text() == "{not json"
    assert len(AnnotationStore.open(incident_path).bookmarks()) == 1


async def test_bookmarks_made_on_another_journal_at_this_path_are_reported(incident_path: Path, tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
    from journal_factory import write_bulk

    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await goto(pilot, screen, 12)
        await pilot.press("m")
    other = write_bulk(tmp_path / "other.jsonl", 100)
    other.replace(incident_path)  # another run now has this name; the sidecar stays
    reopened = make_app(incident_path)
    async with reopened.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        for _ in range(100):
            if "another journal" in str(screen.status.render()):
                break
            await pilot.pause(0.05)
        assert "1 bookmark(s)/note(s) were made on another journal at this path (seq 12)" in str(screen.status.render())
        assert screen.marks.of(screen.journal.event(11)) == []
        await pilot.press("apostrophe")
        assert "no bookmarks yet" in str(screen.status.render()), "a bookmark of the old journal is not visited"
        await pilot.press("p")
        assert "nothing to present" in str(screen.status.render())
