"""``h.model(..., on_chunk=)`` and ``await h.amodel(..., on_chunk=)`` with a model plugin that streams (the
built-in openai-compatible plugin, against a loopback SSE server): each chunk's text reaches ``on_chunk`` as
it arrives, redacted as it passes; a stream cut mid-way (the server closes, the caller's callback raises, its
task is cancelled) is recorded as what arrived plus the error; a replay hands the same chunks, then the error."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from replay_tui.harness import Harness, build_harness
from replay_tui.harness.config import config_from_mapping
from replay_tui.harness.replay_support import RecordedObservations, sources_for
from replay_tui.harness.transport import JsonlSink

from .conftest import REPO
from .stream_server import Close, Stall, chat_events, gated, played
from .test_streaming import OBSERVATION_KINDS, SECRET, SPLIT_SECRET, events_of, response_payload

REQUEST = {"model": "local", "messages": [{"role": "user", "content": "What is in the vault?"}]}


class Stop(Exception):
    """The agent's own way to stop reading."""


def model_config(url: str) -> Any:
    options = {"base_url": url + "/v1", "model": "local", "stream": True, "timeout_s": 10}
    return config_from_mapping(
        {"plugins": [{"id": "model", "type": "openai-compatible", "options": options}]}, base_dir=REPO
    )


def recorded(url: str, path: Path, ask: Callable[[Harness], Any]) -> Any:
    with build_harness(model_config(url), journal=path, run_id="model-stream") as recording:
        harness = recording.harness
        harness.start_run("tests.httpx.test_model_stream:agent")
        try:
            return ask(harness)
        finally:
            harness.end_run("ok")


def replayed(path: Path, ask: Callable[[Harness], Any]) -> Any:
    sources = sources_for(RecordedObservations(events_of(path)), OBSERVATION_KINDS)
    harness = Harness(
        sink=JsonlSink(path.with_name("replay.jsonl"), run_id="r"), run_id="r", observation_sources=sources
    )
    harness.start_run("tests.httpx.test_model_stream:agent")
    return ask(harness)


def outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except BaseException as error:  # noqa: BLE001 (the error is the outcome)
        return type(error).__name__
    return "end"


@pytest.mark.parametrize("mode", ["model", "amodel"])
def test_each_chunk_reaches_on_chunk_as_it_arrives(tmp_path: Path, serve: Any, mode: str) -> None:
    steps, gate = gated(chat_events(["Hello ", "from ", "the ", "plugin."]))
    server = serve(steps)
    deltas: list[str] = []

    def on_chunk(text: str) -> None:
        deltas.append(text)
        if text:
            gate.set()

    def ask(h: Harness) -> Any:
        if mode == "model":
            return h.model(REQUEST, on_chunk=on_chunk)
        return asyncio.run(h.amodel(REQUEST, on_chunk=on_chunk))

    response = recorded(server.url, tmp_path / "run.jsonl", ask)
    assert server.timed_out == 0 and response["content"] == "".join(deltas) == "Hello from the plugin."
    again: list[str] = []
    replayed(tmp_path / "run.jsonl", lambda h: h.model(REQUEST, on_chunk=again.append))
    assert again == deltas


def test_the_text_is_redacted_as_it_passes_and_replayed_as_handed(tmp_path: Path, serve: Any) -> None:
    server = serve(played(chat_events(SPLIT_SECRET)))
    deltas: list[str] = []
    response = recorded(server.url, tmp_path / "run.jsonl", lambda h: h.model(REQUEST, on_chunk=deltas.append))
    assert "".join(deltas) == response["content"] == "The key is [REDACTED:openai-key] and nothing else."
    assert (
        all(SECRET[:10] not in delta for delta in deltas)
        and SECRET.encode() not in (tmp_path / "run.jsonl").read_bytes()
    )
    payload = response_payload(tmp_path / "run.jsonl")
    assert payload["response"]["content"] == response["content"] and len(payload["stream"]["boundaries"]) == len(deltas)
    again: list[str] = []
    replayed(tmp_path / "run.jsonl", lambda h: h.model(REQUEST, on_chunk=again.append))
    assert again == deltas


def test_a_stream_the_server_cuts_is_recorded_and_replayed_with_its_error(tmp_path: Path, serve: Any) -> None:
    events = chat_events(["Half ", "an ", "answer ", "then ", "nothing."])
    server = serve([*played(events[:4]), Close()])
    deltas: list[str] = []
    ended = recorded(
        server.url, tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=deltas.append))
    )
    assert ended == "ConnectionError" and "".join(deltas) == "Half an answer "
    payload = response_payload(tmp_path / "run.jsonl")
    assert payload["error"]["type"] == "ConnectionError" and payload["response"]["content"] == "Half an answer "
    again: list[str] = []
    assert replayed(tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=again.append))) == ended
    assert again == deltas


def test_a_stream_without_its_end_marker_is_cut(tmp_path: Path, serve: Any) -> None:
    server = serve(played(chat_events(["All ", "but ", "the end."])[:-1]))  # no [DONE]
    ended = recorded(server.url, tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=print)))
    assert (
        ended == "ConnectionError" and "before [DONE]" in response_payload(tmp_path / "run.jsonl")["error"]["message"]
    )


def test_the_callers_own_error_stops_the_stream_and_is_raised_as_itself(tmp_path: Path, serve: Any) -> None:
    server = serve(played(chat_events(["One ", "two ", "three ", "four."])))
    deltas: list[str] = []

    def on_chunk(text: str) -> None:
        deltas.append(text)
        if "two" in "".join(deltas):
            raise Stop("enough")

    ended = recorded(server.url, tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=on_chunk)))
    assert ended == "Stop" and response_payload(tmp_path / "run.jsonl")["error"]["type"].endswith("Stop")
    seen, deltas[:] = list(deltas), []
    assert replayed(tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=on_chunk))) == "Stop"
    assert deltas == seen


def test_a_cancelled_amodel_is_recorded_and_replayed_as_the_same_cancellation(tmp_path: Path, serve: Any) -> None:
    gate = threading.Event()
    events = chat_events(["First ", "second ", "third."])
    server = serve([*played(events[:3]), Stall(gate, 5)])

    def ask(h: Harness) -> Any:
        deltas: list[str] = []

        async def main() -> tuple[str, list[str]]:
            first = asyncio.Event()

            def on_chunk(text: str) -> None:
                deltas.append(text)
                if text:
                    first.set()

            task = asyncio.create_task(h.amodel(REQUEST, on_chunk=on_chunk))
            await asyncio.wait([task, asyncio.create_task(first.wait())], return_when=asyncio.FIRST_COMPLETED)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return "CancelledError", deltas
            return "end", deltas

        return asyncio.run(main())

    ended, deltas = recorded(server.url, tmp_path / "run.jsonl", ask)
    gate.set()
    assert ended == "CancelledError" and "".join(deltas).startswith("First")
    assert response_payload(tmp_path / "run.jsonl")["error"]["type"] == "asyncio.exceptions.CancelledError"
    assert replayed(tmp_path / "run.jsonl", ask) == (ended, deltas)


def test_what_arrived_before_a_cut_goes_to_on_chunk_first_held_tail_included(tmp_path: Path, serve: Any) -> None:
    events = chat_events(["Half ", "an ", "unfinished"])  # the last token is held until the stream says more
    server = serve([*played(events[:4]), Close()])
    deltas: list[str] = []
    ended = recorded(
        server.url, tmp_path / "run.jsonl", lambda h: outcome(lambda: h.model(REQUEST, on_chunk=deltas.append))
    )
    assert ended == "ConnectionError" and deltas[-1] == "unfinished" and "".join(deltas) == "Half an unfinished"
    assert response_payload(tmp_path / "run.jsonl")["response"]["content"] == "Half an unfinished"
