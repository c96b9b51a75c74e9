"""One message shape for every format, so a model call imported from OTLP, the Agents SDK or
Inspect reads (and hashes) the same way.

A normalized request is ``{"model", "messages", "tools"?, "params"?}``; each message is
``{"role", "content", "tool_calls"?, "tool_call_id"?}`` with ``content`` a string (text
parts joined), a list of the non-text parts as recorded, or null; a tool call is
``{"id", "name", "arguments"}`` with the arguments parsed. A normalized response is the
harness's ``{"content", "tool_calls", "finish_reason", "usage"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..journal.depth import json_text
from ..journal.model_response import tool_arguments

Message = dict[str, Any]

#: Tool arguments as an object; its home is journal/model_response, next to the response summary.
parse_arguments = tool_arguments


def json_or_text(value: Any) -> Any:
    """A JSON-looking string parsed (OTel attributes hold structured values as JSON text)."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def message(
    role: str, content: Any, tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None
) -> Message:
    result: Message = {"role": role, "content": content}
    if tool_calls:
        result["tool_calls"] = tool_calls
    if tool_call_id is not None:
        result["tool_call_id"] = tool_call_id
    return result


def _joined(texts: list[str], others: list[Any]) -> Any:
    if others:
        return [{"type": "text", "content": text} for text in texts] + others
    return "".join(texts) if texts else None


# -- OpenTelemetry GenAI (parts) --------------------------------------------------------


def _text(content: Any) -> str:
    """A text part's content as text: a trace may hold any value there (a deep object's ``str`` ran out of stack)."""
    if isinstance(content, str):
        return content
    return "" if not content else json_text(content)


def from_otel_messages(messages: Any) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` -> normalized messages."""
    normalized: list[Message] = []
    if not isinstance(messages, list):
        return normalized
    for item in messages:
        if not isinstance(item, dict):
            continue
        role = _text(item.get("role")) or "user"
        parts = item.get("parts") or ()
        if type(parts) is list and len(parts) == 1:  # most messages are one text part: no lists to gather in
            part = parts[0]
            if type(part) is dict and part.get("type") == "text":
                normalized.append({"role": role, "content": _text(part.get("content"))})
                continue
        texts: list[str] = []
        others: list[Any] = []
        calls: list[dict[str, Any]] = []
        responses: list[Message] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(_text(part.get("content")))
            elif kind == "tool_call":
                calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": parse_arguments(part.get("arguments")),
                    }
                )
            elif kind == "tool_call_response":
                responses.append(
                    {"role": "tool", "content": json_or_text(part.get("response")), "tool_call_id": part.get("id")}
                    if part.get("id") is not None
                    else {"role": "tool", "content": json_or_text(part.get("response"))}
                )
            else:
                others.append(dict(part))
        if responses and not texts and not calls:
            normalized.extend(responses)
            continue
        # message(role, content, calls): the content joined as _joined does
        if others:
            content: Any = [{"type": "text", "content": text} for text in texts] + others
        else:
            content = ("".join(texts) if len(texts) > 1 else texts[0]) if texts else None
        normalized.append(
            {"role": role, "content": content, "tool_calls": calls} if calls else {"role": role, "content": content}
        )
        if responses:
            normalized.extend(responses)
    return normalized


def response_from_messages(output: list[Message], finish_reason: Any, usage: Mapping[str, Any]) -> dict[str, Any]:
    """The harness response of a call whose output messages are normalized already."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    content: Any = None
    for item in output:
        if item.get("role") not in (None, "assistant", "model"):
            continue
        if isinstance(item.get("content"), str):
            texts.append(item["content"])
        elif item.get("content") is not None:
            content = item["content"]
        calls.extend(item.get("tool_calls") or ())
    if texts:
        content = "".join(texts)
    return {"content": content, "tool_calls": calls, "finish_reason": finish_reason, "usage": dict(usage)}


# -- OpenAI chat-completions messages ---------------------------------------------------


def from_openai_chat(messages: Any) -> list[Message]:
    """OpenAI chat messages (``function.arguments`` as JSON text) -> normalized messages."""
    normalized: list[Message] = []
    for item in messages if isinstance(messages, list) else ():
        if not isinstance(item, Mapping):
            continue
        content = item.get("content")
        if isinstance(content, list):
            texts = [
                _text(part.get("text", ""))
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text"
            ]
            others = [part for part in content if not (isinstance(part, Mapping) and part.get("type") == "text")]
            content = _joined(texts, others)
        calls = []
        asked = item.get("tool_calls")
        for call in asked if isinstance(asked, list) else ():
            if not isinstance(call, Mapping):
                continue
            named = call.get("function")
            function: Mapping[str, Any] = named if isinstance(named, Mapping) else {}
            calls.append(
                {
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": parse_arguments(function.get("arguments")),
                }
            )
        normalized.append(message(_text(item.get("role")) or "user", content, calls, item.get("tool_call_id")))
    return normalized


def last_user_text(messages: list[Message]) -> Any:
    """The content of the last user message (what an agent was asked), or None."""
    for item in reversed(messages):
        if item.get("role") == "user":
            return item.get("content")
    return None
