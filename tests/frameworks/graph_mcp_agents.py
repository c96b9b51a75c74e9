"""LangGraph agents whose tools come from an MCP server through ``langchain-mcp-adapters``, written as its README
writes them, with only replay-tui's LangGraph lines added (``chat_openai(h, ...)``, ``recorded(h)``): the MCP
sessions are recorded at the MCP seam, ToolNode hands MCP tools through. Each agent with ``h=None`` is the same
agent unrecorded (LangChain's own ``ChatOpenAI``, a plain config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.langgraph import chat_openai, recorded

MODEL = "gpt-4.1"


def _model(h: Harness | None, base_url: str) -> Any:
    if h is None:
        return ChatOpenAI(model=MODEL, base_url=base_url, api_key="sk-unrecorded", max_retries=0)
    return chat_openai(h, base_url, MODEL)


def _client(server: Mapping[str, Any]) -> MultiServerMCPClient:
    connection: Any = (
        {"transport": "streamable_http", "url": server["url"]}
        if "url" in server
        else {"transport": "stdio", "command": server["command"], "args": server["args"], "env": server["env"]}
    )
    return MultiServerMCPClient({"crm": connection})


def _inputs(task: Mapping[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": task["question"]}]}


async def react_agent(h: Harness | None, task: Mapping[str, Any]) -> str:
    """The prebuilt ReAct agent on the client's tools (each call opens a session of its own), run with
    ``ainvoke``."""
    model = _model(h, task["base_url"])
    tools = await _client(task["server"]).get_tools()
    graph = create_react_agent(model, tools)
    state = await graph.ainvoke(_inputs(task), recorded(h) if h is not None else None)
    return str(state["messages"][-1].text)


async def tool_node_graph(h: Harness | None, task: Mapping[str, Any]) -> str:
    """The adapters' StateGraph example on one session kept open (``client.session`` and ``load_mcp_tools``): a
    model node, ToolNode on the session's tools, run with ``astream``."""
    model = _model(h, task["base_url"])
    async with _client(task["server"]).session("crm") as session:
        return await _tool_node_run(model, await load_mcp_tools(session), task, recorded(h) if h is not None else None)


async def _tool_node_run(model: Any, tools: list[Any], task: Mapping[str, Any], config: Any) -> str:
    bound = model.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("call_model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", tools_condition)
    builder.add_edge("tools", "call_model")
    graph = builder.compile()
    last: Any = None
    async for values in graph.astream(_inputs(task), config, stream_mode="values"):
        last = values
    return str(last["messages"][-1].text)
