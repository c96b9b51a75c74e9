"""`replay-tui replay DIR --jobs N`: real child replays of harness-recorded journals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson

from replay_tui.journal import JournalWriter
from replay_tui.replay.corpus.runs import _dotted, find_journals, replay_corpus
from replay_tui.replay.protocol import ReplaySpec

from .conftest import BEFORE_HISTORY, CLEAN, REPO, cli, copy_corpus


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli("replay", *args), cwd=REPO, capture_output=True, text=True, timeout=300)


def test_corpus_groups_divergences_by_signature(corpus_dir: Path) -> None:
    done = run_cli(str(corpus_dir), "--jobs", "2", "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert (result["journals"], result["matched"], result["failed"], result["jobs"]) == (11, 6, 5, 2)
    groups = {(g["kind"], g["tool"], g["field"]): g["count"] for g in result["groups"]}
    assert groups == {
        ("tool.call", "orders.lookup", "arguments.include_history"): 3,
        ("model.request", "model:refund-desk-scripted", "request.messages[0].content"): 2,
    }
    by_name = {Path(r["journal"]).name: r for r in result["results"]}
    assert by_name["before-history-A-203.replay.jsonl"]["divergence_seq"] == 7
    assert by_name["ok-A-101.replay.jsonl"]["status"] == "match"


def test_corpus_text_table(corpus_dir: Path) -> None:
    done = run_cli(str(corpus_dir), "--jobs", "2")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"Corpus {corpus_dir}: 11 journal(s), 6 matched, 5 diverged, 0 failed otherwise")
    header = next(line for line in lines if line.startswith("count"))
    assert header.split()[:4] == ["count", "kind", "tool", "field"]
    row = lines[lines.index(header) + 1].split()
    assert row[:4] == ["3", "tool.call", "orders.lookup", "arguments.include_history"]
    assert "why: call_key differs" in done.stdout


def test_clean_corpus_exits_0(tmp_path: Path) -> None:
    directory = copy_corpus(tmp_path / "clean", CLEAN)
    done = run_cli(str(directory), "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 journal(s), 6 matched, 0 diverged" in done.stdout


def test_edited_argument_is_reported_at_its_seq(tmp_path: Path) -> None:
    """A one-argument edit in a copy: the payload check names the field and the seq."""
    directory = copy_corpus(tmp_path / "edited", CLEAN[:2])
    target = directory / CLEAN[0].name
    lines = target.read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    call = next(event for event in events if event["kind"] == "tool.call")
    call["payload"]["arguments"]["order_id"] = "A-999"
    target.unlink()
    # rewrite the copy through the journal writer so the chain still verifies: only the argument differs
    writer = JournalWriter(target, run_id=events[0]["run_id"])
    for event in events:
        writer.append(
            event["kind"], event["payload"], step_id=event["step_id"], parent_event_id=event["parent_event_id"]
        )
    writer.close()
    result = replay_corpus(
        find_journals(directory), jobs=2, spec_for=lambda j: ReplaySpec(journal=j, sys_path=[str(REPO)])
    )
    assert result.exit_code == 1
    ((signature, entries),) = result.groups.items()
    assert (signature.kind, signature.tool, signature.field) == ("tool.call", "orders.lookup", "arguments.order_id")
    assert entries[0].outcome.divergence.seq == call["seq"]


def test_unreadable_journal_fails_alone(tmp_path: Path) -> None:
    directory = copy_corpus(tmp_path / "mixed", CLEAN[:1] + BEFORE_HISTORY[:1])
    (directory / "garbage.replay.jsonl").write_bytes(b'{"not": "a journal"\n')
    done = run_cli(str(directory), "--jobs", "2", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    statuses = {Path(r["journal"]).name: r["status"] for r in result["results"]}
    assert statuses == {
        "garbage.replay.jsonl": "error",
        CLEAN[0].name: "match",
        BEFORE_HISTORY[0].name: "diverged",
    }
    garbage = next(g for g in result["groups"] if g["kind"] == "error")
    assert garbage["field"] == "journal"
    assert "Traceback" not in done.stdout + done.stderr


def test_usage_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_cli(str(empty), "--jobs", "2")
    assert done.returncode == 2 and "no journal matches '*.jsonl'" in done.stderr
    done = run_cli(str(CLEAN[0]), "--jobs", "2")
    assert done.returncode == 2 and "not a directory" in done.stderr
    done = run_cli(str(empty), "--jobs", "0")
    assert done.returncode == 2 and "--jobs must be at least 1" in done.stderr


def test_find_journals_glob_and_shard_directories(tmp_path: Path) -> None:
    directory = copy_corpus(tmp_path / "c", CLEAN[:2])
    (directory / "notes.txt").write_text("not a journal")
    (directory / "other.jsonl").write_bytes(CLEAN[0].read_bytes())
    shards = directory / "nested" / "rotated"
    writer = JournalWriter(shards, run_id="rotated", rotate_bytes=400)
    for number in range(6):
        writer.append("input.received", {"role": "user", "content": f"message {number} " * 5})
    writer.close()
    names = [path.relative_to(directory).as_posix() for path in find_journals(directory)]
    assert names == ["nested/rotated", CLEAN[0].name, CLEAN[1].name, "other.jsonl"]
    names = [path.name for path in find_journals(directory, "*.replay.jsonl")]
    assert names == [CLEAN[0].name, CLEAN[1].name]


def test_dotted_paths() -> None:
    assert _dotted("root['arguments']['include_history']") == "arguments.include_history"
    assert _dotted("root['request']['messages'][0]['content']") == "request.messages[0].content"
    assert _dotted("root") == "(payload)"


def test_a_directory_is_a_corpus_unless_it_is_one_rotated_journal(tmp_path: Path) -> None:
    from replay_tui.harness import record_run

    rotated = tmp_path / "rotated-run"
    record_run(
        REPO / "fixtures" / "corpus" / "refund-desk.toml",
        "fixtures.corpus.agents:agent",
        ["Refund A-101"],
        journal=rotated,
    )
    assert [path.name for path in rotated.iterdir()] == ["rotated-run.000001.jsonl"]
    done = run_cli(str(rotated))
    assert done.returncode == 0 and done.stdout.startswith("Replay matched: 15 of 15 events"), done.stdout
    corpus = copy_corpus(tmp_path / "corpus", CLEAN[:2])
    done = run_cli(str(corpus))
    assert done.returncode == 0 and done.stdout.startswith(f"Corpus {corpus}: 2 journal(s), 2 matched"), done.stdout


def test_signature_of_a_kind_mismatch_and_a_missing_event() -> None:
    from replay_tui.replay.corpus.runs import signature_of
    from replay_tui.replay.parent.outcome import ReplayOutcome
    from replay_tui.replay.report import DivergenceReport, EventRef

    call = EventRef(7, "tool.call", "step-01", None, "callKey", "sha256:a")
    request = EventRef(7, "model.request", "step-01", None, "requestHash", "sha256:b")
    report = DivergenceReport(
        7,
        "kind differs",
        call,
        request,
        None,
        "step-01",
        mismatched=["kind"],
        expected_payload={"tool": "orders.lookup", "arguments": {}},
        actual_payload={"request": {}},
    )
    outcome = ReplayOutcome(status="diverged", journal="j", mode="strict", divergence=report)
    assert signature_of(outcome).to_json() == {
        "kind": "tool.call",
        "tool": "orders.lookup",
        "field": "kind (the agent produced model.request)",
    }
    report = DivergenceReport(
        16, "the journal ends before this event", None, request, None, None, mismatched=["presence"]
    )
    outcome = ReplayOutcome(status="diverged", journal="j", mode="strict", divergence=report)
    assert signature_of(outcome).to_json() == {
        "kind": "model.request",
        "tool": "-",
        "field": "(the journal has no event here)",
    }
    unused = ReplayOutcome(
        status="unused_events",
        journal="j",
        mode="strict",
        unused={"count": 2, "kinds": {"run.ended": 1, "tool.call": 1}},
    )
    assert signature_of(unused).to_json() == {
        "kind": "unused_events",
        "tool": "-",
        "field": "unused run.ended,tool.call",
    }
