"""The httpx transport with the real openai and anthropic SDK clients and a real server on loopback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from replay_tui.harness import record_run
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import open_journal, verify_journal
from replay_tui.journal.errors import SchemaError
from replay_tui.replay.parent.runner import ReplayRunner
from replay_tui.replay.protocol import ReplaySpec

from ..docs import block
from .conftest import ANTHROPIC_KEY, OPENAI_KEY, REPO
from .servers import LLMServer

CASES = [
    ("sdk_openai", "agent", "/v1"),
    ("sdk_openai", "stream_agent", "/v1"),
    ("sdk_anthropic", "agent", ""),
    ("sdk_anthropic", "stream_agent", ""),
]


def tools_config(module: str):
    return config_from_mapping(
        {
            "plugins": [
                {"id": "tools", "type": "python-tools", "options": {"provider": f"fixtures.agents.{module}:tools"}}
            ]
        },
        base_dir=REPO,
    )


def record(
    tmp_path: Path,
    module: str,
    entry: str,
    base_url: str,
    name: str = "run.jsonl",
    question: str = "What is the weather in Lisbon?",
):
    journal = tmp_path / name
    outcome = record_run(
        tools_config(module),
        f"fixtures.agents.{module}:{entry}",
        [{"question": question, "base_url": base_url}],
        journal=journal,
    )
    return journal, outcome


def replay(journal: Path, **spec: object):
    return ReplayRunner(
        ReplaySpec(journal=str(journal), sys_path=[str(REPO)], **spec), timeout_s=120, cwd=str(REPO)
    ).run()


def events(journal: Path):
    with open_journal(journal) as opened:
        return [opened.event(position) for position in range(len(opened))]


@pytest.mark.parametrize(("module", "entry", "suffix"), CASES)
def test_sdk_agent_records_and_replays_with_the_network_off(
    tmp_path: Path, llm_server: LLMServer, api_keys: None, module: str, entry: str, suffix: str
) -> None:
    journal, outcome = record(tmp_path, module, entry, llm_server.url + suffix)
    assert (outcome.status, outcome.output) == ("ok", "The weather: sunny, 21 C.")
    assert verify_journal(journal).ok
    # the key went over the wire...
    key = OPENAI_KEY if module == "sdk_openai" else ANTHROPIC_KEY
    sent = llm_server.state.received[0].headers
    assert any(key in value for name, value in sent.items() if name in ("authorization", "x-api-key"))
    # ...and never into the journal: no key, no auth header, no cookie
    data = journal.read_bytes()
    for secret in (
        OPENAI_KEY.encode(),
        ANTHROPIC_KEY.encode(),
        b"CANARY",
        b"authorization",
        b"x-api-key",
        b"Bearer",
        b"session=abcdef",
    ):
        assert secret not in data
    scan = subprocess.run(
        [sys.executable, "-m", "replay_tui", "scan", str(journal)], capture_output=True, text=True, timeout=60
    )
    assert scan.returncode == 0, scan.stdout  # the secret scan finds nothing redaction missed
    kinds = [event.kind for event in events(journal)]
    assert kinds.count("model.request") == kinds.count("model.response") == 2
    responses = [event for event in events(journal) if event.kind == "model.response"]
    first = responses[0].payload["response"]
    assert first["tool_calls"] == [{"id": "call_w1", "name": "weather", "arguments": {"city": "Lisbon"}}]
    assert responses[1].payload["response"]["content"] == "The weather: sunny, 21 C."
    if entry == "stream_agent":
        assert responses[1].payload["stream"]["chunks"] > 3
    # replay: served from the journal in a child with the network off; the server hears nothing
    heard = len(llm_server.state.received)
    result = replay(journal)
    assert result.status == "match", result.to_text()
    assert result.isolation is not None and result.isolation.network_namespace
    assert result.refusals == []
    assert len(llm_server.state.received) == heard


def test_request_hash_does_not_depend_on_the_key(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashes = []
    for index, key in enumerate(("sk-first-key-0123456789abcdefghij", "sk-other-key-0123456789abcdefghij")):
        monkeypatch.setenv("OPENAI_API_KEY", key)
        journal, _ = record(tmp_path, "sdk_openai", "agent", llm_server.url + "/v1", name=f"run{index}.jsonl")
        hashes.append([e.payload["request_hash"] for e in events(journal) if e.kind == "model.request"])
    assert hashes[0] == hashes[1]


def test_a_changed_request_diverges_at_the_model_request(tmp_path: Path, llm_server: LLMServer, api_keys: None) -> None:
    journal, _ = record(tmp_path, "sdk_openai", "agent", llm_server.url + "/v1")
    result = replay(journal, agent="fixtures.agents.sdk_openai:stream_agent")
    assert result.status == "diverged"
    assert result.divergence.seq == 3 and result.divergence.expected.kind == "model.request"
    assert "request_hash differs" in result.divergence.reason
    assert any("stream" in line for line in result.divergence.diff_lines)


def test_a_transport_error_is_recorded_and_raised_again(tmp_path: Path, api_keys: None) -> None:
    closed = LLMServer()
    url = closed.url
    closed.close()  # nothing listens there any more: a connect error
    journal, outcome = record(tmp_path, "sdk_openai", "agent", url + "/v1")
    assert outcome.status == "error" and "Connection error" in str(outcome.error)
    response = next(e for e in events(journal) if e.kind == "model.response")
    assert response.payload["response"] is None
    assert response.payload["error"]["type"].rsplit(".", 1)[-1] == "ConnectError"
    result = replay(journal)
    assert result.status == "match", result.to_text()


def test_plain_httpx_client(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_from_mapping({"plugins": []}, base_dir=REPO)
    journal = tmp_path / "plain.jsonl"
    token = "sk-plainCANARY0123456789abcdefghij"
    monkeypatch.setenv("PLAIN_API_TOKEN", token)
    outcome = record_run(
        config,
        "tests.httpx.agents:agent",
        [{"question": "Weather in Oslo?", "base_url": llm_server.url}],
        journal=journal,
    )
    assert (outcome.status, outcome.output) == ("ok", "weather")
    assert llm_server.state.received[0].headers["authorization"] == f"Bearer {token}"
    assert token.encode() not in journal.read_bytes()
    request = next(e for e in events(journal) if e.kind == "model.request").payload["request"]
    assert request["params"]["http"] == {"method": "POST", "url": f"{llm_server.url}/v1/chat/completions"}
    assert "authorization" not in request["headers"] and request["headers"]["content-type"] == "application/json"
    assert replay(journal).status == "match"


def test_a_response_cookie_is_never_recorded_and_the_caller_does_not_see_it_either(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """The loopback server sets a session cookie (as a real API's load balancer does): the journal holds no
    set-cookie, and the response the caller reads has none, so record and replay hand it the same headers
    (with redaction on, as here, and off)."""
    from replay_tui.harness import Harness, JsonlSink, RedactionRules, Redactor
    from replay_tui.harness.httpx_transport import http_client

    for redactor in (None, Redactor(RedactionRules(enabled=False))):
        journal = tmp_path / f"cookie-{redactor is None}.jsonl"
        h = Harness(sink=JsonlSink(journal, run_id="c"), run_id="c", redactor=redactor)
        h.start_run("c")
        with http_client(h) as client:
            answer = client.post(
                f"{llm_server.url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
            )
        h.end_run("ok")
        assert answer.status_code == 200 and "set-cookie" not in answer.headers and not client.cookies
        assert b"abcdef0123456789" not in journal.read_bytes() and b"set-cookie" not in journal.read_bytes()
        response = next(e for e in events(journal) if e.kind == "model.response").payload["response"]
        assert response["http"]["headers"]["x-request-id"].startswith("req-")


def test_recorded_request_keeps_body_fields_and_drops_attempt_headers() -> None:
    from replay_tui.harness.httpx_transport import exchange_from_payload, recorded_request, recorded_response

    request = recorded_request(
        "post",
        "http://127.0.0.1:9/v1/chat/completions",
        [
            ("Authorization", "Bearer x"),
            ("X-Stainless-Retry-Count", "1"),
            ("Idempotency-Key", "abc"),
            ("Content-Type", "application/json"),
        ],
        orjson.dumps({"model": "m", "messages": [], "temperature": 0.2, "stream": False}),
    )
    assert request == {
        "model": "m",
        "messages": [],
        "stream": False,
        "params": {
            "http": {"method": "POST", "url": "http://127.0.0.1:9/v1/chat/completions"},
            "body": {"temperature": 0.2},
        },
        "headers": {"content-type": "application/json"},  # credential headers are never recorded
    }
    body = b"\x00\x01binary"
    payload = {
        "request_hash": "sha256:" + "0" * 64,
        **recorded_response(200, [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")], body),
    }
    exchange = exchange_from_payload(payload)
    assert (exchange.status, exchange.body, exchange.headers) == (
        200,
        body,
        [("content-type", "application/octet-stream")],
    )
    with pytest.raises(SchemaError, match="payload.response.http: expected the HTTP response the httpx transport"):
        exchange_from_payload({"response": {"content": "hi"}})
    assert httpx  # the plain module is the test extra's, used by tests.httpx.agents


def test_concurrent_async_requests_replay_in_the_recorded_order(
    tmp_path: Path, llm_server: LLMServer, api_keys: None
) -> None:
    journal, outcome = record(tmp_path, "sdk_anthropic", "parallel_agent", llm_server.url)
    assert (outcome.status, outcome.output) == ("ok", ["Lisbon", "Oslo"])
    recorded = [event for event in events(journal) if event.kind.startswith("model.")]
    requests = {e.event_id for e in recorded if e.kind == "model.request"}
    assert [e.kind for e in recorded][:2] == ["model.request"] * 2  # both in flight together
    assert {e.parent_event_id for e in recorded if e.kind == "model.response"} == requests  # each answers its own
    result = replay(journal)
    assert result.status == "match", result.to_text()


def test_the_documented_sdk_config(tmp_path: Path, llm_server: LLMServer, api_keys: None) -> None:
    """RECORDING.md's SDK config block: records the fixture agent, keeps the usage details."""
    recording = REPO / "replay_tui" / "harness" / "RECORDING.md"
    config = tmp_path / "sdk_agent.toml"
    config.write_text(block(recording, "## Record against a real model or an SDK", first_line="# sdk_agent.toml"))
    journal = tmp_path / "sdk.jsonl"
    outcome = record_run(
        config,
        "fixtures.agents.sdk_openai:agent",
        [{"question": "Weather in Lisbon?", "base_url": llm_server.url + "/v1"}],
        journal=journal,
    )
    assert outcome.status == "ok", outcome.error
    usage = next(e for e in events(journal) if e.kind == "model.response").payload["response"]["usage"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}
    assert OPENAI_KEY.encode() not in journal.read_bytes()
    assert replay(journal).status == "match"


# (the recorded http block, the field the error names): a journal is hostile, and a replay hands this to the SDK
HOSTILE_HTTP = [
    ({"status": "200", "headers": {}}, "payload.response.http.status"),
    ({"status": True, "headers": {}}, "payload.response.http.status"),
    ({"status": 1000, "headers": {}}, "payload.response.http.status"),
    ({"headers": {}}, "payload.response.http.status"),
    ({"status": 200, "headers": [["content-type", "application/json"]]}, "payload.response.http.headers"),
    ({"status": 200, "headers": {"x-a": ["1", "2"]}}, "payload.response.http.headers"),
    ({"status": 200, "headers": {}, "body_text": {"a": 1}}, "payload.response.http.body_text"),
    ({"status": 200, "headers": {}, "body_base64": "not base64!"}, "payload.response.http.body_base64"),
    ({"status": 200, "headers": {}, "body_base64": 5}, "payload.response.http.body_base64"),
]


@pytest.mark.parametrize(("http", "field"), HOSTILE_HTTP)
def test_a_recorded_http_response_of_another_shape_is_a_schema_error_naming_seq_and_field(
    http: dict[str, Any], field: str
) -> None:
    from replay_tui.harness.httpx_transport import exchange_from_payload

    with pytest.raises(SchemaError) as raised:
        exchange_from_payload({"request_hash": "sha256:" + "0" * 64, "response": {"http": http}}, seq=7)
    assert raised.value.seq == 7 and raised.value.field == field
    assert str(raised.value).startswith(f"seq 7: field {field}: expected ")


def test_a_recorded_http_response_may_have_no_headers_and_a_status_the_vcr_importer_writes() -> None:
    from replay_tui.harness.httpx_transport import exchange_from_payload

    assert exchange_from_payload({"response": {"http": {"status": 0, "headers": None}}}).status == 0
    exchange = exchange_from_payload({"response": {"http": {"status": 999, "body_text": "hé"}}})
    assert (exchange.status, exchange.headers, exchange.body) == (999, [], "hé".encode())


def test_only_a_recorded_transport_error_is_rebuilt_as_the_httpx_class_it_names() -> None:
    """The journal names the class: any other class of the module (a client, a transport) would have the journal
    choose a constructor to run in the replayed agent."""
    from replay_tui.harness.httpx_transport import _raise_recorded_error, default_httpx_module
    from replay_tui.harness.seam import RecordedToolError

    module = default_httpx_module()
    request = module.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    with pytest.raises(module.ConnectError, match="refused") as connect:
        _raise_recorded_error({"error": {"type": "httpx.ConnectError", "message": "refused"}}, module, request)
    assert connect.value.request is request
    for name in ("Client", "HTTPTransport", "URL", "Response"):  # (before: a TypeError from building one)
        with pytest.raises(RecordedToolError) as raised:
            _raise_recorded_error({"error": {"type": f"httpx.{name}", "message": "/etc/passwd"}}, module, request)
        assert raised.value.type_name == f"httpx.{name}"
