"""OpenAI Agents SDK runs (Agent, Runner, function_tool) exported by a TracingProcessor, imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.importers import TraceImportError, import_trace

from .conftest import SAMPLES, Produce
from .helpers import events_of, kinds, of_kind


def test_live_agents_sdk_run(produce: Produce, tmp_path: Path) -> None:
    trace = produce("openai-agents", "run.agents.jsonl")
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == [
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
    imported = events[0]["payload"]["imported"]
    assert imported["format"] == "openai-agents" and imported["detail"]["workflow_name"] == "Agent workflow"
    assert result.fidelity["label"] == "replayable (model and tools)"
    assert events[1]["payload"]["content"] == "What is the weather in Oslo?"
    assert events[1]["payload"]["context"]["agent"] == "weather-agent"
    call = of_kind(events, "tool.call")[0]
    # the function span has no call id; the model answer that asked for the call gives it
    assert call["payload"]["call_id"] == "call_w1" and call["payload"]["arguments"] == {"city": "Oslo"}
    assert call["parent_event_id"] == of_kind(events, "model.response")[0]["event_id"]
    assert of_kind(events, "tool.result")[0]["payload"]["result"] == "snow, -3 C"
    second = of_kind(events, "model.request")[1]["payload"]["request"]["messages"]
    assert second[-1] == {"role": "tool", "content": "snow, -3 C", "tool_call_id": "call_w1"}
    assert events[-1]["payload"]["output"] == "The weather: snow, -3 C."
    assert all(event["payload"]["diagnostics"]["source"]["span_id"].startswith("span_") for event in events[1:-1])


def test_responses_api_run_is_view_only(produce: Produce, tmp_path: Path) -> None:
    trace = produce("openai-agents", "responses.agents.jsonl", AGENTS_API="responses")
    [result] = import_trace(trace, tmp_path / "run.jsonl")
    assert result.fidelity["replayable"] is False
    assert result.fidelity["reason"].startswith("no message content captured")
    events = events_of(result.path)
    assert [event["payload"]["response"]["response_id"] for event in of_kind(events, "model.response")] == [
        "resp_1",
        "resp_2",
    ]
    assert [event["payload"]["text"] for event in of_kind(events, "note")] == [
        "handoff from weather-agent to summary-agent"
    ]


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    lines = (SAMPLES / "weather.agents.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.agents.jsonl"
    bad.write_text("\n".join(lines[:2] + [lines[2][:40]]) + "\n")
    with pytest.raises(
        TraceImportError, match=r"bad\.agents\.jsonl: line 3: one JSON object of an Agents SDK trace export"
    ):
        import_trace(bad, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
