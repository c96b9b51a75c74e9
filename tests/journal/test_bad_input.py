"""Bad input: a clear message naming file and line, exit 2 or 1, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.journal import JournalError, JournalOpenError, open_journal, verify_journal
from tests.journal_factory import run_started

from .sample import write_sample_journal


def _good_lines(tmp_path: Path) -> list[bytes]:
    return write_sample_journal(tmp_path / "good.jsonl", steps=2).read_bytes().splitlines(keepends=True)


def _with_line(tmp_path: Path, bad: bytes, at: int = 2) -> Path:
    lines = _good_lines(tmp_path)
    lines.insert(at, bad)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    return path


CASES = {
    "not json": (b"{this is not json, though it is as long as an event could be}\n", "not valid JSON"),
    "invalid utf-8": (b'{"seq": "\xff\xfe", "kind": "long enough to be an event"}\n', "not valid UTF-8"),
    "array line": (b"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]\n", "is an array, expected a JSON object"),
    "deep nesting": (b"[" * 10_000 + b"]" * 10_000 + b"\n", "nests deeper"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_lines_are_named(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad, expected = CASES[name]
    path = _with_line(tmp_path, bad)
    report = verify_journal(path)
    assert report.fault and report.fault.line == 3 and expected in report.fault.message
    assert report.events == 2
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "bad.jsonl, line 3" in out and expected in out
    with open_journal(path) as journal:  # the rest stays viewable
        results = list(journal.events())
    assert isinstance(results[2], JournalError)
    assert sum(not isinstance(r, JournalError) for r in results) == len(results) - 1


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    huge = b'{"seq": 3, "blob": "' + b"x" * (50 * 1024 * 1024) + b'"}\n'
    path = _with_line(tmp_path, huge)
    report = verify_journal(path)
    assert report.fault and report.fault.line == 3 and "50.0 MiB" in report.fault.message
    with open_journal(path) as journal:
        with pytest.raises(JournalError, match="over 16 MiB are refused"):
            journal.event(2)
        assert journal.event(3).seq == 3


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "missing.jsonl", "no such file"),
        (lambda d: (d / "empty.jsonl").write_bytes(b"") or d / "empty.jsonl", "is empty"),
        (lambda d: (d / "shardless").mkdir() or d / "shardless", "holds no journal shards"),
    ],
    ids=["missing file", "empty file", "directory with no shards"],
)
def test_unopenable_paths(tmp_path: Path, make, expected: str, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    with pytest.raises(JournalOpenError, match=expected):
        verify_journal(path)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and str(path) in err


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    path = _with_line(tmp_path, b"\xff\xfe garbage\n")
    for args, code in ([str(path)], 1), ([str(tmp_path / "nope.jsonl")], 2), ([str(tmp_path)], 1):
        done = subprocess.run([sys.executable, "-m", "replay_tui", "verify", *args], capture_output=True, text=True)
        assert done.returncode == code, done.stderr
        assert "Traceback" not in done.stdout + done.stderr


def test_an_integer_beyond_json_precision_is_a_clear_fault(tmp_path: Path) -> None:
    lines = _good_lines(tmp_path)
    lines[2] = lines[2].replace(b'"seq":3', b'"seq":3,"big":1152921504606846976')
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(lines))
    report = verify_journal(path)
    assert report.fault and report.fault.kind == "malformed_line" and report.fault.line == 3
    assert "no canonical JSON form" in report.fault.message and "1152921504606846976" in report.fault.message


def test_a_deep_but_parseable_event_is_written_read_and_verified(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    deep: object = "bottom"
    for _ in range(1000):
        deep = [deep]
    path = tmp_path / "deep.jsonl"
    with JournalWriter(path, run_id="deep") as writer:
        writer.append("run.started", run_started(initial_state=deep))
    report = verify_journal(path)
    assert report.ok, report.to_text()
    from replay_tui.journal import canonical_json  # list == recurses in Python, so compare bytes

    assert canonical_json(open_journal(path).event(0).payload["initial_state"]) == canonical_json(deep)


def test_a_cut_off_gzip_shard_is_reported_as_truncated(tmp_path: Path) -> None:
    import gzip

    plain = write_sample_journal(tmp_path / "j.jsonl", steps=400).read_bytes()
    packed = gzip.compress(plain)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 3 // 4])
    report = verify_journal(path)
    assert report.fault and report.fault.kind == "truncated_last_line"
    assert "gzip stream ends early" in report.fault.message and report.events > 100
