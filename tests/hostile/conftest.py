"""Shared fixtures: the hostile journal, a variant for diff, and a replayable hostile recording."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from replay_tui.harness import record_run

from .hostile_journal import ATTACK, write_hostile_journal

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
sys.path.insert(0, str(REPO / "tests" / "tui"))  # the app tests' helpers (settle, wait_for_replay)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return write_hostile_journal(tmp_path / "hostile.jsonl")


@pytest.fixture
def hostile_variant(tmp_path: Path) -> Path:
    return write_hostile_journal(tmp_path / "hostile-b.jsonl", variant="!")


@pytest.fixture
def recorded_hostile(tmp_path: Path) -> Path:
    """A real recording of the hostile agent (replays to a match)."""
    path = tmp_path / "recorded.jsonl"
    outcome = record_run(HERE / "hostile.toml", "tests.hostile.agent:agent", ["question " + ATTACK], journal=path)
    assert outcome.status == "ok", outcome
    return path
