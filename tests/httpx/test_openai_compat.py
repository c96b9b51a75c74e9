"""The openai-compatible ModelClient plugin against a chat-completions server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.agents import crm_policy
from fixtures.corpus import agents as refund_desk
from replay_tui.harness import build_harness, record_run
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import open_journal

from ..docs import block
from .conftest import REPO
from .servers import LLMServer

RECORDING = REPO / "replay_tui" / "harness" / "RECORDING.md"

QUESTION = "Please refund order A-101, it arrived broken."


def refund_config(base_url: str, **options: object):
    model = {"base_url": base_url, "model": "local-model", **options}
    return config_from_mapping(
        {
            "harness": {"random_seed": 2026, "clock": {"frozen_at": "2026-11-20T08:00:00Z"}},
            "plugins": [
                {"id": "model", "type": "openai-compatible", "options": model},
                {"id": "shop", "type": "python-tools", "options": {"provider": "fixtures.corpus.agents:tools"}},
            ],
        },
        base_dir=REPO,
    )


def events(journal: Path):
    with open_journal(journal) as opened:
        return [opened.event(position) for position in range(len(opened))]


def replay_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def refund_server():
    server = LLMServer(policy=refund_desk.policy)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("stream", [False, True])
def test_records_an_agent_with_tools(tmp_path: Path, refund_server: LLMServer, stream: bool) -> None:
    journal = tmp_path / "refund.jsonl"
    outcome = record_run(
        refund_config(refund_server.url + "/v1", stream=stream, params={"temperature": 0}),
        "fixtures.corpus.agents:agent",
        [QUESTION],
        journal=journal,
    )
    assert outcome.status == "ok"
    assert outcome.output["answer"] == "Refund R-101 issued: 116.5 EUR."
    # on the wire: OpenAI tool schema, assistant tool calls with JSON-text arguments, tool_call_id, stream flag
    second = refund_server.state.received[1].body
    assert second["model"] == "local-model" and second["temperature"] == 0
    assistant = second["messages"][2]
    assert assistant["tool_calls"][0]["type"] == "function"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"order_id": "A-101"}
    assert second["messages"][3]["tool_call_id"] == "call-lookup"
    assert second.get("stream", False) is stream
    responses = [e for e in events(journal) if e.kind == "model.response"]
    assert responses[0].payload["response"]["tool_calls"] == [
        {"id": "call-lookup", "name": "orders.lookup", "arguments": {"order_id": "A-101"}}
    ]
    assert responses[0].payload["response"]["usage"]["total_tokens"] == 18
    if stream:
        final = responses[-1].payload
        assert final["stream"]["boundaries"][-1] == len(final["response"]["content"])
    # and the journal replays strictly with no server involved
    heard = len(refund_server.state.received)
    done = replay_cli(str(journal))
    assert done.returncode == 0, done.stdout
    assert len(refund_server.state.received) == heard


def test_model_live_experiment_against_a_local_server(tmp_path: Path) -> None:
    server = LLMServer(policy=crm_policy.new_model_policy)
    try:
        config = tmp_path / "local-model.toml"
        config.write_text(
            '[[plugins]]\nid = "model"\ntype = "openai-compatible"\n'
            f'options = {{ base_url = "{server.url}/v1", model = "crm-local", stream = true }}\n'
        )
        out = tmp_path / "model-live.jsonl"
        done = replay_cli(
            str(REPO / "fixtures" / "journals" / "crm.jsonl"),
            "--mode",
            "model-live",
            "--model-config",
            str(config),
            "--out",
            str(out),
            "--json",
        )
        result = json.loads(done.stdout)
        assert done.returncode == 1, done.stdout[-2000:]
        assert result["status"] == "diverged" and result["experiment"]["mode"] == "model-live"
        assert f"127.0.0.1:{server.port}" in result["isolation"]["allowed_hosts"]
        live = [call for call in result["live_calls"] if call["kind"] == "model.response"]
        assert len(live) == len(server.state.received) > 5
        assert result["experiment"]["first_decision"]["kind"] == "model.response"
        assert out.exists()
    finally:
        server.close()


def test_http_error_is_recorded_as_the_model_error(tmp_path: Path, refund_server: LLMServer) -> None:
    journal = tmp_path / "err.jsonl"
    outcome = record_run(
        refund_config(refund_server.url + "/wrong"), "fixtures.corpus.agents:agent", [QUESTION], journal=journal
    )
    assert outcome.status == "error"
    response = next(e for e in events(journal) if e.kind == "model.response")
    error = response.payload["error"]
    assert error["type"] == "replay_tui.harness.openai_compat.ModelHTTPError" and error["code"] == 404
    assert "HTTP 404" in error["message"]


def test_bad_options_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="options.base_url must be an http"):
        with build_harness(refund_config("ftp://nowhere"), journal="/nonexistent/never-written.jsonl"):
            pass
    monkeypatch.delenv("LOCAL_MODEL_KEY", raising=False)
    with pytest.raises(ValueError, match="LOCAL_MODEL_KEY"):
        with build_harness(
            refund_config("http://127.0.0.1:9/v1", api_key_env="LOCAL_MODEL_KEY"), journal="/nonexistent/x.jsonl"
        ):
            pass


def test_the_documented_model_config(tmp_path: Path, refund_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """RECORDING.md's openai-compatible block, pointed at the loopback server: the key goes on the
    wire, never into the journal; the block's host is what a model-live child may reach."""
    from replay_tui.replay.hosts import hosts_in_config

    documented = block(RECORDING, "## Record against a real model or an SDK", lang="toml", first_line="[[plugins]]")
    original = tmp_path / "readme.toml"
    original.write_text(documented)
    assert hosts_in_config(original) == ["127.0.0.1:8000"]
    config = tmp_path / "model.toml"
    config.write_text(
        documented.replace("http://127.0.0.1:8000/v1", refund_server.url + "/v1")
        + (
            '\n[[plugins]]\nid = "shop"\ntype = "python-tools"\noptions = { provider = "fixtures.corpus.agents:tools" }\n'
        )
    )
    key = "sk-readmeCANARY0123456789abcdefghijkl"
    monkeypatch.setenv("LLM_KEY", key)
    journal = tmp_path / "readme.jsonl"
    outcome = record_run(config, "fixtures.corpus.agents:agent", [QUESTION], journal=journal)
    assert outcome.status == "ok", outcome.error
    assert refund_server.state.received[0].headers["authorization"] == f"Bearer {key}"
    assert refund_server.state.received[0].body["model"] == "qwen2.5-7b-instruct"
    assert key.encode() not in journal.read_bytes()
