"""Record and strictly replay LangGraph graphs and LangChain agents (``langgraph``, ``langchain-openai``,
``langchain-anthropic``; ``langchain`` for ``create_agent``). The reference is ``langgraph.md`` beside this
package; in short, keep your graph and your calls, and build the model through the harness:

    from replay_tui.harness.frameworks.langgraph import chat_openai, recorded

    async def agent(h, task):
        model = chat_openai(h, task["base_url"], "gpt-4.1")        # or chat_anthropic(h, ...)
        graph = create_react_agent(model, TOOLS)                   # or your StateGraph, compiled as you do
        result = await graph.ainvoke({"messages": [("user", task["question"])]}, recorded(h))
        return result["messages"][-1].text

``invoke``, ``ainvoke``, ``stream`` and ``astream`` in every stream mode, sync and async nodes and tools,
parallel branches, ``Send`` fan-out, sub-graphs and ToolNode's parallel tool calls record as they run
unrecorded. ``GraphAgent`` runs a graph as a step-loop agent that can resume from a recorded snapshot.
Tools from ``langchain-mcp-adapters`` are recorded at the MCP seam (``../mcp.md``), from this import on when
the adapters are imported first, else from the first ``chat_openai``/``chat_anthropic``/``recorded`` call.
"""

import sys as _sys

from .graph_agent import GraphAgent, tool_call_recorder
from .models import anthropic_api_key, chat_anthropic, chat_openai
from .patches import DISTRIBUTIONS, instrument, record_mcp_sessions
from .recorder import GraphRecorder, recorded
from .state import state_view
from .tool_outputs import UnrecordableOutput
from .tools import tools_recorded_elsewhere

__all__ = [
    "DISTRIBUTIONS",
    "GraphAgent",
    "GraphRecorder",
    "UnrecordableOutput",
    "anthropic_api_key",
    "chat_anthropic",
    "chat_openai",
    "instrument",
    "recorded",
    "state_view",
    "tool_call_recorder",
    "tools_recorded_elsewhere",
]

if "langchain_mcp_adapters" in _sys.modules:  # (an agent module that imports the adapters first: their sessions)
    record_mcp_sessions()
