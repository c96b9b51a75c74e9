"""Aligning two journals and `replay-tui diff`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from replay_tui.cli import main
from replay_tui.journal import JournalWriter, call_key_of, open_journal
from replay_tui.replay.compare import DECISION_KINDS, align_journals
from tests.journal.sample import write_sample_journal


def rewrite(source: Path, target: Path, run_id: str, edit: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Path:
    """Copy a journal through the real writer (new run id, new chain), editing events on the way."""
    with JournalWriter(target, run_id=run_id) as writer:
        for line in source.read_text().splitlines():
            event = edit(json.loads(line))
            if event is None:
                continue
            parent = event["parent_event_id"]
            writer.append(
                event["kind"],
                event["payload"],
                step_id=event["step_id"],
                parent_event_id=parent.replace(event["run_id"], run_id) if parent else None,
            )
    return target


def add_argument_at_step(step: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def edit(event: dict[str, Any]) -> dict[str, Any]:
        payload = event["payload"]
        if event["step_id"] == step and event["kind"] in ("tool.call", "tool.result"):
            arguments = {"region": "east", "limit": int(step[-2:]), "include_inactive": True}
            payload["call_key"] = call_key_of(payload["tool"], arguments)
            if event["kind"] == "tool.call":
                payload["arguments"] = arguments
        return event

    return edit


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    return write_sample_journal(tmp_path / "a.jsonl", steps=6)


def test_identical_runs_with_different_run_ids_align_with_no_difference(recorded, tmp_path):
    copy = rewrite(recorded, tmp_path / "b.jsonl", "run-other", lambda e: e)
    with open_journal(recorded) as a, open_journal(copy) as b:
        alignment = align_journals(a, b)
    assert alignment.identical and len(alignment.pairs) == 26
    assert main(["diff", str(recorded), str(copy)]) == 0


def test_first_difference_is_the_changed_call_and_names_the_extra_field(recorded, tmp_path, capsys):
    changed = rewrite(recorded, tmp_path / "b.jsonl", "run-b", add_argument_at_step("step-04"))
    with open_journal(recorded) as a, open_journal(changed) as b:
        alignment = align_journals(a, b)
    first = alignment.first_difference()
    assert first.kind == "tool.call" and first.step_id == "step-04" and first.a.seq == first.b.seq == 16
    assert set(first.differs_in) == {"key", "payload"}
    _, lines = first.payload_diff()
    assert any("include_inactive" in line and "added" in line for line in lines)
    summary = alignment.summary()
    assert summary["differences"] == 2 and summary["steps"] == ["step-04"]
    assert main(["diff", str(recorded), str(changed)]) == 1
    out = capsys.readouterr().out
    assert "First difference: A seq=16 / B seq=16 (step-04): tool.call" in out
    assert "root['arguments']['include_inactive']" in out
    assert "2 difference(s) (1 after the first)" in out


def test_a_removed_step_does_not_shift_later_comparisons(recorded, tmp_path):
    shorter = rewrite(recorded, tmp_path / "b.jsonl", "run-b", lambda e: None if e["step_id"] == "step-02" else e)
    with open_journal(recorded) as a, open_journal(shorter) as b:
        alignment = align_journals(a, b)
    summary = alignment.summary()
    assert summary["only_a"] == 4 and summary["changed"] == 0 and summary["only_b"] == 0
    assert summary["steps"] == ["step-02"]
    assert alignment.first_difference().status == "only_a"


def test_first_decision_skips_non_decision_kinds(recorded, tmp_path):
    def change_result(event):
        if event["kind"] == "tool.result" and event["step_id"] == "step-03":
            event["payload"]["result"] = {"rows": 0}
        return event

    changed = rewrite(recorded, tmp_path / "b.jsonl", "run-b", change_result)
    with open_journal(recorded) as a, open_journal(changed) as b:
        alignment = align_journals(a, b)
    assert alignment.first_difference().kind == "tool.result"
    assert alignment.first_difference(DECISION_KINDS) is None


def test_true_and_one_are_different_values(recorded, tmp_path):
    def flip(event):
        if event["kind"] == "tool.result" and event["step_id"] == "step-01":
            event["payload"]["result"] = {"rows": True}
        return event

    changed = rewrite(recorded, tmp_path / "b.jsonl", "run-b", flip)
    with open_journal(recorded) as a, open_journal(changed) as b:
        assert not align_journals(a, b).identical


def test_diff_json_is_one_object(recorded, tmp_path, capsys):
    changed = rewrite(recorded, tmp_path / "b.jsonl", "run-b", add_argument_at_step("step-02"))
    assert main(["diff", str(recorded), str(changed), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["identical"] is False
    assert data["first_difference"]["step_id"] == "step-02"
    assert "root['arguments']['include_inactive']" in data["first_difference"]["payload_diff"]["dictionary_item_added"]


def test_diff_of_an_unreadable_journal_is_exit_2_naming_the_line(recorded, tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    lines = recorded.read_text().splitlines()
    lines[4] = lines[4][:40]
    broken.write_text("\n".join(lines) + "\n")
    assert main(["diff", str(recorded), str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.jsonl" in err and "line 5" in err
    assert "Traceback" not in err
