"""MCP sessions recorded at the ClientSession seam and replayed strictly with no server: the raw client with
every callback, and the Agents SDK, PydanticAI and LangGraph (langchain-mcp-adapters) agents over stdio and
streamable HTTP against a real FastMCP server (``mcp_server.py``), compared with their unrecorded runs byte for
byte, in parallel, changed by one line, and live in a tools-live experiment."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.fastmcp", reason="the MCP recorder is tested on the mcp package's FastMCP server")

from replay_tui.harness import record_run  # noqa: E402

from . import mcp_agents  # noqa: E402
from .conftest import CONFIG, events, replay_cli  # noqa: E402
from .mcp_model import ScriptedModel  # noqa: E402
from .mcp_server import HTTPServer  # noqa: E402

SERVER_SCRIPT = Path(__file__).resolve().parent / "mcp_server.py"
RAW_PLAN = [
    ["lookup", {"query": "Acme", "limit": 1}],
    ["count_down", {"steps": 2}],
    ["ask_model", {"question": "What is 6 x 7?"}],
    ["confirm", {"action": "refund"}],
    ["where_am_i", {}],
    ["broken", {}],
    ["no_such_tool", {}],
]


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel()
    yield server
    server.close()


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    log = tmp_path / "server.log"
    log.touch()
    return log


@pytest.fixture
def stdio(tmp_path: Path, server_log: Path) -> dict[str, Any]:
    """The server over stdio, started through a launcher that is removed before each replay: a replay that
    started the server would fail to."""
    launcher = tmp_path / "crm-server"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVER_SCRIPT}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return {"command": str(launcher), "args": [], "env": {"MCP_TEST_LOG": str(server_log)}}


@pytest.fixture
def http() -> Iterator[HTTPServer]:
    server = HTTPServer()
    yield server
    server.close()


def record(entry: str, task: dict[str, Any], journal: Path) -> Any:
    outcome = record_run(CONFIG, f"tests.frameworks.mcp_agents:{entry}", [task], journal=journal, run_id=entry)
    assert outcome.status == "ok", outcome.error
    return outcome


def started_servers(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if json.loads(line)["event"] == "start")


def tool_names(journal: Path) -> list[str]:
    return [event.payload["tool"] for event in events(journal) if event.kind == "tool.call"]


def replay_without_server(journal: Path, stdio: dict[str, Any], log: Path, *args: str) -> tuple[int, Any]:
    Path(stdio["command"]).unlink(missing_ok=True)
    lines = log.read_text()
    code, outcome = replay_cli(journal, *args)
    assert log.read_text() == lines  # no server started, no tool ran
    return code, outcome


def replay_with_no_server(
    journal: Path, stdio: dict[str, Any], log: Path, http: HTTPServer | None, *args: str
) -> tuple[int, Any]:
    """A strict replay through the CLI that starts no server: over stdio (``http`` None) its launcher removed and
    nothing logged, over HTTP no request reaching it."""
    if http is None:
        return replay_without_server(journal, stdio, log, *args)
    requests_before = http.requests
    code, outcome = replay_cli(journal, *args)
    assert http.requests == requests_before  # no connection reached the server
    return code, outcome


def replays_with_no_server(journal: Path, stdio: dict[str, Any], log: Path, http: HTTPServer | None) -> dict[str, Any]:
    """``replay_with_no_server`` that matched, every event consumed, nothing refused."""
    code, replayed = replay_with_no_server(journal, stdio, log, http)
    assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")
    assert replayed["consumed"] == replayed["total"] and replayed["refusals"] == []
    return replayed


def test_the_client_session_records_every_message_and_replays_with_no_server(
    tmp_path: Path, model: ScriptedModel, stdio: dict[str, Any], server_log: Path
) -> None:
    journal = tmp_path / "raw.jsonl"
    task = {"base_url": model.url, "server": stdio, "plan": RAW_PLAN}
    outcome = record("raw_session", task, journal)
    assert outcome.output["outputs"][2:5] == [
        "ok: the model said: 42",  # the server sampled the client's model, which answered through the harness
        "ok: refund: approved=True (by the desk)",
        "ok: file:///srv/crm",
    ]
    assert outcome.output["outputs"][5].startswith("error: Error executing tool broken")
    assert outcome.output["seen"] == ["progress 1/2 step 1", "progress 2/2 step 2", "log info: counted 2"]
    recorded = events(journal)
    names = tool_names(journal)
    assert names[:4] == ["mcp:crm connect", "mcp:crm initialize", "mcp:crm notify notifications/initialized"] + [
        "mcp:crm tools/list"
    ]
    for asked in ("sampling/createMessage", "elicitation/create", "roots/list"):
        assert f"mcp:crm reply {asked}" in names
    # the sampling answer is the client's: its model call sits inside the tool call that asked for it
    kinds = [(event.kind, event.payload.get("tool")) for event in recorded]
    ask = kinds.index(("tool.call", "mcp:crm tools/call ask_model"))
    assert kinds[ask + 1 : ask + 4] == [
        ("model.request", None),
        ("model.response", None),
        ("tool.call", "mcp:crm reply sampling/createMessage"),
    ]
    reply = next(e for e in recorded if e.payload.get("tool") == "mcp:crm reply elicitation/create")
    assert reply.payload["arguments"]["request"]["message"] == "Approve refund?"
    assert reply.payload["arguments"]["result"] == {
        "action": "accept",
        "content": {"approved": True, "note": "by the desk"},
    }
    # the answer keeps the server's member order (the schema's properties: query before limit)
    listed = next(e for e in recorded if e.kind == "tool.result" and e.payload["tool"] == "mcp:crm tools/list")
    assert '"properties":{"query":' in listed.payload["result"]
    unknown = next(e for e in recorded if e.kind == "tool.result" and e.payload["tool"].endswith("no_such_tool"))
    assert "no_such_tool" in json.dumps(unknown.payload)
    kept = recorded[-2].payload  # the session's own result, written when it closed
    assert kept["tool"] == "mcp:crm connect"
    methods = [json.loads(m["message"])["method"] for m in kept["result"]["messages"] if "message" in m]
    assert methods.count("notifications/progress") == 2 and "sampling/createMessage" in methods
    assert started_servers(server_log) == 1

    code, replayed = replay_without_server(journal, stdio, server_log)
    assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")
    assert replayed["consumed"] == replayed["total"] == len(recorded)
    assert replayed["refusals"] == [] and replayed["isolation"]["network_namespace"]


def test_a_callback_that_answers_the_server_differently_diverges_at_its_reply(
    tmp_path: Path, model: ScriptedModel, stdio: dict[str, Any], server_log: Path
) -> None:
    journal = tmp_path / "raw.jsonl"
    record("raw_session", {"base_url": model.url, "server": stdio, "plan": RAW_PLAN[3:4]}, journal)
    reply = next(e for e in events(journal) if e.payload.get("tool") == "mcp:crm reply elicitation/create")
    code, replayed = replay_without_server(
        journal, stdio, server_log, "--agent", "tests.frameworks.mcp_agents:raw_session_declining"
    )
    assert (code, replayed["status"]) == (1, "diverged")
    divergence = replayed["divergence"]
    assert divergence["seq"] == reply.seq
    assert "call_key differs" in divergence["reason"]
    assert "approved" in " ".join(divergence["diff_lines"])


FRAMEWORK_QUESTIONS = {
    # parallel tool calls in one answer: the slow ones overlap on the server, while recording too
    "agents_sdk": "parallel: lookup count_down slow_echo slow_echo",
    "pydantic_ai": "parallel: lookup count_down slow_echo slow_echo ask_model",
    "langgraph": "parallel: lookup count_down slow_echo slow_echo",
}


def overlapping(log: Path) -> bool:
    spans = sorted(
        (record["start"], record["end"])
        for record in map(json.loads, log.read_text().splitlines())
        if record.get("tool") == "slow_echo"
    )
    return len(spans) >= 2 and spans[1][0] < spans[0][1]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("framework", sorted(FRAMEWORK_QUESTIONS))
def test_a_framework_agent_sends_what_it_sends_unrecorded_and_replays_with_no_server(
    framework: str,
    transport: str,
    tmp_path: Path,
    model: ScriptedModel,
    stdio: dict[str, Any],
    server_log: Path,
    request: pytest.FixtureRequest,
) -> None:
    http: HTTPServer | None = request.getfixturevalue("http") if transport == "http" else None
    server = stdio if http is None else {"url": http.url}
    task = {"base_url": model.url, "server": server, "question": FRAMEWORK_QUESTIONS[framework]}
    journal = tmp_path / f"{framework}.jsonl"
    outcome = record(framework, task, journal)
    assert "echo: a" in outcome.output and "echo: b" in outcome.output and "counted down from 3" in outcome.output
    if transport == "stdio":
        assert overlapping(server_log)  # the parallel calls ran in parallel while recording
    recorded_requests = list(model.raw)
    model.raw.clear()
    assert asyncio.run(getattr(mcp_agents, framework)(None, task)) == outcome.output
    assert recorded_requests == model.raw  # byte for byte, tool schemas in the server's member order included
    names = tool_names(journal)
    assert names[0] == "mcp:crm connect" and "mcp:crm tools/list" in names
    assert sum(name.startswith("mcp:crm tools/call slow_echo") for name in names) == 2

    replays_with_no_server(journal, stdio, server_log, http)


def test_a_changed_client_capability_diverges_at_initialize(
    tmp_path: Path, model: ScriptedModel, stdio: dict[str, Any], server_log: Path
) -> None:
    """PydanticAI without ``sampling_model`` (one line): the client offers the server no sampling."""
    journal = tmp_path / "pydantic_ai.jsonl"
    record("pydantic_ai", {"base_url": model.url, "server": stdio, "question": "call: lookup"}, journal)
    initialize = next(e for e in events(journal) if e.payload.get("tool") == "mcp:crm initialize")
    assert initialize.payload["arguments"]["capabilities"] == {"sampling": {}}
    code, replayed = replay_without_server(
        journal, stdio, server_log, "--agent", "tests.frameworks.mcp_agents:pydantic_ai_without_sampling"
    )
    assert (code, replayed["status"]) == (1, "diverged")
    assert replayed["divergence"]["seq"] == initialize.seq
    assert "sampling" in " ".join(replayed["divergence"]["diff_lines"])


def test_tools_live_runs_the_mcp_servers_again(tmp_path: Path, model: ScriptedModel, http: HTTPServer) -> None:
    """Recorded model answers, live MCP tools: the stdio server starts in the sandbox (its pid is new), the HTTP
    one is reached through the broker, for the hosts the tools config names."""
    journal = tmp_path / "live.jsonl"
    stdio_server = {"command": sys.executable, "args": [str(SERVER_SCRIPT)], "env": {}}
    record("agents_sdk", {"base_url": model.url, "server": stdio_server, "question": "call: server_pid"}, journal)
    recorded_pid = next(
        e for e in events(journal) if e.payload.get("tool", "").endswith("server_pid") and "result" in e.payload
    )
    config = tmp_path / "tools.toml"
    config.write_text("[harness]\nsnapshot_every = 1000\n")
    out = tmp_path / "live-out.jsonl"
    code, outcome = replay_cli(journal, "--mode", "tools-live", "--tools-config", str(config), "--out", str(out))
    # the live pid is in the next model request, which the journal has no answer to: the experiment says so
    assert (code, outcome["status"]) == (1, "unrecorded_call"), outcome.get("error")
    assert outcome["experiment"]["stopped"]["kind"] == "model.response"
    live_pid = next(
        e for e in events(out) if e.payload.get("tool", "").endswith("server_pid") and "result" in e.payload
    )
    assert live_pid.payload["result"] != recorded_pid.payload["result"]  # another process answered

    journal = tmp_path / "live-http.jsonl"
    record("agents_sdk", {"base_url": model.url, "server": {"url": http.url}, "question": "call: lookup"}, journal)
    config.write_text(
        '[[plugins]]\nid = "mcp"\ntype = "replay_tui.harness.frameworks.mcp.live:MCPServers"\n'
        f'options = {{ urls = ["{http.url}"] }}\n'
    )
    before = http.requests
    out = tmp_path / "live-http-out.jsonl"
    code, outcome = replay_cli(journal, "--mode", "tools-live", "--tools-config", str(config), "--out", str(out))
    assert (code, outcome["status"]) == (0, "match"), outcome.get("error") or outcome.get("experiment")
    assert http.requests > before and outcome["refusals"] == []
    assert any(call["kind"] == "tool.result" for call in outcome["live_calls"])


def test_a_journal_whose_kept_messages_are_not_messages_is_a_journal_error(
    tmp_path: Path, model: ScriptedModel, stdio: dict[str, Any], server_log: Path
) -> None:
    from tests.replay.helpers import rechained_copy

    journal = tmp_path / "raw.jsonl"
    record("raw_session", {"base_url": model.url, "server": stdio, "plan": RAW_PLAN[1:2]}, journal)
    kept = next(e for e in events(journal) if e.kind == "tool.result" and e.payload["tool"] == "mcp:crm connect")

    def spoil(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for event in lines:
            if event["seq"] == kept.seq:
                event["payload"]["result"]["messages"][0]["message"] = "\x1b]0;not json"
        return lines

    spoiled = rechained_copy(journal, tmp_path / "spoiled.jsonl", spoil)
    code, replayed = replay_without_server(spoiled, stdio, server_log)
    assert code != 0 and replayed["status"] != "match"
    assert f"seq {kept.seq}" in json.dumps(replayed) or str(kept.seq) in json.dumps(replayed.get("error"))


def test_the_recorder_is_inert_outside_a_run(stdio: dict[str, Any], server_log: Path) -> None:
    """Without a run, a framework's MCP server works as it does without replay-tui (the transport is its own)."""
    from mcp.client.stdio import stdio_client

    from replay_tui.harness.frameworks.mcp.glue import transport_for

    params = mcp_agents.stdio_params(stdio)
    assert type(transport_for("crm", "stdio", lambda: stdio_client(params), 2)) is type(stdio_client(params))


def test_a_replay_stop_inside_a_task_group_ends_the_run_as_the_stop(tmp_path: Path) -> None:
    """A framework's task group wraps what its tasks raise in an exception group: a replay's stop in one is the
    run's stop (no run.ended, a divergence in a replay), not an agent error."""
    from replay_tui.harness import Harness, JsonlSink, StopRun, run_agent

    harness = Harness(sink=JsonlSink(tmp_path / "stop.jsonl", run_id="stop"), run_id="stop")
    with pytest.raises(StopRun, match="the replay stopped here"):
        run_agent("tests.frameworks.mcp_agents:stops_in_a_task_group", harness, ["go"])
    assert [event.kind for event in events(tmp_path / "stop.jsonl")] == ["run.started", "input.received"]
