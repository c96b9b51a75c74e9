"""An Agents SDK agent with ``mcp_servers`` recorded with ``with recording(h):`` only (no ``record_mcp()``), on
its own model (the Responses API), against the real FastMCP server: the model gets the bytes an unrecorded run
sends it, the MCP tool calls run in parallel and are recorded once (at the MCP session, not again as function
tools), and a strict replay through the CLI matches with the server's launcher removed and no model call; a
server connected outside the recorded run fails the recording, naming it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled

pytest.importorskip("mcp.server.fastmcp", reason="the MCP recorder is tested on the mcp package's FastMCP server")

from fixtures.agents.loopback_openai import LoopbackOpenAI, Reply, Turn  # noqa: E402
from replay_tui.harness import record_session  # noqa: E402
from replay_tui.harness.frameworks.common import UnrecordableCall  # noqa: E402

from . import sdk_mcp, test_mcp  # noqa: E402
from .conftest import CONFIG, events  # noqa: E402
from .mcp_server import HTTPServer  # noqa: E402
from .test_agents_sdk_patterns import KEY, recorded_like_plain  # noqa: E402
from .test_mcp import overlapping, replay_with_no_server, tool_names  # noqa: E402

# the MCP tests' fixtures: the server over stdio (its launcher removed before a replay), its log, over HTTP
stdio, server_log, http = test_mcp.stdio, test_mcp.server_log, test_mcp.http

PARALLEL = (("lookup", {"query": "Acme", "limit": 1}), ("slow_echo", {"text": "a", "delay": 0.4}))
PARALLEL += (("slow_echo", {"text": "b", "delay": 0.4}),)


def crm_policy(turn: Turn) -> Reply:
    """All three MCP tools in the first answer, then what they said."""
    if not turn.calls:
        return Reply(calls=PARALLEL)
    return Reply(text="done: " + " | ".join(output.output for output in turn.outputs))


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackOpenAI]:
    """The agent's model; recording needs the client's key, and the unrecorded run uploads no trace."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    set_tracing_disabled(True)
    with LoopbackOpenAI(crm_policy) as server:
        yield server


def replay_touching_nothing(
    journal: Path, model: LoopbackOpenAI, stdio: dict[str, Any], log: Path, http: HTTPServer | None, *args: str
) -> tuple[int, Any]:
    """``replay_with_no_server``, and no connection to the model either."""
    connections = model.connections
    code, outcome = replay_with_no_server(journal, stdio, log, http, *args)
    assert model.connections == connections
    return code, outcome


@pytest.mark.parametrize(
    ("transport", "streamed"), [("stdio", False), ("http", True)], ids=["stdio-run", "http-streamed"]
)
def test_an_agent_with_mcp_servers_records_with_recording_only_and_replay_touching_nothing(
    transport: str,
    streamed: bool,
    model: LoopbackOpenAI,
    stdio: dict[str, Any],
    server_log: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    served: HTTPServer | None = request.getfixturevalue("http") if transport == "http" else None
    server = stdio if served is None else {"url": served.url}
    task = {"base_url": model.url, "server": server, "question": "Find Acme, echo a and b.", "streamed": streamed}
    journal = tmp_path / f"mcp-{transport}.jsonl"
    plain, outcome = recorded_like_plain(model, sdk_mcp.main, "tests.frameworks.sdk_mcp:recorded", task, journal)
    assert outcome.output == plain and "echo: a" in plain and "echo: b" in plain and "Acme GmbH" in plain
    assert {request.path for request in model.requests} == {"/v1/responses"}  # the agent's own model, not swapped
    assert all(bool(request.body.get("stream")) == streamed for request in model.requests)
    if served is None:
        assert overlapping(server_log)  # the two slow calls ran at once on the server while recording
    names = tool_names(journal)
    assert names[0] == "mcp:crm connect" and "mcp:crm tools/list" in names
    assert sum(name.startswith("mcp:crm tools/call slow_echo") for name in names) == 2
    assert not {"lookup", "slow_echo"} & set(names)  # recorded at the MCP session, not again as function tools

    code, replayed = replay_touching_nothing(journal, model, stdio, server_log, served)
    assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")
    assert replayed["consumed"] == replayed["total"] == len(events(journal))
    assert replayed["refusals"] == [] and replayed["isolation"]["network_namespace"]

    if served is None:  # one line of the instructions changed: the first model request diverges, naming them
        code, changed = replay_touching_nothing(
            journal, model, stdio, server_log, None, "--agent", "tests.frameworks.sdk_mcp:recorded_terse"
        )
        assert (code, changed["status"]) == (1, "diverged")
        first_request = next(event for event in events(journal) if event.kind == "model.request")
        assert changed["divergence"]["seq"] == first_request.seq
        assert changed["divergence"]["step"] == "turn-01:CRM desk"
        assert any("['instructions']" in line for line in changed["divergence"]["diff_lines"])


def test_an_mcp_server_connected_outside_the_run_fails_the_recording(
    model: LoopbackOpenAI, stdio: dict[str, Any], tmp_path: Path
) -> None:
    """A service that connects its MCP server once at start-up, outside the sessions it records: the session's
    calls would go out unrecorded, so the run fails before its first model call, naming the server."""
    task = {"base_url": model.url, "question": "Find Acme, echo a and b."}

    async def service() -> Any:
        async with sdk_mcp.server_of(stdio) as server:
            sdk_mcp.SHARED = server
            try:
                async with record_session(
                    CONFIG,
                    directory=tmp_path,
                    session_id="s1",
                    agent="tests.frameworks.sdk_mcp:recorded_shared",
                    input=task,
                ) as h:
                    return await h.session.run()
            finally:
                sdk_mcp.SHARED = None

    with pytest.raises(UnrecordableCall, match="the MCP server 'crm' .* connected outside the recorded run"):
        asyncio.run(service())
    assert model.requests == []
