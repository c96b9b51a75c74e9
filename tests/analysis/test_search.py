"""Text and field filters, next/previous with wrap, cancellation, marks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from journal_factory import write_incident  # noqa: E402

from replay_tui.analysis.marks import ReplayMarks, event_marks, line_of  # noqa: E402
from replay_tui.analysis.search import (  # noqa: E402
    QueryError,
    find_next,
    matching_positions,
    parse_query,
)
from replay_tui.journal import open_journal  # noqa: E402


@pytest.fixture
def journal(tmp_path: Path):
    return open_journal(write_incident(tmp_path / "incident.jsonl"))


def seqs(journal, text: str) -> list[int]:
    return [journal.event(p).seq for p in matching_positions(journal, parse_query(text))]


def test_field_filters(journal) -> None:
    results = seqs(journal, "kind:tool.result tool:customer_query")
    assert len(results) == 1 and journal.event(results[0] - 1).payload["tool"] == "customer_query"
    assert len(seqs(journal, "kind:tool")) == 8  # tool.call and tool.result
    assert len(seqs(journal, "tool:refund")) == 3  # the model asked for it, called it, got a result
    assert seqs(journal, "seq:3..5") == [3, 4, 5]
    assert seqs(journal, "step:step-02 kind:tool.call") == [11]
    assert seqs(journal, "payload.arguments.retry:1") == [16]


def test_text_and_is_filters(journal) -> None:
    assert seqs(journal, "DID NOT ANSWER") == seqs(journal, "is:timeout")
    assert len(seqs(journal, "is:error")) == 2  # the timeout and the failed run
    assert seqs(journal, '"double charged"') == [2]
    assert seqs(journal, "is:redacted") == [7]


def test_bad_queries_say_what_was_expected() -> None:
    with pytest.raises(QueryError, match="known filters"):
        parse_query("knd:tool.call")
    with pytest.raises(QueryError, match="seq:10..20"):
        parse_query("seq:abc")
    with pytest.raises(QueryError, match="close the quote"):
        parse_query('"open')
    assert parse_query("http://example").words == ("http://example",)


def test_find_next_wraps_both_ways(journal) -> None:
    query = parse_query("kind:state.snapshot")
    hits = list(matching_positions(journal, query))
    assert len(hits) == 1
    assert find_next(journal, query, hits[0], 1) == hits[0]  # the only hit, found again after wrapping
    assert find_next(journal, query, len(journal) - 1, 1) == hits[0]
    assert find_next(journal, query, 0, -1) == hits[0]
    assert find_next(journal, query, 0, 1, wrap=False) == hits[0]
    assert find_next(journal, query, hits[0], 1, wrap=False) is None


def test_search_stops_when_cancelled(journal) -> None:
    assert find_next(journal, parse_query("nothing-matches-this"), 0, 1, cancelled=lambda: True) is None


def test_replay_marks(journal) -> None:
    marks = ReplayMarks(divergent=frozenset({12, 9}), consumed=frozenset(range(1, 9)), unused=frozenset({25, 26}))
    assert marks.first_divergence == 9
    assert marks.mark_of(9) == "divergent" and marks.mark_of(26) == "unused" and marks.mark_of(2) == "consumed"
    assert seqs_with(journal, "is:divergent", marks) == [9, 12]
    position = journal.position_of_seq(12)
    assert "divergent" in event_marks(journal.event(position), line_of(journal, position), marks)


def seqs_with(journal, text: str, marks: ReplayMarks) -> list[int]:
    return [journal.event(p).seq for p in matching_positions(journal, parse_query(text), replay=marks)]
