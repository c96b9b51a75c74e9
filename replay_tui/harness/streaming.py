"""Streamed model output: assemble chunks into one response, keep the boundaries.

A chunk is a dict with any of ``content`` (text delta), ``tool_calls`` (deltas:
``{index, id?, name?, arguments?}`` where ``arguments`` is a JSON text fragment),
``finish_reason`` and ``usage``. ``boundaries`` are the end offsets of each
chunk's content in the assembled text, so replay can re-split it identically.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import orjson


def assemble_stream(chunks: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """-> (response, stream) where stream = ``{chunks, boundaries}``."""
    parts: list[str] = []
    boundaries: list[int] = []
    length = 0
    calls: dict[int, dict[str, Any]] = {}
    finish_reason = None
    usage: dict[str, Any] = {}
    count = 0
    for chunk in chunks:
        count += 1
        text = chunk.get("content") or ""
        parts.append(text)
        length += len(text)
        boundaries.append(length)
        for delta in chunk.get("tool_calls") or ():
            call = calls.setdefault(int(delta.get("index", 0)), {"id": None, "name": "", "arguments": ""})
            if delta.get("id"):
                call["id"] = delta["id"]
            call["name"] += delta.get("name") or ""
            call["arguments"] += delta.get("arguments") or ""
        finish_reason = chunk.get("finish_reason") or finish_reason
        usage.update(chunk.get("usage") or {})
    tool_calls = []
    for index in sorted(calls):
        call = calls[index]
        try:
            arguments = orjson.loads(call["arguments"]) if call["arguments"] else {}
        except orjson.JSONDecodeError:
            raise ValueError(f"streamed tool call {index} ({call['name']}) has arguments that are not JSON: {call['arguments'][:80]!r}") from None
        tool_calls.append({"id": call["id"] or f"stream-call-{index}", "name": call["name"], "arguments": arguments})
    response = {"content": "".join(parts), "tool_calls": tool_calls, "finish_reason": finish_reason, "usage": usage}
    return response, {"chunks": count, "boundaries": boundaries}


def split_stream(content: str, boundaries: list[int]) -> list[str]:
    """The text deltas of a recorded stream, from its boundaries."""
    deltas, start = [], 0
    for end in boundaries:
        deltas.append(content[start:end])
        start = end
    return deltas
