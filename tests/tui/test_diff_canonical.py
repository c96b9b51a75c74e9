"""`diff` compares events in canonical form: journals that verify to the same hashes are identical to it."""

from __future__ import annotations

import json
from pathlib import Path

from replay_tui.cli import main
from replay_tui.journal import JournalWriter, verify_journal
from tests.journal_factory import run_started

STARTED = run_started(snapshot_every=10)


def write(path: Path) -> Path:
    writer = JournalWriter(path, run_id="run-canon", fsync="never")
    writer.append("run.started", STARTED)
    writer.append(
        "input.received", {"role": "user", "content": "three", "context": {"count": 3, "ratio": 0.5, "flag": True}}
    )
    writer.append("run.ended", {"status": "ok", "output": 3, "error": None})
    writer.close()
    return path


def respell(source: Path, target: Path) -> Path:
    """The same events written differently: integers as floats (3 -> 3.0), keys in reverse order."""

    def reorder(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            return {key: reorder(value[key]) for key in reversed(list(value))}
        if isinstance(value, list):
            return [reorder(item) for item in value]
        return value

    def reorder_payload(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            return {key: reorder_payload(value[key]) for key in reversed(list(value))}
        if isinstance(value, int) and not isinstance(value, bool) and value == 3:
            return 3.0
        return value

    events = [json.loads(line) for line in source.read_text().splitlines()]
    lines = [json.dumps(reorder(dict(event, payload=reorder_payload(event["payload"])))) for event in events]
    assert "3.0" in "".join(lines)
    target.write_text("\n".join(lines) + "\n")
    return target


def test_diff_agrees_with_verify_on_respelled_journals(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    a = write(tmp_path / "a.jsonl")
    b = respell(a, tmp_path / "b.jsonl")
    assert a.read_bytes() != b.read_bytes()
    report_a, report_b = verify_journal(a), verify_journal(b)
    assert report_a.ok and report_b.ok  # the recomputed hashes match the recorded ones, which are the same
    assert [json.loads(line)["event_hash"] for line in a.read_text().splitlines()] == [
        json.loads(line)["event_hash"] for line in b.read_text().splitlines()
    ]
    assert main(["diff", str(a), str(b)]) == 0
    assert "No difference" in capsys.readouterr().out


def test_diff_still_tells_true_from_1(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl")
    other = write_other(tmp_path / "c.jsonl")
    assert main(["diff", str(a), str(other)]) == 1


def write_other(path: Path) -> Path:
    writer = JournalWriter(path, run_id="run-canon", fsync="never")
    writer.append("run.started", STARTED)
    writer.append(
        "input.received", {"role": "user", "content": "three", "context": {"count": 3, "ratio": 0.5, "flag": 1}}
    )
    writer.append("run.ended", {"status": "ok", "output": 3, "error": None})
    writer.close()
    return path
