"""A LangGraph agent whose one planning answer asks for six tool calls at once: ToolNode would run
them in threads. Its tools take a random moment, so threads would finish in a random order."""

from __future__ import annotations

import random
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from replay_tui.harness.frameworks.langgraph import GraphAgent

CALLS = 6


@tool
def lookup(sku: str) -> str:
    """Stock of one SKU."""
    time.sleep(random.uniform(0, 0.004))  # noqa: S311 (a timing jitter, not a secret)
    return f"{sku}: 7 in stock"


def plan(state: MessagesState) -> dict[str, Any]:
    """Ask for every lookup at once, then finish (a planner that needs no model)."""
    if len(state["messages"]) > 1:
        return {"messages": [AIMessage("all looked up")]}
    calls = [
        {"name": "lookup", "args": {"sku": f"S-{i}"}, "id": f"call-{i}", "type": "tool_call"} for i in range(CALLS)
    ]
    return {"messages": [AIMessage("", tool_calls=calls)]}


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


class ParallelTools(GraphAgent):
    def build(self, h: Any, task: Any) -> StateGraph:
        builder = StateGraph(MessagesState)
        builder.add_node("plan", plan)
        builder.add_node("tools", ToolNode([lookup]))
        builder.add_edge(START, "plan")
        builder.add_conditional_edges("plan", _route, {"tools": "tools", END: END})
        builder.add_edge("tools", "plan")
        return builder

    def graph_input(self, task: Any) -> Any:
        return {"messages": [HumanMessage(task["question"])]}


agent = ParallelTools
