"""The Responses API, the Agents SDK's default, recorded as it is: a streamed answer's ``model.response`` says
what the same answer says unstreamed (text, refusal, function calls, usage, status), from the transport's
summary (``journal/model_response.py``) and the stream relay's (``journal/sse.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.agents.loopback_openai import LoopbackOpenAI, Reply, responses_body, responses_stream, turn_of
from replay_tui.harness.httpx_transport import recorded_response
from replay_tui.harness.record import record_run
from replay_tui.harness.redaction import Redactor
from replay_tui.harness.sse_relay import SseRelay
from replay_tui.harness.stream_redaction import policy_for

from . import sdk_weather
from .conftest import CONFIG, events
from .test_agents_sdk_patterns import weather_policy

REQUEST = {"model": "gpt-4.1", "input": [{"role": "user", "content": "Weather?"}], "tools": []}
REPLIES = {
    "text": Reply(text="It is sunny in Tokyo."),
    "calls": Reply(calls=(("get_weather", {"city": "Tokyo"}), ("get_forecast", {"city": "Tokyo", "days": 3}))),
    "text and calls": Reply(text="Looking it up.", calls=(("get_weather", {"city": "Tokyo"}),)),
    "refusal": Reply(text="Well.", refusal="I can't help with that."),
}


def _streamed_summary(reply: Reply) -> dict[str, Any]:
    relay = SseRelay(policy_for(Redactor()))
    for name, data in responses_stream(turn_of("/v1/responses", REQUEST), reply):
        relay.feed(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    relay.finish()
    summary, stream = relay.summary()
    assert stream["chunks"] > 1
    return summary


@pytest.mark.parametrize("shape", sorted(REPLIES))
def test_a_streamed_answer_says_what_the_same_answer_says_unstreamed(shape: str) -> None:
    reply = REPLIES[shape]
    body = json.dumps(responses_body(turn_of("/v1/responses", REQUEST), reply)).encode()
    whole = recorded_response(200, [("content-type", "application/json")], body)["response"]
    streamed = _streamed_summary(reply)
    assert (
        streamed["tool_calls"]
        == whole["tool_calls"]
        == [
            {"id": f"call_{number}", "name": name, "arguments": dict(arguments)}
            for number, (name, arguments) in enumerate(reply.calls, start=1)
        ]
    )
    assert streamed["usage"] == whole["usage"] and whole["usage"]["output_tokens"] == 9
    assert streamed["finish_reason"] == whole["finish_reason"] == "completed"
    said = (reply.text or "") + (reply.refusal or "")
    assert whole["content"] == (said or None) and streamed["content"] == said


def test_the_sdks_answers_are_recorded_alike_streamed_and_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recording-key-of-the-test")
    summaries = {}
    with LoopbackOpenAI(weather_policy) as server:
        for entry in ("recorded", "recorded_streamed"):
            journal = tmp_path / f"{entry}.jsonl"
            task = {"question": sdk_weather.QUESTION, "base_url": server.url}
            assert record_run(CONFIG, f"tests.frameworks.sdk_weather:{entry}", [task], journal=journal).status == "ok"
            summaries[entry] = [
                {key: event.payload["response"][key] for key in ("tool_calls", "finish_reason", "usage")}
                | {"content": event.payload["response"]["content"] or None}
                for event in events(journal)
                if event.kind == "model.response"
            ]
    assert summaries["recorded"] == summaries["recorded_streamed"]
    assert [len(turn["tool_calls"]) for turn in summaries["recorded"]] == [2, 2, 0]
    assert summaries["recorded"][-1]["content"].startswith("Tokyo now: city='Tokyo'")
