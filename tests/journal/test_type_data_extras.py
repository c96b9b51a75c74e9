"""The type/data dialect keeps parent_event_id (so the causal tree has depth) and every field it has no
v1 place for (under payload.extra: shown, searchable, and scanned for secrets)."""

from __future__ import annotations

from pathlib import Path

import orjson

from replay_tui.analysis.causal import CausalIndex
from replay_tui.analysis.search import find_next, parse_query
from replay_tui.analysis.secrets import scan_event
from replay_tui.cli import main
from replay_tui.journal import Event, open_journal

TOKEN = "Bearer sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
LINES = [
    {
        "type": "session_started",
        "event_id": "e1",
        "session_id": "s",
        "seq": 1,
        "ts": "t1",
        "data": {"agent": "bot", "tenant": "acme"},
    },
    {
        "type": "user_message",
        "event_id": "e2",
        "session_id": "s",
        "seq": 2,
        "ts": "t2",
        "parent_event_id": "e1",
        "data": {"content": "hi", "headers": {"Authorization": TOKEN}},
    },
    {
        "type": "model_response",
        "event_id": "e3",
        "session_id": "s",
        "seq": 3,
        "ts": "t3",
        "parent_event_id": "e2",
        "trace_id": "tr-77",
        "data": {"content": "calling", "tool_calls": [], "latency_ms": 812},
    },
    {
        "type": "tool_invocation",
        "event_id": "e4",
        "session_id": "s",
        "seq": 4,
        "ts": "t4",
        "data": {"tool": "lookup", "input": {"q": "x"}, "output": {"n": 1}, "parent_id": "e3", "cache": "hit"},
    },
    {"type": "session_ended", "event_id": "e5", "session_id": "s", "seq": 5, "ts": "t5", "data": {"status": "ok"}},
]


def write(path: Path) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LINES))
    return path


def events(path: Path) -> list[Event]:
    journal = open_journal(path)
    return [journal.event(position) for position in range(len(journal))]


def test_parents_are_kept_and_the_tree_has_depth(tmp_path: Path) -> None:
    path = write(tmp_path / "td.jsonl")
    mapped = events(path)
    assert [e.parent_event_id for e in mapped] == [None, "e1", "e2", "e3", "e4", None]
    journal = open_journal(path)
    chain = CausalIndex(journal).chain_to_root(4)  # the tool result
    assert [journal.event(p).event_id for p in chain] == ["e1", "e2", "e3", "e4", "e4#result"]
    assert chain.is_complete


def test_unmapped_fields_are_in_the_payload_and_searchable(tmp_path: Path) -> None:
    path = write(tmp_path / "td.jsonl")
    mapped = events(path)
    assert mapped[0].payload["extra"] == {"data": {"tenant": "acme"}}
    assert mapped[2].payload["extra"] == {"trace_id": "tr-77", "data": {"latency_ms": 812}}
    assert mapped[3].payload["extra"] == {"data": {"cache": "hit"}}
    assert "extra" not in mapped[5].payload
    journal = open_journal(path)
    assert find_next(journal, parse_query("tr-77"), 0, 1, wrap=True) == 2


def test_a_secret_in_an_unmapped_field_is_found_by_scan(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "td.jsonl")
    assert scan_event(events(path)[1])
    assert main(["scan", str(path)]) == 1
    assert TOKEN not in capsys.readouterr().out  # masked
