"""A causal chain longer than the walk's limit: no false root, and the tree says the chain was cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, settle

from replay_tui.analysis.causal import CausalIndex
from replay_tui.journal import Journal, JournalWriter
from replay_tui.tui.widgets.causal_tree import CausalTree
from tests.journal_factory import run_started

STARTED = run_started(snapshot_every=10)


def write_chain(path: Path, length: int, missing_parent_at: int | None = None) -> Path:
    """run.started, then ``length`` inputs each caused by the one before (the first is a root)."""
    writer = JournalWriter(path, run_id="run-chain", fsync="never")
    writer.append("run.started", STARTED)
    parent = None
    for index in range(length):
        if index == missing_parent_at:
            parent = "run-chain:999999"
        event = writer.append("input.received", {"role": "user", "content": f"m{index}"}, parent_event_id=parent)
        parent = event.event_id
    writer.close()
    return path


def test_a_cut_chain_says_so_and_a_whole_one_does_not(tmp_path: Path) -> None:
    journal = Journal(write_chain(tmp_path / "chain.jsonl", 60))
    journal.index()
    causal = CausalIndex(journal)
    whole = causal.chain_to_root(len(journal) - 1)
    assert whole.is_complete and journal.event(whole[0]).parent_event_id is None and len(whole) == 60
    cut = causal.chain_to_root(len(journal) - 1, limit=25)
    assert cut.cut and len(cut) == 25 and journal.event(cut[0]).parent_event_id is not None


def test_a_missing_parent_is_named(tmp_path: Path) -> None:
    journal = Journal(write_chain(tmp_path / "chain.jsonl", 30, missing_parent_at=10))
    journal.index()
    chain = CausalIndex(journal).chain_to_root(len(journal) - 1)
    assert chain.missing_parent == "run-chain:999999" and journal.event(chain[0]).seq == 12


@pytest.mark.asyncio
async def test_the_tree_marks_a_chain_cut_by_the_limit(tmp_path: Path) -> None:
    path = write_chain(tmp_path / "long.jsonl", 10_050)
    app = make_app(path, start_seq=10_051)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot, rounds=600)
        top = screen.query_one(CausalTree).root.children[0]
        assert "chain cut" in str(top.label) and "not the root" in str(top.label)
