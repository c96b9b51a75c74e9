"""Parent, children and chain to the root over parent_event_id, without a full parse."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).parent))
from journal_factory import write_bulk, write_incident  # noqa: E402

from replay_tui.analysis.causal import CausalIndex, describe  # noqa: E402
from replay_tui.journal import open_journal  # noqa: E402


def test_chain_from_a_tool_result_to_the_user_input(tmp_path: Path) -> None:
    journal = open_journal(write_incident(tmp_path / "incident.jsonl"))
    causal = CausalIndex(journal)
    result = next(p for p in range(len(journal)) if journal.event(p).kind == "tool.result")
    kinds = [journal.event(p).kind for p in causal.chain_to_root(result)]
    assert kinds == ["input.received", "model.request", "model.response", "tool.call", "tool.result"]
    assert causal.parent(causal.chain_to_root(result)[0]) is None


def test_children_are_found_in_pages(tmp_path: Path) -> None:
    journal = open_journal(write_bulk(tmp_path / "bulk.jsonl", 2000))
    causal = CausalIndex(journal)
    root = 1  # input.received: parent of every model.request and of run.ended
    first = causal.children(root, page=500, max_children=10_000)
    assert not first.exhausted and first.scanned_to == 502
    assert all(journal.event(p).parent_event_id == journal.event(root).event_id for p in first.children)
    everything = list(first.children)
    page = first
    while not page.exhausted:
        page = causal.children(root, start=page.scanned_to, page=500, max_children=10_000)
        everything.extend(page.children)
    expected = [p for p in range(len(journal)) if journal.event(p).parent_event_id == journal.event(root).event_id]
    assert everything == expected


def test_a_page_stops_after_max_children_and_resumes_after_the_last(tmp_path: Path) -> None:
    journal = open_journal(write_bulk(tmp_path / "bulk.jsonl", 2000))
    causal = CausalIndex(journal)
    first = causal.children(1, max_children=3)
    assert len(first.children) == 3 and first.scanned_to == first.children[-1] + 1 and not first.exhausted
    second = causal.children(1, start=first.scanned_to, max_children=3)
    assert second.children[0] > first.children[-1]


def test_other_id_styles_fall_back_to_a_backward_search(tmp_path: Path) -> None:
    # Ids that do not end in ":<seq>" (as a migrated or foreign journal may carry).
    source = write_incident(tmp_path / "incident.jsonl").read_bytes().splitlines()
    rewritten = []
    for line in source:
        event = orjson.loads(line)
        event["event_id"] = "evt-" + event["event_id"].replace(":", "-")
        if event["parent_event_id"]:
            event["parent_event_id"] = "evt-" + event["parent_event_id"].replace(":", "-")
        event.pop("event_hash")
        rewritten.append(orjson.dumps(event))
    path = tmp_path / "foreign.jsonl"
    path.write_bytes(b"\n".join(rewritten) + b"\n")
    journal = open_journal(path)
    causal = CausalIndex(journal)
    call = next(p for p in range(len(journal)) if journal.event(p).kind == "tool.call")
    assert journal.event(causal.parent(call)).kind == "model.response"
    assert len(causal.chain_to_root(call)) == 4


def test_describe_names_seq_kind_and_tool(tmp_path: Path) -> None:
    journal = open_journal(write_incident(tmp_path / "incident.jsonl"))
    call = next(p for p in range(len(journal)) if journal.event(p).kind == "tool.call")
    assert describe(journal.event(call)) == f"{journal.event(call).seq} tool.call customer_query"
