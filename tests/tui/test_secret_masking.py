"""Flagged values are masked in every pane by default; u reveals the one under the cursor on
purpose, and the header says secrets are shown until it is masked again."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_scan_marks import LEAKED, write_leaky
from tui_helpers import SIZE, make_app, settle, wait_for_workers

from replay_tui.journal import JournalWriter
from replay_tui.tui.widgets.json_view import JsonView
from tests.journal_factory import run_started

pytestmark = pytest.mark.asyncio
STATE_SECRET = "ghp_" + "Zx8f3kQ2mN7pL1vR9tY4wB6sHj5Kd0aQe2Rt"


def pane_text(view: JsonView) -> str:
    return "\n".join("".join(text for text, _ in line.parts) for line in view.lines)


def header_text(screen) -> str:  # type: ignore[no-untyped-def]
    return str(screen.header.render())


async def _to_position(pilot, screen, position: int) -> None:  # type: ignore[no-untyped-def]
    screen.timeline.focus()
    while screen.timeline.cursor < position:
        await pilot.press("j")
    await settle(pilot)


async def test_the_event_pane_masks_and_u_reveals_on_purpose(tmp_path: Path) -> None:
    app = make_app(write_leaky(tmp_path / "leaky.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await _to_position(pilot, screen, 2)  # seq 3: the tool.call with the bearer token
        detail = screen.query_one("#detail").query_one(JsonView)
        assert LEAKED not in pane_text(detail) and "[masked format:bearer-token" in pane_text(detail)
        assert "flagged by the secret scan are masked" in pane_text(detail)
        row = screen.timeline.render_line(screen.timeline.row_of(2) - screen.timeline.scroll_offset.y).text
        assert "crm(" in row and LEAKED[:12] not in row  # the timeline's summary is masked too
        assert "secrets shown" not in header_text(screen)
        detail.focus()
        while "Authorization" not in "".join(text for text, _ in detail.lines[detail.cursor].parts):
            await pilot.press("j")
        await pilot.press("u")
        await pilot.pause()
        assert LEAKED in pane_text(detail)
        assert "secrets shown" in header_text(screen)
        await pilot.press("u")
        await pilot.pause()
        assert LEAKED not in pane_text(detail) and "secrets shown" not in header_text(screen)
        await pilot.press("u")  # shown again, then another event: the reveal does not carry over
        await pilot.pause()
        assert "secrets shown" in header_text(screen)
        await _to_position(pilot, screen, 4)
        await wait_for_workers(pilot)
        assert "secrets shown" not in header_text(screen)
        assert "hunter2-but-longer" not in pane_text(detail)


async def test_state_panes_mask_flagged_values(tmp_path: Path) -> None:
    path = tmp_path / "state.jsonl"
    with JournalWriter(path, run_id="run-state", fsync="never") as writer:
        writer.append("run.started", run_started(snapshot_every=10, initial_state={"note": "ok"}))
        writer.append("input.received", {"role": "user", "content": "hi"})
        writer.append(
            "state.snapshot",
            {
                "state_hash": "sha256:" + "0" * 64,
                "state": {"repo": {"token_value": STATE_SECRET, "api_key": "hunter2hunter2"}},
            },
        )
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await _to_position(pilot, screen, 2)
        texts = [pane_text(view) for view in screen.query(JsonView)]
        assert not any(STATE_SECRET in text or "hunter2hunter2" in text for text in texts)
        state_after = screen.query_one("#after-json", JsonView)
        assert "token_value" in pane_text(state_after) and "[masked" in pane_text(state_after)
