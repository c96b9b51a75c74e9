"""Recording levels: info keeps what a strict replay needs (request hashes and summaries, streamed text in few
chunks), trace keeps everything; both replay, diverge at the right seq, and say their level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.harness import build_harness, record_run, run_agent
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import verify_journal
from replay_tui.journal.levels import summarize_request

from .helpers import ROOT, events_of

CONFIG = {
    "harness": {"clock": {"frozen_at": "2026-11-03T09:14:05Z"}},
    "plugins": [
        {
            "id": "model",
            "type": "scripted-model",
            "options": {"policy": "tests.harness.level_agent:policy", "stream": True},
        },
        {"id": "tools", "type": "python-tools", "options": {"provider": "tests.harness.level_agent:tools"}},
    ],
}
AGENT = "tests.harness.level_agent:agent"


def record(tmp_path: Path, level: str, name: str | None = None) -> Path:
    journal = tmp_path / f"{name or level}.jsonl"
    config = config_from_mapping({**CONFIG, "harness": {**CONFIG["harness"], "level": level}}, base_dir=ROOT)
    outcome = record_run(config, AGENT, ["weather in Lisbon?"], journal=journal)
    assert outcome.status == "ok", outcome
    assert verify_journal(journal).ok
    return journal


def replay(journal: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", str(journal), "--json", "--agent-path", str(ROOT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    return json.loads(done.stdout)


def test_info_keeps_hashes_and_summaries_trace_keeps_requests_both_replay(tmp_path: Path) -> None:
    info, trace = record(tmp_path, "info"), record(tmp_path, "trace")
    info_events, trace_events = events_of(info), events_of(trace)
    assert (
        info_events[0].payload["harness"]["level"] == "info" and trace_events[0].payload["harness"]["level"] == "trace"
    )
    info_requests = [e.payload for e in info_events if e.kind == "model.request"]
    trace_requests = [e.payload for e in trace_events if e.kind == "model.request"]
    # the same requests, the same hashes; info keeps the summary of each, trace the request
    assert [p["request_hash"] for p in info_requests] == [p["request_hash"] for p in trace_requests]
    assert all("request" not in p and "summary" in p for p in info_requests)
    assert [p["summary"] for p in info_requests] == [summarize_request(p["request"]) for p in trace_requests]
    assert info_requests[0]["summary"]["user_messages"] == ["weather in Lisbon?"]
    # the streamed answer: trace keeps its chunk boundaries, info its text in one chunk
    info_stream = [e.payload for e in info_events if e.kind == "model.response"][-1]
    trace_stream = [e.payload for e in trace_events if e.kind == "model.response"][-1]
    assert len(trace_stream["stream"]["boundaries"]) > 1 and "boundaries" not in info_stream["stream"]
    assert info_stream["response"]["content"] == trace_stream["response"]["content"] == "It is sunny in Lisbon."
    # tool calls, results and the output are the same at both levels
    same = lambda events: [(e.kind, e.logical_payload()) for e in events if e.kind.startswith("tool.")]  # noqa: E731
    assert same(info_events) == same(trace_events)
    assert info.stat().st_size < trace.stat().st_size
    for journal in (info, trace):
        outcome = replay(journal)
        assert outcome["status"] == "match", outcome
    assert info_events[-1].payload["output"] == "It is sunny in Lisbon."


def test_a_changed_request_at_info_diverges_there_and_the_report_shows_the_summary(tmp_path: Path) -> None:
    journal = record(tmp_path, "info")
    outcome = replay(journal, "--agent", "tests.harness.level_agent:agent_reworded")
    assert outcome["status"] == "diverged", outcome
    report = outcome["divergence"]
    first_request = next(e for e in events_of(journal) if e.kind == "model.request")
    assert report["seq"] == first_request.seq and "request_hash" in report["reason"]
    assert any("forecast in Lisbon?" in line for line in report["diff_lines"]), report["diff_lines"]


def test_stats_and_describe_read_an_info_journal(tmp_path: Path) -> None:
    journal = record(tmp_path, "info")
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "stats", str(journal), "--json"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


@pytest.mark.parametrize("flag_first", [False, True])
def test_a_trace_flag_turns_trace_on_from_the_next_model_call(tmp_path: Path, flag_first: bool) -> None:
    flag = tmp_path / "trace-this"
    config = config_from_mapping(
        {**CONFIG, "harness": {**CONFIG["harness"], "level": "info", "trace_flag": str(flag)}}, base_dir=ROOT
    )
    journal = tmp_path / "switched.jsonl"
    if flag_first:
        flag.touch()
    with build_harness(config, journal=journal, agent=AGENT) as recording:
        h = recording.harness

        def agent_switching(h, question):  # the flag appears between the two model calls
            first = h.model({"model": "scripted", "messages": [{"role": "user", "content": question}]})
            flag.touch()
            call = first["tool_calls"][0]
            result = h.tool(call["name"], call["arguments"], call_id=call["id"])
            return h.model({"model": "scripted", "messages": [{"role": "tool", "content": result}]})["content"]

        h.start_run(AGENT)
        h.receive_input("weather?")
        h.end_run("ok", agent_switching(h, "weather?"))
    forms = ["request" in e.payload for e in events_of(journal) if e.kind == "model.request"]
    assert forms == ([True, True] if flag_first else [False, True])
    assert run_agent  # (imported for the harness API the test drives by hand)


@pytest.mark.parametrize("level", ["info", "trace"])
def test_a_whole_answer_reaches_the_caller_as_it_came_at_either_level(tmp_path: Path, level: str) -> None:
    """At info as at trace, a non-streamed answer the journal keeps as it came is handed to the SDK as the live
    response itself (info copied every payload, so every session's answers were rebuilt from the record)."""
    from replay_tui.harness.httpx_transport import default_httpx_module, make_transport

    module = default_httpx_module()
    live: list[object] = []
    body = b'{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'

    class Answering(module.BaseTransport):  # type: ignore[misc, name-defined]
        def handle_request(self, request):  # type: ignore[no-untyped-def]
            response = module.Response(200, headers={"content-type": "application/json"}, content=body, request=request)
            live.append(response)
            return response

    config = config_from_mapping({"harness": {"level": level}}, base_dir=ROOT)
    journal = tmp_path / f"{level}.jsonl"
    with build_harness(config, journal=journal, run_id="r", agent="tests:levels") as recording:
        recording.started("tests:levels")
        h = recording.harness
        h.start_run()
        transport = make_transport(h, httpx_module=module, inner=Answering())
        request = module.Request(
            "POST", "http://127.0.0.1:9/v1/chat/completions", content=b'{"model":"m","messages":[]}'
        )
        handed = transport.handle_request(request)
        assert handed is live[0] and handed.json()["choices"][0]["message"]["content"] == "hi"
        h.end_run("ok")
    response = next(e for e in events_of(journal) if e.kind == "model.response")
    assert response.payload["response"]["http"]["body_json"]["id"] == "chatcmpl-1"
