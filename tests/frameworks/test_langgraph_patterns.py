"""LangGraph and LangChain agents as their docs write them (``graph_agents.py``), recorded with only the
documented lines against a loopback model server: the model receives the same bytes as from an unrecorded
run of the same agent, each run form replays strictly through the CLI with nothing live (the server sees
no connection, no tool runs), parallel work runs in parallel while recording, and a one-line change to the
agent diverges at the right step and field."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI

from replay_tui.harness import record_run
from replay_tui.harness.frameworks.langgraph import state_view
from replay_tui.journal import verify_journal
from tests.httpx.stream_server import StreamServer, anthropic_events, chat_events, gated
from tests.replay.helpers import rechained_copy

from . import graph_agents as agents
from .conftest import CONFIG, events, replay_cli
from .graph_model_server import GraphModelServer, overlap

ENTRY = "tests.frameworks.graph_agents"
QUESTION = "Weather in Paris?"


def _record(entry: str, task: dict[str, Any], journal: Path) -> Any:
    outcome = record_run(CONFIG, f"{ENTRY}:{entry}", [task], journal=journal, run_id=journal.stem)
    assert outcome.status == "ok", outcome.error
    assert verify_journal(journal).ok
    return outcome


def _replays_with_nothing_live(journal: Path, server: Any, marker: Path | None = None) -> dict[str, Any]:
    """``replay-tui replay`` through the CLI: a match, every event consumed, and nothing live: the model server
    sees no connection and no tool writes its marker."""
    connections = server.heard.connections
    marked = marker.read_text() if marker is not None and marker.exists() else None
    code, outcome = replay_cli(journal)
    assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")
    assert outcome["consumed"] == outcome["total"] == len(events(journal))
    assert outcome["refusals"] == []
    assert server.heard.connections == connections
    if marker is not None:
        assert (marker.read_text() if marker.exists() else None) == marked
    return outcome


def _run_unrecorded(form: Callable[..., Any], *args: Any) -> Any:
    result = form(*args)
    return asyncio.run(result) if inspect.isawaitable(result) else result


def _same_but_token_boundaries(output: Any) -> Any:
    """A run's output without the number of message chunks: the recording relay cuts a streamed text only
    after whitespace, so its chunk boundaries move (harness/STREAMING.md); the text is the same."""
    output = json.loads(json.dumps(output))
    for part in output if isinstance(output, list) else [output]:
        if isinstance(part, dict):
            part.get("parts", {}).pop("messages", None)
    return output


def _plain_openai(base_url: str) -> ChatOpenAI:
    """The model the agent builds without replay-tui: the same settings, LangChain's own clients."""
    return ChatOpenAI(model=agents.MODEL, base_url=base_url, api_key="sk-unrecorded", max_retries=0)


# -- item 1: tool results as LangChain puts them in front of the model; item 2: every run form ----------

FORMS = [
    ("weather", "invoke", None),
    ("weather_async", "ainvoke", None),
    ("weather", "stream", ["values"]),
    ("weather", "stream", ["updates", "messages", "custom", "debug", "values"]),
    ("weather_async", "astream", ["messages"]),
    ("weather_async", "astream", ["values", "updates", "messages", "custom", "debug"]),
]


@pytest.mark.parametrize(("entry", "form", "modes"), FORMS, ids=[f"{f}-{'+'.join(m or [])}" for _, f, m in FORMS])
def test_the_prebuilt_agent_as_returned_records_every_run_form_byte_for_byte_and_replays(
    entry: str, form: str, modes: list[str] | None, tmp_path: Path
) -> None:
    """``create_react_agent`` (compiled) with tools returning a pydantic model, a dataclass, a dict in its own
    key order, content and an artifact, and content blocks: the model gets the bytes an unrecorded run sends,
    and the graph the same ToolMessages."""
    marker = tmp_path / "tools-ran"
    with GraphModelServer(agents.weather_policy) as recorded_server, GraphModelServer(agents.weather_policy) as plain:
        task = {"question": QUESTION, "base_url": recorded_server.openai_url, "form": form, "modes": modes}
        journal = tmp_path / f"{form}.jsonl"
        outcome = _record(entry, {**task, "marker": str(marker)}, journal)
        assert marker.read_text().count("\n") == 5  # every tool ran once, while recording
        graph = agents.weather_graph(_plain_openai(plain.openai_url), asynchronous=entry == "weather_async")
        unrecorded = _run_unrecorded(agents.FORMS[form], graph, {**task, "base_url": plain.openai_url}, {})
        assert recorded_server.bodies() == plain.bodies()  # byte for byte, key order too
        assert len(recorded_server.bodies()) == 2
        assert _same_but_token_boundaries(outcome.output) == _same_but_token_boundaries(unrecorded)
        _replays_with_nothing_live(journal, recorded_server, marker)
    results = {e.payload["tool"]: e.payload["result"] for e in events(journal) if e.kind == "tool.result"}
    assert results["get_weather"]["content"] == "city='Paris' temperature_c=21.5 conditions='sunny'"
    assert results["get_forecast"]["content"] == "Forecast(city='Paris', days=['rain', 'sun'])"
    assert results["get_station"]["content"].startswith('{"zeta_id": "ST-PAR", "alpha_name"')
    assert results["get_alerts"]["content_json"] == '[{"type":"text","text":"no alerts for Paris"}]'
    assert results["get_radar"]["artifact_json"] == '{"zulu":[1,2],"alpha":{"y":1,"b":2}}'


def test_the_graph_gets_the_tool_messages_an_unrecorded_run_gets(tmp_path: Path) -> None:
    """Content, artifact (its key order too) and status of every ToolMessage in the recorded graph state equal
    the unrecorded run's."""
    with GraphModelServer(agents.weather_policy) as server, GraphModelServer(agents.weather_policy) as plain:
        journal = tmp_path / "weather.jsonl"
        _record("weather", {"question": QUESTION, "base_url": server.openai_url, "form": "invoke"}, journal)
        values = agents.weather_graph(_plain_openai(plain.openai_url)).invoke(
            agents.weather_inputs({"question": QUESTION})
        )
    unrecorded = [m for m in values["messages"] if m.type == "tool"]
    state: dict[str, Any] = {}
    for event in events(journal):
        if event.kind == "state.transition":
            from replay_tui.harness import apply_patch

            state = apply_patch(state, event.payload["patch"])
    recorded = [m["data"] for m in state["graph"]["messages"] if m["type"] == "tool"]
    assert [(m["content"], m["artifact"], m["status"]) for m in recorded] == [
        (m.content, m.artifact, m.status) for m in unrecorded
    ]
    radar = next(m for m in unrecorded if m.name == "get_radar")
    assert list(radar.artifact) == ["zulu", "alpha"]


def test_a_graph_run_without_the_recorders_config_is_recorded_all_the_same(tmp_path: Path) -> None:
    """``graph.ainvoke(inputs, {})`` inside a recorded run: the run's recorder attaches itself to the graph."""
    with GraphModelServer(agents.weather_policy) as server:
        journal = tmp_path / "plain-config.jsonl"
        task = {"question": QUESTION, "base_url": server.openai_url, "form": "ainvoke"}
        _record("weather_plain_config", task, journal)
        recorded = events(journal)
        assert [e.step_id for e in recorded if e.kind == "model.request"] == ["01:agent", "03:agent"]
        assert sum(e.kind == "tool.call" for e in recorded) == 5
        _replays_with_nothing_live(journal, server)


@pytest.mark.parametrize("entry", ["chat_stream", "chat_astream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_messages_mode_hands_each_token_over_as_it_arrives(entry: str, provider: str, tmp_path: Path) -> None:
    """The server sends the first text, then waits for the agent to have it before it sends the rest: a
    recorder that read the answer whole first would make it wait in vain. (The first text ends in a space:
    the recording relay cuts text only after whitespace, harness/STREAMING.md.)"""
    texts = ["Hello ", "there ", "you"]
    stream = chat_events(texts) if provider == "openai" else anthropic_events(texts)
    script, gate = gated(stream, first=2 if provider == "openai" else 3, timeout=5)
    server = StreamServer(lambda request: script)
    agents.TOKEN_GATE[:] = [gate]
    try:
        journal = tmp_path / f"{provider}.jsonl"
        outcome = _record(entry, {"base_url": server.url, "provider": provider}, journal)
        assert server.timed_out == 0
        assert "".join(outcome.output) == "Hello there you"
        code, replayed = replay_cli(journal)
        assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")
        assert len(server.received) == 1
    finally:
        agents.TOKEN_GATE.clear()
        server.close()


# -- item 3: parallel work stays parallel, steps and parents stay right, a replay matches ---------------


def _delay(seconds: dict[str, float]) -> Callable[[bytes], float]:
    def delay(raw: bytes) -> float:
        text = json.loads(raw)["messages"][-1]["content"]
        return next((value for key, value in seconds.items() if text.startswith(key)), 0.0)

    return delay


@pytest.mark.parametrize("entry", ["research", "research_async"])
def test_parallel_branches_send_fan_out_and_a_sub_graph_run_concurrently_with_their_own_steps(
    entry: str, tmp_path: Path
) -> None:
    """Two branches in one superstep, three ``Send`` tasks, a node running a sub-graph of two reviewers at
    once and then asking the model itself: the requests of a superstep are in flight together as
    unrecorded; each request and its answer are in the step of the node that made it, whichever thread or
    task it ran in and whichever parallel node ended last; the state after a parallel superstep hangs from
    the same observation whichever branch finished last."""
    causes = []
    for slow, fast in (("news about", "papers about"), ("papers about", "news about")):
        reviewers = {"critique": 0.3, "factcheck": 0.1} if slow == "news about" else {"critique": 0.1, "factcheck": 0.3}
        delay = _delay({slow: 0.4, fast: 0.2, "summarize": 0.3, **reviewers})
        with GraphModelServer(agents.research_policy, delay=delay) as server:
            journal = tmp_path / f"{entry}-{slow.split()[0]}.jsonl"
            _record(entry, {"question": "the Arctic", "base_url": server.openai_url}, journal)
            intervals = server.heard.intervals
            asked = [json.loads(body)["messages"][-1]["content"] for body in server.bodies()]
            groups = {
                "branches": [i for i, text in enumerate(asked) if text.startswith(("news about", "papers about"))],
                "fan-out": [i for i, text in enumerate(asked) if text.startswith("summarize")],
                "reviewers": [i for i, text in enumerate(asked) if text.startswith(("critique", "factcheck"))],
            }
            load = os.getloadavg()
            for name, group in groups.items():
                assert overlap([intervals[i] for i in group]) > 0.05, (name, intervals, load)
            recorded = events(journal)
            expected = {
                "news about": "01:news",
                "papers about": "01:papers",
                "critique": "05:review/01:critique",
                "factcheck": "05:review/01:factcheck",
                "polish": "05:review",
            }
            for event in recorded:
                if event.kind == "model.request":
                    text = event.payload["request"]["messages"][-1]["content"]
                    step = next((s for key, s in expected.items() if text.startswith(key)), None)
                    if text.startswith("summarize"):
                        step = f"03:summarize[{['ice', 'wind', 'sun'].index(text.split()[-1])}]"
                    assert event.step_id == step, (text, event.step_id)
                    answer = next(e for e in recorded if e.parent_event_id == event.event_id)
                    assert answer.kind == "model.response" and answer.step_id == step, (text, answer.step_id)
            transition = next(e for e in recorded if e.kind == "state.transition" and e.step_id == "01:news+papers")
            causes.append(next(e for e in recorded if e.seq == transition.payload["cause_seq"]).step_id)
            _replays_with_nothing_live(journal, server)
    assert causes == ["01:papers", "01:papers"]  # news finished last in the first recording, papers in the second


@pytest.mark.parametrize("entry", ["stock", "stock_async"])
def test_toolnode_runs_parallel_tool_calls_concurrently_as_unrecorded(entry: str, tmp_path: Path) -> None:
    """Three 0.3 s tools in one answer: ToolNode runs them in its threads (sync) or tasks (async), recorded as
    unrecorded; every result hangs from its call, and a replay (no tool runs) matches."""
    spans = {}
    with GraphModelServer(agents.stock_policy) as server:
        for recorded_run in (True, False):
            agents.TOOL_SPANS.clear()
            if recorded_run:
                journal = tmp_path / f"{entry}.jsonl"
                _record(entry, {"question": "stock?", "base_url": server.openai_url}, journal)
            else:
                lookup = agents.slow_lookup if entry == "stock" else agents.aslow_lookup
                graph = agents.stock_graph(_plain_openai(server.openai_url), lookup)
                run = graph.invoke if entry == "stock" else graph.ainvoke
                _run_unrecorded(run, {"messages": [("user", "stock?")]})
            tools = [(start, end) for _, start, end in agents.TOOL_SPANS]
            assert len(tools) == 3
            spans[recorded_run] = max(end for _, end in tools) - min(start for start, _ in tools)
            assert overlap(tools) > 0.2, (tools, os.getloadavg())
        recorded = events(journal)
        calls = {e.event_id: e.payload["call_id"] for e in recorded if e.kind == "tool.call"}
        assert all(calls[e.parent_event_id] == e.payload["call_id"] for e in recorded if e.kind == "tool.result")
        _replays_with_nothing_live(journal, server)
    assert spans[True] < 0.6 and spans[False] < 0.6, (spans, os.getloadavg())


def test_a_tool_that_returns_a_command_records_and_replays(tmp_path: Path) -> None:
    marker = tmp_path / "tools-ran"
    with GraphModelServer(agents.profile_policy) as server:
        journal = tmp_path / "profile.jsonl"
        task = {"question": "I am Ada", "base_url": server.openai_url, "marker": str(marker)}
        outcome = _record("profile", task, journal)
        assert outcome.output == {"user_name": "Ada", "answer": "Done: Remembered Ada"}
        result = next(e for e in events(journal) if e.kind == "tool.result").payload["result"]
        assert [key for key, _ in result["command"]["update"]] == ["user_name", "messages"]
        _replays_with_nothing_live(journal, server, marker)


# -- item 5: ChatAnthropic, streamed and not, in LangChain's create_agent with a checkpointer --------------


def _plain_anthropic(base_url: str) -> ChatAnthropic:
    return ChatAnthropic(model=agents.CLAUDE, base_url=base_url, api_key="sk-unrecorded", max_retries=0)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("entry", "modes"), [("claude", None), ("claude", ["messages", "values"]), ("claude_sync", None)]
)
def test_create_agent_on_chat_anthropic_records_byte_for_byte_and_replays(
    entry: str, modes: list[str] | None, tmp_path: Path
) -> None:
    """Two turns on one thread of ``create_agent`` (compiled, its InMemorySaver keeping the conversation):
    ``ainvoke``, ``astream`` in messages mode (Anthropic's stream relayed), and ``invoke`` + ``stream``."""
    with GraphModelServer(agents.weather_policy) as server, GraphModelServer(agents.weather_policy) as plain:
        journal = tmp_path / f"{entry}.jsonl"
        task = {"question": QUESTION, "base_url": server.anthropic_url, "modes": modes}
        outcome = _record(entry, task, journal)
        if entry == "claude":
            graph = agents.anthropic_agent(_plain_anthropic(plain.anthropic_url), asynchronous=True)
            unrecorded = asyncio.run(agents.two_turns(graph, {**task, "base_url": plain.anthropic_url}, {}))
        else:
            graph = agents.anthropic_agent(_plain_anthropic(plain.anthropic_url), asynchronous=False)
            config = {"configurable": {"thread_id": "t"}}
            first = agents.final_text(graph.invoke(agents.weather_inputs(task), config))
            chunks = list(
                graph.stream({"messages": [("user", "And in Oslo?")]}, config, stream_mode=["messages", "values"])
            )
            unrecorded = [first, agents.summary(chunks, ["messages", "values"])]
        assert server.bodies() == plain.bodies()
        assert len(server.bodies()) == 3  # tools, answer, then the second turn (with the first in its history)
        assert _same_but_token_boundaries(outcome.output) == _same_but_token_boundaries(unrecorded)
        assert all(path == "/v1/messages" for path, _ in server.heard.bodies)
        _replays_with_nothing_live(journal, server)


# -- what the recorder cannot see stops the recording, naming it -------------------------------------


@pytest.mark.parametrize(
    ("entry", "policy", "names"),
    [
        ("unrecorded_model", agents.weather_policy, ["ChatOpenAI(model='gpt-4.1-mini')", "node 'agent'", "ainvoke"]),
        ("tool_in_a_node", agents.weather_policy, ["tool 'get_weather' ran outside ToolNode", "node 'lookup'"]),
        ("model_in_a_tool", agents.expert_policy, ["tool 'ask_expert' called ChatOpenAI"]),
    ],
)
def test_a_call_the_recorder_cannot_see_fails_the_recording_naming_it(
    entry: str, policy: Any, names: list[str], tmp_path: Path
) -> None:
    marker = tmp_path / "tools-ran"
    with GraphModelServer(policy) as server:
        journal = tmp_path / f"{entry}.jsonl"
        task = {"question": QUESTION, "base_url": server.openai_url, "marker": str(marker)}
        outcome = record_run(CONFIG, f"{ENTRY}:{entry}", [task], journal=journal)
        assert outcome.status == "error"
        assert all(name in str(outcome.error) for name in names), outcome.error
        ended = events(journal)[-1]
        assert ended.kind == "run.ended" and ended.payload["status"] == "error"
        if entry != "model_in_a_tool":
            assert server.bodies() == [] if entry == "unrecorded_model" else True
            assert not marker.exists()  # refused before the tool ran


# -- a one-line change diverges at the right step, naming the field --------------------------------


@pytest.mark.parametrize(
    ("entry", "variant", "task", "step", "field"),
    [
        ("weather", "weather_other_prompt", {"form": "invoke"}, "01:agent", "['messages'][0]['content']"),
        ("research_async", "research_other_topic", {}, "02:plan", 'changed from "wind" to "fog"'),
    ],
)
def test_a_one_line_change_diverges_at_the_right_step_naming_the_field(
    entry: str, variant: str, task: dict[str, Any], step: str, field: str, tmp_path: Path
) -> None:
    policy = agents.weather_policy if entry == "weather" else agents.research_policy
    with GraphModelServer(policy) as server:
        journal = tmp_path / f"{entry}.jsonl"
        _record(entry, {"question": QUESTION, "base_url": server.openai_url, **task}, journal)
    code, outcome = replay_cli(journal, "--agent", f"{ENTRY}:{variant}")
    assert (code, outcome["status"]) == (1, "diverged"), outcome
    divergence = outcome["divergence"]
    assert divergence["step"] == step, divergence
    assert any(field in line for line in divergence["diff_lines"]), divergence["diff_lines"]


# -- GraphAgent over a compiled graph; a hostile journal --------------------------------------------


def test_graph_agent_takes_a_compiled_graph_and_resumes_it_from_a_snapshot(tmp_path: Path) -> None:
    with GraphModelServer(agents.weather_policy) as server:
        journal = tmp_path / "steps.jsonl"
        _record("react_steps", {"question": QUESTION, "base_url": server.openai_url}, journal)
        recorded = events(journal)
        assert sorted({e.step_id for e in recorded if e.kind == "model.request"}) == ["step-01:agent", "step-03:agent"]
        _replays_with_nothing_live(journal, server)
        snapshot = next(e for e in recorded if e.kind == "state.snapshot")
        code, outcome = replay_cli(journal, "--from-seq", str(snapshot.seq + 2))
        assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")


def test_graph_agent_names_a_parallel_superstep_by_all_its_nodes_whichever_started_last(tmp_path: Path) -> None:
    """A ``GraphAgent`` step that ran two branches: each request in its branch's step, the state after it in
    ``step-01:news+papers`` (was the step of whichever branch named it last) hanging from the same
    observation in every recording."""
    causes = []
    for slow in ("news about", "papers about"):
        delay = _delay({slow: 0.3, "summarize": 0.1})
        with GraphModelServer(agents.research_policy, delay=delay) as server:
            journal = tmp_path / f"steps-{slow.split()[0]}.jsonl"
            _record("research_steps", {"question": "the Arctic", "base_url": server.openai_url}, journal)
            recorded = events(journal)
            requests = {
                e.payload["request"]["messages"][-1]["content"].split()[0]: e.step_id
                for e in recorded
                if e.kind == "model.request"
            }
            assert requests["news"] == "step-01:news" and requests["papers"] == "step-01:papers"
            first = next(
                e for e in recorded if e.kind == "state.transition" and e.step_id and e.step_id.startswith("step-01")
            )
            assert first.step_id == "step-01:news+papers"
            causes.append(next(e for e in recorded if e.seq == first.payload["cause_seq"]).step_id)
    assert causes == ["step-01:papers", "step-01:papers"]
    _replays_with_nothing_live(journal, server)


def test_a_journal_whose_ordered_text_is_not_its_value_is_refused_at_that_seq(tmp_path: Path) -> None:
    """``content_json`` must be the content it orders: a journal that hands the graph other blocks than the
    viewer shows ends the replay on a journal error naming the seq and the field."""
    with GraphModelServer(agents.weather_policy) as server:
        journal = tmp_path / "weather.jsonl"
        _record("weather", {"question": QUESTION, "base_url": server.openai_url, "form": "invoke"}, journal)
    target: list[int] = []

    def edit(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for line in lines:
            result = line["payload"].get("result") if line["kind"] == "tool.result" else None
            if isinstance(result, dict) and "content_json" in result:
                result["content_json"] = '[{"type":"text","text":"all clear, go outside"}]'
                target.append(line["seq"])
        return lines

    hostile = rechained_copy(journal, tmp_path / "hostile.jsonl", edit)
    code, outcome = replay_cli(hostile)
    assert (code, outcome["status"], outcome["error"]["kind"]) == (2, "error", "journal"), outcome
    assert f"seq {target[0]}" in outcome["error"]["message"] and "content_json" in outcome["error"]["message"]


def test_state_view_keeps_what_the_journal_can_hold() -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    blocks = [{"type": "text", "text": "a", "id": "lc_0e4b0032"}, {"type": "text", "text": "b", "id": "rs_7"}]
    view = state_view(
        {
            "messages": [HumanMessage("hi", id="x"), ToolMessage(blocks, tool_call_id="call_1")],
            "weather": agents.Weather(city="Oslo", temperature_c=1, conditions="fog"),
            "lock": object(),
        }
    )
    assert "id" not in view["messages"][0]["data"]
    # LangChain's own (uuid4) ids of content blocks go, a provider's stay
    assert view["messages"][1]["data"]["content"] == [{"type": "text", "text": "a"}, {**blocks[1]}]
    assert view["weather"] == {"city": "Oslo", "temperature_c": 1.0, "conditions": "fog"}
    assert view["lock"] == "<object>"


def test_tools_another_recorder_keeps_run_as_they_are(tmp_path: Path) -> None:
    """The seam for MCP tools: a tool picked by ``tools_recorded_elsewhere`` runs in ToolNode unrecorded by
    this recorder (its own records it), the others as always."""
    from replay_tui.harness.frameworks.langgraph import tools_recorded_elsewhere

    marker = tmp_path / "tools-ran"
    remove = tools_recorded_elsewhere(lambda tool: tool.name == "get_radar")
    try:
        with GraphModelServer(agents.weather_policy) as server:
            journal = tmp_path / "seam.jsonl"
            task = {"question": QUESTION, "base_url": server.openai_url, "form": "invoke", "marker": str(marker)}
            _record("weather", task, journal)
    finally:
        remove()
    called = sorted(e.payload["tool"] for e in events(journal) if e.kind == "tool.call")
    assert called == ["get_alerts", "get_forecast", "get_station", "get_weather"]
    assert "get_radar" in marker.read_text()


def test_concurrent_service_sessions_record_their_own_graphs_and_replay(tmp_path: Path) -> None:
    """Three sessions of a service (``record_session`` in one running event loop) run the prebuilt agent at
    once: each journal holds its own session's calls in its own steps, and replays to a match."""
    from replay_tui.harness import record_session

    journals = tmp_path / "sessions"

    async def session(server: Any, number: int) -> Any:
        task = {"question": f"Weather in City{number}?", "base_url": server.openai_url, "form": "ainvoke"}
        async with record_session(
            CONFIG, directory=journals, session_id=f"s{number}", agent=f"{ENTRY}:weather_async", input=task
        ) as h:
            return await h.session.run()

    async def all_sessions(server: Any) -> list[Any]:
        return await asyncio.gather(*(session(server, number) for number in range(3)))

    with GraphModelServer(agents.weather_policy) as server:
        answers = asyncio.run(all_sessions(server))
        assert [f"City{n}" in answer for n, answer in enumerate(answers)] == [True] * 3
        for number in range(3):
            recorded = events(journals / f"s{number}")
            requests = [e for e in recorded if e.kind == "model.request"]
            assert [e.step_id for e in requests] == ["01:agent", "03:agent"]
            assert all(f"City{number}" in json.dumps(e.payload) for e in requests)  # (info level: the summary)
            assert sum(e.kind == "tool.call" for e in recorded) == 5
        _replays_with_nothing_live(journals / "s1", server)


def test_an_interrupt_in_a_node_and_its_resume_record_and_replay(tmp_path: Path) -> None:
    """Human in the loop as LangGraph's docs show it: a node calls interrupt(), the run resumes the thread with
    Command(resume=...) (the second graph run of the recording, its steps graph-2/...)."""
    with GraphModelServer(agents.research_policy) as server:
        journal = tmp_path / "approval.jsonl"
        outcome = _record("approval", {"question": "Draft a reply", "base_url": server.openai_url}, journal)
        assert outcome.output == {"paused_on": {"draft": "on Draft a reply"}, "answer": "on reviewer says: approved"}
        steps = [e.step_id for e in events(journal) if e.kind == "model.request"]
        assert steps == ["01:draft", "graph-2/03:final"]
        _replays_with_nothing_live(journal, server)
