"""Imported text reaches the viewer like any journal text: a cassette or an Inspect log carrying terminal
escape sequences opens in the app, which shows them escaped and never sends them to the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_tui.journal.safe_text import is_safe

from . import hostile as H

#: What a steered model might answer: a window title, a screen clear, a one-byte CSI, a bidi override.
HOSTILE_ANSWER = "Let me check.\x1b]0;owned\x07\x1b[2J\x9b31m\u202egnp.exe"
RAW = ("\x1b]0;owned", "\x07", "\x1b[2J", "\x9b", "\u202e")


def _hostile_cassette(tmp_path: Path) -> Path:
    document = H.cassette()
    response = document["interactions"][0]["response"]
    body = json.loads(response["body"]["string"])
    body["choices"][0]["message"]["content"] = HOSTILE_ANSWER
    response["body"]["string"] = json.dumps(body)
    response["headers"]["x-note"] = ["\x1b]52;c;b3duZWQ=\x07"]
    src = tmp_path / "hostile.cassette.yaml"
    src.write_text(H.yaml_text(document))
    return src


def _hostile_eval(tmp_path: Path) -> Path:
    members = dict(H.eval_members())
    escaped = json.dumps(HOSTILE_ANSWER)[1:-1].encode()
    members["samples/1_epoch_1.json"] = members["samples/1_epoch_1.json"].replace(b"Let me check.", escaped)
    return H.write_eval(tmp_path / "hostile.eval", members)


def _terminal_output(app: Any) -> str:
    """The bytes the app would write to a terminal for its whole screen now (what the headless driver drops)."""
    update = app.screen._compositor.render_update(full=True)
    return str(update.render_segments(app.console))


@pytest.mark.asyncio
@pytest.mark.parametrize("make", [_hostile_cassette, _hostile_eval], ids=["cassette", "inspect"])
async def test_escape_sequences_in_an_imported_trace_are_shown_escaped(tmp_path: Path, make: Any) -> None:
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.launch import resolve_journal

    from ..tui.tui_helpers import SIZE, screen_text, settle  # noqa: PLC0415 (the app's helpers load Textual)

    journal = Journal(resolve_journal(str(make(tmp_path))))
    app = ReplayApp(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # the app indexes the journal
        encoded = json.dumps(HOSTILE_ANSWER, ensure_ascii=False)[1:-1]
        payloads = [json.dumps(journal.event(i).payload, ensure_ascii=False) for i in range(len(journal))]
        assert any(encoded in payload for payload in payloads)  # the import kept the bytes as they were
        seen_escaped = False
        for position in range(len(journal)):
            if journal.event(position).kind == "model.response":
                text = screen_text(app)  # as text (\\x1b) or inside JSON (\\u001b): visible either way
                seen_escaped = seen_escaped or "\\x1b]0;owned" in text or "\\u001b]0;owned" in text
            shown, written = screen_text(app), _terminal_output(app)
            assert is_safe(shown, multiline=True), [char for char in shown if not is_safe(char)][:5]
            assert not any(raw in written for raw in RAW), f"raw escape sent at event {position}"
            await pilot.press("down")
            await settle(pilot)
        assert seen_escaped, "the answer's escapes were never shown (escaped) on screen"
