"""Server-sent-event model streams (OpenAI chat completions, Anthropic messages) as harness stream chunks.

One home for reading them, so a journal says the same whichever of them wrote it: the httpx transport
records a live stream with it, the vcrpy importer imports a recorded one, and the openai-compatible model
plugin reads its own. A chunk is a dict with any of ``content`` (a text delta), ``tool_calls`` (deltas
``{index, id?, name?, arguments?}``, ``arguments`` a JSON text fragment), ``finish_reason`` and ``usage``.
``assemble_stream`` joins chunks into one response and keeps the boundaries of each chunk's text, so replay
can re-split it identically.

The stream is whatever the server (or a cassette) sent: anything that is not a stream of JSON objects
raises ValueError, never another exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

#: What ``assemble_stream`` makes of a tool call's joined argument text (the default refuses non-JSON).
ArgumentsParser = Callable[[str], Any]


class StreamReportedError(ValueError):
    """The stream itself carried an error event (the answer stopped there)."""


def sse_events(lines: Iterable[bytes | str]) -> Iterator[tuple[str | None, str]]:
    """``(event, data)`` of a server-sent-events stream, one per blank-line-terminated block."""
    event: str | None = None
    data: list[str] = []
    for raw in lines:
        line = (raw.decode("utf-8") if isinstance(raw, bytes) else raw).rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield event, "\n".join(data)


def stream_chunks(events: Iterable[tuple[str | None, str]]) -> Iterator[dict[str, Any]]:
    """Chunks of an OpenAI or Anthropic stream: Anthropic names its events, OpenAI does not."""
    events = iter(events)
    first = next(events, None)
    if first is None:
        return
    rest = _chain(first, events)
    if first[0] is None:
        yield from chat_completion_chunks(rest)
    else:
        yield from anthropic_chunks(rest)


def chat_completion_chunks(events: Iterable[tuple[str | None, str]]) -> Iterator[dict[str, Any]]:
    """Chunks of a chat-completions stream: one per event, up to ``[DONE]``."""
    for _, data in events:
        if data.strip() == "[DONE]":
            return
        event = _json_object(data)
        if event.get("error"):
            raise StreamReportedError(f"the stream reported an error: {_json_text(event['error'])[:200]}")
        chunk: dict[str, Any] = {}
        for choice in _list(event.get("choices")):
            delta = _object(_object(choice).get("delta"))
            if delta.get("content"):
                chunk["content"] = delta["content"]
            calls = []
            for call in _list(delta.get("tool_calls")):
                call = _object(call)
                function = _object(call.get("function"))
                calls.append(
                    {
                        "index": call.get("index", 0),
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments"),
                    }
                )
            if calls:
                chunk["tool_calls"] = calls
            if _object(choice).get("finish_reason"):
                chunk["finish_reason"] = choice["finish_reason"]
        if event.get("usage"):
            chunk["usage"] = event["usage"]
        yield chunk


def anthropic_chunks(events: Iterable[tuple[str | None, str]]) -> Iterator[dict[str, Any]]:
    """Chunks of an Anthropic messages stream: the events that carry text, a tool call, a stop or usage."""
    for _, data in events:
        event = _json_object(data)
        kind = event.get("type")
        if kind == "error":
            raise StreamReportedError(f"the stream reported an error: {_json_text(event.get('error'))[:200]}")
        if kind == "message_start":
            yield {"usage": dict(_object(_object(event.get("message")).get("usage")))}
        elif kind == "content_block_start":
            block = _object(event.get("content_block"))
            if block.get("type") == "tool_use":
                yield {
                    "tool_calls": [{"index": event.get("index", 0), "id": block.get("id"), "name": block.get("name")}]
                }
        elif kind == "content_block_delta":
            delta = _object(event.get("delta"))
            if delta.get("type") == "text_delta":
                yield {"content": delta.get("text", "")}
            elif delta.get("type") == "input_json_delta":
                yield {"tool_calls": [{"index": event.get("index", 0), "arguments": delta.get("partial_json", "")}]}
        elif kind == "message_delta":
            yield {
                "finish_reason": _object(event.get("delta")).get("stop_reason"),
                "usage": dict(_object(event.get("usage"))),
            }


def assemble_stream(
    chunks: Iterable[Mapping[str, Any]], *, parse_arguments: ArgumentsParser | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """-> (response, stream) where stream = ``{chunks, boundaries}``.

    A tool call's joined arguments are parsed by ``parse_arguments``; by default they must be JSON
    (ValueError otherwise: a live agent would act on them), and none at all is ``{}``."""
    parts: list[str] = []
    boundaries: list[int] = []
    length = 0
    calls: dict[int, dict[str, Any]] = {}
    finish_reason = None
    usage: dict[str, Any] = {}
    count = 0
    for chunk in chunks:
        count += 1
        text = _text(chunk.get("content"))
        parts.append(text)
        length += len(text)
        boundaries.append(length)
        for delta in chunk.get("tool_calls") or ():
            call = calls.setdefault(_index(delta.get("index", 0)), {"id": None, "name": "", "arguments": ""})
            if delta.get("id"):
                call["id"] = delta["id"]
            call["name"] += _text(delta.get("name"))
            call["arguments"] += _text(delta.get("arguments"))
        finish_reason = chunk.get("finish_reason") or finish_reason
        usage.update(_object(chunk.get("usage")))
    tool_calls = []
    for index in sorted(calls):
        call = calls[index]
        if parse_arguments is not None:
            arguments = parse_arguments(call["arguments"])
        else:
            try:
                arguments = orjson.loads(call["arguments"]) if call["arguments"] else {}
            except orjson.JSONDecodeError:
                raise ValueError(
                    f"streamed tool call {index} ({call['name']}) has arguments that are not JSON: "
                    f"{call['arguments'][:80]!r}"
                ) from None
        tool_calls.append({"id": call["id"] or f"stream-call-{index}", "name": call["name"], "arguments": arguments})
    response = {"content": "".join(parts), "tool_calls": tool_calls, "finish_reason": finish_reason, "usage": usage}
    return response, {"chunks": count, "boundaries": boundaries}


def _json_object(data: str) -> dict[str, Any]:
    """One event's data: a JSON object, or ValueError (orjson's decode error is one)."""
    event = orjson.loads(data)
    if not isinstance(event, dict):
        raise ValueError(f"a stream event is a JSON object, found {type(event).__name__}")
    return event


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    """A text delta; anything but a string or nothing is refused (it would be lost from the journal)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"a streamed text delta is a string, found {type(value).__name__}")
    return value


def _index(value: Any) -> int:
    if type(value) is not int:
        raise ValueError(f"a streamed tool call's index is a whole number, found {value!r:.40}")
    return value


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _chain(first: tuple[str | None, str], rest: Iterator[tuple[str | None, str]]) -> Iterator[tuple[str | None, str]]:
    yield first
    yield from rest
