"""Agents whose recorded runs are hostile: attack text everywhere, or payloads nested 1,000 levels deep.

Recorded through the real harness (scripted model, Python tools) by the tests; then replayed for real.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from replay_tui.harness import Harness, ToolSpec

from .hostile_journal import ATTACK, KEY, STEP, TOOL

DEEP = 1_000  # nesting that tests put into copies of the deep agent's journal: close to the reader's 1,024


def nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """One tool call with attack text in its name and arguments, then an answer quoting the attack."""
    if any(message.get("role") == "tool" for message in request["messages"]):
        return {"content": "done " + ATTACK, "tool_calls": []}
    return {"content": ATTACK, "tool_calls": [{"id": "call-1", "name": TOOL, "arguments": {KEY: ATTACK, "n": 1}}]}


def deep_policy(request: Mapping[str, Any]) -> dict[str, Any]:
    if any(message.get("role") == "tool" for message in request["messages"]):
        return {"content": "done", "tool_calls": []}
    return {"content": None, "tool_calls": [{"id": "call-1", "name": "deep", "arguments": {"tree": nested(3, 1)}}]}


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [
        ToolSpec(TOOL, lambda **arguments: {KEY: ATTACK, "echo": arguments}),
        ToolSpec("deep", lambda tree: {"tree": tree}),
    ]


def agent(h: Harness, question: str) -> Any:
    """Model → tool → model, in a step whose id is attack text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    with h.step(STEP):
        response = h.model({"model": "hostile", "messages": messages})
        call = response["tool_calls"][0]
        result = h.tool(call["name"], call["arguments"], call_id=call["id"])
        messages += [
            {"role": "assistant", "content": None, "tool_calls": response["tool_calls"]},
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result, sort_keys=True)},
        ]
    with h.step():
        return h.model({"model": "hostile", "messages": messages})["content"]


def deep_agent(h: Harness, question: str) -> Any:
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    with h.step():
        response = h.model({"model": "deep", "messages": messages})
        call = response["tool_calls"][0]
        result = h.tool(call["name"], call["arguments"], call_id=call["id"])
        messages += [
            {"role": "assistant", "content": None, "tool_calls": response["tool_calls"]},
            {"role": "tool", "tool_call_id": call["id"], "content": "ok" if result else "empty"},
        ]
    with h.step():
        return h.model({"model": "deep", "messages": messages})["content"]
