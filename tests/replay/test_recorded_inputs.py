"""The child finds the recorded inputs by searching blocks of the journal (``recorded.lines_holding``), not a read
per line: the same lines as a line-by-line test, whatever the block size, in shards and gzip too."""

from __future__ import annotations

import gzip

import pytest

from replay_tui.journal import Journal
from replay_tui.replay import recorded
from replay_tui.replay.recorded import lines_holding, recorded_inputs

from .conftest import REPO

JOURNALS = sorted((REPO / "fixtures" / "journals").glob("*.jsonl"))
NEEDLES = (b'"input.received"', b'"tool.call"', b'"state.transition"', b"sha256:", b"no such bytes")


def line_by_line(journal: Journal, needle: bytes) -> list[int]:
    return [position for position in range(len(journal)) if needle in journal.line_bytes(position)]


@pytest.mark.parametrize("block", [64, 4096, 1 << 20])
@pytest.mark.parametrize("path", JOURNALS, ids=lambda path: path.name)
def test_block_search_finds_the_lines_a_line_by_line_test_finds(monkeypatch, path, block):
    monkeypatch.setattr(recorded, "INPUT_SCAN_BLOCK", block)  # small blocks: lines longer than one, boundaries
    with Journal(path) as journal:
        journal.index()
        for needle in NEEDLES:
            assert list(lines_holding(journal, needle)) == line_by_line(journal, needle), needle


def test_shards_and_gzip_are_searched_in_journal_order(tmp_path, monkeypatch):
    monkeypatch.setattr(recorded, "INPUT_SCAN_BLOCK", 512)
    source = REPO / "fixtures" / "journals" / "stocktake-long.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    shards = tmp_path / "shards"
    shards.mkdir()
    third = len(lines) // 3
    (shards / "a-1.jsonl").write_bytes(b"".join(lines[:third]))
    with gzip.open(shards / "a-2.jsonl.gz", "wb") as handle:
        handle.write(b"".join(lines[third : 2 * third]))
    (shards / "a-3.jsonl").write_bytes(b"".join(lines[2 * third :]))
    with Journal(shards) as sharded, Journal(source) as whole:
        sharded.index()
        whole.index()
        for needle in NEEDLES:
            assert list(lines_holding(sharded, needle)) == line_by_line(whole, needle), needle
        assert recorded_inputs(sharded) == recorded_inputs(whole) != []


def test_a_line_holding_the_needle_many_times_is_found_once():
    with Journal(REPO / "fixtures" / "journals" / "crm-incident.jsonl") as journal:
        journal.index()
        assert list(lines_holding(journal, b'"')) == list(range(len(journal)))
