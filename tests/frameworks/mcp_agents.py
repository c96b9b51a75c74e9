"""Agents that use the MCP server of ``mcp_server.py``, written as each framework's docs write them, with the
recording lines only. A task names the model (``base_url``), what to ask (``question``, see ``mcp_model.py``) and
the server: ``{"command", "args", "env"}`` (stdio) or ``{"url"}`` (streamable HTTP).

``raw_session`` drives ``mcp.ClientSession`` itself (the seam every framework uses) with every callback a client
can give: sampling answered by the client's own model through the harness, elicitation, roots, logging and
progress. The framework agents are those of the OpenAI Agents SDK (``mcp_servers``), PydanticAI (``MCPToolset``)
and LangGraph with ``langchain-mcp-adapters``; the ``unrecorded_*`` twins run the same agent without a harness.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.common import async_openai_client
from replay_tui.harness.frameworks.mcp import record_mcp, recorded_transport

MODEL = "gpt-4.1"
record_mcp()


def stdio_params(server: Mapping[str, Any]) -> StdioServerParameters:
    return StdioServerParameters(command=server["command"], args=list(server["args"]), env=dict(server["env"]))


class Callbacks:
    """What a client answers the server with; ``seen`` collects progress and log messages in the order they came."""

    def __init__(self, model: Any, approve: bool = True) -> None:
        self.model = model
        self.approve = approve
        self.seen: list[str] = []

    async def sampling(self, context: Any, params: Any) -> CreateMessageResult:
        messages = [{"role": m.role, "content": m.content.text} for m in params.messages]
        reply = await self.model.chat.completions.create(model=MODEL, messages=messages)
        text = reply.choices[0].message.content or ""
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model=MODEL)

    async def elicitation(self, context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"approved": self.approve, "note": "by the desk"})

    async def roots(self, context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///srv/crm", name="crm")])  # type: ignore[arg-type]

    async def logging(self, params: Any) -> None:
        self.seen.append(f"log {params.level}: {params.data}")

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append(f"progress {progress:g}/{total:g} {message}")


async def run_session(session: ClientSession, plan: list[tuple[str, dict[str, Any]]], parallel: bool, seen: Any) -> Any:
    await session.initialize()
    listed = await session.list_tools()

    async def call(name: str, arguments: dict[str, Any]) -> str:
        result = await session.call_tool(name, arguments, progress_callback=seen.progress)
        text = " ".join(part.text for part in result.content if isinstance(part, TextContent))
        return f"{'error' if result.isError else 'ok'}: {text}"

    if parallel:
        outputs = list(await asyncio.gather(*(call(name, arguments) for name, arguments in plan)))
    else:
        outputs = [await call(name, arguments) for name, arguments in plan]
    return {"tools": [tool.name for tool in listed.tools], "outputs": outputs, "seen": seen.seen}


def _plan(task: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, dict(arguments)) for name, arguments in task["plan"]]


async def raw_session(h: Harness, task: Mapping[str, Any], *, approve: bool = True) -> Any:
    callbacks = Callbacks(async_openai_client(h, task["base_url"]), approve)
    params = stdio_params(task["server"])
    async with recorded_transport(h, "crm", "stdio", lambda: stdio_client(params)) as (read, write):
        async with ClientSession(
            read,
            write,
            sampling_callback=callbacks.sampling,
            elicitation_callback=callbacks.elicitation,
            list_roots_callback=callbacks.roots,
            logging_callback=callbacks.logging,
        ) as session:
            return await run_session(session, _plan(task), bool(task.get("parallel")), callbacks)


async def raw_session_declining(h: Harness, task: Mapping[str, Any]) -> Any:
    """``raw_session`` whose elicitation callback answers differently (one line changed)."""
    return await raw_session(h, task, approve=False)
