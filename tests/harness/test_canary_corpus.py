"""The canary corpus: every secret class in every place it can sit (argument, result, error,
header, key, stream, state, input), recorded through the real harness; none may reach the
journal's bytes, and scan must find nothing in what was written."""

from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.analysis.secrets import scan_journal
from replay_tui.harness import Harness, JsonlSink, ToolSpec
from replay_tui.harness.canaries import Canary, canary_request, detector_canaries, random_token
from replay_tui.harness.redaction import RedactionRules, SecretInMatchedFieldError
from replay_tui.journal import Event, open_journal


def _structured(canaries: list[Canary], rng: random.Random) -> dict[str, Any]:
    """Every class of secret in one JSON value: the formats in text, and the structural places."""
    request, planted = canary_request(RedactionRules(), rng)
    canaries.extend(planted)
    return {"metadata": request["metadata"], "headers": request["headers"], "messages": request["messages"]}


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


class _Model:
    """Streams every canary split across two chunks, then asks for the two tools."""

    extension, version = "model", "corpus"

    def __init__(self, texts: list[str], arguments: dict[str, Any]) -> None:
        self.texts = texts
        self.arguments = arguments
        self.calls = 0

    def complete(self, request: dict[str, Any]) -> Any:
        self.calls += 1
        if self.calls > 1:
            return {"content": "done", "tool_calls": []}
        chunks: list[dict[str, Any]] = []
        for text in self.texts:
            chunks.extend({"content": half} for half in _halves(f" {text} "))
        chunks.append(
            {"tool_calls": [{"index": 0, "id": "call-1", "name": "lookup", "arguments": json.dumps(self.arguments)}]}
        )
        chunks.append({"finish_reason": "tool_calls"})
        return chunks


def _reduce(state: dict[str, Any], event: Event) -> dict[str, Any]:
    if event.kind == "tool.result" and event.payload.get("result") is not None:
        return {**state, "last_result": event.payload["result"]}
    return state


def _record(path: Path, rng: random.Random) -> list[Canary]:
    canaries: list[Canary] = []
    text_canaries = detector_canaries(rng)
    canaries.extend(text_canaries)
    texts = [canary.text for canary in text_canaries if not canary.whole]
    documents = [canary.text for canary in text_canaries if canary.whole]  # JSON documents kept as strings
    keyed = {canary.text: canary.name for canary in text_canaries if "\n" not in canary.text}  # secrets as keys
    exception_password = random_token(rng)
    canaries.append(Canary("error:exception-password", exception_password))

    def lookup(**arguments: Any) -> Any:
        return {"echo": arguments, "found": _structured(canaries, rng), "by_secret": keyed, "documents": documents}

    def fail(**arguments: Any) -> Any:
        raise PermissionError(f"login failed: password={exception_password} for admin; " + "; ".join(texts))

    arguments = {"query": " ".join(texts), "config": _structured(canaries, rng), "keys": keyed, "documents": documents}
    model = _Model(texts, arguments)
    harness = Harness(
        sink=JsonlSink(path, run_id="corpus"),
        run_id="corpus",
        model=model,  # type: ignore[arg-type]
        tools={"lookup": ToolSpec("lookup", lookup), "fail": ToolSpec("fail", fail)},
        snapshot_every=3,
    )
    harness.use_reducer(_reduce, "corpus-1", {"initial": _structured(canaries, rng)})
    harness.start_run(agent="tests.harness.test_canary_corpus:agent")
    harness.receive_input(" ".join(texts), context={"documents": documents, **_structured(canaries, rng)})
    with harness.step():
        request = {"model": "m", "messages": [{"role": "user", "content": " ".join(texts)}]}
        request.update(
            {"headers": _structured(canaries, rng)["headers"], "metadata": _structured(canaries, rng)["metadata"]}
        )
        response = harness.model(request, on_chunk=lambda delta: None)
        for call in response["tool_calls"]:
            harness.tool(call["name"], call["arguments"], call_id=call["id"])
        with pytest.raises(PermissionError):
            harness.tool("fail", {"why": "error place"})
        harness.record_state({"framework": _structured(canaries, rng)})
        harness.write_snapshot()
    harness.end_run("ok", {"summary": " ".join(texts), "extra": _structured(canaries, rng)})
    return canaries


def _forms(secret: str) -> list[bytes]:
    """The secret as it would sit in the file: raw, JSON-escaped, and each line of a multi-line one."""
    forms = [secret.encode(), orjson.dumps(secret)[1:-1]]
    forms.extend(line.encode() for line in secret.splitlines() if len(line) >= 8)
    return forms


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_canary_reaches_the_journal_bytes(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "corpus.jsonl"
    canaries = _record(path, random.Random(seed))
    raw = path.read_bytes()
    assert len({canary.name for canary in canaries}) > 40
    survivors = sorted({canary.name for canary in canaries for form in _forms(canary.secret) if form in raw})
    assert survivors == []
    kinds = {json.loads(line)["kind"] for line in raw.splitlines()}
    assert {
        "input.received",
        "model.request",
        "model.response",
        "tool.call",
        "tool.result",
        "state.transition",
        "state.snapshot",
        "run.ended",
    } <= kinds
    journal = open_journal(path)
    report = scan_journal(journal)
    journal.close()
    assert report.clean, [finding.to_text() for finding in report.findings[:10]]


def test_stream_chunks_still_join_to_the_recorded_text(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    _record(path, random.Random(7))
    response = next(json.loads(line) for line in path.read_text().splitlines() if '"model.response"' in line)
    content, boundaries = response["payload"]["response"]["content"], response["payload"]["stream"]["boundaries"]
    assert boundaries == sorted(boundaries) and boundaries[-1] == len(content)
    assert "[REDACTED:" in content
    pieces = [content[start:end] for start, end in zip([0, *boundaries], boundaries)]
    assert "".join(pieces) == content
    markers = [match.span() for match in re.finditer(r"\[REDACTED:[^\]]*\]", content)]
    assert not [b for b in boundaries for start, end in markers if start < b < end]  # no marker cut across chunks


def test_a_secret_in_a_step_id_or_tool_name_stops_the_recording(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4" * 5
    path = tmp_path / "stop.jsonl"
    harness = Harness(
        sink=JsonlSink(path, run_id="stop"),
        run_id="stop",
        tools={f"deploy_{token}": ToolSpec(f"deploy_{token}", lambda: 1)},
    )
    harness.start_run(agent="tests:none")
    with pytest.raises(SecretInMatchedFieldError, match="step_id holds a secret") as error:
        with harness.step(f"step-{token}"):
            harness.receive_input("hello")  # input has no step id: fine
            harness.tool(f"deploy_{token}", {})
    assert "github-token" in str(error.value) and token not in str(error.value)
    with pytest.raises(SecretInMatchedFieldError, match=r"payload\.tool holds a secret"):
        harness.tool(f"deploy_{token}", {})
    assert token.encode() not in path.read_bytes()


def test_base64_of_a_secret_is_caught_in_any_padding(tmp_path: Path) -> None:
    from replay_tui.harness import Redactor

    redactor = Redactor()
    for extra in ("", "x", "xy"):
        secret = base64.b64encode(f"{extra}password=hunter2hunter2".encode()).decode()
        out = redactor.redact(
            "tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": f"blob {secret} end"}
        )
        assert secret not in out["result"], extra


def test_a_secret_split_across_raw_server_sent_events_is_redacted_in_the_body_too() -> None:
    """The httpx transport keeps the raw SSE body: its deltas are re-split like the stream's chunks."""
    from replay_tui.harness import Redactor
    from replay_tui.harness.httpx_transport import recorded_response

    secret = random_token(random.Random(11), 24)

    def event(text: str) -> str:
        return "data: " + json.dumps({"choices": [{"delta": {"content": text}, "index": 0}]}) + "\n\n"

    body = event("the DB_PASS") + event("WORD=" + secret[:9]) + event(secret[9:] + " ok") + "data: [DONE]\n\n"
    recorded = recorded_response(200, [("content-type", "text/event-stream")], body.encode())
    out = Redactor().redact("model.response", {"request_hash": "h", **recorded})
    raw = orjson.dumps(out)
    assert secret[:9].encode() not in raw and secret[9:].encode() not in raw
    deltas = [
        json.loads(line[5:])["choices"][0]["delta"]["content"]
        for line in out["response"]["http"]["body_text"].splitlines()
        if line.startswith("data: {")
    ]
    assert "".join(deltas) == out["response"]["content"] == "the DB_PASSWORD=[REDACTED:assignment] ok"


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_a_secret_split_across_streamed_tool_call_arguments_is_redacted_in_the_raw_body(shape: str) -> None:
    from replay_tui.harness import Redactor
    from replay_tui.harness.httpx_transport import recorded_response

    secret = random_token(random.Random(12), 28)
    arguments = json.dumps({"user": "ada", "password": secret})
    pieces = [arguments[:20], arguments[20:34], arguments[34:]]  # the secret spans two fragments
    if shape == "openai":

        def event(data: dict) -> str:
            return "data: " + json.dumps(data) + "\n\n"

        first = {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "login", "arguments": ""},
                            }
                        ]
                    },
                }
            ]
        }
        body = (
            event(first)
            + "".join(
                event(
                    {
                        "choices": [
                            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}
                        ]
                    }
                )
                for piece in pieces
            )
            + event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            + "data: [DONE]\n\n"
        )
    else:

        def event(data: dict) -> str:
            return f"event: {data['type']}\ndata: " + json.dumps(data) + "\n\n"

        body = (
            event({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
            + event(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "tu_1", "name": "login"},
                }
            )
            + "".join(
                event(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
                for piece in pieces
            )
            + event({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}})
        )
    recorded = recorded_response(200, [("content-type", "text/event-stream")], body.encode())
    assert recorded["response"]["tool_calls"][0]["arguments"]["password"] == secret
    out = Redactor().redact("model.response", {"request_hash": "h", **recorded})
    raw = orjson.dumps(out)
    for piece in (pieces[1], pieces[2], secret):
        assert piece.encode() not in raw and json.dumps(piece)[1:-1].encode() not in raw
    assert out["response"]["tool_calls"][0]["arguments"] == {"user": "ada", "password": "[REDACTED]"}
