"""Concurrent model calls on one async client run concurrently while recording, the journal holds the order
the server answered in, and a strict replay hands the answers back in that order."""

from __future__ import annotations

from pathlib import Path

from replay_tui.harness import record_run
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import verify_journal

from .concurrent_agent import ARRIVALS, policy
from .conftest import REPO
from .servers import LLMServer
from .test_transport import events, replay

AGENT = "tests.httpx.concurrent_agent:agent"


def test_three_questions_at_once_are_answered_concurrently_and_replayed_in_the_answered_order(
    tmp_path: Path,
) -> None:
    server = LLMServer(policy)
    try:
        journal = tmp_path / "concurrent.jsonl"
        outcome = record_run(
            config_from_mapping({}, base_dir=REPO),
            AGENT,
            [{"base_url": server.url + "/v1", "questions": ["slow", "mid", "fast"]}],
            journal=journal,
        )
    finally:
        server.close()
    assert outcome.status == "ok", outcome
    assert outcome.output["first"] == "answer to fast"
    # not one at a time: every question reached the server before the first answer left it
    assert max(arrived for arrived, _ in ARRIVALS.values()) < min(answered for _, answered in ARRIVALS.values())
    assert verify_journal(journal).ok
    recorded = events(journal)
    requests = [e for e in recorded if e.kind == "model.request"]
    responses = [e for e in recorded if e.kind == "model.response"]
    assert max(e.seq for e in requests) < min(e.seq for e in responses)  # all three were in flight together
    asked = {e.event_id: e.payload["request"]["messages"][-1]["content"] for e in requests}
    assert [asked[e.parent_event_id] for e in responses] == ["fast", "mid", "slow"]  # as the server answered
    result = replay(journal)
    assert result.status == "match", result.to_text()
