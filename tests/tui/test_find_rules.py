"""The finding controller's rules, without an app: the filter stack, what `:` was given, the O(1)
seq lookup and how a search hit is worded (the keys that use them are in test_navigation.py)."""

from __future__ import annotations

from pathlib import Path

from replay_tui.analysis.search import parse_query
from replay_tui.journal import Journal
from replay_tui.tui.controllers.find import FilterStack, parse_seq, quick_position, search_result_text


def test_the_filter_stack_pushes_pops_and_starts_over() -> None:
    stack = FilterStack()
    assert stack.query is None and len(stack) == 0
    stack.push(parse_query("kind:tool"), fresh=False)
    both = stack.push(parse_query("is:error"), fresh=False)
    assert both.source == "kind:tool & is:error" and stack.query == both
    assert stack.pop().source == "is:error" and stack.query == parse_query("kind:tool")
    assert stack.pop().source == "kind:tool" and stack.query is None
    stack.push(parse_query("kind:tool"), fresh=False)
    assert stack.push(parse_query("step:step-01"), fresh=True).source == "step:step-01" and len(stack) == 1


def test_what_goto_was_given() -> None:
    assert parse_seq("  ") is None
    assert parse_seq(" #12 ") == 12
    assert parse_seq("0") == "'0' is not a seq: type a whole number like 12"
    assert parse_seq("twelve") == "'twelve' is not a seq: type a whole number like 12"


def test_quick_position_and_the_wording_of_a_hit(incident_path: Path) -> None:
    with Journal(incident_path) as journal:
        journal.index()
        assert quick_position(journal, 12) == 11 and quick_position(journal, 10_000) is None
        assert search_result_text(journal, "/x", 20, 5, 1) == "/x: seq 21"
        assert search_result_text(journal, "/x", 2, 5, 1) == "/x: seq 3 (wrapped around)"
        assert search_result_text(journal, "/x", 5, 5, -1) == "/x: seq 6 (the only match)"
