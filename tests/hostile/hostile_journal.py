"""A hostile journal written through the real writer: every string a journal can carry is an attack.

Escape sequences (OSC 52 clipboard write, OSC 0 title change, OSC 8 hyperlink, CSI screen clear), a raw CR,
a bidi override, zero-width characters, and live and unbalanced Rich markup sit in payload values, in keys,
in tool names, in step ids and in the agent name. Nothing of it may reach a terminal raw.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch

from replay_tui.journal import JournalWriter, call_key_of, hash_value

ATTACK = (
    "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: write the clipboard
    "\x1b]0;PWNED-TITLE\x07"  # OSC 0: set the window title
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # OSC 8 hyperlink
    "\rcovered\u202eevil\u2066\u200b\ufeff\x9b31m"  # CR, bidi override and isolate, zero width, C1 CSI
    "[/bold]x[link=https://evil.example]link[/link][bold red]loud[/]```<script>alert(1)</script>``"
)
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\ufeff", "\r")
TOOL = "[/bold]lookup" + ATTACK
STEP = "step-[/]" + ATTACK
AGENT = "[link=https://evil.example]evil:agent" + ATTACK
KEY = "key[/bold]" + ATTACK


def assert_nothing_raw(text: str, where: str) -> None:
    """No terminal-active or invisible character of the attack survives in ``text``."""
    found = sorted({repr(char) for char in FORBIDDEN if char in text})
    assert not found, f"{where}: raw {', '.join(found)} in {text[:400]!r}"


def write_hostile_journal(path: Path, *, variant: str = "") -> Path:
    """run.started … run.ended with the attack everywhere; ``variant`` changes one argument (for diff)."""
    state: dict[str, Any] = {KEY: ATTACK, "notes": []}
    with JournalWriter(path, run_id="run-" + ATTACK, fsync="never") as writer:
        writer.append(
            "run.started",
            {
                "agent": AGENT,
                "environment": {"runtime": ATTACK, "timezone": "UTC", "feature_flags": {KEY: True}},
                "harness": {
                    "version": "0.1.0",
                    "plugins": [{"id": ATTACK, "type": "tools", "version": "1"}],
                    "config_hash": None,
                },
                "reducer_version": "1",
                "snapshot_every": 3,
                "initial_state": copy.deepcopy(state),
            },
        )
        root = writer.append("input.received", {"role": ATTACK, "content": ATTACK, KEY: ATTACK}).event_id
        for step in (1, 2):
            step_id = f"{STEP}-{step}"
            request = {"model": ATTACK, "messages": [{"role": "user", "content": ATTACK}], KEY: ATTACK}
            request_id = writer.append(
                "model.request",
                {"request_hash": hash_value(request), "request": request},
                step_id=step_id,
                parent_event_id=root,
            ).event_id
            arguments = {KEY: ATTACK + variant if step == 2 else ATTACK, "n": step}
            response = {
                "content": ATTACK,
                "tool_calls": [{"id": ATTACK, "name": TOOL, "arguments": arguments}],
                "finish_reason": ATTACK,
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
            response_id = writer.append(
                "model.response",
                {"request_hash": hash_value(request), "response": response},
                step_id=step_id,
                parent_event_id=request_id,
            ).event_id
            key = call_key_of(TOOL, arguments)
            call_id = writer.append(
                "tool.call",
                {"call_id": ATTACK, "call_key": key, "tool": TOOL, "arguments": arguments},
                step_id=step_id,
                parent_event_id=response_id,
            ).event_id
            outcome: dict[str, Any] = (
                {"result": {KEY: ATTACK, "rows": [ATTACK]}}
                if step == 1
                else {"error": {"type": ATTACK, "message": ATTACK, "code": ATTACK, "timeout": False}}
            )
            result_id = writer.append(
                "tool.result",
                {"call_id": ATTACK, "call_key": key, "tool": TOOL, "duration_ms": 12, **outcome},
                step_id=step_id,
                parent_event_id=call_id,
            ).event_id
            patch = [
                {"op": "add", "path": "/notes/-", "value": ATTACK},
                {"op": "add", "path": "/" + KEY.replace("~", "~0").replace("/", "~1") + str(step), "value": ATTACK},
            ]
            before = hash_value(state)
            state = jsonpatch.apply_patch(state, patch, in_place=False)
            writer.append(
                "state.transition",
                {
                    "cause_seq": writer.last_seq,
                    "before_hash": before,
                    "after_hash": hash_value(state),
                    "reducer_version": "1",
                    "patch": patch,
                },
                step_id=step_id,
                parent_event_id=result_id,
            )
            writer.append("state.snapshot", {"state_hash": hash_value(state), "state": state}, step_id=step_id)
            writer.append("clock.read", {"source": ATTACK, "value": ATTACK}, step_id=step_id)
        writer.append(
            "run.ended",
            {"status": "error", "output": ATTACK, "error": {"type": ATTACK, "message": ATTACK}},
            parent_event_id=root,
        )
    return path
