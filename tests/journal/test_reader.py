"""The reader: one API over .jsonl, .jsonl.gz and shard directories."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from replay_tui.journal import Journal, JournalError, JournalOpenError, open_journal, verify_journal

from .sample import write_sample_journal


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_random_access_by_position_and_seq(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "j.jsonl", steps=10)
    with open_journal(path) as journal:
        assert len(journal) == 42
        assert journal.event(0).kind == "run.started"
        assert journal.event(41).kind == "run.ended"
        assert journal.position_of_seq(17) == 16
        assert journal.event(journal.position_of_seq(17)).seq == 17
        assert journal.position_of_seq(999) is None
        assert [e.seq for e in journal.events(3, 6)] == [4, 5, 6]


def test_gzip_file_reads_like_plain(tmp_path: Path) -> None:
    plain = write_sample_journal(tmp_path / "j.jsonl", steps=4)
    packed = tmp_path / "j.jsonl.gz"
    with open(plain, "rb") as source, gzip.open(packed, "wb") as target:
        shutil.copyfileobj(source, target)
    with open_journal(packed) as journal:
        assert len(journal) == 18
        assert journal.event(9).raw == open_journal(plain).event(9).raw
    assert verify_journal(packed).ok


def test_rotated_shards_are_one_journal_ordered_by_first_seq(tmp_path: Path) -> None:
    directory = write_sample_journal(tmp_path / "run", steps=40, rotate_bytes=4000)
    shards = sorted(os.listdir(directory))
    assert len(shards) > 3 and all(s.endswith(".jsonl.gz") for s in shards[:-1]) and shards[-1].endswith(".jsonl")
    # Names must not decide the order: give the shards names that sort backwards.
    for index, name in enumerate(shards):
        os.rename(directory / name, directory / f"{99 - index:02d}-{name}")
    with open_journal(directory) as journal:
        assert [journal.event(p).seq for p in range(len(journal))] == list(range(1, 163))
    report = verify_journal(directory)
    assert report.ok and report.events == 162


def test_index_reports_progress_and_can_be_cancelled(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "j.jsonl", steps=300)
    seen: list[tuple[int, int]] = []
    journal = Journal(path)
    assert journal.index(progress=lambda done, total: seen.append((done, total)), batch_bytes=8192) is True
    assert len(seen) > 10 and seen[-1][0] == seen[-1][1] == path.stat().st_size
    assert len(journal) == 1202

    calls = iter(range(1000))
    partial = Journal(path)
    assert partial.index(cancelled=lambda: next(calls) >= 3, batch_bytes=8192) is False
    assert 0 < len(partial) < 1202
    assert partial.event(0).kind == "run.started"  # what is indexed is readable already


def test_refresh_picks_up_growth_and_holds_back_a_partial_line(tmp_path: Path) -> None:
    source = write_sample_journal(tmp_path / "full.jsonl", steps=3).read_bytes().splitlines(keepends=True)
    growing = tmp_path / "live.jsonl"
    growing.write_bytes(b"".join(source[:5]))
    journal = open_journal(growing)
    assert len(journal) == 5
    with open(growing, "ab") as out:
        out.write(source[5] + source[6][:30])
    assert journal.refresh().new_events == 1
    assert len(journal) == 6 and journal.pending_tail_bytes() == 30
    with open(growing, "ab") as out:
        out.write(source[6][30:] + b"".join(source[7:]))
    result = journal.refresh()
    assert result.new_events == len(source) - 6 and journal.pending_tail_bytes() == 0
    assert journal.event(6).raw == open_journal(tmp_path / "full.jsonl").event(6).raw


def test_refresh_detects_truncation_and_replacement(tmp_path: Path) -> None:
    source = write_sample_journal(tmp_path / "full.jsonl", steps=3).read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    live.write_bytes(b"".join(source))
    journal = open_journal(live)
    live.write_bytes(b"".join(source[:4]))  # truncated in place
    result = journal.refresh()
    assert result.reset == "truncated" and len(journal) == 4 and "truncated" in (result.message or "")

    replacement = tmp_path / "other.jsonl"
    replacement.write_bytes(b"".join(source[:7]))
    os.replace(replacement, live)
    result = journal.refresh()
    assert result.reset == "replaced" and len(journal) == 7


def test_rotation_is_picked_up_by_refresh(tmp_path: Path) -> None:
    directory = write_sample_journal(tmp_path / "run", steps=5, rotate_bytes=3000)
    names = sorted(directory.iterdir())
    held_back = names[-1]
    stash = tmp_path / held_back.name
    held_back.rename(stash)
    journal = open_journal(directory)
    before = len(journal)
    stash.rename(directory / held_back.name)
    result = journal.refresh()
    assert result.new_shards == 1 and len(journal) == 22 > before


def test_reading_never_writes(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "j.jsonl", steps=5)
    path.chmod(0o444)
    before, mtime = _digest(path), path.stat().st_mtime_ns
    with open_journal(path) as journal:
        list(journal.events())
        journal.refresh()
    verify_journal(path)
    assert _digest(path) == before and path.stat().st_mtime_ns == mtime


def test_a_bad_line_does_not_hide_the_rest(tmp_path: Path) -> None:
    lines = write_sample_journal(tmp_path / "j.jsonl", steps=2).read_bytes().splitlines(keepends=True)
    lines[3] = b"{not json, though as long as an event could be\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    with open_journal(bad) as journal:
        results = list(journal.events())
    assert isinstance(results[3], JournalError) and results[3].line == 4
    assert [r.seq for r in results if not isinstance(r, JournalError)] == [1, 2, 3, 5, 6, 7, 8, 9, 10]
    with pytest.raises(JournalError, match="line 4"):
        open_journal(bad).event(3)


def test_empty_lines_are_faults_not_index_entries_and_short_ones_are_shown(tmp_path: Path) -> None:
    lines = write_sample_journal(tmp_path / "j.jsonl", steps=2).read_bytes().splitlines(keepends=True)
    lines[3:3] = [b"\n", b"  \r\n", b"{}\n"]
    for name in ("bad.jsonl", "bad.jsonl.gz"):
        data = b"".join(lines)
        bad = tmp_path / name
        bad.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        with open_journal(bad) as journal:
            assert len(journal) == len(lines) - 2  # the two empty lines have no entry; "{}" is shown
            results = list(journal.events())
            assert isinstance(results[3], JournalError) and results[3].line == 6  # lines keep their numbers
            assert [event.seq for event in results if not isinstance(event, JournalError)] == list(
                range(1, len(lines) - 2)
            )
            assert journal.line_origin(4) == (str(bad), 7)
            count, errors = journal.skipped_lines()
            assert count == 2 and [error.line for error in errors] == [4, 5]
            assert all("line is empty" in error.message for error in errors)


def test_a_bomb_of_short_lines_is_capped(tmp_path: Path) -> None:
    first = write_sample_journal(tmp_path / "j.jsonl", steps=1).read_bytes().splitlines(keepends=True)[0]
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(first + b"x\n" * 2_000_000))
    with open_journal(bomb) as journal:
        assert len(journal) == 1 + 1000  # after 1,000 faulty lines in a row the shard is given up on
        count, errors = journal.skipped_lines()
        assert "stopped reading at line 1001" in errors[0].message


def test_block_reads_stay_aligned_when_empty_lines_were_left_out(tmp_path: Path) -> None:
    from replay_tui.analysis.search import iter_lines

    lines = write_sample_journal(tmp_path / "j.jsonl", steps=3).read_bytes().splitlines(keepends=True)
    lines[2:2] = [b"\n", b"\n"]
    lines[9:9] = [b"   \n"]
    bad = tmp_path / "gaps.jsonl"
    bad.write_bytes(b"".join(lines))
    with open_journal(bad) as journal:
        pairs = list(iter_lines(journal, 0, len(journal)))
        assert [position for position, _ in pairs] == list(range(len(journal)))
        for position, line in pairs:
            assert json.loads(line)["seq"] == journal.event(position).seq


def test_leading_empty_lines_do_not_make_a_journal_empty(tmp_path: Path) -> None:
    data = write_sample_journal(tmp_path / "j.jsonl", steps=1).read_bytes()
    for name, content in (("lead.jsonl", b"\n\n" + data), ("lead.jsonl.gz", gzip.compress(b"\n \r\n" + data))):
        path = tmp_path / name
        path.write_bytes(content)
        with open_journal(path) as journal:
            assert journal.dialect == "replay-tui/v1" and journal.event(0).seq == 1 and journal.line_origin(0)[1] == 3
    only_empty = tmp_path / "empty.jsonl.gz"
    only_empty.write_bytes(gzip.compress(b"\n" * 5_000_000))
    with pytest.raises(JournalOpenError, match="is empty"):
        open_journal(only_empty)


@pytest.mark.parametrize("budget", [1, 700, 1 << 20])
def test_a_run_of_lines_is_what_line_bytes_gives_line_by_line(tmp_path: Path, budget: int) -> None:
    """One read a block (search, diff, the replay's tape and referee) gives each line as ``line_bytes``
    does, without its newline: across shards, empty lines the index left out, and a line over the limit."""
    lines = write_sample_journal(tmp_path / "j.jsonl", steps=6).read_bytes().splitlines(keepends=True)
    lines[2:2] = [b"\n", b"\n"]
    lines[9:9] = [b"   \n"]
    giant = json.dumps({"schema_version": 1, "pad": "x" * 5000}).encode() + b"\n"
    lines[12:12] = [giant]
    gaps = tmp_path / "gaps.jsonl"
    gaps.write_bytes(b"".join(lines))
    directory = write_sample_journal(tmp_path / "run", steps=20, rotate_bytes=4000)
    for path, max_line_bytes in ((gaps, 4096), (directory, 1 << 20)):
        with Journal(path, max_line_bytes=max_line_bytes) as journal:
            journal.index()
            expected = [journal.line_bytes(position).rstrip(b"\n") for position in range(len(journal))]
            assert b"" in expected or path == directory  # the giant line is left out, not read
            position, found = 0, []
            while position < len(journal):
                run = journal.line_run(position, budget)
                assert run, "at least one line"
                found.extend(run)
                position += len(run)
            assert found == expected


def test_an_event_made_without_the_dataclass_init_is_the_event_the_init_makes() -> None:
    """``new_event`` fills every field of ``Event`` through its slot, in the dataclass's order: an Event field
    added without it fails here, not as an event missing a field somewhere later."""
    import dataclasses

    from replay_tui.journal.model import EVENT_FIELDS, Event, new_event

    assert tuple(field.name for field in dataclasses.fields(Event)) == EVENT_FIELDS
    values = (7, "tool.call", "run-1", "run-1:7", "step-01", "run-1:6", "2026-01-01T00:00:00.000000Z", {"a": 1},
              "sha256:" + "0" * 64, "sha256:" + "1" * 64, {"raw": True})  # fmt: skip
    made, expected = new_event(*values), Event(*values)
    assert made == expected and repr(made) == repr(expected)
    assert all(getattr(made, name) is value for name, value in zip(EVENT_FIELDS, values))
    try:
        made.seq = 8  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("an Event from new_event must stay frozen")
