"""`replay-tui compare A B`: the comparison screen on any two journals, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import fixture_copy, wait_until
from tui_helpers import SIZE

from replay_tui.cli import main
from replay_tui.tui.screens.compare import CompareScreen
from replay_tui.tui.screens.compare_app import CompareApp


@pytest.mark.asyncio
async def test_compare_two_fixture_journals(tmp_path: Path) -> None:
    fixed = fixture_copy("crm.jsonl", tmp_path)
    incident = fixture_copy("crm-incident.jsonl", tmp_path)
    app = CompareApp(fixed, incident)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_until(pilot, lambda: screen.alignment is not None, what="the alignment")
        await pilot.pause(0.1)
        pair = screen.focused_pair
        # The incident's agent adds include_inactive at step-23: the first differing decision.
        assert pair is not None and pair.kind == "tool.call" and pair.step_id == "step-23"
        assert pair.b.payload["arguments"]["include_inactive"] is True
        table = screen.query_one("DataTable")
        assert screen.rows[table.cursor_row] is pair
        b_lines = screen.query_one("#compare-b-json").lines
        assert [line.change for line in b_lines if line.pointer == "/arguments/include_inactive"] == ["added"]
        summary = str(screen.query_one("#compare-summary").render())
        assert "First differing decision" in summary and "step-23" in summary
        await pilot.press("q")
    assert not app.is_running


@pytest.mark.asyncio
async def test_an_unreadable_line_is_named_in_the_screen(tmp_path: Path) -> None:
    good = fixture_copy("crm.jsonl", tmp_path)
    broken = tmp_path / "broken.jsonl"
    lines = good.read_bytes().splitlines(keepends=True)
    broken.write_bytes(b"".join(lines[:10]) + b"{not json\n" + b"".join(lines[11:]))
    app = CompareApp(good, broken)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await wait_until(
            pilot, lambda: "cannot compare" in str(screen.query_one("#compare-summary").render()), what="the error"
        )
        text = str(screen.query_one("#compare-summary").render())
        assert "broken.jsonl" in text and "line 11" in text
        assert app.is_running


def test_compare_command_checks_its_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = fixture_copy("crm.jsonl", tmp_path)
    assert main(["compare", str(good), str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: no such file or directory" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["compare", str(empty), str(good)]) == 2
    assert "empty.jsonl" in capsys.readouterr().err
    assert main(["compare", str(good), str(good), "--theme", "nope"]) == 2


def test_compare_is_a_registered_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--help"]) == 0
    assert "usage: replay-tui compare [-h] [--theme THEME] A B" in capsys.readouterr().out
