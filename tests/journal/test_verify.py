"""Hash chain verification: every fault kind at the right seq, exit codes, JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.cli import main
from replay_tui.journal import verify_journal
from replay_tui.journal.hashing import event_hash_of

from .sample import write_sample_journal


@pytest.fixture()
def lines(tmp_path: Path) -> list[bytes]:
    path = write_sample_journal(tmp_path / "good.jsonl", steps=3)
    return path.read_bytes().splitlines(keepends=True)


def _write(tmp_path: Path, lines: list[bytes], name: str = "case.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def test_a_recorded_journal_verifies(tmp_path: Path) -> None:
    report = verify_journal(write_sample_journal(tmp_path / "j.jsonl", steps=5))
    assert report.ok and report.events == 22 and report.last_seq == 22 and report.chain == "verified"
    assert report.non_canonical_lines == 0


def test_modified_event(tmp_path: Path, lines: list[bytes]) -> None:
    assert b'"limit":2' in lines[7]
    lines[7] = lines[7].replace(b'"limit":2', b'"limit":3')
    fault = verify_journal(_write(tmp_path, lines)).fault
    assert fault and fault.kind == "modified_event" and fault.seq == 8 and fault.line == 8
    assert fault.expected and fault.found and fault.expected != fault.found


def test_deleted_event(tmp_path: Path, lines: list[bytes]) -> None:
    del lines[4]
    fault = verify_journal(_write(tmp_path, lines)).fault
    assert fault and fault.kind == "deleted_event" and fault.seq == 5


def test_reordered_events(tmp_path: Path, lines: list[bytes]) -> None:
    lines[3], lines[4] = lines[4], lines[3]
    fault = verify_journal(_write(tmp_path, lines)).fault
    assert fault and fault.kind == "reordered_events" and fault.seq == 4


def test_duplicate_seq(tmp_path: Path, lines: list[bytes]) -> None:
    lines.insert(3, lines[2])
    fault = verify_journal(_write(tmp_path, lines)).fault
    assert fault and fault.kind == "duplicate_seq" and fault.seq == 3 and fault.line == 4


def test_broken_link_when_an_event_is_rewritten_with_a_fresh_hash(tmp_path: Path, lines: list[bytes]) -> None:
    event = orjson.loads(lines[6])
    event["payload"]["result"] = {"rows": 999}
    event["event_hash"] = event_hash_of(event)  # a careful forger re-hashes the event...
    lines[6] = orjson.dumps(event) + b"\n"
    fault = verify_journal(_write(tmp_path, lines)).fault
    # ...but the next event still points at the original hash.
    assert fault and fault.kind == "broken_link" and fault.seq == 8
    assert fault.found != fault.expected == event["event_hash"]


def test_truncated_last_line(tmp_path: Path, lines: list[bytes]) -> None:
    lines[-1] = lines[-1][:40]
    report = verify_journal(_write(tmp_path, lines))
    assert report.fault and report.fault.kind == "truncated_last_line" and report.events == len(lines) - 1


def test_non_canonical_bytes_still_verify(tmp_path: Path, lines: list[bytes]) -> None:
    rewritten = []
    for line in lines:
        event = json.loads(line)
        reordered = dict(reversed(list(event.items())))
        rewritten.append(json.dumps(reordered, ensure_ascii=True, separators=(", ", ": ")).encode() + b"\r\n")
    report = verify_journal(_write(tmp_path, rewritten))
    assert report.ok, report.to_text()
    assert report.non_canonical_lines == len(lines)


def test_first_event_must_be_seq_one(tmp_path: Path, lines: list[bytes]) -> None:
    fault = verify_journal(_write(tmp_path, lines[1:])).fault
    assert fault and fault.kind == "deleted_event" and fault.seq == 1


def test_cli_exit_codes_and_outputs(tmp_path: Path, lines: list[bytes], capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path, lines, "good.jsonl")
    assert main(["verify", str(good)]) == 0
    assert "hash chain verifies" in capsys.readouterr().out

    bad_lines = list(lines)
    assert b"scripted-1" in bad_lines[1]
    bad_lines[1] = bad_lines[1].replace(b"scripted-1", b"scripted-2")
    bad = _write(tmp_path, bad_lines, "bad.jsonl")
    assert main(["verify", str(bad)]) == 1
    text = capsys.readouterr().out
    assert "seq 2" in text and "modified event" in text and "Expected sha256:" in text
    assert text.count("\n") == 1, "human output is one paragraph"

    assert main(["verify", str(bad), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["fault"]["kind"] == "modified_event" and data["fault"]["seq"] == 2

    assert main(["verify", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["verify"]) == 2
    assert main(["verify", str(good), "--bogus"]) == 2


JOURNALS = Path(__file__).resolve().parents[2] / "fixtures" / "journals"


def _rechained(tmp_path: Path, edit: Any, name: str = "pydantic-ai") -> Path:
    from tests.replay.helpers import rechained_copy

    def apply(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        edit(events)
        return events

    return rechained_copy(JOURNALS / f"{name}.jsonl", tmp_path / "rechained.jsonl", apply)


def test_state_checks_every_recorded_hash_against_the_patches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(JOURNALS / "pydantic-ai.jsonl"), "--state"]) == 0  # 9 transitions, before and after
    assert "state: 18 recorded state hashes match the state rebuilt from the patches." in capsys.readouterr().out


def test_a_patch_that_does_not_build_its_after_hash_fails_state_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The chain holds (whoever wrote the journal wrote its hashes too) and a replay may match, but the viewer
    would show a state the hashes do not name: --state says where."""
    edited: list[int] = []

    def edit(events: list[dict[str, Any]]) -> None:
        transition = next(e for e in events if e["kind"] == "state.transition" and e["payload"]["patch"])
        transition["payload"]["patch"][0]["value"] = "not what was recorded"
        edited.append(transition["seq"])

    journal = _rechained(tmp_path, edit)
    assert main(["verify", str(journal)]) == 0
    capsys.readouterr()
    assert main(["verify", str(journal), "--state"]) == 1
    assert f"state FAILED (2 recorded hashes checked): seq {edited[0]}: recorded after_hash " in capsys.readouterr().out
    assert main(["verify", str(journal), "--state", "--all", "--json"]) == 1
    state = json.loads(capsys.readouterr().out)["state"]
    assert state["ok"] is False and state["faults"][0].startswith(f"seq {edited[0]}: recorded after_hash ")
    assert len(state["faults"]) >= 2  # --all goes on past the first


def test_a_snapshot_that_disagrees_with_the_patches_fails_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay_tui.journal.hashing import state_hash

    edited: list[int] = []

    def edit(events: list[dict[str, Any]]) -> None:
        snapshot = next(e for e in events if e["kind"] == "state.snapshot")
        snapshot["payload"]["state"]["node"] = "planted"  # its own hash made to match: only the patches disagree
        snapshot["payload"]["state_hash"] = state_hash(snapshot["payload"]["state"])
        edited.append(snapshot["seq"])

    journal = _rechained(tmp_path, edit, "langgraph")
    assert main(["verify", str(journal), "--state"]) == 1
    out = capsys.readouterr().out
    assert f"seq {edited[0]}: snapshot differs from the state rebuilt from earlier patches" in out
