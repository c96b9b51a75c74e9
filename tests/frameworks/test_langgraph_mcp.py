"""LangGraph agents on MCP tools (``langchain-mcp-adapters``' ``MultiServerMCPClient``) against the real FastMCP server
of ``mcp_server.py``, recorded with the LangGraph recorder's lines only: the MCP sessions are recorded once, at the
MCP seam (ToolNode hands MCP tools through, it does not record them again), the parallel calls overlap on the
server, the model gets the bytes of an unrecorded run, and a strict replay through the CLI matches with no server
started and no model reached."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.fastmcp", reason="the MCP recorder is tested on the mcp package's FastMCP server")
pytest.importorskip("langchain_mcp_adapters", reason="LangGraph's MCP tools come from langchain-mcp-adapters")

from replay_tui.harness import record_run  # noqa: E402
from replay_tui.journal import verify_journal  # noqa: E402

from . import graph_mcp_agents  # noqa: E402
from .conftest import CONFIG, events, replay_cli  # noqa: E402
from .mcp_server import HTTPServer  # noqa: E402
from .test_mcp import http, model, overlapping, replay_with_no_server, server_log, stdio, tool_names  # noqa: E402, F401

QUESTION = "parallel: lookup count_down slow_echo slow_echo"


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("entry", ["react_agent", "tool_node_graph"])
def test_a_graph_on_mcp_tools_records_them_once_and_replays_with_no_server(
    entry: str, transport: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # (test_mcp's fixtures: the scripted model, the stdio server behind a launcher and its log, the HTTP server)
    scripted, launched, log = (request.getfixturevalue(name) for name in ("model", "stdio", "server_log"))
    server: HTTPServer | None = request.getfixturevalue("http") if transport == "http" else None
    task = {
        "base_url": scripted.url,
        "server": launched if server is None else {"url": server.url},
        "question": QUESTION,
    }
    journal = tmp_path / f"{entry}.jsonl"
    outcome = record_run(CONFIG, f"tests.frameworks.graph_mcp_agents:{entry}", [task], journal=journal, run_id=entry)
    assert outcome.status == "ok", outcome.error
    assert verify_journal(journal).ok
    assert "echo: a" in outcome.output and "echo: b" in outcome.output and "counted down from 3" in outcome.output
    # each MCP tool call is recorded once, at the MCP seam, in the step of the ToolNode that made it
    recorded = events(journal)
    _ran_in_parallel(entry, recorded, log if server is None else None)
    calls = [event for event in recorded if event.kind == "tool.call"]
    assert all(event.payload["tool"].startswith("mcp:") for event in calls), tool_names(journal)
    tool_calls = [event for event in calls if " tools/call " in event.payload["tool"]]
    assert sorted(event.payload["tool"].rsplit(" ", 1)[-1] for event in tool_calls) == [
        "count_down",
        "lookup",
        "slow_echo",
        "slow_echo",
    ]
    # (create_react_agent sends each call to ToolNode as a task of its own: 02:tools[i])
    assert all(str(event.step_id).startswith("02:tools") for event in tool_calls), [e.step_id for e in tool_calls]
    requests = [event for event in recorded if event.kind == "model.request"]
    assert len(requests) == 2

    recorded_bodies = list(scripted.raw)
    scripted.raw.clear()
    assert asyncio.run(getattr(graph_mcp_agents, entry)(None, task)) == outcome.output
    assert scripted.raw == recorded_bodies  # byte for byte, the tools' schemas in the server's member order

    code, replayed = replay_with_no_server(journal, launched, log, server)
    assert (code, replayed["status"]) == (0, "match"), json.dumps(replayed.get("divergence") or replayed.get("error"))
    assert replayed["consumed"] == replayed["total"] == len(recorded)
    assert replayed["refusals"] == []
    assert scripted.raw == recorded_bodies  # (the unrecorded run's, unchanged: the replay reached no model)


def _ran_in_parallel(entry: str, recorded: list[Any], log: Path | None) -> None:
    """ToolNode's four MCP calls were in flight together while recording. On one session kept open (stdio): the two
    slow calls overlap on the server. With a session per call (each a server process of its own over stdio, whose
    start under load can outlast a call): every call's session opened before the first of them closed (a
    session's connect result is written when it closes: the journal's seqs are the order things happened)."""
    if entry == "tool_node_graph":
        if log is not None:
            assert overlapping(log)
        return
    connects = [e for e in recorded if str(e.payload.get("tool")).endswith(" connect")]
    opened = [e.seq for e in connects if e.kind == "tool.call"][1:]  # (the first session lists the tools)
    closed = [e.seq for e in connects if e.kind == "tool.result"][1:]
    assert len(opened) == 4 and max(opened) < min(closed), (opened, closed)


def test_a_graph_that_does_not_use_the_recorder_records_as_without_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The recorder's hooks are the process's: once they are in, a graph of a run that never set the recorder up
    (``mcp_agents.langgraph``: its own ``ChatOpenAI`` on the harness's client, ``create_agent``) is left as it is,
    so its journal is the one its replay (a process without the hooks) makes: no state, MCP tools not recorded
    twice."""
    from replay_tui.harness.frameworks.langgraph import instrument

    instrument()
    scripted, http_server = request.getfixturevalue("model"), request.getfixturevalue("http")
    task = {"base_url": scripted.url, "server": {"url": http_server.url}, "question": "call: lookup"}
    journal = tmp_path / "plain.jsonl"
    outcome = record_run(CONFIG, "tests.frameworks.mcp_agents:langgraph", [task], journal=journal, run_id="plain")
    assert outcome.status == "ok", outcome.error
    recorded = events(journal)
    assert not [event for event in recorded if event.kind == "state.transition"]
    assert all(event.payload["tool"].startswith("mcp:") for event in recorded if event.kind == "tool.call")
    code, replayed = replay_cli(journal)
    assert (code, replayed["status"]) == (0, "match"), json.dumps(replayed.get("divergence") or replayed.get("error"))
