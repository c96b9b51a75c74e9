"""Shared helpers for the harness tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay_tui.harness import record_run
from replay_tui.journal import Event, open_journal

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "fixtures" / "configs"
CRM_QUESTION = "How many active customers did we have in the east region last month?"


def events_of(path: Path) -> list[Event]:
    journal = open_journal(path)
    try:
        return [journal.event(position) for position in range(len(journal))]
    finally:
        journal.close()


def logical(event: Event) -> tuple[Any, ...]:
    """What a replay compares: kind, step, parent (by seq), payload without diagnostics."""
    parent = event.parent_event_id.rsplit(":", 1)[1] if event.parent_event_id else None
    return event.seq, event.kind, event.step_id, parent, event.logical_payload()


def record_crm(tmp_path: Path, entry_point: str, *, name: str = "crm", run_id: str = "crm-run") -> list[Event]:
    journal = tmp_path / f"{name}.jsonl"
    outcome = record_run(CONFIGS / "crm.toml", entry_point, [CRM_QUESTION], journal=journal, run_id=run_id)
    assert outcome.status == "ok", outcome
    return events_of(journal)
