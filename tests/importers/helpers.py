"""Reading imported journals in tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay_tui.journal import verify_journal


def events_of(path: Path) -> list[dict[str, Any]]:
    report = verify_journal(str(path))
    assert report.ok, report.to_json()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["kind"] for event in events]


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["kind"] == kind]
