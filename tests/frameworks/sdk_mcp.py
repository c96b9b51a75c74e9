"""The Agents SDK's MCP examples (examples/mcp/filesystem_example, streamablehttp_example): an agent with
``mcp_servers``, the server entered around the run, on the agent's own model (the Responses API), against the
real FastMCP server of ``mcp_server.py`` over stdio or streamable HTTP. The only replay-tui lines are the
``with recording(h):`` of the recorded entry points at the bottom (no ``record_mcp()``: the recording routes
the SDK's MCP servers itself)."""

from __future__ import annotations

from typing import Any, Mapping

from agents import Agent, Runner, set_default_openai_client
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
from openai import AsyncOpenAI

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

INSTRUCTIONS = "Answer with the CRM tools."
#: A server a service connected once at its start, outside any recorded run (``recorded_shared``).
SHARED: MCPServer | None = None


def server_of(spec: Mapping[str, Any]) -> MCPServer:
    if "url" in spec:
        return MCPServerStreamableHttp(name="crm", params={"url": spec["url"]})
    return MCPServerStdio(name="crm", params={"command": spec["command"], "args": spec["args"], "env": spec["env"]})


async def ask(server: MCPServer, task: Mapping[str, Any]) -> str:
    set_default_openai_client(AsyncOpenAI(base_url=task["base_url"]), use_for_tracing=False)
    agent = Agent(name="CRM desk", instructions=task.get("instructions", INSTRUCTIONS), mcp_servers=[server])
    if task.get("streamed"):
        result = Runner.run_streamed(agent, task["question"])
        async for _event in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, task["question"])  # type: ignore[assignment]
    return str(result.final_output)


async def main(task: Mapping[str, Any]) -> str:
    async with server_of(task["server"]) as server:
        return await ask(server, task)


async def recorded(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await main(task)


async def recorded_terse(h: Harness, task: Mapping[str, Any]) -> str:
    """``recorded`` with one line of the agent's instructions changed (``replay --agent``)."""
    with recording(h):
        return await main({**task, "instructions": INSTRUCTIONS + " Be terse."})


async def recorded_shared(h: Harness, task: Mapping[str, Any]) -> str:
    """A run on ``SHARED``, connected before the run: its session is not the recorder's."""
    assert SHARED is not None
    with recording(h):
        return await ask(SHARED, task)
