"""PydanticAI's own patterns (issue 26), each written as PydanticAI's docs write it with one capability added
(tests/frameworks/pydantic_ai_agents.py), on OpenAI chat completions, the Responses API and Anthropic:

* every run form records against a loopback model and sends it the bytes an unrecorded run of the same
  agent sends (tool returns in their own key order), and the agent's code gets the same values;
* each replays strictly to a match through the CLI (sandboxed child, network off) with nothing live: the
  model server and the weather service the tools call hear nothing, and nothing was refused;
* a one-line change diverges at the right step, naming the field;
* what PydanticAI runs concurrently (tool calls of one answer, runs in ``asyncio.gather``, delegates in
  parallel tool calls) runs concurrently while recording, measured on the servers, and replays;
* calls the recorder cannot see fail the recording, naming them."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replay_tui.harness import RunOutcome, record_run, record_session
from replay_tui.journal import verify_journal
from tests.httpx.servers import LLMServer
from tests.replay.helpers import rechained_copy

from . import pydantic_ai_agents as agents
from .conftest import CONFIG, events, replay_cli
from .pydantic_ai_servers import WeatherService, model_server, overlapping

MODELS = {"chat": "gpt-4.1", "responses": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}
#: The tool return whose members are not in sorted order, as the service wrote them and the model must read them
#: (in the request body it is a JSON string: escaped).
ALERTS = '{"zone":"Paris","level":"none","active":false,"issued_by":"met office"}'
ALERTS_SENT = json.dumps(ALERTS).encode()[1:-1]
ALERTS_SORTED_SENT = json.dumps(json.dumps(json.loads(ALERTS), sort_keys=True, separators=(",", ":"))).encode()[1:-1]


@dataclass
class Loopback:
    model: LLMServer
    service: WeatherService

    def task(self, api: str, **extra: Any) -> dict[str, Any]:
        return {
            "api": api,
            "model": MODELS[api],
            "base_url": self.model.url,
            "service": self.service.url,
            "question": "What is the weather in Paris?",
            **extra,
        }

    def heard(self) -> tuple[int, int]:
        return len(self.model.state.received), self.service.requests

    def bodies(self) -> list[bytes]:
        return [received.raw for received in self.model.state.received]


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    servers = Loopback(model_server(), WeatherService())
    try:
        yield servers
    finally:
        servers.model.close()
        servers.service.close()


def record(entry: str, task: dict[str, Any], journal: Path) -> RunOutcome:
    return record_run(CONFIG, f"tests.frameworks.pydantic_ai_agents:{entry}", [task], journal=journal)


def unrecorded(entry: str, task: dict[str, Any]) -> Any:
    """The same entry point run plainly in this process: no capability, no harness."""
    result = getattr(agents, entry)(None, {**task, "recorded": False})
    return asyncio.run(result) if inspect.isawaitable(result) else result


def replays_with_nothing_live(journal: Path, loopback: Loopback, env: dict[str, str] | None = None) -> dict[str, Any]:
    assert verify_journal(journal).ok
    heard = loopback.heard()
    code, outcome = replay_cli(journal, env=env)
    assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")
    assert outcome["consumed"] == outcome["total"] == len(events(journal))
    assert outcome["refusals"] == [] and outcome["isolation"]["network_namespace"]
    assert loopback.heard() == heard  # no model call, no tool run
    return outcome


def _joined(output: Any) -> Any:
    if not isinstance(output, dict):
        return output
    return {key: "".join(value) if key in ("chunks", "texts") else value for key, value in output.items()}


RUN_FORMS = [
    ("run", "chat"),
    ("run", "responses"),
    ("run", "anthropic"),
    ("run_sync", "chat"),
    ("run_in_thread", "anthropic"),
    ("stream_text", "chat"),
    ("stream_text", "responses"),
    ("stream_text", "anthropic"),
    ("stream_output", "chat"),
    ("stream_sync", "chat"),
    ("stream_events", "responses"),
    ("stream_output", "anthropic"),
    ("iterate", "responses"),
    ("iterate_streaming", "chat"),
    ("iterate_streaming", "anthropic"),
    ("chart", "chat"),
    ("chart", "responses"),
    ("chart", "anthropic"),
    ("approval", "chat"),
]


@pytest.mark.parametrize(("entry", "api"), RUN_FORMS)
def test_a_run_form_sends_what_an_unrecorded_run_sends_and_replays_with_nothing_live(
    entry: str, api: str, loopback: Loopback, tmp_path: Path
) -> None:
    plain = unrecorded(entry, loopback.task(api))
    sent_plain = loopback.bodies()
    loopback.model.state.received.clear()
    journal = tmp_path / f"{entry}-{api}.jsonl"
    outcome = record(entry, loopback.task(api), journal)
    assert outcome.status == "ok", outcome.error
    assert loopback.bodies() == sent_plain  # byte for byte, key order too
    # the agent's code got the same values (the types of its tool returns too); a stream's text is the same, cut
    # where the harness's redaction lets each piece go (harness/STREAMING.md), and a replay cuts it the same way
    assert _joined(outcome.output) == _joined(plain)
    kinds = [event.kind for event in events(journal)]
    assert kinds.count("model.request") == len(sent_plain) and "tool.result" in kinds
    replays_with_nothing_live(journal, loopback)


@pytest.mark.parametrize("api", sorted(MODELS))
def test_tool_returns_are_recorded_as_the_text_the_model_is_sent(api: str, loopback: Loopback, tmp_path: Path) -> None:
    """A pydantic model, a dataclass and a dict a tool returns reach the model as PydanticAI writes them, members in
    their own order (the service's, not sorted); the journal holds that text, and the agent's code reads back a
    ``Weather``, a ``Station`` and a ``dict`` in the recording as in an unrecorded run (and the replay matched the
    output that says so)."""
    journal = tmp_path / "run.jsonl"
    outcome = record("run", loopback.task(api), journal)
    assert outcome.status == "ok", outcome.error
    assert outcome.output["returned"] == ["Weather", "Station", "dict"]
    assert ALERTS_SENT in loopback.bodies()[1]  # as the tool returned it
    assert ALERTS_SORTED_SENT not in loopback.bodies()[1]
    results = {e.payload["tool"]: e.payload["result"] for e in events(journal) if e.kind == "tool.result"}
    assert results["get_weather"] == {
        "json": '{"city":"Paris","temperature_c":21.5,"conditions":"sunny"}',
        "as": "return_type",
        "type": "Weather",
    }
    assert results["get_station"]["type"] == "Station" and results["get_alerts"]["json"] == ALERTS
    second = next(e for e in events(journal) if e.kind == "model.request" and e.step_id == "turn-02:weather_agent")
    assert ALERTS_SENT.decode() in json.dumps(second.payload["request"])
    replays_with_nothing_live(journal, loopback)


# (recorded entry, API, variant, the step it diverges at, a field the diff names)
ONE_LINE_CHANGES = [
    ("run", "chat", "other_instructions", "turn-01:weather_agent", "['messages'][0]['content']"),
    ("run", "anthropic", "other_instructions", "turn-01:weather_agent", "['system']"),
    ("run", "responses", "extra_argument", "turn-01:weather_agent", "severity"),
    ("delegation", "chat", "delegate_other_prompt", "turn-01:joke_generation_agent@call_1_1", "['messages']"),
]


@pytest.mark.parametrize(("entry", "api", "variant", "step", "field"), ONE_LINE_CHANGES)
def test_a_one_line_change_diverges_at_the_right_step_naming_the_field(
    entry: str, api: str, variant: str, step: str, field: str, loopback: Loopback, tmp_path: Path
) -> None:
    journal = tmp_path / f"{entry}.jsonl"
    assert record(entry, loopback.task(api), journal).status == "ok"
    heard = loopback.heard()
    code, outcome = replay_cli(journal, "--agent", f"tests.frameworks.pydantic_ai_variants:{variant}")
    assert code == 1 and outcome["status"] == "diverged", outcome.get("error")
    divergence = outcome["divergence"]
    first_request = next(e for e in events(journal) if e.kind == "model.request" and e.step_id == step)
    assert divergence["seq"] == first_request.seq and divergence["step"] == step
    assert divergence["expected"]["kind"] == "model.request" and "request_hash differs" in divergence["reason"]
    assert any(field in line for line in divergence["diff_lines"]), divergence["diff_lines"]
    assert loopback.heard() == heard


def test_parallel_tool_calls_run_concurrently_while_recording_and_replay(loopback: Loopback, tmp_path: Path) -> None:
    """The model asks for three tools in one answer; PydanticAI runs them at once (two coroutines and a sync tool in
    a thread), recorded as unrecorded: all three requests are at the weather service together."""
    loopback.service.delay_s = 0.6  # (long enough for the thread PydanticAI starts the sync tool in, on a loaded box)
    unrecorded("run", loopback.task("chat"))
    assert overlapping(loopback.service.intervals) == 3
    loopback.service.intervals.clear()
    journal = tmp_path / "parallel.jsonl"
    assert record("run", loopback.task("chat"), journal).status == "ok"
    assert overlapping(loopback.service.intervals) == 3
    span = max(end for _, end in loopback.service.intervals) - min(start for start, _ in loopback.service.intervals)
    assert span < 0.6 * 2  # one after another would take 1.8 s
    recorded = events(journal)
    calls = [e for e in recorded if e.kind == "tool.call"]
    first_result = next(e.seq for e in recorded if e.kind == "tool.result")
    assert len(calls) == 3 and all(call.seq < first_result for call in calls)  # all three in flight together
    asked_by = {call.parent_event_id for call in calls}
    assert len(asked_by) == 1 and recorded[int(asked_by.pop().rsplit(":", 1)[1]) - 1].kind == "model.response"
    replays_with_nothing_live(journal, loopback)


def test_parallel_runs_in_gather_run_concurrently_each_in_its_own_steps(loopback: Loopback, tmp_path: Path) -> None:
    loopback.model.state.delay_s = 0.3
    questions = [f"What is the weather in {city}?" for city in ("Paris", "Oslo", "Lima")]
    journal = tmp_path / "gathered.jsonl"
    outcome = record("gathered", loopback.task("chat", questions=questions), journal)
    assert outcome.status == "ok", outcome.error
    assert [answer["output"].split(" at ")[0] for answer in outcome.output] == [
        "It is sunny in Paris",
        "It is sunny in Oslo",
        "It is sunny in Lima",
    ]
    assert overlapping(loopback.model.state.intervals) == 3  # the three runs' model calls at the server together
    recorded = events(journal)
    requests = [e for e in recorded if e.kind == "model.request"]
    labels = sorted({e.step_id.split(":", 1)[1] for e in requests})
    assert labels == ["weather_agent", "weather_agent#2", "weather_agent#3"]
    first_requests = [e for e in requests if e.step_id.startswith("turn-01:")]
    the_input = next(e for e in recorded if e.kind == "input.received")
    assert [e.parent_event_id for e in first_requests] == [the_input.event_id] * 3
    for label in labels:  # each run's second request hangs from its own last tool result
        second = next(e for e in requests if e.step_id == f"turn-02:{label}")
        parent = recorded[int(second.parent_event_id.rsplit(":", 1)[1]) - 1]
        assert parent.kind == "tool.result" and parent.step_id == f"turn-01:{label}"
    replays_with_nothing_live(journal, loopback)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_agent_delegation_records_each_delegate_in_its_own_steps_and_replays(
    api: str, loopback: Loopback, tmp_path: Path
) -> None:
    """PydanticAI's agent delegation: the selection agent's tool runs the generation agent, twice in one answer
    (concurrently). The tool's code runs in the replay too; the delegates' model calls are served from the journal."""
    loopback.model.state.delay_s = 0.25
    journal = tmp_path / "delegation.jsonl"
    outcome = record("delegation", loopback.task(api), journal)
    assert outcome.status == "ok", outcome.error
    assert outcome.output == unrecorded("delegation", loopback.task(api))
    delegate_requests = [
        (start, end)
        for (start, end), received in zip(loopback.model.state.intervals, loopback.model.state.received)
        if b"jokes" in received.raw and b"joke_factory" not in received.raw
    ]
    assert overlapping(delegate_requests) == 2  # both delegates at the model together
    recorded = events(journal)
    by_id = {e.event_id: e for e in recorded}
    delegations = [e for e in recorded if e.kind == "tool.result" and e.payload["tool"] == "joke_factory"]
    assert [e.payload["result"] for e in delegations] == [{"delegates": ["joke_generation_agent"]}] * 2
    for delegation in delegations:
        call = by_id[delegation.parent_event_id]
        assert by_id[call.parent_event_id].kind == "model.response"  # asked for by the selection agent's answer
        step = f"turn-01:joke_generation_agent@{call.payload['call_id']}"
        first = next(e for e in recorded if e.kind == "model.request" and e.step_id == step)
        assert first.parent_event_id == delegation.event_id  # the delegate's run hangs from the delegation
    outer = [e.step_id for e in recorded if e.kind == "model.request" and "joke_selection" in e.step_id]
    assert outer == ["turn-01:joke_selection_agent", "turn-02:joke_selection_agent"]
    replays_with_nothing_live(journal, loopback)


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_retried_tool_and_an_output_validator_replay_with_their_failures(
    api: str, loopback: Loopback, tmp_path: Path
) -> None:
    journal = tmp_path / "retries.jsonl"
    outcome = record("retries", loopback.task(api), journal)
    assert outcome.status == "ok", outcome.error
    assert outcome.output == {
        "output": {"city": "Paris", "summary": "Mild in Paris.", "temperature_c": 21.5},
        "requests": 4,
    }
    recorded = events(journal)
    retried = next(e for e in recorded if e.kind == "tool.result" and "error" in e.payload)
    assert retried.payload["error"]["type"] == "pydantic_ai.exceptions.ModelRetry"
    assert "use its capitalized name" in retried.payload["error"]["message"]
    failed = [
        e
        for e in recorded
        if e.kind == "state.transition"
        and any(op["path"].startswith("/output_validation_failures") for op in e.payload["patch"])
    ]
    assert len(failed) == 1
    added = next(op["value"] for op in failed[0].payload["patch"] if op["path"] == "/output_validation_failures/-")
    assert added["errors"][0]["msg"] == "the summary must name the city"
    retry_request = next(e for e in recorded if e.kind == "model.request" and e.seq > failed[0].seq)
    assert "the summary must name the city" in json.dumps(retry_request.payload["request"])
    replays_with_nothing_live(journal, loopback)


@pytest.mark.parametrize("api", sorted(MODELS))
def test_a_streamed_answer_reaches_the_caller_as_it_arrives(api: str, loopback: Loopback, tmp_path: Path) -> None:
    """``run_stream``'s text chunks reach the agent while the server is still sending them (events 0.15 s apart),
    not all at once when the stream ends."""
    loopback.model.state.event_gap_s = 0.15
    agents.CHUNK_ARRIVALS.clear()
    outcome = record("stream_text", loopback.task(api), tmp_path / "stream.jsonl")
    assert outcome.status == "ok", outcome.error
    arrivals = agents.CHUNK_ARRIVALS
    assert len(arrivals) == len(outcome.output["chunks"]) == 9
    assert arrivals[-1] - arrivals[0] > 0.15 * 8 * 0.6  # spread as the server sent them


def test_run_sync_in_a_worker_thread_of_a_recorded_session(loopback: Loopback, tmp_path: Path) -> None:
    """A service's session (``record_session``, a running loop) calls ``run_sync`` where PydanticAI allows it, in a
    worker thread; the session's journal replays like any other."""
    task = loopback.task("chat")

    async def serve() -> Any:
        async with record_session(
            CONFIG,
            directory=tmp_path,
            session_id="s1",
            agent="tests.frameworks.pydantic_ai_agents:run_in_thread",
            input=task,
        ) as h:
            return await h.session.run()

    answer = asyncio.run(serve())
    assert answer["returned"] == ["Weather", "Station", "dict"]
    replays_with_nothing_live(tmp_path / "s1", loopback)


def test_concurrent_sessions_draw_their_run_ids_from_their_own_harness(loopback: Loopback, tmp_path: Path) -> None:
    """Two sessions recorded at once in one process: each run's id is drawn through the harness of the session it
    runs in (``current_harness()``), never a shared one, and each journal replays."""
    task = loopback.task("chat")

    async def session(session_id: str) -> Any:
        async with record_session(
            CONFIG,
            directory=tmp_path,
            session_id=session_id,
            agent="tests.frameworks.pydantic_ai_agents:run",
            input=task,
        ) as h:
            return await h.session.run()

    async def both() -> list[Any]:
        return await asyncio.gather(session("a"), session("b"))

    asyncio.run(both())
    for session_id in ("a", "b"):
        draws = [e for e in events(tmp_path / session_id) if e.kind == "random.draw"]
        assert [e.payload["source"] for e in draws] == ["uuid4"]  # its own run's id, and only that
        replays_with_nothing_live(tmp_path / session_id, loopback)


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_fallback_model_whose_first_model_is_down_falls_back_the_same_way_in_a_replay(
    api: str, loopback: Loopback, tmp_path: Path
) -> None:
    """Each model a ``FallbackModel`` holds sends through the harness: the refused connection to the first is
    recorded as what it was, and a replay raises it again, so PydanticAI falls back to the second as it did."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        down_url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    journal = tmp_path / "fallback.jsonl"
    outcome = record("fallback", loopback.task(api, down_url=down_url), journal)
    assert outcome.status == "ok", outcome.error
    failed = [e for e in events(journal) if e.kind == "model.response" and e.payload.get("error")]
    assert len(failed) == 2 and all("ConnectError" in e.payload["error"]["type"] for e in failed)  # both turns
    replays_with_nothing_live(journal, loopback)


def test_a_model_the_recorder_cannot_see_fails_the_recording_naming_it(loopback: Loopback, tmp_path: Path) -> None:
    journal = tmp_path / "unseen.jsonl"
    outcome = record("unseen_model", loopback.task("chat"), journal)
    assert outcome.status == "error"
    assert "FunctionModel" in str(outcome.error) and "unrecorded" in str(outcome.error)
    assert not any(e.kind == "model.request" for e in events(journal))


def test_an_agent_run_inside_a_black_box_tool_fails_the_recording_naming_the_tool(
    loopback: Loopback, tmp_path: Path
) -> None:
    """A delegate the tool reaches through its dependencies is not named by the tool's code: its run would be
    recorded inside a tool a replay does not run. The recording fails before the delegate sends anything; marked
    ``{"replay_tui": "delegates"}`` the same tool records and replays."""
    outcome = record("through_deps", loopback.task("chat"), tmp_path / "black-box.jsonl")
    assert outcome.status == "error" and "'ask_helper'" in str(outcome.error)
    assert "metadata={'replay_tui': 'delegates'}" in str(outcome.error)
    assert len(loopback.model.state.received) == 1  # the lead agent's first request; the helper sent nothing
    journal = tmp_path / "marked.jsonl"
    outcome = record("through_deps", loopback.task("chat", marked=True), journal)
    assert outcome.status == "ok", outcome.error
    steps = {e.step_id for e in events(journal) if e.kind == "model.request"}
    assert "turn-01:helper_agent@call_1_1" in steps
    replays_with_nothing_live(journal, loopback)


HOSTILE_RESULTS = [
    ({"json": 5, "as": "content"}, "no JSON text"),
    ({"json": '{"city": 1}', "as": "return_type"}, "city"),
    ({"json": "{}", "as": "pickle"}, "unknown way"),
    ({"deferred": "approval", "metadata": [1]}, "metadata"),
]


@pytest.mark.parametrize(("result", "named"), HOSTILE_RESULTS)
def test_a_recorded_tool_return_of_another_shape_is_a_journal_error_naming_its_seq(
    result: Any, named: str, loopback: Loopback, tmp_path: Path
) -> None:
    """The journal is hostile: a tool return this recorder does not write ends the replay as a bad journal does
    (exit 2), naming the seq and what was expected, never whatever PydanticAI makes of it."""
    journal = tmp_path / "run.jsonl"
    assert record("run", loopback.task("chat"), journal).status == "ok"
    edited: list[int] = []

    def edit(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
        target = next(e for e in recorded if e["kind"] == "tool.result" and e["payload"]["tool"] == "get_weather")
        target["payload"]["result"] = result
        edited.append(target["seq"])
        return recorded

    hostile = rechained_copy(journal, tmp_path / "hostile.jsonl", edit)
    code, outcome = replay_cli(hostile)
    assert (code, outcome["status"], outcome["error"]["kind"]) == (2, "error", "journal"), outcome
    message = outcome["error"]["message"]
    assert message.startswith(f"{hostile}, seq {edited[0]}: field payload.result: expected "), message
    assert named in message


def test_an_agent_built_at_import_from_a_model_name_replays_with_placeholder_keys(
    loopback: Loopback, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Agent('anthropic:claude-sonnet-4-5')`` at import: recorded with a key in the environment, replayed by a
    child that gets no key of the parent's (the URL is passed on purpose: it is part of the recorded request)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", agents.FAKE_ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", loopback.model.url)
    journal = tmp_path / "at-import.jsonl"
    task = {"question": "What is the weather in Paris?"}
    outcome = record_run(CONFIG, "tests.frameworks.pydantic_ai_import_agent:ask", [task], journal=journal)
    assert (outcome.status, outcome.output) == ("ok", "No tools for: What is the weather in Paris?"), outcome.error
    replays_with_nothing_live(journal, loopback, env={"REPLAY_TUI_PASS_ENV": "ANTHROPIC_BASE_URL"})
