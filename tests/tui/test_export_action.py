"""The command palette's export action: the incident report next to the journal or at a chosen path."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, run_from_palette, settle, wait_until

from replay_tui.tui.controllers.export import default_report_path
from replay_tui.tui.screens.prompt import PromptScreen

pytestmark = pytest.mark.asyncio


async def run_export_from_palette(pilot, target: str | None) -> None:  # type: ignore[no-untyped-def]
    app = pilot.app
    await run_from_palette(pilot, "Export incident")
    await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), "the export path prompt")
    if target is not None:
        app.screen.query_one("Input").value = target
    await pilot.press("enter")


async def wait_for_notice(pilot, screen, words: str) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while words not in str(screen.status.render()):
        assert time.monotonic() < deadline, str(screen.status.render())
        await pilot.pause(0.1)
    return str(screen.status.render())


async def test_export_writes_the_html_report_next_to_the_journal(incident_path: Path) -> None:
    before = hashlib.sha256(incident_path.read_bytes()).hexdigest()
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("colon", "1", "2", "enter", "m")
        await run_export_from_palette(pilot, None)
        said = await wait_for_notice(pilot, screen, "incident report: wrote")
    report = default_report_path(incident_path)
    assert report == incident_path.with_name("incident.report.html") and str(report) in said
    html = report.read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "run-crm-0001" in html
    assert "Content-Security-Policy" in html
    bookmarks = html[html.index("<h2>Bookmarks and notes</h2>") :]
    assert "No bookmarks" not in bookmarks[:400] and "12" in bookmarks[:2000], (
        "the bookmark made with m is in the report"
    )
    assert hashlib.sha256(incident_path.read_bytes()).hexdigest() == before


async def test_export_to_a_chosen_markdown_path(incident_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "incident.md"
    target.parent.mkdir()
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await run_export_from_palette(pilot, str(target))
        await wait_for_notice(pilot, screen, "incident report: wrote")
    text = target.read_text()
    assert text.startswith("#") and "run-crm-0001" in text


async def test_export_to_an_unwritable_place_says_why(incident_path: Path, tmp_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await run_export_from_palette(pilot, str(tmp_path / "no-such-dir" / "r.html"))
        said = await wait_for_notice(pilot, screen, "cannot be written")
    assert "no-such-dir" in said


async def test_export_refuses_to_overwrite_the_journal(incident_path: Path) -> None:
    before = incident_path.read_bytes()
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await run_export_from_palette(pilot, str(incident_path))
        await wait_for_notice(pilot, screen, "refusing")
    assert incident_path.read_bytes() == before
