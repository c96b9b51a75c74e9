"""The OpenAI Agents SDK's patterns, written as its docs write them, recorded with ``with recording(h):`` only,
against a loopback Responses API server: the model gets the same bytes as an unrecorded run of the same
program, a strict replay through the CLI (sandboxed, network off) matches with nothing live (no connection to
the server, no marker file from a tool or a handoff callback), work the SDK runs in parallel runs in parallel
while recording, and a one-line change diverges at the right step naming the field."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from agents import set_tracing_disabled

from fixtures.agents.loopback_openai import LoopbackOpenAI, Reply, Turn, most_in_flight
from replay_tui.harness import RunOutcome, record_run
from replay_tui.harness.state import apply_patch
from replay_tui.journal import verify_journal
from replay_tui.journal.hashing import state_hash

from . import sdk_team, sdk_team_model, sdk_weather
from .conftest import CONFIG, REPO, events, replay_cli

KEY = "sk-recording-key-of-the-test"


@pytest.fixture(autouse=True)
def _openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recording needs the client's key (a replay child gets a placeholder); unrecorded runs upload no trace."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    set_tracing_disabled(True)


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


def _program_output(program: Callable[..., Any], task: dict[str, Any]) -> Any:
    result = program(task)
    return asyncio.run(result) if inspect.isawaitable(result) else result


def recorded_like_plain(
    server: LoopbackOpenAI,
    program: Callable[..., Any],
    entry: str,
    task: dict[str, Any],
    journal: Path,
    *,
    in_order: bool = True,
) -> tuple[Any, RunOutcome]:
    """Run ``program`` unrecorded, then record ``entry`` (the same program inside ``recording``): the model got
    the same request bodies, byte for byte (``in_order``: in the same order; else the same ones, for requests
    the program sends at once). (plain output, the recording's outcome); ``server.requests`` holds the
    recording's."""
    plain = _program_output(program, task)
    plain_bodies = [request.raw for request in server.requests]
    server.reset()
    outcome = record_run(CONFIG, entry, [task], journal=journal, run_id=journal.stem)
    assert outcome.status == "ok", outcome.error
    recorded_bodies = [request.raw for request in server.requests]
    assert plain_bodies
    if in_order:
        assert recorded_bodies == plain_bodies
    else:
        assert Counter(recorded_bodies) == Counter(plain_bodies)
    return plain, outcome


def replays_with_nothing_live(
    journal: Path, server: LoopbackOpenAI, markers: Path, *args: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    left = sorted(os.listdir(markers))
    connections = server.connections
    code, outcome = replay_cli(journal, *args, env=env)
    assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")
    assert outcome["consumed"] == outcome["total"] == len(events(journal))
    assert outcome["isolation"]["network_namespace"] and outcome["refusals"] == []
    assert server.connections == connections  # no model call
    assert sorted(os.listdir(markers)) == left  # no tool, no handoff callback
    return outcome


def _payloads(journal: Path, kind: str) -> list[Any]:
    return [event for event in events(journal) if event.kind == kind]


def _final_state(journal: Path) -> Any:
    recorded = events(journal)
    state = recorded[0].payload["initial_state"]
    for event in recorded:
        if event.kind == "state.transition":
            assert state_hash(state) == event.payload["before_hash"]
            state = apply_patch(state, event.payload["patch"])
            assert state_hash(state) == event.payload["after_hash"]
    return state


# -- tools returning values, and every run form ---------------------------------------------------------


def weather_policy(turn: Turn) -> Reply:
    if "get_weather" not in turn.calls:
        return Reply(calls=(("get_weather", {"city": "Tokyo"}), ("get_forecast", {"city": "Tokyo"})))
    if "city_facts" not in turn.calls:
        return Reply(calls=(("city_facts", {"city": "Tokyo"}), ("travel_tips", {"city": "Tokyo"})))
    said = " ".join(str(turn.output_of(name)) for name in ("get_weather", "get_forecast", "city_facts"))
    return Reply(text=f"Tokyo now: {said}")


def weather_task(server: LoopbackOpenAI, markers: Path) -> dict[str, Any]:
    return {"question": sdk_weather.QUESTION, "base_url": server.url, "markers": str(markers)}


@pytest.fixture
def weather_server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI(weather_policy) as server:
        yield server


RUN_FORMS = [
    ("recorded", sdk_weather.main),
    ("recorded_sync", sdk_weather.main_sync),
    ("recorded_streamed", sdk_weather.main_streamed),
]


@pytest.mark.parametrize(("entry", "program"), RUN_FORMS, ids=["run", "run_sync", "run_streamed"])
def test_tool_values_reach_the_model_as_the_sdk_sends_them_in_every_run_form(
    entry: str, program: Callable[..., Any], weather_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    task = weather_task(weather_server, markers)
    journal = tmp_path / f"{entry}.jsonl"
    plain, outcome = recorded_like_plain(
        weather_server, program, f"tests.frameworks.sdk_weather:{entry}", task, journal
    )
    recorded_bodies = [request.raw for request in weather_server.requests]
    assert len(recorded_bodies) == 3  # byte for byte as unrecorded, key order too
    if isinstance(plain, dict):  # streamed: the same text; held-back tails may cut deltas elsewhere (STREAMING.md)
        plain, output = (
            {**plain, "deltas": "".join(plain["deltas"])},
            {**outcome.output, "deltas": "".join(outcome.output["deltas"])},
        )
    else:
        output = outcome.output
    assert output == plain
    assert all(request.path == "/v1/responses" for request in weather_server.requests)  # the SDK's default API
    results = {event.payload["tool"]: event.payload["result"] for event in _payloads(journal, "tool.result")}
    assert results == {
        "get_weather": "city='Tokyo' temperature_range='14-20C' conditions='Sunny with wind.'",
        "get_forecast": "Forecast(city='Tokyo', days=['sun', 'rain', 'sun'])",
        "city_facts": "{'population': 13960000, 'area_km2': 2194, 'airport': 'HND', 'city': 'Tokyo'}",
        "travel_tips": [
            {"text": "Tokyo: carry cash.", "type": "input_text"},
            {"text": "Trains stop at midnight.", "type": "input_text"},
        ],
    }
    assert b"{'population': 13960000, 'area_km2': 2194" in recorded_bodies[2]  # the dict's own key order
    assert verify_journal(journal).ok
    replays_with_nothing_live(journal, weather_server, markers)
    if entry == "recorded":  # one line of the instructions changed: the first turn diverges, naming them
        code, changed = replay_cli(journal, "--agent", "tests.frameworks.sdk_variants:weather_in_celsius")
        assert (code, changed["status"]) == (1, "diverged")
        divergence = changed["divergence"]
        first_request = next(event for event in events(journal) if event.kind == "model.request")
        assert divergence["seq"] == first_request.seq and divergence["step"] == "turn-01:Weather desk"
        assert any("['instructions']" in line for line in divergence["diff_lines"]), divergence["diff_lines"]


def test_two_tools_the_model_calls_at_once_run_at_once_while_recording(
    weather_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    task = weather_task(weather_server, markers)
    sdk_weather.TOOL_RUNS.clear()
    outcome = record_run(CONFIG, "tests.frameworks.sdk_weather:recorded", [task], journal=tmp_path / "run.jsonl")
    assert outcome.status == "ok", outcome.error
    (first, start_a, end_a), (second, start_b, end_b) = sorted(sdk_weather.TOOL_RUNS)
    assert {first, second} == {"get_forecast", "get_weather"}
    overlap = min(end_a, end_b) - max(start_a, start_b)
    assert overlap > 0.8 * sdk_weather.TOOL_DELAY_S, sdk_weather.TOOL_RUNS  # both 0.3 s, side by side
    calls = [
        event.payload["tool"] for event in events(tmp_path / "run.jsonl") if event.kind in ("tool.call", "tool.result")
    ]
    assert calls[:2] == ["get_weather", "get_forecast"]  # both called before either ended


def test_a_streamed_run_hands_each_event_over_as_it_arrives(markers: Path, tmp_path: Path) -> None:
    """The server sends the final answer's first text delta and then holds the rest until the program has read
    that delta from ``stream_events()``: a recorder that read the stream to its end first would make it wait in
    vain (5 s). The journal's answers are whole: text, tool calls and usage, streamed."""
    gate = threading.Event()

    def policy(turn: Turn) -> Reply:
        reply = weather_policy(turn)
        return Reply(text=reply.text, calls=reply.calls, gate=gate if reply.text else None, gap=0.01)

    with LoopbackOpenAI(policy) as server:
        first_text: list[float] = []

        def saw_first_text(delta: str) -> None:
            first_text.append(time.monotonic())
            gate.set()

        sdk_weather.ON_FIRST_TEXT = saw_first_text
        try:
            task = weather_task(server, markers)
            journal = tmp_path / "streamed.jsonl"
            outcome = record_run(CONFIG, "tests.frameworks.sdk_weather:recorded_streamed", [task], journal=journal)
        finally:
            sdk_weather.ON_FIRST_TEXT = None
        assert outcome.status == "ok", outcome.error
        assert server.gates_timed_out == 0 and first_text
        assert len(outcome.output["deltas"]) > 5
        responses = [event.payload for event in _payloads(journal, "model.response")]
        assert all(payload["stream"]["chunks"] > 1 for payload in responses)
        calls = [
            [(call["name"], call["arguments"]) for call in payload["response"]["tool_calls"]] for payload in responses
        ]
        assert calls[:2] == [
            [("get_weather", {"city": "Tokyo"}), ("get_forecast", {"city": "Tokyo"})],
            [("city_facts", {"city": "Tokyo"}), ("travel_tips", {"city": "Tokyo"})],
        ]
        final = responses[-1]["response"]
        assert final["content"] == "".join(outcome.output["deltas"]) == outcome.output["final"]
        assert final["finish_reason"] == "completed" and final["usage"]["output_tokens"] == 9
        replays_with_nothing_live(journal, server, markers)


def test_chat_completions_record_when_the_program_chooses_them(
    weather_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    task = weather_task(weather_server, markers)
    journal = tmp_path / "chat.jsonl"
    recorded_like_plain(
        weather_server, sdk_weather.main_chat, "tests.frameworks.sdk_weather:recorded_chat", task, journal
    )
    assert {request.path for request in weather_server.requests} == {"/v1/chat/completions"}
    replays_with_nothing_live(journal, weather_server, markers)


# -- agents as tools, handoff objects, guardrails, parallel runs -----------------------------------------


def translate_task(server: LoopbackOpenAI, markers: Path) -> dict[str, Any]:
    return {
        "question": "Translate 'Good morning' to Spanish and French.",
        "base_url": server.url,
        "markers": str(markers),
    }


@pytest.fixture
def team_server() -> Iterator[LoopbackOpenAI]:
    sdk_team_model.DELAYS.clear()
    with LoopbackOpenAI(sdk_team_model.team_policy) as server:
        yield server
    sdk_team_model.DELAYS.clear()


def test_agents_as_tools_record_their_runs_and_replay(
    team_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    sdk_team_model.DELAYS.update({"spanish_agent": 0.3})
    task = translate_task(team_server, markers)
    journal = tmp_path / "translate.jsonl"
    plain, outcome = recorded_like_plain(
        team_server, sdk_team.translate, "tests.frameworks.sdk_team:recorded_translate", task, journal, in_order=False
    )
    assert outcome.output == plain
    assert most_in_flight(team_server.intervals) == 2  # the two translators, called at once, run at once
    recorded = events(journal)
    by_id = {event.event_id: event for event in recorded}
    french = "turn-01:orchestrator_agent/translate_to_french"
    assert Counter(event.step_id for event in recorded if event.kind == "model.request") == Counter(
        [
            "turn-01:orchestrator_agent",
            "turn-01:orchestrator_agent/translate_to_spanish/turn-01:spanish_agent",
            f"{french}/turn-01:french_agent",
            f"{french}/turn-02:french_agent",
            "turn-02:orchestrator_agent",
            "run-02/turn-01:synthesizer_agent",
        ]
    )
    # each agent tool: its call hangs from the answer that asked for it, its result from the call, after its run
    for name in ("translate_to_spanish", "translate_to_french"):
        call = next(e for e in recorded if e.kind == "tool.call" and e.payload["tool"] == name)
        result = next(e for e in recorded if e.kind == "tool.result" and e.payload["tool"] == name)
        assert by_id[call.parent_event_id].step_id == "turn-01:orchestrator_agent"
        assert result.parent_event_id == call.event_id and call.step_id == "turn-01:orchestrator_agent"
        inner = [e.seq for e in recorded if (e.step_id or "").startswith(f"turn-01:orchestrator_agent/{name}/")]
        assert call.seq < min(inner) and max(inner) < result.seq
    glossary = next(e for e in recorded if e.kind == "tool.call" and e.payload["tool"] == "glossary")
    assert glossary.step_id == f"{french}/turn-01:french_agent"  # the sub-agent's own tool, under its own step
    runs = _final_state(journal)["runs"]
    assert set(runs) == {"run-01", "run-02", "turn-01:orchestrator_agent/translate_to_spanish", french}
    replays_with_nothing_live(journal, team_server, markers)
    code, changed = replay_cli(journal, "--agent", "tests.frameworks.sdk_variants:formal_french")
    assert (code, changed["status"]) == (1, "diverged")
    assert changed["divergence"]["step"] == f"{french}/turn-01:french_agent"
    assert any("['instructions']" in line for line in changed["divergence"]["diff_lines"])


def test_handoff_objects_record_their_callbacks_and_the_next_agents_tools(
    team_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    """The airline example: ``handoff(seat_booking_agent, on_handoff=...)`` draws a flight number into the run
    context, and the seat agent's tool writes the seat into it. A replay runs neither: it serves both results
    and puts the context as they left it, so the program ends with the recorded flight number."""
    task = {"question": "I want to change my seat please", "base_url": team_server.url, "markers": str(markers)}
    journal = tmp_path / "airline.jsonl"
    plain, outcome = recorded_like_plain(
        team_server, sdk_team.airline, "tests.frameworks.sdk_team:recorded_airline", task, journal
    )
    assert outcome.output["agent"] == plain["agent"] == "Seat Booking Agent"
    flight = outcome.output["context"]["flight_number"]
    assert flight.startswith("FLT-") and outcome.output["context"]["seat_number"] == "12A"
    results = {event.payload["tool"]: event.payload["result"] for event in _payloads(journal, "tool.result")}
    assert results["transfer_to_seat_booking_agent"]["output"] == {"handoff_to": "Seat Booking Agent"}
    assert results["transfer_to_seat_booking_agent"]["context_after"]["flight_number"] == flight
    assert results["update_seat"]["output"] == "Updated seat to 12A for confirmation number ABC123"
    update = next(e for e in _payloads(journal, "tool.call") if e.payload["tool"] == "update_seat")
    assert update.step_id == "turn-02:Seat Booking Agent"
    assert _final_state(journal)["runs"]["run-01"]["context"]["flight_number"] == flight
    # the replay's run.ended output (the context with the flight number) is judged against the recorded one
    replays_with_nothing_live(journal, team_server, markers)


def test_guardrails_run_beside_the_model_call_and_replay(
    team_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    sdk_team_model.DELAYS.update({"Guardrail check": 0.3, "Customer support agent": 0.3})
    questions = ["What's the capital of California?", "Can you solve for x: 2x + 5 = 11"]
    task = {"questions": questions, "base_url": team_server.url, "markers": str(markers)}
    journal = tmp_path / "guarded.jsonl"
    plain, outcome = recorded_like_plain(
        team_server, sdk_team.guarded, "tests.frameworks.sdk_team:recorded_guarded", task, journal, in_order=False
    )
    assert outcome.output == plain == ["Sacramento.", "Sorry, I can't help you with your math homework."]
    assert most_in_flight(team_server.intervals) == 2  # the guardrail's agent beside the agent's own call
    steps = Counter(event.step_id for event in _payloads(journal, "model.request"))
    assert steps == Counter(
        [
            "turn-01:Customer support agent",
            "input_guardrail:math_guardrail/turn-01:Guardrail check",
            "run-02/turn-01:Customer support agent",
            "run-02/input_guardrail:math_guardrail/turn-01:Guardrail check",
        ]
    )
    replays_with_nothing_live(journal, team_server, markers)


def test_parallel_runs_keep_their_own_steps_and_state(
    team_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    sdk_team_model.DELAYS.update({"spanish_agent": 0.3})
    task = {"question": "Good morning!", "base_url": team_server.url, "markers": str(markers)}
    journal = tmp_path / "parallel.jsonl"
    plain, outcome = recorded_like_plain(
        team_server, sdk_team.parallel, "tests.frameworks.sdk_team:recorded_parallel", task, journal, in_order=False
    )
    assert outcome.output == plain
    assert most_in_flight(team_server.intervals) == 3  # the three runs of asyncio.gather, at once
    recorded = events(journal)
    assert Counter(e.step_id for e in recorded if e.kind == "model.request") == Counter(
        [
            "turn-01:spanish_agent",
            "run-02/turn-01:spanish_agent",
            "run-03/turn-01:spanish_agent",
            "run-04/turn-01:translation_picker",
        ]
    )
    state = recorded[0].payload["initial_state"]
    for event in recorded:
        if event.kind == "state.transition":  # each run writes its own part, never another's
            run = event.payload["member"].split("/")[2]
            after = apply_patch(state, event.payload["patch"])
            others = lambda runs: {name: part for name, part in runs.items() if name != run}  # noqa: E731
            assert others(after["runs"]) == others((state or {}).get("runs", {})), event.payload
            assert event.step_id.startswith("" if run == "run-01" else f"{run}/")
            state = after
    runs = _final_state(journal)["runs"]
    assert sorted(runs) == ["run-01", "run-02", "run-03", "run-04"] and all(part["turn"] == 1 for part in runs.values())
    # each run's request hangs from the input, never from another run's answer
    by_id = {event.event_id: event for event in recorded}
    assert {by_id[e.parent_event_id].kind for e in recorded if e.kind == "model.request"} == {"input.received"}
    replays_with_nothing_live(journal, team_server, markers)


# -- calls the recorder cannot see, and the keys -----------------------------------------------------------


def expert_policy(turn: Turn) -> Reply:
    if turn.instructions.startswith("You are the expert"):
        return Reply(text="42.")
    if "ask_expert" not in turn.calls and "ask_expert_marked" not in turn.calls:
        name = "ask_expert_marked" if "ask_expert_marked" in turn.offered else "ask_expert"
        return Reply(calls=((name, {"question": "What is the answer?"}),))
    return Reply(text="The expert says 42.")


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ("nested_in_tool", "function tool 'ask_expert' runs an agent (Runner.run) in its body"),
        ("local_shell", "the LocalShellTool 'local_shell' runs on this machine"),
        ("mcp_server", "agent 'Files': the MCP server 'files' (HomeMadeMCPServer) keeps no mcp.ClientSession"),
        ("home_made_model", "the model HomeMadeModel"),
        ("outside_the_block", "Runner call of agent 'Expert' outside `with recording(h):`"),
    ],
)
def test_a_call_the_recorder_cannot_see_fails_the_recording_naming_it(entry: str, named: str, tmp_path: Path) -> None:
    with LoopbackOpenAI(expert_policy) as server:
        task = {"question": "Ask the expert.", "base_url": server.url}
        outcome = record_run(
            CONFIG, f"tests.frameworks.sdk_unrecordable:{entry}", [task], journal=tmp_path / "run.jsonl"
        )
    assert outcome.status == "error" and type(outcome.error).__name__ == "UnrecordableCall"
    assert named in str(outcome.error), outcome.error


def test_a_tool_marked_as_running_agents_records_them_and_replays(markers: Path, tmp_path: Path) -> None:
    with LoopbackOpenAI(expert_policy) as server:
        task = {"question": "Ask the expert.", "base_url": server.url}
        journal = tmp_path / "marked.jsonl"
        outcome = record_run(CONFIG, "tests.frameworks.sdk_unrecordable:nested_in_marked_tool", [task], journal=journal)
        assert outcome.status == "ok", outcome.error
        steps = [event.step_id for event in _payloads(journal, "model.request")]
        assert steps == ["turn-01:Desk", "turn-01:Desk/ask_expert_marked/turn-01:Expert", "turn-02:Desk"]
        replays_with_nothing_live(journal, server, markers)


def _record_cli(
    entry: str, task: dict[str, Any], journal: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "replay_tui",
            "record",
            str(CONFIG),
            "--agent",
            entry,
            "--input",
            json.dumps(task),
            "-o",
            str(journal),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )


def test_a_module_that_builds_its_client_at_import_replays_on_a_placeholder_key(markers: Path, tmp_path: Path) -> None:
    with LoopbackOpenAI(lambda turn: Reply(text="An old pond / a frog jumps in / the sound of water")) as server:
        env = {**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url}
        journal = tmp_path / "import.jsonl"
        done = _record_cli("tests.frameworks.sdk_import_client:agent", {"question": "A haiku?"}, journal, env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert KEY.encode() not in journal.read_bytes()
        # the child has no OPENAI_API_KEY of ours: it gets the placeholder, and the module imports
        # (the base URL is no secret: passed on purpose, as a service's deployment would)
        replays_with_nothing_live(
            journal, server, markers, "--pass-env", "OPENAI_BASE_URL", env={"OPENAI_BASE_URL": server.url}
        )


@pytest.mark.parametrize(
    "entry", ["tests.frameworks.sdk_import_client:agent", "tests.frameworks.sdk_unrecordable:default_client"]
)
def test_recording_without_a_key_is_a_clear_error(entry: str, tmp_path: Path) -> None:
    """A client built at import (the SDK's ``AsyncOpenAI()``) and one the SDK builds at the first call both
    stop ``replay-tui record`` with exit 2 and a line naming the variable, never an internal error."""
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # never reached
    done = _record_cli(entry, {"question": "hi", "base_url": "http://127.0.0.1:9/v1"}, tmp_path / "run.jsonl", env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "OPENAI_API_KEY is not set" in done.stderr and "internal error" not in done.stderr


def test_the_prompt_cache_key_the_sdk_draws_per_run_is_recorded(markers: Path, tmp_path: Path) -> None:
    """On OpenAI's endpoint the SDK adds ``prompt_cache_key: agents-sdk:run:<uuid4 hex>`` to every Responses
    request, a new uuid each run: recorded as the harness's ``uuid4`` draw, a replay sends the recorded one."""
    with LoopbackOpenAI(lambda turn: Reply(text="Brief.")) as server:
        journal = tmp_path / "run.jsonl"
        task = {"question": "Hi", "base_url": server.url}
        assert record_run(CONFIG, "tests.frameworks.sdk_cache_key:recorded", [task], journal=journal).status == "ok"
        (draw,) = [event for event in events(journal) if event.kind == "random.draw"]
        assert draw.payload["source"] == "uuid4" and draw.step_id == "turn-01:Assistant"
        key = server.requests[-1].body["prompt_cache_key"]
        assert key == "agents-sdk:run:" + draw.payload["value"].replace("-", "")
        replays_with_nothing_live(journal, server, markers)


def test_sessions_of_a_service_record_the_sdk_runs_each_in_its_own_journal(
    weather_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    """Three sessions at once in one event loop (``record_session``): ``with recording():`` takes each session's
    harness (``current_harness()``), and each journal replays to a match."""
    from replay_tui.harness import record_session

    async def serve(number: int) -> Any:
        task = weather_task(weather_server, markers)
        async with record_session(
            CONFIG,
            directory=tmp_path,
            session_id=f"s{number}",
            agent="tests.frameworks.sdk_weather:recorded",
            input=task,
        ) as h:
            return await h.session.run()

    async def service() -> list[Any]:
        return await asyncio.gather(*(serve(number) for number in range(3)))

    answers = asyncio.run(service())
    assert len(set(answers)) == 1 and answers[0].startswith("Tokyo now:")
    assert len(weather_server.requests) == 9
    for number in range(3):
        journal = tmp_path / f"s{number}"
        assert [event.kind for event in events(journal)].count("model.request") == 3
        replays_with_nothing_live(journal, weather_server, markers)


def test_agents_as_tools_stream_inside_a_streamed_run(
    team_server: LoopbackOpenAI, markers: Path, tmp_path: Path
) -> None:
    from . import sdk_streamed_team

    task = translate_task(team_server, markers)
    journal = tmp_path / "streamed-team.jsonl"
    plain, outcome = recorded_like_plain(
        team_server,
        sdk_streamed_team.main,
        "tests.frameworks.sdk_streamed_team:recorded",
        task,
        journal,
        in_order=False,
    )
    assert outcome.output == plain and "french_agent:raw_response_event" in outcome.output["sub_events"]
    assert all(request.body["stream"] for request in team_server.requests)
    replays_with_nothing_live(journal, team_server, markers)
