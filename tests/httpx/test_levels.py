"""A streamed SDK answer at level info: its alike events joined into one (fewer, longer deltas), its text and
tool calls kept, the request kept as its hash and summary; the run replays to a match with the network off."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.harness import record_run
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import verify_journal

from .conftest import REPO
from .servers import LLMServer
from .test_transport import events, replay


@pytest.mark.parametrize(("module", "suffix"), [("sdk_openai", "/v1"), ("sdk_anthropic", "")])
def test_a_streamed_answer_at_info_keeps_its_text_in_fewer_events_and_replays(
    tmp_path: Path, llm_server: LLMServer, api_keys: None, module: str, suffix: str
) -> None:
    journals = {}
    for level in ("info", "trace"):
        config = config_from_mapping(
            {
                "harness": {"level": level},
                "plugins": [
                    {"id": "tools", "type": "python-tools", "options": {"provider": f"fixtures.agents.{module}:tools"}}
                ],
            },
            base_dir=REPO,
        )
        journal = tmp_path / f"{level}.jsonl"
        outcome = record_run(
            config,
            f"fixtures.agents.{module}:stream_agent",
            [{"question": "What is the weather in Lisbon?", "base_url": llm_server.url + suffix}],
            journal=journal,
        )
        assert (outcome.status, outcome.output) == ("ok", "The weather: sunny, 21 C."), outcome
        assert verify_journal(journal).ok
        journals[level] = journal
    info, trace = ([e for e in events(journals[name]) if e.kind == "model.response"] for name in ("info", "trace"))
    for kept, full in zip(info, trace):
        kept_http, full_http = kept.payload["response"]["http"], full.payload["response"]["http"]
        assert kept_http["texts"] == full_http["texts"]  # the same text...
        assert len(kept_http["sse"]) < len(full_http["sse"])  # ...in fewer events
        assert kept.payload["response"]["tool_calls"] == full.payload["response"]["tool_calls"]
    requests = [e.payload for e in events(journals["info"]) if e.kind == "model.request"]
    assert all("summary" in payload and "request" not in payload for payload in requests)
    assert journals["info"].stat().st_size < journals["trace"].stat().st_size
    for journal in journals.values():
        result = replay(journal)
        assert result.status == "match", result.to_text()
