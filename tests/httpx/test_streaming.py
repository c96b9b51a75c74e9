"""Streamed answers through the httpx transport (harness/STREAMING.md): each event reaches the SDK as it
arrives; the model.response holds what the SDK read, redacted as it passed; a stream cut mid-way is recorded
as what arrived plus the error; and a replay hands the agent exactly what it read, then the same error."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
from pathlib import Path
from typing import Any, Callable

import httpx
import orjson
import pytest

from replay_tui.harness import Harness, JsonlSink, UnusableJournal
from replay_tui.harness.httpx_transport import http_client
from replay_tui.harness.replay_support import RecordedObservations, sources_for
from replay_tui.journal import Event, open_journal
from replay_tui.replay.parent.runner import ReplayRunner
from replay_tui.replay.protocol import ReplaySpec

from . import stream_agents
from .conftest import REPO
from .stream_server import (
    Close,
    Stall,
    anthropic_events,
    chat_events,
    gated,
    played,
    responses_events,
)

SECRET = "sk-proj-" + "Zq8Lw4Rt6Yv1Bn7CXk3j9Qm2" * 2
OBSERVATION_KINDS = ("model.response", "tool.result", "clock.read", "random.draw")
Agent = Callable[[Harness, dict[str, Any]], Any]


def events_of(path: Path) -> list[Event]:
    with open_journal(path) as journal:
        return [journal.event(position) for position in range(len(journal))]


def run(agent: Agent, task: dict[str, Any], path: Path, events: list[Event] | None = None) -> Any:
    """Run ``agent`` recording into ``path``, or (``events``) served from those recorded events."""
    sources = sources_for(RecordedObservations(events), OBSERVATION_KINDS) if events is not None else None
    harness = Harness(sink=JsonlSink(path, run_id="stream"), run_id="stream", observation_sources=sources)
    harness.start_run("tests.httpx.stream_agents:agent")
    output = agent(harness, task)
    if inspect.iscoroutine(output):
        output = asyncio.run(output)
    harness.end_run("ok", output)
    return output


def response_payload(path: Path) -> dict[str, Any]:
    [payload] = [event.payload for event in events_of(path) if event.kind == "model.response"]
    return payload


# -- pass-through ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_event_reaches_the_sdk_before_the_server_sends_the_next(tmp_path: Path, serve: Any, mode: str) -> None:
    """The server holds the rest of the stream until the agent has read the first text: a transport that
    read the stream whole would make it wait in vain (timed_out)."""
    steps, gate = gated(chat_events(["Hello ", "from ", "the ", "stream."]))
    server = serve(steps)
    seen: list[str] = []
    path = tmp_path / "run.jsonl"
    on_disk: list[list[str]] = []

    def on_text(text: str) -> None:
        if not seen:  # what the journal holds when the first text reaches the agent
            on_disk.append([orjson.loads(line)["kind"] for line in path.read_bytes().splitlines()])
        seen.append(text)
        gate.set()

    def agent(h: Harness, task: dict[str, Any]) -> Any:
        if mode == "sync":
            client = stream_agents._openai(h, task)
            for chunk in client.chat.completions.create(model="m", messages=stream_agents.MESSAGES, stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    on_text(chunk.choices[0].delta.content)
            return seen

        async def read() -> Any:
            from openai import AsyncOpenAI

            from replay_tui.harness.httpx_transport import async_http_client

            client = AsyncOpenAI(api_key="k", base_url=task["base_url"] + "/v1", http_client=async_http_client(h))
            async for chunk in await client.chat.completions.create(
                model="m", messages=stream_agents.MESSAGES, stream=True
            ):
                if chunk.choices and chunk.choices[0].delta.content:
                    on_text(chunk.choices[0].delta.content)
            return seen

        return read()

    output = run(agent, {"base_url": server.url}, path)
    assert server.timed_out == 0 and "".join(output) == "Hello from the stream."
    assert on_disk == [["run.started", "model.request"]]  # the request before it went out; the answer not yet
    assert response_payload(path)["response"]["content"] == "Hello from the stream."


def test_plain_httpx_reads_each_event_as_it_arrives(tmp_path: Path, serve: Any) -> None:
    steps, gate = gated(chat_events(["One ", "two."]))
    server = serve(steps)

    def agent(h: Harness, task: dict[str, Any]) -> Any:
        lines = []
        with http_client(h, httpx_module=httpx) as client:
            with client.stream("POST", task["base_url"] + "/v1/chat/completions", json={"model": "m"}) as response:
                for line in response.iter_lines():
                    lines.append(line)
                    if '"One "' in line:
                        gate.set()
        lines.append(str(response.elapsed))  # zero in record and replay: a live duration is no recorded input
        return lines

    path = tmp_path / "run.jsonl"
    lines = run(agent, {"base_url": server.url}, path)
    assert server.timed_out == 0 and lines[-3:] == ["data: [DONE]", "", "0:00:00"]
    assert run(agent, {"base_url": server.url}, tmp_path / "replay.jsonl", events_of(path)) == lines


# -- what is recorded, and what a replay hands back ----------------------------------------------------

SPLIT_SECRET = ["The key is ", SECRET[:12], SECRET[12:30], SECRET[30:], " and nothing else."]
SPLIT_ARGUMENTS = ['{"vault": "main", "pass', 'word": "hunter2', '2", "note": "key ', SECRET[:20], SECRET[20:] + '"}']
API_CASES = [
    ("chat", stream_agents.chat, chat_events),
    ("messages", stream_agents.messages, anthropic_events),
    ("responses", stream_agents.responses, responses_events),
]


@pytest.mark.parametrize(("name", "agent", "events"), API_CASES, ids=[case[0] for case in API_CASES])
def test_what_the_sdk_read_is_what_the_journal_holds_and_a_replay_hands_it_back(
    tmp_path: Path, serve: Any, name: str, agent: Agent, events: Any
) -> None:
    server = serve(played(events(SPLIT_SECRET, SPLIT_ARGUMENTS)))
    path = tmp_path / "run.jsonl"
    read = run(agent, {"base_url": server.url}, path)
    text, arguments = "".join(read["deltas"]), read["arguments"]
    assert text == "The key is [REDACTED:openai-key] and nothing else."
    assert orjson.loads(arguments) == {"vault": "main", "password": "[REDACTED]", "note": "key [REDACTED:openai-key]"}
    if name == "responses":  # the closing events repeat the whole texts: redacted alike
        assert read["repeated"] == [text, text, arguments]
    if name == "messages":  # the SDK's own accumulated message
        assert read["final"][0]["text"] == text and read["final"][1]["input"] == orjson.loads(arguments)
    raw = path.read_bytes()
    assert SECRET.encode() not in raw and b"hunter22" not in raw and b"session=abcdef" not in raw
    payload = response_payload(path)
    assert payload["response"]["content"] == text and "diagnostics" not in payload
    assert payload["response"]["tool_calls"][0]["arguments"] == orjson.loads(arguments)
    # served from the journal, the agent reads the same, byte for byte through the SDK
    assert run(agent, {"base_url": server.url}, tmp_path / "replay.jsonl", events_of(path)) == read
    assert len(server.received) == 1


def test_a_streamed_agent_replays_to_a_match_in_the_sandbox(tmp_path: Path, serve: Any) -> None:
    server = serve(played(chat_events(SPLIT_SECRET, SPLIT_ARGUMENTS)))
    path = tmp_path / "run.jsonl"
    from replay_tui.harness import record_run
    from replay_tui.harness.config import config_from_mapping

    outcome = record_run(
        config_from_mapping({"plugins": []}, base_dir=REPO),
        "tests.httpx.stream_agents:chat",
        [{"base_url": server.url}],
        journal=path,
    )
    assert outcome.status == "ok", outcome.error
    result = ReplayRunner(ReplaySpec(journal=str(path), sys_path=[str(REPO)]), timeout_s=120, cwd=str(REPO)).run()
    assert result.status == "match", result.to_text()


# -- cuts ------------------------------------------------------------------------------------------------


def cut_case(kind: str) -> tuple[list[Any], dict[str, Any], str, str]:
    """(script, task extras, the error the agent sees, the error recorded) of one way a stream is cut."""
    events = chat_events(["Half ", "an ", "answer ", "then ", "nothing."])
    if kind == "server-closes":
        return [*played(events[:4]), Close()], {}, "APIConnectionError", "httpx2.RemoteProtocolError"
    if kind == "read-timeout":
        return (
            [*played(events[:4]), Stall(threading.Event(), 3)],
            {"timeout": 0.3},
            "APITimeoutError",
            "httpx2.ReadTimeout",
        )
    if kind == "caller-closes":
        stream_abandoned = "replay_tui.harness.sse_relay.StreamAbandoned"
        return played(events), {"stop_after": 2}, "end", stream_abandoned
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["server-closes", "read-timeout", "caller-closes"])
def test_a_cut_stream_is_recorded_as_what_arrived_and_replayed_as_the_same_cut(
    tmp_path: Path, serve: Any, kind: str
) -> None:
    script, extras, seen_error, recorded_error = cut_case(kind)
    server = serve(script)
    path = tmp_path / "run.jsonl"
    task = {"base_url": server.url, **extras}
    read = run(stream_agents.chat, task, path)
    assert read["ended"] == seen_error
    payload = response_payload(path)
    assert payload["error"]["type"] == recorded_error
    assert payload["response"]["content"] == "".join(read["deltas"])
    assert "".join(read["deltas"]).startswith("Half an")
    assert run(stream_agents.chat, task, tmp_path / "replay.jsonl", events_of(path)) == read


def test_a_cancelled_reader_is_recorded_and_replayed_as_the_same_cancellation(tmp_path: Path, serve: Any) -> None:
    gate = threading.Event()
    events = chat_events(["First ", "second ", "third."])
    server = serve([*played(events[:3]), Stall(gate, 5)])
    path = tmp_path / "run.jsonl"
    task = {"base_url": server.url, "cancel_after": 1}
    read = run(stream_agents.achat, task, path)
    gate.set()
    assert read["ended"] == "CancelledError" and "".join(read["deltas"]).startswith("First")
    payload = response_payload(path)
    assert payload["error"]["type"] == "asyncio.exceptions.CancelledError"
    assert run(stream_agents.achat, task, tmp_path / "replay.jsonl", events_of(path)) == read


def test_reading_past_the_recorded_end_of_a_stream_the_caller_closed_is_an_error(tmp_path: Path, serve: Any) -> None:
    server = serve(played(chat_events(["Half ", "an ", "answer ", "then ", "more."])))
    path = tmp_path / "run.jsonl"
    run(stream_agents.chat, {"base_url": server.url, "stop_after": 1}, path)
    replayed = run(stream_agents.chat, {"base_url": server.url}, tmp_path / "replay.jsonl", events_of(path))
    assert replayed["ended"] == "StreamAbandoned"


# -- a hostile record ----------------------------------------------------------------------------------------

HOSTILE_STREAMS = [
    ({"sse": 5, "texts": {}}, "payload.response.http.sse"),
    ({"sse": [], "texts": {"content": 5}}, "payload.response.http.texts"),
    ({"sse": [7], "texts": {}}, "payload.response.http.sse[0]"),
    ({"sse": [{"event": None, "data": 5}], "texts": {}}, "payload.response.http.sse[0].data"),
    (
        {"sse": [{"data": {"choices": [{"delta": {"content": ""}}]}, "slices": [9]}], "texts": {"content": "ab"}},
        "payload.response.http.sse[0].slices",
    ),
    (
        {"sse": [{"data": {"choices": [{"delta": {"content": ""}}]}, "slices": [1, 1]}], "texts": {"content": "ab"}},
        "payload.response.http.sse[0].slices",
    ),
    (
        {"sse": [{"data": {"choices": [{"delta": {"content": "x"}}]}, "slices": [1]}], "texts": {"content": "ab"}},
        "payload.response.http.sse[0].data",
    ),
    ({"sse": [{"event": None, "data": "x", "id": 4}], "texts": {}}, "payload.response.http.sse[0]"),
]


@pytest.mark.parametrize(("stream", "field"), HOSTILE_STREAMS)
def test_a_recorded_stream_of_another_shape_ends_the_replay_naming_seq_and_field(
    tmp_path: Path, stream: dict[str, Any], field: str
) -> None:
    class Served:
        def observe(self, kind: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
            http = {"status": 200, "headers": {"content-type": "text/event-stream"}, **stream}
            return {"request_hash": key, "response": {"content": "", "tool_calls": [], "http": http}}

    harness = Harness(
        sink=JsonlSink(tmp_path / "r.jsonl", run_id="h"), run_id="h", observation_sources={"model.response": Served()}
    )
    harness.start_run("tests:hostile")
    with pytest.raises(UnusableJournal) as raised, http_client(harness) as client:
        client.post("http://127.0.0.1:9/v1/chat/completions", json={"model": "m", "stream": True}).read()
    assert str(raised.value).startswith(f"seq {harness.last_event.seq}: field {field}: expected "), raised.value


def test_a_stream_left_unclosed_is_written_when_its_reader_is_collected(tmp_path: Path, serve: Any) -> None:
    """The SDK's stream keeps itself in a reference cycle: a stream left open is closed by the garbage
    collector, which is when its response is written (a collection after run.ended writes nothing)."""
    server = serve(played(chat_events(["Half ", "an ", "answer ", "then ", "more."])))

    def agent(h: Harness, task: dict[str, Any]) -> Any:
        deltas = []
        for chunk in stream_agents._openai(h, task).chat.completions.create(
            model="m", messages=stream_agents.MESSAGES, stream=True
        ):
            deltas.append(chunk.choices[0].delta.content if chunk.choices else None)
            if len(deltas) == 3:
                break  # no close()
        gc.collect()
        return deltas

    path = tmp_path / "run.jsonl"
    read = run(agent, {"base_url": server.url}, path)
    payload = response_payload(path)
    assert payload["error"]["type"] == "replay_tui.harness.sse_relay.StreamAbandoned"
    assert payload["response"]["content"] == "".join(text for text in read if text)
    assert run(agent, {"base_url": server.url}, tmp_path / "replay.jsonl", events_of(path)) == read
