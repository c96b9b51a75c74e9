"""OTLP/JSON from opentelemetry-sdk + the official openai-v2 instrumentation, imported."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.importers import TraceImportError, import_trace

from .conftest import REPO, SAMPLES, Produce
from .helpers import events_of, kinds, of_kind

WEATHER_RUN = [
    "run.started",
    "input.received",
    "model.request",
    "model.response",
    "tool.call",
    "tool.result",
    "model.request",
    "model.response",
    "run.ended",
]


def test_live_otlp_with_content_on_spans(produce: Produce, tmp_path: Path) -> None:
    trace = produce("otlp", "run.otlp.jsonl")
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == WEATHER_RUN
    started = events[0]["payload"]["imported"]
    assert started["format"] == "otlp" and started["file_name"] == "run.otlp.jsonl"
    assert started["sha256"] == "sha256:" + hashlib.sha256(trace.read_bytes()).hexdigest()
    assert started["importer_version"] and started["fidelity"]["label"] == "replayable (model and tools)"
    assert events[1]["payload"]["content"] == "What is the weather in Oslo?"
    first, second = of_kind(events, "model.request")
    assert first["payload"]["request"]["model"] == "gpt-4.1-mini"
    assert first["payload"]["request"]["params"] == {"temperature": 0}
    assert [m["role"] for m in first["payload"]["request"]["messages"]] == ["system", "user"]
    assert second["payload"]["request"]["messages"][-1] == {
        "role": "tool",
        "content": "snow, -3 C",
        "tool_call_id": "call_w1",
    }
    answer = of_kind(events, "model.response")[0]["payload"]["response"]
    assert answer["tool_calls"] == [{"id": "call_w1", "name": "weather", "arguments": {"city": "Oslo"}}]
    assert answer["finish_reason"] == "tool_calls" and answer["usage"] == {"input_tokens": 11, "output_tokens": 7}
    call, result_event = of_kind(events, "tool.call")[0], of_kind(events, "tool.result")[0]
    assert call["payload"]["arguments"] == {"city": "Oslo"} and result_event["payload"]["result"] == "snow, -3 C"
    assert call["parent_event_id"] == of_kind(events, "model.response")[0]["event_id"]  # the answer that asked for it
    assert events[-1]["payload"] == {"status": "ok", "output": "The weather: snow, -3 C."}
    for event in events[1:-1]:  # every imported event points back at its span
        source = event["payload"]["diagnostics"]["source"]
        assert len(source["span_id"]) == 16 and len(source["trace_id"]) == 32 and source["line"] == 1


def test_content_only_in_log_events_is_joined_by_trace_and_span(produce: Produce, tmp_path: Path) -> None:
    trace = produce("otlp", "events.otlp.jsonl", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="EVENT_ONLY")
    assert b"gen_ai.input.messages" not in trace.read_bytes().split(b"\n")[0]  # spans carry no content
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == WEATHER_RUN
    assert of_kind(events, "model.response")[1]["payload"]["response"]["content"] == "The weather: snow, -3 C."
    # the tool spans carry their arguments and result only with content on spans
    assert result.fidelity == {
        "replayable": False,
        "label": "view-only",
        "reason": "a tool call without its arguments or result",
    }


def test_no_content_captured_is_view_only(produce: Produce, tmp_path: Path) -> None:
    trace = produce("otlp", "bare.otlp.jsonl", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="NO_CONTENT")
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    assert result.fidelity == {"replayable": False, "label": "view-only", "reason": "no message content captured"}
    assert events_of(result.path)[0]["payload"]["imported"]["fidelity"]["label"] == "view-only"


def test_imported_run_replays_on_the_agent_rewritten_on_the_harness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "weather.jsonl"
    assert main(["import", str(SAMPLES / "weather.otlp.jsonl"), "-o", str(out)]) == 0
    code = main(["replay", str(out), "--agent", "fixtures.imports.agents:weather_agent", "--agent-path", str(REPO)])
    assert code == 0, capsys.readouterr().out
    assert "Replay matched: 9 of 9 events" in capsys.readouterr().out


def test_truncated_otlp_names_file_and_line(tmp_path: Path) -> None:
    whole = (SAMPLES / "weather.otlp.jsonl").read_bytes().split(b"\n")
    cut = tmp_path / "cut.otlp.jsonl"
    cut.write_bytes(whole[0] + b"\n" + whole[1][: len(whole[1]) // 2])
    with pytest.raises(TraceImportError) as caught:
        import_trace(cut, tmp_path / "out.jsonl")
    assert str(caught.value).startswith(f"{cut}: line 2: a complete OTLP/JSON request")
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_reports_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.otlp.jsonl"
    cut.write_bytes((SAMPLES / "weather.otlp.jsonl").read_bytes()[:300])
    assert main(["import", str(cut), "-o", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut short" in err and str(cut) in err


def test_log_content_after_a_span_with_content_still_joins(tmp_path: Path) -> None:
    """A model span is mapped while the file is read; a log record further down that adds to its content
    (here system instructions) is joined all the same."""
    import orjson

    request = orjson.loads((REPO / "fixtures" / "imports" / "weather.otlp.jsonl").read_bytes().splitlines()[0])
    chat = next(
        span for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"] if span["name"].startswith("chat")
    )
    instructions = orjson.dumps([{"type": "text", "content": "Answer in French."}]).decode()
    log = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "traceId": chat["traceId"],
                                "spanId": chat["spanId"],
                                "eventName": "gen_ai.client.inference.operation.details",
                                "attributes": [
                                    {"key": "gen_ai.system_instructions", "value": {"stringValue": instructions}}
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    trace = tmp_path / "late-log.otlp.jsonl"
    trace.write_bytes(orjson.dumps(request) + b"\n" + orjson.dumps(log) + b"\n")
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == WEATHER_RUN
    first, second = of_kind(events, "model.request")
    assert first["payload"]["request"]["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert second["payload"]["request"]["messages"][0]["content"] != "Answer in French."  # the other call is untouched
    assert first["payload"]["request_hash"] == of_kind(events, "model.response")[0]["payload"]["request_hash"]
