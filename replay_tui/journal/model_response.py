"""What a ``model.response`` records of a model API's answer: ``{content, tool_calls,
finish_reason, usage}``.

One reading of each API's body (OpenAI chat completions, the OpenAI Responses API, Anthropic
messages) for the harness's httpx transport, the vcrpy importer and the openai-compatible model
plugin, so a journal says the same whichever of them wrote it. The body is whatever the server
sent: a field of the wrong type reads as absent, never as an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


def tool_arguments(value: Any, *, strict: bool = False) -> dict[str, Any]:
    """Tool-call arguments as an object: JSON text is parsed; anything else is kept under ``value``.
    ``strict``: text that is not JSON raises ValueError (a live answer the agent would act on)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value.strip() else {}
        except orjson.JSONDecodeError:
            if strict:
                raise ValueError(f"the model gave tool arguments that are not JSON: {value[:80]!r}") from None
            return {"value": value}
    if isinstance(value, dict):
        return value
    return {} if value is None else {"value": value}


def response_summary(body: Any, *, strict_arguments: bool = False) -> dict[str, Any]:
    """The summary of a non-streamed answer body; an unknown shape keeps only its usage."""
    if not isinstance(body, Mapping):
        return _summary(None, [], None, None)
    if "choices" in body:
        return _chat_completion(body, strict_arguments)
    if body.get("type") == "message":
        return _anthropic_message(body, strict_arguments)
    if body.get("object") == "response":
        return _responses_api(body, strict_arguments)
    return _summary(None, [], None, body.get("usage"))


def _chat_completion(body: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    choices = _list(body.get("choices"))
    choice = _mapping(choices[0] if choices else None)
    message = _mapping(choice.get("message"))
    calls = []
    for item in _list(message.get("tool_calls")):
        call = _mapping(item)
        function = _mapping(call.get("function"))
        calls.append(_call(call.get("id"), function.get("name"), function.get("arguments"), strict))
    return _summary(message.get("content"), calls, choice.get("finish_reason"), body.get("usage"))


def _anthropic_message(body: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    blocks = [_mapping(block) for block in _list(body.get("content"))]
    text = "".join(_text(block.get("text")) for block in blocks if block.get("type") == "text")
    calls = [
        _call(block.get("id"), block.get("name"), block.get("input"), strict)
        for block in blocks
        if block.get("type") == "tool_use"
    ]
    return _summary(text or None, calls, body.get("stop_reason"), body.get("usage"))


def _responses_api(body: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in (_mapping(entry) for entry in _list(body.get("output"))):
        if item.get("type") == "message":  # its text, and a refusal's text (as a stream's deltas carry both)
            for part in (_mapping(entry) for entry in _list(item.get("content"))):
                if part.get("type") == "output_text":
                    texts.append(_text(part.get("text")))
                elif part.get("type") == "refusal":
                    texts.append(_text(part.get("refusal")))
        elif item.get("type") == "function_call":
            calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments"), strict))
    return _summary("".join(texts) or None, calls, body.get("status"), body.get("usage"))


def _call(call_id: Any, name: Any, arguments: Any, strict: bool) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": tool_arguments(arguments, strict=strict)}


def _summary(content: Any, calls: list[dict[str, Any]], finish_reason: Any, usage: Any) -> dict[str, Any]:
    return {"content": content, "tool_calls": calls, "finish_reason": finish_reason, "usage": dict(_mapping(usage))}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
