"""Server-sent-event model streams (OpenAI chat completions, the OpenAI Responses API, Anthropic messages).

One home for reading them, so a journal says the same whichever of them wrote it: the httpx transport
records a live stream with it, the vcrpy importer imports a recorded one, and the openai-compatible model
plugin reads its own. A chunk is a dict with any of ``content`` (a text delta), ``tool_calls`` (deltas
``{index, id?, name?, arguments?}``, ``arguments`` a JSON text fragment), ``finish_reason`` and ``usage``.
``assemble_stream`` joins chunks into one response and keeps the boundaries of each chunk's text, so replay
can re-split it identically.

``event_shape`` says where an event carries text (``TextField``: a delta of a *channel*, one text the stream
builds, or a repeat of a channel's whole text), which channels it ends and whether it ends the stream; the
transport redacts a stream as it passes with it (harness/STREAMING.md).

The stream is whatever the server (or a cassette) sent: anything that is not a stream of JSON objects
raises ValueError, never another exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
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
    """Chunks of an OpenAI or Anthropic stream: Anthropic names its events, chat completions do not, and the
    Responses API's events are typed ``response.*``."""
    events = iter(events)
    first = next(events, None)
    if first is None:
        return
    rest = _chain(first, events)
    if first[0] is None:
        yield from chat_completion_chunks(rest)
    elif first[0].startswith("response."):
        yield from responses_chunks(rest)
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


def responses_chunks(events: Iterable[tuple[str | None, str]]) -> Iterator[dict[str, Any]]:
    """Chunks of a Responses API stream: text and refusal deltas, function calls (by output index), the end."""
    for _, data in events:
        event = _json_object(data)
        kind = event.get("type")
        if kind in ("error", "response.failed") and (kind == "error" or _object(event.get("response")).get("error")):
            detail = event.get("error") if kind == "error" else _object(event.get("response")).get("error")
            raise StreamReportedError(f"the stream reported an error: {_json_text(detail)[:200]}")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            yield {"content": event.get("delta", "")}
        elif kind == "response.output_item.added":
            item = _object(event.get("item"))
            if item.get("type") == "function_call":
                call = {"index": event.get("output_index", 0), "id": item.get("call_id"), "name": item.get("name")}
                yield {"tool_calls": [call]}
        elif kind == "response.function_call_arguments.delta":
            yield {"tool_calls": [{"index": event.get("output_index", 0), "arguments": event.get("delta", "")}]}
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = _object(event.get("response"))
            yield {"finish_reason": response.get("status"), "usage": dict(_object(response.get("usage")))}


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


# -- where an event carries text (the transport redacts a stream as it passes) -------------------------

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class TextField:
    """A string at ``path`` in an event: a delta of ``channel`` (one text the stream builds), or with
    ``whole`` a repeat of all of it (the Responses API's ``.done`` and ``response.completed`` events)."""

    channel: str
    path: Path
    whole: bool = False


@dataclass(frozen=True)
class EventShape:
    """What one event of a model stream says: its text fields, the channels it ends (``ends_all``: every
    one), whether the stream ends with it, and how a delta of one of its channels is written."""

    fields: tuple[TextField, ...] = ()
    ends: tuple[str, ...] = ()
    ends_all: bool = False
    final: bool = False
    api: str | None = None  # "chat", "anthropic", "responses"

    def ends_channel(self, channel: str) -> bool:
        return self.ends_all or channel in self.ends or channel_of_choice(channel) in self.ends


_NOTHING = EventShape()
_CHAT_DELTA_TEXTS = ("content", "refusal", "reasoning_content", "reasoning")
_ANTHROPIC_DELTAS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}
_RESPONSES_ITEM_TEXTS = {"output_text": "text", "refusal": "refusal"}


def event_shape(event: str | None, data: Any) -> EventShape:
    """Where the event ``data`` (parsed JSON, or the text of a ``[DONE]``) of an SSE event named ``event``
    carries text, for the three APIs; an event of another shape carries none."""
    if isinstance(data, str):
        return EventShape(ends_all=True, final=True, api="chat") if data.strip() == "[DONE]" else _NOTHING
    if not isinstance(data, dict):
        return _NOTHING
    kind = data.get("type")
    if "choices" in data or data.get("object") == "chat.completion.chunk":
        return _chat_shape(data)
    if isinstance(kind, str) and kind.startswith("response."):
        return _responses_shape(kind, data)
    if kind == "error" or event == "error":
        return EventShape(ends_all=True, final=True)
    if isinstance(kind, str):
        return _anthropic_shape(kind, data)
    return _NOTHING


def _chat_shape(data: dict[str, Any]) -> EventShape:
    fields: list[TextField] = []
    ends: list[str] = []
    for position, choice in enumerate(_list(data.get("choices"))):
        choice = _object(choice)
        index = choice.get("index", position)
        delta = _object(choice.get("delta"))
        for name in _CHAT_DELTA_TEXTS:
            if isinstance(delta.get(name), str):
                fields.append(TextField(_chat_channel(name, index), ("choices", position, "delta", name)))
        for slot, call in enumerate(_list(delta.get("tool_calls"))):
            call = _object(call)
            if isinstance(_object(call.get("function")).get("arguments"), str):
                channel = f"arguments.{index}.{call.get('index', slot)}"
                fields.append(
                    TextField(channel, ("choices", position, "delta", "tool_calls", slot, "function", "arguments"))
                )
        if choice.get("finish_reason"):
            ends.append(f"choice.{index}")
    return EventShape(tuple(fields), tuple(ends), api="chat")


def _chat_channel(name: str, index: Any) -> str:
    if name == "content":
        return "content" if index == 0 else f"content.{index}"
    return f"{name}.{index}"


def channel_of_choice(channel: str) -> str | None:
    """The ``choice.N`` a chat-completions channel belongs to (what a ``finish_reason`` ends)."""
    if channel == "content":
        return "choice.0"
    name, _, rest = channel.partition(".")
    if name in (*_CHAT_DELTA_TEXTS, "arguments") and rest:
        return f"choice.{rest.split('.', 1)[0]}"
    return None


def _anthropic_shape(kind: str, data: dict[str, Any]) -> EventShape:
    if kind == "content_block_delta":
        delta = _object(data.get("delta"))
        name = _ANTHROPIC_DELTAS.get(str(delta.get("type")))
        if name is not None and isinstance(delta.get(name), str):
            return EventShape((TextField(f"block.{data.get('index', 0)}", ("delta", name)),), api="anthropic")
        return EventShape(api="anthropic")
    if kind == "content_block_stop":
        return EventShape(ends=(f"block.{data.get('index', 0)}",), api="anthropic")
    if kind == "message_stop":
        return EventShape(ends_all=True, final=True, api="anthropic")
    return EventShape(api="anthropic")


def _responses_shape(kind: str, data: dict[str, Any]) -> EventShape:
    output = data.get("output_index", 0)
    channel = f"output.{output}.{data.get('content_index', 0)}"
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        return EventShape((TextField(channel, ("delta",)),), api="responses")
    if kind == "response.function_call_arguments.delta":
        return EventShape((TextField(f"output.{output}", ("delta",)),), api="responses")
    if kind in ("response.output_text.done", "response.refusal.done"):
        name = "text" if kind == "response.output_text.done" else "refusal"
        return EventShape((TextField(channel, (name,), whole=True),), (channel,), api="responses")
    if kind == "response.function_call_arguments.done":
        return EventShape(
            (TextField(f"output.{output}", ("arguments",), whole=True),), (f"output.{output}",), api="responses"
        )
    fields: tuple[TextField, ...]
    if kind == "response.content_part.done":
        part = _object(data.get("part"))
        text = _RESPONSES_ITEM_TEXTS.get(str(part.get("type")))
        fields = (TextField(channel, ("part", text), whole=True),) if text and isinstance(part.get(text), str) else ()
        return EventShape(fields, (channel,), api="responses")
    if kind in ("response.output_item.added", "response.output_item.done"):
        fields = _item_fields(_object(data.get("item")), output, ("item",))
        ends = tuple(field.channel for field in fields) if kind.endswith(".done") else ()
        return EventShape(fields, ends, api="responses")
    if kind in ("response.created", "response.in_progress", "response.queued", *_RESPONSE_ENDS):
        response = _object(data.get("response"))
        fields = tuple(
            field
            for position, item in enumerate(_list(response.get("output")))
            for field in _item_fields(_object(item), position, ("response", "output", position))
        )
        final = kind in _RESPONSE_ENDS
        return EventShape(fields, ends_all=final, final=final, api="responses")
    return EventShape(api="responses")


_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")
_CHAT_TOP = ("id", "object", "created", "model", "system_fingerprint")


def _item_fields(item: dict[str, Any], output: Any, path: Path) -> tuple[TextField, ...]:
    """The texts an output item repeats whole: a message's parts, a function call's arguments."""
    if item.get("type") == "function_call" and isinstance(item.get("arguments"), str):
        return (TextField(f"output.{output}", (*path, "arguments"), whole=True),)
    fields = []
    for index, part in enumerate(_list(item.get("content"))):
        part = _object(part)
        name = _RESPONSES_ITEM_TEXTS.get(str(part.get("type")))
        if name and isinstance(part.get(name), str):
            fields.append(TextField(f"output.{output}.{index}", (*path, "content", index, name), whole=True))
    return tuple(fields)


def delta_event(
    api: str | None, channel: str, text: str, like: dict[str, Any]
) -> tuple[str | None, dict[str, Any]] | None:
    """``(event name, data)`` of an event that carries ``text`` as a delta of ``channel`` and nothing else,
    written like ``like`` (the channel's last delta event); None for a shape it cannot be written in."""
    if api == "chat":
        top: dict[str, Any] = {key: like[key] for key in _CHAT_TOP if key in like}
        delta: dict[str, Any]
        name, _, rest = channel.partition(".")
        if channel == "content" or name == "content":
            index, delta = int(rest or 0), {"content": text}
        elif name == "arguments":
            choice, _, call = rest.partition(".")
            index, delta = int(choice), {"tool_calls": [{"index": int(call), "function": {"arguments": text}}]}
        else:
            index, delta = int(rest), {name: text}
        return None, {**top, "choices": [{"index": index, "delta": delta, "finish_reason": None}]}
    if api == "anthropic":
        kind = str(_object(like.get("delta")).get("type"))
        if kind not in _ANTHROPIC_DELTAS:
            return None
        delta = {"type": kind, _ANTHROPIC_DELTAS[kind]: text}
        return "content_block_delta", {"type": "content_block_delta", "index": like.get("index", 0), "delta": delta}
    if api == "responses":
        event = {**like, "delta": text}
        if "logprobs" in event:
            event["logprobs"] = []
        return str(like.get("type")), event
    return None


def get_at(data: Any, path: Path) -> Any:
    """The value at ``path`` in ``data`` (None when there is none)."""
    for step in path:
        if isinstance(step, int) and isinstance(data, list) and 0 <= step < len(data):
            data = data[step]
        elif isinstance(step, str) and isinstance(data, dict):
            data = data.get(step)
        else:
            return None
    return data


def set_at(data: Any, path: Path, value: Any) -> None:
    """Set the value at ``path`` in ``data`` (which ``get_at`` found)."""
    for step in path[:-1]:
        data = data[step]
    data[path[-1]] = value
