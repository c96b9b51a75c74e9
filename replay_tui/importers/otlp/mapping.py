"""A reduced OTLP span as a record, by the OpenTelemetry GenAI semantic conventions: ``chat`` /
``text_completion`` spans are model calls (``gen_ai.request.*``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``); content missing from
the span is taken from the log event ``gen_ai.client.inference.operation.details`` or the older
``gen_ai.*.message`` / ``gen_ai.choice`` events (span events or log records), joined by trace and span id;
``execute_tool`` spans are tool calls; ``invoke_agent`` spans are the agents the other spans hang from.
OpenInference attributes (``llm.input_messages.N.message.*``, ``tool.name``, ``input.value``,
``output.value``) are the fallback. A span replay-tui exported carries its content exactly (``EXACT_PAYLOAD``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ...journal.canonical import canonical_string
from ..builder import rfc3339_of_nanos
from ..errors import TraceImportError
from ..messages import (
    from_openai_chat,
    from_otel_messages,
    json_or_text,
    message,
    parse_arguments,
    response_from_messages,
)
from ..records import InputRecord, ModelRecord, NoteRecord, Record, ToolRecord
from .decode import MODEL_OPERATIONS

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LEGACY_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
STATUS_ERROR = 2
_PARAMS_OR_USAGE = ("gen_ai.request.", "gen_ai.usage.")


#: What ``replay-tui export --format otlp`` adds to each model and tool span: the recorded content, exactly.
EXACT_PAYLOAD = "replay_tui.payload"


def record_of(
    span: dict[str, Any], path: Path, content: Mapping[tuple[str, str], dict[str, Any]], scope: str | None
) -> Record:
    """The record of a reduced span (``decode.reduce_span``): ``content`` is what log records carry, by (trace,
    span) id; ``scope`` the agent above it (None while reading: the agents above it may come later)."""
    source = {"trace_id": span["trace"], "span_id": span["span"], "line": span["line"]}
    at = rfc3339_of_nanos(span["start"]) if span["start"] else None
    attrs = span["attrs"]
    operation = span["op"]
    exact = attrs.get(EXACT_PAYLOAD)
    if isinstance(exact, str) and operation in MODEL_OPERATIONS | {"execute_tool"}:
        return _exact(span, operation, exact, source, at, scope, path)
    if operation in MODEL_OPERATIONS:
        return _model(span, source, at, scope, content.get((span["trace"], span["span"]), {}))
    if operation == "execute_tool":
        return _tool(span, attrs, source, at, scope)
    if operation == "invoke_agent":
        name = attrs.get("gen_ai.agent.name") or span.get("name")
        inputs = from_otel_messages(json_or_text(attrs.get("gen_ai.input.messages")))
        users = [item["content"] for item in inputs if item["role"] == "user"]
        context = {"agent": name, **({"agent_id": attrs["gen_ai.agent.id"]} if "gen_ai.agent.id" in attrs else {})}
        return InputRecord(users[-1] if users else name, source, context=context, scope=span["span"], at=at)
    return NoteRecord(
        str(span.get("name") or "span"), source, data={"attributes": attrs} if attrs else None, scope=scope, at=at
    )


def _model(
    span: dict[str, Any], source: dict[str, Any], at: str | None, scope: str | None, logged: Mapping[str, Any]
) -> ModelRecord:
    """A model call: its messages from the span's attributes, else from the log records (``logged``), else from
    the older events, else from OpenInference's attributes."""
    attrs = span["attrs"]
    inputs = json_or_text(attrs.get("gen_ai.input.messages", logged.get("gen_ai.input.messages")))
    outputs = json_or_text(attrs.get("gen_ai.output.messages", logged.get("gen_ai.output.messages")))
    system = json_or_text(attrs.get("gen_ai.system_instructions", logged.get("gen_ai.system_instructions")))
    messages: list[dict[str, Any]] | None = None
    output: list[dict[str, Any]] | None = None
    if isinstance(inputs, list):
        messages = from_otel_messages(inputs)
    if isinstance(outputs, list):
        output = from_otel_messages(outputs)
    if messages is None or output is None:
        legacy_in, legacy_out = legacy_events(span["events"] + logged.get("events", []))
        messages = messages if messages is not None else legacy_in
        output = output if output is not None else legacy_out
    if messages is None or output is None:
        openinference_in, openinference_out = _openinference(attrs)
        messages = messages if messages is not None else openinference_in
        output = output if output is not None else openinference_out
    if isinstance(system, list) and messages is not None:
        texts = [part.get("content") for part in system if isinstance(part, Mapping) and part.get("type") == "text"]
        messages = [message("system", "".join(str(text) for text in texts))] + messages
    request: dict[str, Any] = {
        "model": attrs.get("gen_ai.request.model") or attrs.get("llm.model_name"),
        "messages": messages or [],
    }
    params: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    for name, value in attrs.items():  # one walk over the attributes for both
        if name.startswith(_PARAMS_OR_USAGE):
            if name[7] == "r":  # gen_ai.request.
                if name != "gen_ai.request.model":
                    params[name[15:]] = value
            else:  # gen_ai.usage.
                usage[name[13:]] = value
    if params:
        request["params"] = params
    finish = attrs.get("gen_ai.response.finish_reasons")
    finish_reason = finish[0] if isinstance(finish, list) and finish else finish
    if not usage:
        usage = {
            name[len("llm.token_count.") :] + "_tokens": value
            for name, value in attrs.items()
            if name in ("llm.token_count.prompt", "llm.token_count.completion")
        }
    response = response_from_messages(output or [], finish_reason, usage)
    error = error_of(span, attrs)
    missing = missing_content(messages is not None, output is not None or error is not None)
    return ModelRecord(
        request,
        None if error is not None and output is None else response,
        source,
        error=error,
        scope=scope,
        at=at,
        content_complete=not missing,
        missing=missing,
    )


def _exact(
    span: dict[str, Any],
    operation: str,
    text: str,
    source: dict[str, Any],
    at: str | None,
    scope: str | None,
    path: Path,
) -> Record:
    """A span exported by replay-tui: its ``replay_tui.payload`` holds the journal's content as it was."""
    try:
        exact = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise TraceImportError(
            str(path), f"line {span['line']}, span {span['span']}", f"JSON text in {EXACT_PAYLOAD}"
        ) from None
    if not isinstance(exact, dict):
        raise TraceImportError(
            str(path), f"line {span['line']}, span {span['span']}", f"a JSON object in {EXACT_PAYLOAD}"
        )
    if operation == "execute_tool":
        return ToolRecord(
            str(exact.get("call_id")),
            str(exact.get("tool")),
            parse_arguments(exact.get("arguments")),
            source,
            result=exact.get("result"),
            error=exact.get("error"),
            duration_ms=exact.get("duration_ms"),
            scope=scope,
            at=at,
        )
    raw_request = exact.get("request")
    request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
    return ModelRecord(
        request, exact.get("response"), source, error=exact.get("error"), stream=exact.get("stream"), scope=scope, at=at
    )


def diagnostics_json(span: Mapping[str, Any]) -> bytes:
    """The canonical ``{"source": ...}`` of a span's events (``_record``'s source), spelled out: one per span."""
    return b'{"source":{"line":%d,"span_id":%s,"trace_id":%s}}' % (
        span["line"],
        canonical_string(span["span"]),
        canonical_string(span["trace"]),
    )


def missing_content(has_input: bool, has_output: bool) -> str:
    if not has_input and not has_output:
        return "no message content captured"
    if not has_input:
        return "no input messages captured"
    return "" if has_output else "no output messages captured"


def error_of(span: Mapping[str, Any], attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    status = span.get("status") or {}
    code = status.get("code")
    failed = code in (STATUS_ERROR, "STATUS_CODE_ERROR") or "error.type" in attrs
    if not failed:
        return None
    return {
        "type": str(attrs.get("error.type") or "error"),
        "message": str(status.get("message") or ""),
        "code": None,
        "timeout": False,
    }


def _tool(
    span: dict[str, Any], attrs: dict[str, Any], source: dict[str, Any], at: str | None, scope: str | None
) -> ToolRecord:
    name = (
        attrs.get("gen_ai.tool.name")
        or attrs.get("tool.name")
        or str(span.get("name") or "tool").removeprefix("execute_tool ")
    )
    raw_arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value"))
    raw_result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
    error = error_of(span, attrs)
    duration = round((span["end"] - span["start"]) / 1e6, 3) if span["end"] >= span["start"] > 0 else None
    call_id = attrs.get("gen_ai.tool.call.id") or f"span-{span['span']}"
    complete = raw_arguments is not None and (raw_result is not None or error is not None)
    return ToolRecord(
        str(call_id),
        str(name),
        parse_arguments(raw_arguments),
        source,
        result=json_or_text(raw_result),
        error=error,
        duration_ms=duration,
        scope=scope,
        at=at,
        content_complete=complete,
    )


def legacy_events(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """Messages of the older ``gen_ai.*.message`` / ``gen_ai.choice`` events."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in events:
        attrs = event.get("attrs") or {}
        body = attrs.get("body")
        body = body if isinstance(body, dict) else {}
        role = LEGACY_MESSAGE_EVENTS.get(str(event.get("name")))
        if role is not None:
            content = body.get("content", attrs.get("content"))
            calls = [
                {
                    "id": call.get("id"),
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": parse_arguments((call.get("function") or {}).get("arguments")),
                }
                for call in body.get("tool_calls") or ()
            ]
            inputs.append(message(role, content, calls, body.get("id") if role == "tool" else None))
        elif event.get("name") == "gen_ai.choice":
            reply: dict[str, Any] = body["message"] if isinstance(body.get("message"), dict) else body
            converted = from_openai_chat([{"role": "assistant", **reply}])
            outputs.extend(converted)
    return (inputs or None), (outputs or None)


def _openinference(attrs: Mapping[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``."""

    def collect(prefix: str) -> list[dict[str, Any]] | None:
        found: dict[int, dict[str, Any]] = {}
        for name, value in attrs.items():
            if not name.startswith(prefix):
                continue
            index_text, _, rest = name[len(prefix) :].partition(".message.")
            if not index_text.isdigit():
                continue
            entry = found.setdefault(int(index_text), {"role": "user", "content": None, "tool_calls": {}})
            if rest in ("role", "content"):
                entry[rest] = value
            elif rest == "tool_call_id":
                entry["tool_call_id"] = value
            elif rest.startswith("tool_calls."):
                call_index, _, field = rest[len("tool_calls.") :].partition(".tool_call.")
                call = entry["tool_calls"].setdefault(call_index, {"id": None, "name": None, "arguments": {}})
                if field == "id":
                    call["id"] = value
                elif field == "function.name":
                    call["name"] = value
                elif field == "function.arguments":
                    call["arguments"] = parse_arguments(value)
        if not found:
            return None
        return [
            message(
                str(entry["role"]),
                entry["content"],
                [entry["tool_calls"][key] for key in sorted(entry["tool_calls"])],
                entry.get("tool_call_id"),
            )
            for _, entry in sorted(found.items())
        ]

    return collect("llm.input_messages."), collect("llm.output_messages.")


#: Pass one's fast path over a line of plain spans (None without msgspec: every line the checked way).
