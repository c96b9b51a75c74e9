"""Fixtures for the framework recorder tests: the loopback CRM model server and the replay CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.agents.framework_crm import task
from fixtures.agents.loopback_llm import LoopbackLLM
from replay_tui.harness import RunOutcome, record_run
from replay_tui.journal import open_journal

REPO = Path(__file__).resolve().parents[2]
JOURNALS = REPO / "fixtures" / "journals"
CONFIG = REPO / "fixtures" / "configs" / "frameworks.toml"
#: journal name -> the example agent that records it
AGENTS = {
    "agents-sdk": "fixtures.agents.agents_sdk_crm:agent",
    "langgraph": "fixtures.agents.langgraph_crm:agent",
    "pydantic-ai": "fixtures.agents.pydantic_ai_crm:agent",
}


@pytest.fixture
def llm() -> Iterator[LoopbackLLM]:
    with LoopbackLLM() as server:
        yield server


def record(name: str, server: LoopbackLLM, journal: Path, entry_point: str | None = None) -> RunOutcome:
    return record_run(CONFIG, entry_point or AGENTS[name], [task(server.url)], journal=journal, run_id=name)


def replay_cli(journal: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """``replay-tui replay JOURNAL ... --json`` as a user runs it; (exit code, the JSON outcome)."""
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", str(journal), "--json", "--quiet", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON outcome (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")


def events(journal: Path) -> list[Any]:
    with open_journal(journal) as opened:
        return [opened.event(position) for position in range(len(opened))]
