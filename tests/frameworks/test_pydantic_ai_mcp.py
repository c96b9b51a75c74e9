"""A PydanticAI agent with an ``MCPToolset`` on a real FastMCP server (``mcp_server.py``), recorded with
``recording()`` and nothing else: its MCP calls at the MCP seam (not twice), the model calls the server samples
through the toolset's ``sampling_model`` through the harness, the model sent what an unrecorded run sends byte for
byte, and a strict replay through the CLI that matches with the server's launcher removed (stdio) or its request
count unchanged (HTTP), the model server hearing nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server.fastmcp", reason="the MCP recorder is tested on the mcp package's FastMCP server")
pytest.importorskip("pydantic_ai.mcp", reason="PydanticAI's MCPToolset needs fastmcp")

from replay_tui.harness import record_run  # noqa: E402

from . import pydantic_ai_mcp_agents  # noqa: E402
from .conftest import CONFIG, events  # noqa: E402
from .mcp_model import ScriptedModel  # noqa: E402
from .mcp_server import HTTPServer  # noqa: E402
from .test_mcp import (  # noqa: E402, F401 (fixtures)
    http,
    model,
    overlapping,
    replays_with_no_server,
    server_log,
    stdio,
)

QUESTION = "parallel: lookup count_down slow_echo slow_echo ask_model"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_mcp_toolset_records_with_recording_only_and_replays_with_nothing_live(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # test_mcp's fixtures, asked for by name (their names here are the imports that make them fixtures)
    llm: ScriptedModel = request.getfixturevalue("model")
    launched: dict[str, Any] = request.getfixturevalue("stdio")
    log: Path = request.getfixturevalue("server_log")
    served: HTTPServer | None = request.getfixturevalue("http") if transport == "http" else None
    task = {"base_url": llm.url, "server": launched if served is None else {"url": served.url}, "question": QUESTION}
    journal = tmp_path / "pydantic_ai_mcp.jsonl"
    entry = "tests.frameworks.pydantic_ai_mcp_agents:crm_agent"
    outcome = record_run(CONFIG, entry, [task], journal=journal, run_id="pydantic-ai-mcp")
    assert outcome.status == "ok", outcome.error
    assert "echo: a" in outcome.output and "echo: b" in outcome.output and "counted down from 3" in outcome.output
    assert "the model said: 42" in outcome.output  # the server sampled the agent's model
    if served is None:
        assert overlapping(log)  # the parallel MCP calls ran in parallel while recording

    recorded = events(journal)
    # nothing went out unrecorded: every request the model server got (the sampling one too) is in the journal
    assert len(llm.raw) == sum(event.kind == "model.request" for event in recorded) == 3
    calls = [event.payload["tool"] for event in recorded if event.kind == "tool.call"]
    assert all(name.startswith("mcp:crm ") for name in calls)  # each MCP call once, at the MCP seam
    assert sum(name.startswith("mcp:crm tools/call slow_echo") for name in calls) == 2
    assert "mcp:crm reply sampling/createMessage" in calls

    recorded_requests = list(llm.raw)
    llm.raw.clear()
    unrecorded = asyncio.run(pydantic_ai_mcp_agents.crm_agent(None, {**task, "recorded": False}))
    assert unrecorded == outcome.output
    assert llm.raw == recorded_requests  # byte for byte, the MCP tools' schemas in the server's member order
    llm.raw.clear()

    replayed = replays_with_no_server(journal, launched, log, served)
    assert replayed["total"] == len(recorded)
    assert llm.raw == []  # no model call live
