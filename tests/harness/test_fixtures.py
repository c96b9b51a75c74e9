"""The fixture journals come from the one documented command, and they verify."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.journal import verify_journal

from .helpers import ROOT, events_of, logical

NAMES = ["crm", "crm-incident", "inventory", "stocktake-long"]


@pytest.fixture(scope="module")
def rerecorded(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("journals")
    done = subprocess.run(
        [sys.executable, "-m", "fixtures.record", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("name", NAMES)
def test_rerecorded_journals_verify(rerecorded, name):
    report = verify_journal(rerecorded / f"{name}.jsonl")
    assert report.ok, report.to_text()


@pytest.mark.parametrize("name", ["crm", "crm-incident", "stocktake-long"])
def test_committed_journals_are_what_the_command_records(rerecorded, name):
    committed = events_of(ROOT / "fixtures" / "journals" / f"{name}.jsonl")
    fresh = events_of(rerecorded / f"{name}.jsonl")
    # the environment (commit, dirty flag) moves with the code; everything else is reproducible
    assert [logical(e) for e in fresh[1:]] == [logical(e) for e in committed[1:]]
    assert verify_journal(ROOT / "fixtures" / "journals" / f"{name}.jsonl").ok


def test_the_inventory_run_has_clock_uuid_error_timeout_and_memory(rerecorded):
    events = events_of(rerecorded / "inventory.jsonl")
    sources = {e.payload["source"] for e in events if e.kind in ("clock.read", "random.draw")}
    assert {"clock.wall", "uuid4"} <= sources
    errors = [e.payload["error"] for e in events if e.kind == "tool.result" and e.payload.get("error")]
    assert any(error["type"] == "KeyError" for error in errors) and any(error["timeout"] for error in errors)
    memory = [e.payload["tool"] for e in events if e.kind == "tool.call" and e.payload["tool"].startswith("memory.")]
    assert memory == ["memory.get", "memory.put", "memory.get", "memory.put"]
    second_get = [e for e in events if e.kind == "tool.result" and e.payload["tool"] == "memory.get"][1]
    assert second_get.payload["result"] == {"A-100": 43, "B-101": 9}  # read back from SQLite


def test_the_memory_plugin_is_a_real_sqlite_file(tmp_path):
    from fixtures.record import _fixtures, record_fixture

    inventory = next(f for f in _fixtures() if f.name == "inventory")
    import fixtures.record as record

    kept = tmp_path / "memory.sqlite"
    original = record.config_with_scratch

    def keep_memory(path, scratch):
        config = original(path, scratch)
        for entry in config.plugins:
            if entry.type == "sqlite-memory":
                entry.options["path"] = str(kept)
        return config

    record.config_with_scratch = keep_memory
    try:
        record_fixture(inventory, tmp_path)
    finally:
        record.config_with_scratch = original
    rows = sqlite3.connect(kept).execute("SELECT key, value FROM memory").fetchall()
    assert rows == [("last_levels", '{"A-100":43,"B-101":9,"D-103":37}')]


def test_the_long_run_is_long(rerecorded):
    assert len(events_of(rerecorded / "stocktake-long.jsonl")) >= 2500


def test_the_incident_is_a_story(rerecorded):
    events = events_of(rerecorded / "crm-incident.jsonl")
    kinds = [e.kind for e in events]
    assert (
        kinds.count("tool.call") >= 20 and kinds.count("state.snapshot") >= 3 and kinds.count("state.transition") >= 40
    )
    assert any(e.kind == "tool.result" and e.payload.get("error") for e in events)  # the rate limit
    assert events[-1].payload["output"].startswith("There were 390 ")  # the wrong answer (388 is right)


def test_an_unknown_fixture_name_is_a_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "fixtures.record", "--only", "nope", "--out", "/nonexistent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "unknown fixture" in done.stderr
