"""A small agent on a scripted model that streams, for the recording-level tests: two model calls, a tool."""

from __future__ import annotations

from typing import Any, Mapping

from replay_tui.harness import Harness, ToolSpec


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """Streamed by the scripted model (``stream = true``): its answers come as word chunks."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return {"content": "It is sunny in Lisbon."}
    return {"content": "", "tool_calls": [{"id": "w1", "name": "weather", "arguments": {"city": "Lisbon"}}]}


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [ToolSpec("weather", lambda city: f"{city}: sunny")]


def _ask(h: Harness, question: str) -> str:
    chunks: list[str] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    first = h.model({"model": "scripted", "messages": messages})
    for call in first["tool_calls"]:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "content": h.tool(call["name"], call["arguments"], call_id=call["id"])})
    answer = h.model({"model": "scripted", "messages": messages}, on_chunk=chunks.append)
    assert "".join(chunks) == answer["content"]  # (in one chunk at info, in the model's chunks at trace)
    return str(answer["content"])


def agent(h: Harness, question: str) -> str:
    return _ask(h, question)


def agent_reworded(h: Harness, question: str) -> str:
    """One line changed: the question goes to the model reworded."""
    return _ask(h, question.replace("weather", "forecast"))
