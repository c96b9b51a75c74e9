"""The writer: canonical lines, both canonical paths agree, chains continue."""

from __future__ import annotations

from pathlib import Path

import orjson

from replay_tui.journal import JournalWriter, open_journal, verify_journal
from replay_tui.journal.canonical import canonical_json

from .sample import write_sample_journal

PAYLOADS = [
    {"source": "clock.wall", "value": 1795000000.0},
    {"source": "random.random", "value": 1e-6},
    {"source": "ids", "value": "\ue000\U0001f600 ünïcode"},
    {"source": "big", "value": [1e16, -0.0, 2.5, {"\U0001f600": 1, "\ue000": 2}]},
]


def _fixed_now() -> str:
    return "2026-11-29T10:00:00.000000Z"


def test_every_line_is_canonical(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "j.jsonl", steps=3)
    for line in path.read_bytes().splitlines():
        assert canonical_json(orjson.loads(line)) == line


def test_fast_path_writes_the_same_bytes_for_parsed_payloads(tmp_path: Path) -> None:
    outputs = []
    for name, fast in (("exact.jsonl", False), ("fast.jsonl", True)):
        with JournalWriter(tmp_path / name, run_id="r", now=_fixed_now, payloads_are_parsed_json=fast) as writer:
            for payload in PAYLOADS:
                writer.append("clock.read", orjson.loads(orjson.dumps(payload)))
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]


def test_start_after_continues_a_chain_in_a_new_file(tmp_path: Path) -> None:
    first = write_sample_journal(tmp_path / "first.jsonl", steps=1)
    first.write_bytes(b"".join(first.read_bytes().splitlines(keepends=True)[:-1]))  # the run goes on: no run.ended
    with open_journal(first) as journal:
        last = journal.event(len(journal) - 1)
    with JournalWriter(tmp_path / "second.jsonl", run_id="run-test", start_after=(last.seq, last.event_hash)) as writer:
        event = writer.append("run.ended", {"status": "ok"})
    assert event.seq == last.seq + 1 and event.prev_event_hash == last.event_hash
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(first.read_bytes() + (tmp_path / "second.jsonl").read_bytes())
    assert verify_journal(joined).ok


def test_the_writer_never_appends_to_an_existing_journal(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "j.jsonl", steps=1)
    before = path.read_bytes()
    try:
        JournalWriter(path, run_id="again")
    except FileExistsError:
        pass
    else:  # pragma: no cover - the assertion below explains
        raise AssertionError("opening an existing journal for writing must fail")
    assert path.read_bytes() == before
