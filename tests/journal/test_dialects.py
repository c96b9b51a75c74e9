"""The type/data dialect, schema versions and the v0 -> v1 migration."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from replay_tui.cli import main
from replay_tui.journal import (
    JournalError,
    UnknownKindError,
    UnsupportedVersionError,
    open_journal,
    verify_journal,
)
from replay_tui.journal.canonical import canonical_json
from replay_tui.journal.hashing import sha256_hex

from .sample import write_sample_journal

TYPE_DATA_LINES = [
    {
        "type": "session_started",
        "event_id": "e1",
        "session_id": "s-9",
        "seq": 1,
        "ts": "2026-11-01T10:00:00Z",
        "data": {"agent": "crm-bot"},
    },
    {
        "type": "user_message",
        "event_id": "e2",
        "session_id": "s-9",
        "seq": 2,
        "ts": "2026-11-01T10:00:01Z",
        "data": {"content": "active customers east?"},
    },
    {
        "type": "model_request",
        "event_id": "e3",
        "session_id": "s-9",
        "seq": 3,
        "ts": "2026-11-01T10:00:02Z",
        "data": {"model": "m", "messages": []},
    },
    {
        "type": "model_response",
        "event_id": "e4",
        "session_id": "s-9",
        "seq": 4,
        "ts": "2026-11-01T10:00:03Z",
        "data": {"content": None, "tool_calls": [{"id": "c1", "name": "customer_query"}]},
    },
    {
        "type": "tool_invocation",
        "event_id": "e5",
        "session_id": "s-9",
        "seq": 5,
        "ts": "2026-11-01T10:00:04Z",
        "data": {"tool": "customer_query", "input": {"region": "east"}, "output": {"rows": 3}, "duration_ms": 40},
    },
    {
        "type": "tool_invocation",
        "event_id": "e6",
        "session_id": "s-9",
        "seq": 6,
        "ts": "2026-11-01T10:00:05Z",
        "data": {"tool": "customer_query", "input": {"region": "west"}, "error": "timeout after 30s"},
    },
    {
        "type": "session_ended",
        "event_id": "e7",
        "session_id": "s-9",
        "seq": 7,
        "ts": "2026-11-01T10:00:06Z",
        "data": {"status": "ok", "output": "3 customers"},
    },
]


def _jsonl(path: Path, objects: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))
    return path


def test_type_data_journal_maps_onto_v1_kinds(tmp_path: Path) -> None:
    journal = open_journal(_jsonl(tmp_path / "other.jsonl", TYPE_DATA_LINES))
    assert journal.dialect == "type-data" and journal.has_hash_chain is False
    kinds = [journal.event(p).kind for p in range(len(journal))]
    assert kinds == [
        "run.started",
        "input.received",
        "model.request",
        "model.response",
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.result",
        "run.ended",
    ]
    assert [journal.event(p).seq for p in range(len(journal))] == list(range(1, 10))
    result = journal.event(5)
    assert (
        result.payload["result"] == {"rows": 3} and result.payload["call_key"] == journal.event(4).payload["call_key"]
    )
    assert journal.event(7).payload["error"]["message"] == "timeout after 30s"


def test_type_data_verify_says_there_is_no_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path / "other.jsonl", TYPE_DATA_LINES)
    report = verify_journal(path)
    assert report.ok and report.chain == "absent" and report.events == 9
    assert main(["verify", str(path)]) == 0
    assert "no hash chain" in capsys.readouterr().out


def test_unknown_type_in_type_data_is_named(tmp_path: Path) -> None:
    lines = TYPE_DATA_LINES[:2] + [{**TYPE_DATA_LINES[2], "type": "telepathy"}]
    report = verify_journal(_jsonl(tmp_path / "other.jsonl", lines))
    assert report.fault and report.fault.kind == "unknown_kind" and report.fault.line == 3
    assert "telepathy" in report.fault.message and "session_started" in report.fault.message


def _rehash(objects: list[dict]) -> list[dict]:
    """Chain objects the way a writer of their own version would have."""
    previous = None
    for obj in objects:
        obj.pop("event_hash", None)
        obj["prev_event_hash"] = previous
        obj["event_hash"] = previous = sha256_hex(canonical_json(obj))
    return objects


def test_unknown_kind_and_version_fail_clearly(tmp_path: Path) -> None:
    objects = [orjson.loads(line) for line in write_sample_journal(tmp_path / "j.jsonl").read_bytes().splitlines()]
    objects[2]["kind"] = "model.telepathy"
    report = verify_journal(_jsonl(tmp_path / "kind.jsonl", _rehash(objects)))
    assert report.fault and report.fault.kind == "unknown_kind" and report.fault.seq == 3
    with pytest.raises(UnknownKindError, match="model.telepathy"):
        open_journal(tmp_path / "kind.jsonl").event(2)

    objects = [orjson.loads(line) for line in (tmp_path / "j.jsonl").read_bytes().splitlines()]
    for obj in objects:
        obj["schema_version"] = 7
    report = verify_journal(_jsonl(tmp_path / "v7.jsonl", _rehash(objects)))
    assert report.fault and report.fault.kind == "unsupported_version" and report.fault.seq == 1
    assert "7" in report.fault.message and "supported version" in report.fault.message
    with pytest.raises(UnsupportedVersionError):
        open_journal(tmp_path / "v7.jsonl").event(0)


def test_v0_journal_is_migrated_and_its_chain_verifies(tmp_path: Path) -> None:
    v1 = [orjson.loads(line) for line in write_sample_journal(tmp_path / "j.jsonl").read_bytes().splitlines()]
    v0 = []
    for obj in v1:
        old = {k: v for k, v in obj.items() if k not in ("recorded_at", "event_hash")}
        old["schema_version"] = 0
        old["ts"] = obj["recorded_at"]
        old["kind"] = obj["kind"].replace(".", "_")
        v0.append(old)
    assert v1[4]["kind"] == "tool.result"
    v0[4]["kind"] = "tool_error"
    v0[4]["payload"] = {
        "call_id": "call-1",
        "call_key": v1[4]["payload"]["call_key"],
        "tool": "customer_query",
        "error_type": "TimeoutError",
        "message": "slow",
        "timeout": True,
    }
    path = _jsonl(tmp_path / "v0.jsonl", _rehash(v0))

    report = verify_journal(path)
    assert report.ok, report.to_text()
    journal = open_journal(path)
    assert [journal.event(p).kind for p in range(len(journal))] == [o["kind"] for o in v1]
    migrated = journal.event(4)
    assert migrated.payload["error"] == {"type": "TimeoutError", "message": "slow", "code": None, "timeout": True}
    assert migrated.raw["schema_version"] == 0, "raw keeps the as-written form the hash covers"
    assert migrated.recorded_at == v1[4]["recorded_at"]


def test_errors_are_journal_errors_with_locations(tmp_path: Path) -> None:
    objects = [orjson.loads(line) for line in write_sample_journal(tmp_path / "j.jsonl").read_bytes().splitlines()]
    objects[4]["payload"]["call_key"] = 42
    path = _jsonl(tmp_path / "typed.jsonl", _rehash(objects))
    with pytest.raises(JournalError) as caught:
        open_journal(path).event(4)
    message = str(caught.value)
    assert "typed.jsonl" in message and "line 5" in message and "payload.call_key" in message
    assert "expected a hash" in message and "found integer 42" in message
    report = verify_journal(path)
    assert report.fault and report.fault.kind == "schema" and report.fault.seq == 5
