"""Lines the index leaves out (blank, too short) are counted once, the same way, by every report."""

from __future__ import annotations

from pathlib import Path

from replay_tui.analysis.secrets import scan_journal
from replay_tui.analysis.stats import compute_stats
from replay_tui.journal import Journal
from replay_tui.journal.skipped import UNREADABLE_EXAMPLES, add_skipped_lines

CRM = Path(__file__).resolve().parents[2] / "fixtures" / "journals" / "crm.jsonl"


def with_blank_lines(tmp_path: Path, blanks: int) -> Path:
    lines = CRM.read_bytes().splitlines(keepends=True)
    damaged = tmp_path / "blank.jsonl"
    damaged.write_bytes(b"".join(lines[:3] + [b"\n"] * blanks + lines[3:]))
    return damaged


def test_stats_and_the_secret_scan_count_skipped_lines_alike(tmp_path: Path) -> None:
    path = with_blank_lines(tmp_path, 7)
    with Journal(path) as journal:
        journal.index()
        events = len(journal)
        examples: list[str] = ["found by the event loop"]
        assert add_skipped_lines(journal, examples) == 7
        assert len(examples) == UNREADABLE_EXAMPLES and examples[0] == "found by the event loop"
        assert "blank.jsonl" in examples[1] and "line 4" in examples[1]
        stats = compute_stats(journal)
        report = scan_journal(journal)
    assert events == len(CRM.read_bytes().splitlines())
    assert stats.unreadable == report.unreadable == 7
    assert stats.unreadable_examples == report.unreadable_examples
    assert len(stats.unreadable_examples) == UNREADABLE_EXAMPLES
