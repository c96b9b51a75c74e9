"""Streamed model output: assemble chunks into one response, keep the boundaries.

A chunk is a dict with any of ``content`` (text delta), ``tool_calls`` (deltas:
``{index, id?, name?, arguments?}`` where ``arguments`` is a JSON text fragment),
``finish_reason`` and ``usage``. ``boundaries`` are the end offsets of each
chunk's content in the assembled text, so replay can re-split it identically.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from ..journal.sse import assemble_stream as assemble_stream  # its home: the importers assemble streams too


class Edit(NamedTuple):
    """Text[start:end] of the original was replaced by ``length`` characters (redaction)."""

    start: int
    end: int
    length: int


def split_stream(content: str, boundaries: list[int]) -> list[str]:
    """The text deltas of a recorded stream, from its boundaries."""
    deltas, start = [], 0
    for end in boundaries:
        deltas.append(content[start:end])
        start = end
    return deltas


def remap_boundaries(boundaries: list[int], edits: list[Edit], length: int) -> list[int]:
    """Chunk boundaries of a text after ``edits`` (sorted, not overlapping) were made to it.

    A boundary inside an edited span moves to the span's end, so the whole replacement
    lands in one chunk and no chunk holds part of what was replaced; the chunks still join
    to the edited text (of ``length`` characters).
    """
    remapped: list[int] = []
    shift, index = 0, 0
    for boundary in boundaries:
        while index < len(edits) and edits[index].end <= boundary:
            edit = edits[index]
            shift += edit.length - (edit.end - edit.start)
            index += 1
        if index < len(edits) and edits[index].start < boundary:
            edit = edits[index]
            remapped.append(min(edit.start + shift + edit.length, length))
        else:
            remapped.append(min(boundary + shift, length))
    return remapped


def resplit_sse(body: str, old_deltas: list[str], new_deltas: list[str]) -> str | None:
    """A server-sent-events body whose text deltas ``old_deltas`` (in order) now read
    ``new_deltas``: each ``data:`` JSON event's first string equal to the next old delta is
    replaced. None when the body cannot be matched delta for delta (the caller then drops it)."""
    pending = [(old, new) for old, new in zip(old_deltas, new_deltas) if old]
    if not pending:
        return body
    lines = body.split("\n")
    try:
        for number, event in _data_objects(lines):
            replaced = _replace_first_string(event, pending[0][0], pending[0][1])
            if replaced is not None:
                pending.pop(0)
                lines[number] = "data: " + orjson.dumps(replaced).decode()
                if not pending:
                    break  # the lines after the last delta are left as they are, read or not
    except orjson.JSONDecodeError:
        return None
    return None if pending else "\n".join(lines)


def _data_objects(lines: list[str]) -> Iterator[tuple[int, Any]]:
    """(line number, event) of each ``data: {...}`` line of an SSE body, in order; orjson.JSONDecodeError
    at the first one that is not JSON (both resplits then leave the body alone)."""
    for number, line in enumerate(lines):
        text = line[5:].strip() if line.startswith("data:") else ""
        if text.startswith("{"):
            yield number, orjson.loads(text)


def _replace_first_string(value: Any, old: str, new: str) -> Any:
    """``value`` with its first string equal to ``old`` (depth first) replaced, or None."""
    if isinstance(value, str):
        return new if value == old else None
    if isinstance(value, dict):
        for key, item in value.items():
            replaced = _replace_first_string(item, old, new)
            if replaced is not None:
                return {**value, key: replaced}
    elif isinstance(value, list):
        for index, item in enumerate(value):
            replaced = _replace_first_string(item, old, new)
            if replaced is not None:
                return [*value[:index], replaced, *value[index + 1 :]]
    return None


def resplit_sse_arguments(body: str, arguments: list[str]) -> str | None:
    """A server-sent-events body whose streamed tool-call arguments now read ``arguments`` (JSON
    text, in tool-call order): the first fragment of each call holds all of it, the rest are empty.
    OpenAI (``delta.tool_calls[].function.arguments``) and Anthropic (``input_json_delta``) shapes;
    None when the calls cannot be matched."""
    lines = body.split("\n")
    events: dict[int, Any] = {}
    fragments: dict[int, list[tuple[int, list[Any]]]] = {}  # call index -> (line, path to the fragment)
    try:
        for number, event in _data_objects(lines):
            events[number] = event
            delta = event.get("delta") if isinstance(event.get("delta"), dict) else {}
            if event.get("type") == "content_block_delta" and delta.get("type") == "input_json_delta":
                fragments.setdefault(int(event.get("index", 0)), []).append((number, ["delta", "partial_json"]))
            for position, choice in enumerate(event.get("choices") or []):
                calls = ((choice or {}).get("delta") or {}).get("tool_calls") or []
                for slot, call in enumerate(calls):
                    if isinstance((call.get("function") or {}).get("arguments"), str):
                        path = ["choices", position, "delta", "tool_calls", slot, "function", "arguments"]
                        fragments.setdefault(int(call.get("index", 0)), []).append((number, path))
    except orjson.JSONDecodeError:
        return None
    if len(fragments) != len(arguments):
        return None
    for new_text, index in zip(arguments, sorted(fragments)):
        for order, (number, path) in enumerate(fragments[index]):
            node = events[number]
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = new_text if order == 0 else ""
    for number, event in events.items():
        lines[number] = "data: " + orjson.dumps(event).decode()
    return "\n".join(lines)
