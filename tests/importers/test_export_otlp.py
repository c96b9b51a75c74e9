"""`export --format otlp`: OTLP/JSON an OTLP receiver takes, and a lossless import -> export -> import."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from replay_tui.cli import main
from replay_tui.importers import import_trace

from .conftest import SAMPLES
from .helpers import events_of

CONTENT_KINDS = ("model.request", "model.response", "tool.call", "tool.result")


def _content(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        (event["kind"], {key: value for key, value in event["payload"].items() if key != "diagnostics"})
        for event in events_of(path)
        if event["kind"] in CONTENT_KINDS
    ]


def _first_journal(path: Path) -> Path:
    return path if path.is_file() else sorted(path.iterdir())[0]


@pytest.mark.parametrize(
    "sample", ["weather.otlp.jsonl", "weather.agents.jsonl", "weather.eval", "weather.cassette.yaml"]
)
def test_round_trip_keeps_every_model_and_tool_event(
    tmp_path: Path, sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    [first] = import_trace(SAMPLES / sample, tmp_path / "first.jsonl")
    exported = tmp_path / "export.otlp.jsonl"
    assert main(["export", str(first.path), "--format", "otlp", "-o", str(exported)]) == 0
    assert "OTLP/JSON request" in capsys.readouterr().out
    [again] = import_trace(exported, tmp_path / "again.jsonl")
    assert _content(again.path) == _content(first.path) != []
    assert again.fidelity == first.fidelity or not first.fidelity["replayable"]


def test_export_is_valid_otlp_with_genai_conventions(tmp_path: Path) -> None:
    [journal] = import_trace(SAMPLES / "weather.otlp.jsonl", tmp_path / "run.jsonl")
    exported = tmp_path / "export.otlp.jsonl"
    assert main(["export", str(journal.path), "--format", "otlp", "-o", str(exported)]) == 0
    [line] = exported.read_text().splitlines()
    request = json.loads(line)
    # OTLP/JSON writes ids as hex; protobuf's JSON mapping wants base64: convert, then parse with the official schema
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        assert len(span[key]) == (32 if key == "traceId" else 16)
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    parsed = ParseDict(request, ExportTraceServiceRequest())
    spans = parsed.resource_spans[0].scope_spans[0].spans
    names = [span.name for span in spans]
    assert names == [
        "chat gpt-4.1-mini",
        "execute_tool weather",
        "chat gpt-4.1-mini",
        "invoke_agent otlp-" + journal.path.read_text().split('"run_id":"otlp-')[1][:12],
    ]
    root = spans[-1]
    assert all(span.parent_span_id == root.span_id for span in spans[:-1])
    chat = {attribute.key: attribute.value for attribute in spans[0].attributes}
    assert chat["gen_ai.operation.name"].string_value == "chat"
    assert json.loads(chat["gen_ai.output.messages"].string_value)[0]["parts"][-1] == {
        "type": "tool_call",
        "id": "call_w1",
        "name": "weather",
        "arguments": {"city": "Oslo"},
    }
    assert chat["gen_ai.usage.input_tokens"].int_value == 11
    tool = {attribute.key: attribute.value for attribute in spans[1].attributes}
    assert tool["gen_ai.tool.call.id"].string_value == "call_w1"
    assert json.loads(tool["gen_ai.tool.call.arguments"].string_value) == {"city": "Oslo"}
