"""Tamper evidence a forger cannot dodge: duplicate keys, run boundaries, every fault listed."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from replay_tui.cli import main
from replay_tui.journal import JournalError, open_journal, verify_journal
from replay_tui.journal.duplicate_keys import find_duplicate_key
from replay_tui.journal.hashing import event_hash_of
from replay_tui.journal.verify import FAULT_KINDS

from ..docs import REPO, section
from .sample import write_sample_journal


@pytest.fixture()
def lines(tmp_path: Path) -> list[bytes]:
    return write_sample_journal(tmp_path / "good.jsonl", steps=3).read_bytes().splitlines(keepends=True)


def _write(tmp_path: Path, lines: list[bytes], name: str = "case.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def _with_duplicate(line: bytes, key: bytes, hidden: bytes) -> bytes:
    """The line with ``"key":hidden`` inserted before the key's real member: parsers keep the real one."""
    at = line.index(b'"' + key + b'":')
    return line[:at] + b'"' + key + b'":' + hidden + b"," + line[at:]


# -- duplicate keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (b'{"a":1,"b":2}', None),
        (b'{"a":1,"a":2}', "a"),
        (b'{"a":{"x":1},"b":{"x":2}}', None),  # equal keys in different objects are fine
        (b'{"a":[{"x":1,"x":2}]}', "x"),
        (b'{"a":1,"\\u0061":2}', "a"),  # the same key, escaped
        (b'{"a":"\\"a\\":","b":1}', None),  # a key-like string inside a value
        (b'{"a":["a","a"]}', None),
        (b"[" * 900 + b'{"k":1,"k":2}' + b"]" * 900, "k"),  # any depth, no recursion
    ],
)
def test_find_duplicate_key(text: bytes, key: str | None) -> None:
    assert find_duplicate_key(text) == key


def test_a_duplicate_key_is_a_fault_in_verify_the_reader_and_the_cli(
    tmp_path: Path, lines: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    # The hash covers the value a parser keeps; the bytes also say something else.
    assert b'"role":"user"' in lines[1]
    lines[1] = _with_duplicate(lines[1], b"content", b'"Transfer $1M to account 4242"')
    path = _write(tmp_path, lines)
    report = verify_journal(path)
    assert report.fault and report.fault.kind == "duplicate_key" and report.fault.seq == 2 and report.fault.line == 2
    assert "'content'" in report.fault.message
    with open_journal(path) as journal:
        result = journal.try_event(1)
        assert isinstance(result, JournalError) and "duplicate key 'content'" in str(result) and result.seq == 2
        assert journal.event(2).seq == 3  # the rest stays viewable
    assert main(["verify", str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fault"]["kind"] == "duplicate_key" and data["faults"][0]["seq"] == 2


def test_a_duplicated_seq_member_is_caught(tmp_path: Path, lines: list[bytes]) -> None:
    lines[3] = _with_duplicate(lines[3], b"seq", b"99")
    fault = verify_journal(_write(tmp_path, lines)).fault
    assert fault and fault.kind == "duplicate_key" and fault.seq == 4 and "'seq'" in fault.message


def test_a_duplicate_key_name_is_shown_escaped(tmp_path: Path, lines: list[bytes]) -> None:
    hostile = "ki\x1b]0;pwned\x07nd\u202e"
    event = orjson.loads(lines[2])
    event["payload"][hostile] = 2
    event["event_hash"] = event_hash_of(event)
    line = orjson.dumps(event, option=orjson.OPT_SORT_KEYS) + b"\n"
    lines[2] = _with_duplicate(line, orjson.dumps(hostile)[1:-1], b"1")
    report = verify_journal(_write(tmp_path, lines))
    assert report.fault and report.fault.kind == "duplicate_key"
    text = report.to_text()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\\x1b" in text


# -- run boundaries ------------------------------------------------------------


def _append_after(lines: list[bytes], kind: str, payload: dict) -> list[bytes]:
    """A well-formed, correctly chained event after the last line (a forger appending to a finished run)."""
    last = orjson.loads(lines[-1])
    event = {
        "schema_version": 1,
        "run_id": last["run_id"],
        "seq": last["seq"] + 1,
        "event_id": f"x:{last['seq'] + 1}",
        "kind": kind,
        "step_id": None,
        "parent_event_id": None,
        "recorded_at": "2026-11-30T00:00:00Z",
        "payload": payload,
        "prev_event_hash": last["event_hash"],
    }
    event["event_hash"] = event_hash_of(event)
    return [*lines, orjson.dumps(event, option=orjson.OPT_SORT_KEYS) + b"\n"]


def test_an_event_after_run_ended_is_a_fault(tmp_path: Path, lines: list[bytes]) -> None:
    forged = _append_after(lines, "input.received", {"role": "user", "content": "one more thing"})
    report = verify_journal(_write(tmp_path, forged))
    assert report.fault and report.fault.kind == "event_after_end" and report.fault.seq == len(lines) + 1
    assert f"after the run.ended at seq {len(lines)}" in report.fault.message


def test_a_journal_without_run_ended_is_not_closed(tmp_path: Path, lines: list[bytes], capsys) -> None:
    path = _write(tmp_path, lines[:-1])
    report = verify_journal(path)
    assert report.ok and not report.closed
    assert f"Not closed: the run is still going, or the file was cut after seq {len(lines) - 1}" in report.to_text()
    assert main(["verify", str(path)]) == 0
    assert "Not closed" in capsys.readouterr().out
    assert main(["verify", str(path), "--require-closed"]) == 1
    assert "--require-closed" in capsys.readouterr().out
    assert main(["verify", str(path), "--require-closed", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["closed"] is False and "not closed" in data["summary"]
    closed = _write(tmp_path, lines, "closed.jsonl")
    assert main(["verify", str(closed), "--require-closed"]) == 0
    assert verify_journal(closed).closed


# -- --all ---------------------------------------------------------------------------


def test_all_lists_every_fault(tmp_path: Path, lines: list[bytes], capsys: pytest.CaptureFixture[str]) -> None:
    assert b'"step 1"' in lines[1]
    lines[1] = lines[1].replace(b'"step 1"', b'"step 9"')  # modified
    lines[5] = b"\n"  # empty line
    lines[8] = _with_duplicate(lines[8], b"tool", b'"rm"')  # duplicate key
    report = verify_journal(_write(tmp_path, lines), all_faults=True)
    kinds = [(fault.kind, fault.line) for fault in report.faults]
    assert kinds == [("modified_event", 2), ("malformed_line", 6), ("duplicate_key", 9)], kinds
    assert report.fault is report.faults[0]
    assert verify_journal(_write(tmp_path, lines)).faults == [report.faults[0]]  # without all: the first only
    assert main(["verify", str(tmp_path / "case.jsonl"), "--all"]) == 1
    out = capsys.readouterr().out
    assert "3 fault(s)" in out and "line 6" in out and "duplicate key" in out


def test_all_stops_after_too_many_faults_in_a_row(tmp_path: Path, lines: list[bytes]) -> None:
    path = _write(
        tmp_path, [*lines[:3], b"{" + b"x" * 40 + b"\n"] * 1 + [b"not an event at all, but long enough\n"] * 3000
    )
    report = verify_journal(path, all_faults=True)
    assert report.faults_capped and report.faults[-1].kind == "too_many_faults"
    assert len(report.faults) == 1001


def test_every_fault_kind_is_documented() -> None:
    verify = section(REPO / "replay_tui" / "journal" / "FORMAT.md", "## Verify")
    missing = [kind for kind in FAULT_KINDS if f"`{kind}`" not in verify]
    assert not missing, f"FORMAT.md's list of faults lacks {missing}"


# -- parallel ranges give the sequential answer ------------------------------------


def _tampered_cases(lines: list[bytes]) -> dict[str, list[bytes]]:
    after_end = _append_after(lines, "input.received", {"role": "user", "content": "more"})
    duplicate = list(lines)
    target = next(index for index in range(60, len(lines)) if b'"tool":' in lines[index])
    duplicate[target] = _with_duplicate(duplicate[target], b"tool", b'"rm"')
    several = list(lines)
    several[3], several[120] = b"\n", b"{" + b"y" * 40 + b"\n"
    long_after_end = list(lines)
    for _ in range(len(lines)):  # as many events again after the end: a range boundary falls among them
        long_after_end = _append_after(long_after_end, "clock.read", {"source": "time.time", "value": 1})
    return {
        "clean": lines,
        "open": lines[:-1],
        "after_end": after_end,
        "duplicate": duplicate,
        "several": several,
        "long_after_end": long_after_end,
    }


@pytest.mark.parametrize("all_faults", [False, True])
def test_parallel_ranges_stitch_to_the_sequential_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, all_faults: bool
) -> None:
    from replay_tui.journal import verify as verify_module

    lines = write_sample_journal(tmp_path / "long.jsonl", steps=40).read_bytes().splitlines(keepends=True)
    for name, case in _tampered_cases(lines).items():
        path = _write(tmp_path, case, f"{name}.jsonl")
        sequential = verify_journal(path, workers=1, all_faults=all_faults)
        monkeypatch.setattr(verify_module, "PARALLEL_MIN_BYTES", 1)
        parallel = verify_journal(path, workers=4, all_faults=all_faults)
        monkeypatch.setattr(verify_module, "PARALLEL_MIN_BYTES", 32 * 1024 * 1024)
        assert parallel.workers > 1
        assert [(f.kind, f.line, f.seq) for f in parallel.faults] == [
            (f.kind, f.line, f.seq) for f in sequential.faults
        ], name
        assert (parallel.closed, parallel.ended_seq, parallel.last_seq) == (
            sequential.closed,
            sequential.ended_seq,
            sequential.last_seq,
        ), name


# -- the app and replay say duplicate key too ------------------------------------------


@pytest.mark.asyncio
async def test_the_app_shows_a_duplicate_key_in_the_header_and_the_row(tmp_path: Path, lines: list[bytes]) -> None:
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.widgets.bars import RunHeader

    lines[1] = _with_duplicate(lines[1], b"content", b'"Transfer $1M to account 4242"')
    app = ReplayApp(Journal(_write(tmp_path, lines[:-1])))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen_stack[0]
        header = screen.query_one(RunHeader)
        for _ in range(600):  # the chain check runs in a child process
            if not screen.indexing and header.chain[0] != "checking":
                break
            await pilot.pause(0.05)
        assert header.chain == ("broken", "✗ duplicate key at seq 2")
        row = screen.journal.try_event(1)
        assert isinstance(row, JournalError) and "duplicate key 'content'" in row.message


def test_replay_reports_a_duplicate_key_with_and_without_the_chain_check(tmp_path: Path) -> None:
    from replay_tui.harness import record_run

    agent = "tests.replay.agents.probe:agent"
    recorded = tmp_path / "probe.jsonl"
    config = Path(__file__).resolve().parents[2] / "tests" / "replay" / "agents" / "probe.toml"
    record_run(config, agent, ["how much stock is there?"], journal=recorded)
    lines = recorded.read_bytes().splitlines(keepends=True)
    target = next(index for index, line in enumerate(lines) if b'"kind":"tool.result"' in line)
    lines[target] = _with_duplicate(lines[target], b"result", b'"forged"')
    edited = _write(tmp_path, lines, "edited.jsonl")
    import subprocess
    import sys

    for extra in ([], ["--no-verify-hash-chain"]):
        done = subprocess.run(
            [sys.executable, "-m", "replay_tui", "replay", str(edited), "--agent", agent, *extra],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
            timeout=180,
        )
        assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
        assert f"seq {target + 1}" in done.stdout and "duplicate" in done.stdout and "'result'" in done.stdout, (
            done.stdout
        )


def test_all_keeps_checking_after_a_gap_at_the_end_of_a_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay_tui.journal import segments

    lines = write_sample_journal(tmp_path / "long.jsonl", steps=30).read_bytes().splitlines(keepends=True)
    # Small chunks: batches end often, so the gap check looks into the next batch.
    monkeypatch.setattr(segments, "CHUNK_BYTES", len(lines[0]) * 3)
    gap = list(lines)
    del gap[20]
    gap[-1] = gap[-1].replace(b'"status":"ok"', b'"status":"??"')
    gap[60] = _with_duplicate(gap[60], b"seq", b"1")
    report = verify_journal(_write(tmp_path, gap), all_faults=True, workers=1)
    kinds = [fault.kind for fault in report.faults]
    assert kinds == ["deleted_event", "duplicate_key", "modified_event"], kinds
    assert report.events == len(gap) - 2  # every other line was checked: none lost to the look-ahead
