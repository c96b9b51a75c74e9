"""Recording probe journals through the real harness, and editing copies of journals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from replay_tui.harness import record_run
from replay_tui.journal import JournalWriter
from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import ReplayRunner
from replay_tui.replay.protocol import ReplaySpec

from .conftest import REPO

AGENTS = REPO / "tests" / "replay" / "agents"
PROBE_CONFIG = AGENTS / "probe.toml"
FUNCTION_AGENT = "tests.replay.agents.probe:agent"
STEP_AGENT = "tests.replay.agents.probe:StepProbe"


def record_probe(path: Path, entry_point: str = FUNCTION_AGENT, config: Path = PROBE_CONFIG, **env: str) -> Path:
    """Record one probe run in this process (no isolation: this is the recording)."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        record_run(config, entry_point, ["how much stock is there?"], journal=path)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return path


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rechained_copy(
    source: Path, target: Path, edit: Callable[[list[dict[str, Any]]], Iterator[dict[str, Any]] | list[dict[str, Any]]]
) -> Path:
    """A copy written through the real writer, same run id, after ``edit`` changed the events.

    The chain of the copy verifies: only replay can tell what was changed.
    """
    events = lines_of(source)
    run_id = events[0]["run_id"]
    with JournalWriter(target, run_id=run_id) as writer:
        for event in edit(events):
            writer.append(
                event["kind"], event["payload"], step_id=event["step_id"], parent_event_id=event["parent_event_id"]
            )
    return target


def replay(
    journal: Path, *, timeout_s: float = 60, env: dict[str, str] | None = None, on_progress=None, **spec: Any
) -> ReplayOutcome:
    """Strict replay (or an experiment) of ``journal`` in the real child process; ``env`` names are passed in."""
    spec.setdefault("pass_env", sorted(env or {}))
    runner = ReplayRunner(
        ReplaySpec(journal=str(journal), sys_path=[str(REPO)], **spec),
        timeout_s=timeout_s,
        cwd=str(REPO),
        env={**os.environ, **(env or {})},
        on_progress=on_progress,
    )
    return runner.run()
