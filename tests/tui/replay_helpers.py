"""Helpers for the app's replay tests: fixture journals copied to tmp, recording the
wobbly agent through the real harness, and waiting for a replay child to end."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from replay_tui.harness import record_run
from replay_tui.tui.controllers.replay import ReplayController
from replay_tui.tui.widgets.replay_panel import ReplayPanel

REPO = Path(__file__).resolve().parents[2]
JOURNALS = REPO / "fixtures" / "journals"
CONFIGS = REPO / "fixtures" / "configs"
WOBBLY_CONFIG = Path(__file__).parent / "replay_agents" / "wobbly.toml"
WOBBLY_AGENT = "tests.tui.replay_agents.wobbly:agent"


def fixture_copy(name: str, tmp_path: Path) -> Path:
    """A fixture journal under its own name in tmp (the app must never write it)."""
    target = tmp_path / name
    shutil.copyfile(JOURNALS / name, target)
    return target


def record_wobbly(path: Path, items: int) -> Path:
    outcome = record_run(WOBBLY_CONFIG, WOBBLY_AGENT, [str(items)], journal=path)
    assert outcome.status == "ok", outcome
    return path


def slow_wobbly(monkeypatch: Any, sleep_s: str) -> None:
    """The wobbly agent sleeps ``sleep_s`` per item in the replay child; the sandbox scrubs every other
    variable, so the replay is told to pass these in."""
    monkeypatch.setenv("WOBBLY_SLEEP_S", sleep_s)
    monkeypatch.setenv("REPLAY_TUI_PASS_ENV", "WOBBLY_SLEEP_S,WOBBLY_CRASH_AT")


def panel_of(pilot: Any) -> ReplayPanel:
    """The replay strip (what the user sees of the run)."""
    return pilot.app.screen_stack[0].query_one(ReplayPanel)


def replays_of(pilot: Any) -> ReplayController:
    """The app's one owner of replays: the running job, the last result, the marks."""
    return pilot.app.screen_stack[0].replays


async def wait_for_replay(pilot: Any, timeout_s: float = 60) -> ReplayController:
    """Until the replay child has ended and its result reached the UI (the controller heard ReplayFinished)."""
    replays = replays_of(pilot)
    deadline = time.monotonic() + timeout_s
    while replays.run is not None or replays.last is None:
        assert time.monotonic() < deadline, "the replay did not finish in time"
        await pilot.pause(0.05)
    await pilot.pause(0.1)
    return replays


async def wait_until(pilot: Any, condition: Any, timeout_s: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)
