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


# -- the frameworks ---------------------------------------------------------------------------------------


def openai_client(h: Harness | None, base_url: str) -> Any:
    """The model client: the harness's (recorded) in a run, a plain one in the unrecorded twin."""
    if h is not None:
        return async_openai_client(h, base_url)
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=base_url, api_key="replay-tui-placeholder-key", max_retries=0)


async def agents_sdk(h: Harness | None, task: Mapping[str, Any]) -> str:
    """The Agents SDK's MCP example: an agent with ``mcp_servers``, the server entered around the run."""
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    from replay_tui.harness.frameworks.agents_sdk import run_recorded

    spec = task["server"]
    server: Any = (
        MCPServerStreamableHttp(name="crm", params={"url": spec["url"]})
        if "url" in spec
        else MCPServerStdio(name="crm", params={"command": spec["command"], "args": spec["args"], "env": spec["env"]})
    )
    async with server:
        agent = Agent(name="CRM desk", instructions="Answer with the CRM tools.", mcp_servers=[server])
        if h is not None:
            result = await run_recorded(h, agent, task["question"], base_url=task["base_url"], model=MODEL)
        else:  # what run_recorded runs, without the harness
            set_tracing_disabled(True)
            model = OpenAIChatCompletionsModel(model=MODEL, openai_client=openai_client(None, task["base_url"]))
            config = RunConfig(model=model, tracing_disabled=True, trace_include_sensitive_data=False)
            result = await Runner.run(agent, task["question"], run_config=config, max_turns=10)
    return str(result.final_output)


async def pydantic_ai(h: Harness | None, task: Mapping[str, Any], *, sampling: bool = True) -> str:
    """PydanticAI's MCP example: an ``MCPToolset`` among the agent's toolsets; the server samples the agent's
    model through it (``sampling_model``)."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=openai_client(h, task["base_url"])))
    spec = task["server"]
    client: Any = spec["url"] if "url" in spec else StdioTransport(spec["command"], spec["args"], env=spec["env"])
    toolset = MCPToolset(client, id="crm", sampling_model=model) if sampling else MCPToolset(client, id="crm")
    agent = Agent(model, toolsets=[toolset], instructions="Answer with the CRM tools.")
    result = await agent.run(task["question"])
    return str(result.output)


async def langgraph(h: Harness | None, task: Mapping[str, Any]) -> str:
    """langchain-mcp-adapters' example: the client's tools in a LangChain agent graph, run with ``ainvoke``."""
    from langchain.agents import create_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_openai import ChatOpenAI

    from replay_tui.harness.httpx_transport import async_http_client

    spec = task["server"]
    connection: Any = (
        {"transport": "streamable_http", "url": spec["url"]}
        if "url" in spec
        else {"transport": "stdio", "command": spec["command"], "args": spec["args"], "env": spec["env"]}
    )
    client = MultiServerMCPClient({"crm": connection})
    record_mcp(client)  # names the server "crm" in the journal
    tools = await client.get_tools()
    http = {"http_async_client": async_http_client(h)} if h is not None else {}
    model = ChatOpenAI(
        model=MODEL, base_url=task["base_url"], api_key="replay-tui-placeholder-key", max_retries=0, **http
    )
    graph = create_agent(model, tools)
    state = await graph.ainvoke({"messages": [{"role": "user", "content": task["question"]}]})
    return str(state["messages"][-1].text)


async def pydantic_ai_without_sampling(h: Harness, task: Mapping[str, Any]) -> str:
    """``pydantic_ai`` with its toolset built without ``sampling_model`` (one line changed)."""
    return await pydantic_ai(h, task, sampling=False)


async def stops_in_a_task_group(h: Harness, task: Any) -> None:
    """A replay's stop raised in a task of a task group (as an MCP client's receive loop would raise it)."""
    from replay_tui.harness import StopRun

    async def stopped() -> None:
        raise StopRun("the replay stopped here")

    async with asyncio.TaskGroup() as group:
        group.create_task(stopped())
