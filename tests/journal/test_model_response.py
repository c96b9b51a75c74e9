"""One summary of a model's answer: the httpx transport, the vcrpy importer and the
openai-compatible plugin record the same ``{content, tool_calls, finish_reason, usage}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.harness.httpx_transport import recorded_response
from replay_tui.harness.openai_compat import response_from_chat_completion
from replay_tui.importers.vcr import _summary as vcr_summary
from replay_tui.journal.model_response import response_summary, tool_arguments

CHAT_COMPLETION = {
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"account": "acme"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5},
}
RESPONSES_API = {
    "object": "response",
    "status": "completed",
    "output": [
        {"type": "reasoning", "summary": []},
        {"type": "message", "content": [{"type": "output_text", "text": "Checking "}, {"type": "refusal"}]},
        {"type": "message", "content": [{"type": "output_text", "text": "the account."}]},
        {"type": "function_call", "call_id": "fc_1", "name": "lookup", "arguments": '{"account": "acme"}'},
    ],
    "usage": {"input_tokens": 20, "output_tokens": 7},
}
ANTHROPIC_MESSAGE = {
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Looking it up."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"account": "acme"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 30, "output_tokens": 9},
}
EXPECTED = {
    "chat": {
        "content": None,
        "tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {"account": "acme"}}],
        "finish_reason": "tool_calls",
        "usage": {"prompt_tokens": 12, "completion_tokens": 5},
    },
    "responses": {
        "content": "Checking the account.",
        "tool_calls": [{"id": "fc_1", "name": "lookup", "arguments": {"account": "acme"}}],
        "finish_reason": "completed",
        "usage": {"input_tokens": 20, "output_tokens": 7},
    },
    "anthropic": {
        "content": "Looking it up.",
        "tool_calls": [{"id": "toolu_1", "name": "lookup", "arguments": {"account": "acme"}}],
        "finish_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 9},
    },
}
BODIES = {"chat": CHAT_COMPLETION, "responses": RESPONSES_API, "anthropic": ANTHROPIC_MESSAGE}


def summaries(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each of the three callers records for one answer body."""
    raw = orjson.dumps(body)
    transport = recorded_response(200, [("content-type", "application/json")], raw)["response"]
    transport.pop("http")
    imported, stream = vcr_summary("/v1/x", 200, "application/json", body, raw, Path("cassette.yaml"), "interaction 1")
    assert stream is None
    return {"transport": transport, "vcr": imported, "plugin": response_from_chat_completion(body)}


@pytest.mark.parametrize("shape", sorted(BODIES))
def test_the_three_callers_agree(shape: str) -> None:
    seen = summaries(BODIES[shape])
    assert seen == {"transport": EXPECTED[shape], "vcr": EXPECTED[shape], "plugin": EXPECTED[shape]}


def test_a_hostile_body_reads_as_absent_fields_not_an_exception() -> None:
    hostile = {
        "choices": ["not an object"],
        "usage": "lots",
    }
    assert response_summary(hostile) == {"content": None, "tool_calls": [], "finish_reason": None, "usage": {}}
    odd_blocks = {"type": "message", "content": [7, {"type": "text", "text": ["x"]}, {"type": "tool_use"}]}
    assert response_summary(odd_blocks)["tool_calls"] == [{"id": None, "name": None, "arguments": {}}]
    odd_output = {"object": "response", "output": {"type": "message"}, "usage": [1, 2]}
    assert response_summary(odd_output)["content"] is None
    assert response_summary(["a list"])["tool_calls"] == []
    # The recorder keeps arguments that are not JSON; the live plugin refuses them (the agent would act on them).
    bad = {"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}}]}
    assert response_summary(bad)["tool_calls"][0]["arguments"] == {"value": "{oops"}
    assert recorded_response(200, [], orjson.dumps(bad))["response"]["tool_calls"][0]["arguments"] == {"value": "{oops"}
    with pytest.raises(ValueError, match="not JSON"):
        response_from_chat_completion(bad)


def test_tool_arguments() -> None:
    assert tool_arguments('{"a": 1}') == {"a": 1}
    assert tool_arguments("  ") == {} and tool_arguments(None) == {}
    assert tool_arguments("[1, 2]") == {"value": [1, 2]}
    assert tool_arguments({"b": 2}) == {"b": 2}
