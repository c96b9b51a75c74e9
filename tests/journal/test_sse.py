"""One reading of OpenAI and Anthropic server-sent-event streams (journal/sse.py): the httpx transport and the
vcrpy importer turn the same body into the same response and chunk boundaries, byte for byte as before on the
committed cassette, and a hostile stream is an error naming the interaction, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_tui.harness.httpx_transport import recorded_response
from replay_tui.importers.errors import TraceImportError
from replay_tui.importers.vcr import _stream, load_cassette
from replay_tui.journal.sse import StreamReportedError, assemble_stream, sse_events, stream_chunks

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "fixtures" / "imports" / "weather.cassette.yaml"
EVENT_STREAM = [("content-type", "text/event-stream")]

ANTHROPIC_EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("message_start", {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 11}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
    ("ping", {"type": "ping"}),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "check."}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather"},
        },
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"city": '}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
    ("message_stop", {"type": "message_stop"}),
]
ANTHROPIC_BODY = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in ANTHROPIC_EVENTS)


def cassette_stream_body() -> str:
    [body] = [
        interaction["response"]["body"]["string"]
        for interaction in load_cassette(CASSETTE)
        if "text/event-stream" in str(interaction["response"]["headers"].get("content-type"))
    ]
    return str(body)


def transport_reading(body: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    recorded = recorded_response(200, EVENT_STREAM, body.encode())
    response = {name: value for name, value in recorded["response"].items() if name != "http"}
    return response, recorded.get("stream")


def importer_reading(body: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return _stream(body, CASSETTE, "interactions[2]")


def test_the_committed_cassette_reads_as_before_in_both_callers() -> None:
    body = cassette_stream_body()
    usage = {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    expected = (
        {
            "content": "Let me check.",
            "tool_calls": [{"id": "call_w1", "name": "weather", "arguments": {"city": "hello"}}],
            "finish_reason": "tool_calls",
            "usage": usage,
        },
        {"chunks": 8, "boundaries": [0, 3, 6, 13, 13, 13, 13, 13]},
    )
    assert importer_reading(body) == expected  # what the importer wrote before journal/sse.py
    assert transport_reading(body) == expected  # what the transport recorded before


def test_an_anthropic_stream_reads_the_same_in_both_callers() -> None:
    """The importer counted every event as a chunk (12 here); the transport only those with text, a call,
    a stop or usage (7): an imported stream and a recorded one now split alike."""
    expected = (
        {
            "content": "Let me check.",
            "tool_calls": [{"id": "toolu_1", "name": "weather", "arguments": {"city": "Oslo"}}],
            "finish_reason": "tool_use",
            "usage": {"input_tokens": 11, "output_tokens": 7},
        },
        {"chunks": 7, "boundaries": [0, 7, 13, 13, 13, 13, 13]},
    )
    assert transport_reading(ANTHROPIC_BODY) == expected
    assert importer_reading(ANTHROPIC_BODY) == expected


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("data: 5\n\n", "JSON objects"),
        ('data: {"choices": [{"delta": {"content": 7}}]}\n\n', "JSON objects"),
        ('data: {"choices": [{"delta": {"tool_calls": [{"index": "x"}]}}]}\n\n', "JSON objects"),
        ("data: {not json\n\n", "JSON objects"),
        ('data: {"error": {"message": "overloaded"}}\n\n', "overloaded"),
        ('event: error\ndata: {"type": "error", "error": {"type": "overloaded_error"}}\n\n', "overloaded_error"),
    ],
)
def test_a_hostile_stream_is_an_import_error_and_a_kept_body_never_a_crash(body: str, why: str) -> None:
    with pytest.raises(TraceImportError, match=why) as raised:
        importer_reading(body)
    assert "interactions[2]" in str(raised.value)
    recorded = recorded_response(200, EVENT_STREAM, body.encode())
    assert "stream" not in recorded and recorded["response"]["http"]["body_text"] == body  # kept whole


def test_an_error_event_is_a_stream_reported_error() -> None:
    with pytest.raises(StreamReportedError, match="overloaded"):
        list(stream_chunks(sse_events(['data: {"error": "overloaded"}', ""])))


def test_chunks_join_to_the_text_and_keep_their_boundaries() -> None:
    chunks = [{"content": "a"}, {}, {"content": "bc", "finish_reason": "stop"}, {"usage": {"total_tokens": 3}}]
    response, stream = assemble_stream(chunks)
    assert response == {"content": "abc", "tool_calls": [], "finish_reason": "stop", "usage": {"total_tokens": 3}}
    assert stream == {"chunks": 4, "boundaries": [1, 1, 3, 3]}
    with pytest.raises(ValueError, match="not JSON"):
        assemble_stream([{"tool_calls": [{"index": 0, "name": "t", "arguments": "{oops"}]}])
    lenient = assemble_stream(
        [{"tool_calls": [{"index": 0, "name": "t", "arguments": "{oops"}]}],
        parse_arguments=lambda text: {"value": text},
    )
    assert lenient[0]["tool_calls"] == [{"id": "stream-call-0", "name": "t", "arguments": {"value": "{oops"}}]
