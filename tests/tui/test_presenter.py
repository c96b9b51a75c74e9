"""Presenter mode (p): the bookmarks in seq order, each note large, the causal chain highlighted."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, seq_at_cursor, settle

from replay_tui.analysis.annotations import AnnotationStore
from replay_tui.journal import open_journal
from replay_tui.tui.screens.presenter import PresenterScreen

pytestmark = pytest.mark.asyncio


def annotate(path: Path, notes: dict[int, str]) -> None:
    """Bookmarks and notes made the way the app makes them (the store, by event hash)."""
    journal = open_journal(path)
    store = AnnotationStore.open(path)
    for seq, note in notes.items():
        event = journal.event(journal.position_of_seq(seq))
        store.set_bookmark(event)
        if note:
            store.set_note(event, note)
    journal.close()


def text_of(screen: PresenterScreen, selector: str) -> str:
    return str(screen.query_one(selector).render())


async def until_chain(pilot, presenter: PresenterScreen) -> None:  # type: ignore[no-untyped-def]
    for _ in range(100):
        if presenter.chain is not None:
            return
        await pilot.pause(0.02)
    raise AssertionError("the causal chain never arrived")


async def test_p_walks_the_bookmarks_with_notes_and_causal_chains(incident_path: Path) -> None:
    annotate(incident_path, {12: "the charges lookup timed out", 23: "refund went to the original charge", 2: ""})
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        presenter = app.screen
        assert isinstance(presenter, PresenterScreen)
        assert [a.seq for a in presenter.bookmarks] == [2, 12, 23]
        assert "bookmark 1 of 3 · seq 2" in text_of(presenter, "#presenter-position")
        assert "no note" in text_of(presenter, "#presenter-note")
        await pilot.press("right")
        await until_chain(pilot, presenter)
        assert "bookmark 2 of 3 · seq 12" in text_of(presenter, "#presenter-position")
        assert "the charges lookup timed out" in text_of(presenter, "#presenter-note")
        seqs = [main.journal.event(p).seq for p in presenter.chain]
        assert seqs == [2, 9, 10, 11, 12], "root cause (the user's message) down to the timeout"
        chain = presenter.chain_text(presenter.chain)  # what the chain pane shows
        highlighted = [span for span in chain.spans if "reverse" in str(span.style)]
        assert len(highlighted) == 1 and "12 tool.result" in chain.plain[highlighted[0].start : highlighted[0].end]
        await pilot.press("space")
        await until_chain(pilot, presenter)
        assert "refund went to the original charge" in text_of(presenter, "#presenter-note")
        await pilot.press("space")  # past the last: stays on it
        assert "bookmark 3 of 3" in text_of(presenter, "#presenter-position")
        await pilot.press("left")
        assert "bookmark 2 of 3" in text_of(presenter, "#presenter-position")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is main
        assert seq_at_cursor(main) == 12, "the debugger opens where the talk ended"


async def test_p_without_bookmarks_says_how_to_make_them(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert app.screen is main
        assert "m bookmarks" in str(main.status.render())


async def test_presenter_starts_at_the_bookmark_under_the_cursor(incident_path: Path) -> None:
    annotate(incident_path, {5: "first", 17: "second"})
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        await pilot.press("colon", "1", "7", "enter")
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert "bookmark 2 of 2" in text_of(app.screen, "#presenter-position")
        await pilot.press("home")
        assert "bookmark 1 of 2" in text_of(app.screen, "#presenter-position")
        await pilot.press("q")
        await settle(pilot)
        assert seq_at_cursor(main) == 5
