"""A journal as OTLP/JSON traces with the OpenTelemetry GenAI semantic conventions.

The run is one trace: an ``invoke_agent`` root span (the input and the run's output),
a ``chat`` span per model call (``gen_ai.request.*``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``,
``error.type``) and an ``execute_tool`` span per tool call (``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``).
Notes become span events on the root. Every model and tool span also carries
``replay_tui.payload``, the exact recorded content as JSON text, so ``replay-tui import``
of the export gets back what the journal held, byte for byte.

The file holds OTLP/JSON ``ExportTraceServiceRequest`` objects, one per line (the OTLP
file exporter's form; a collector takes each line as a POST to ``/v1/traces``), with
at most ``SPANS_PER_REQUEST`` spans each, so a big journal is written in bounded memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

import orjson

from .. import __version__
from ..journal import Event, Journal, JournalError
from ..journal.depth import json_text
from ..journal.model import MODEL_REQUEST, MODEL_RESPONSE, NOTE, RUN_ENDED, RUN_STARTED, TOOL_CALL, TOOL_RESULT

SPANS_PER_REQUEST = 1000
PAYLOAD_ATTRIBUTE = "replay_tui.payload"
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_ERROR = 2


@dataclass(frozen=True)
class OtlpExport:
    spans: int
    requests: int


def any_value(value: Any) -> dict[str, Any]:
    """A JSON value as an OTLP ``AnyValue`` (the inverse of the importer's reading)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(key), "value": any_value(item)} for key, item in value.items()]}}
    return {"stringValue": str(value)}


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in values.items() if value is not None]


def _nanos(recorded_at: str | None) -> int:
    if not recorded_at:
        return 0
    try:
        return int(datetime.fromisoformat(recorded_at.replace("Z", "+00:00")).timestamp() * 1_000_000) * 1000
    except ValueError:
        return 0


def _hex_id(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


#: A recorded value as JSON text, at any depth a journal holds (orjson alone writes 255 levels: a journal
#: nested 256 deep was 'internal error: TypeError: Recursion limit reached', exit 70).
_json = json_text


def _text(value: Any) -> str:
    """A text part's content: the text itself, anything else as its JSON (a run's output may be an object)."""
    return value if isinstance(value, str) else _json(value)


def to_otel_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Normalized messages -> OTel GenAI messages with parts (the importers' normalized shape, see importers/messages.py)."""
    converted = []
    for item in messages:
        parts: list[dict[str, Any]] = []
        content = item.get("content")
        if item.get("role") == "tool":
            parts.append({"type": "tool_call_response", "id": item.get("tool_call_id"), "response": content})
        elif isinstance(content, list):
            for part in content:
                parts.append({"type": "text", "content": part["content"]} if part.get("type") == "text" else dict(part))
        elif content is not None:
            parts.append({"type": "text", "content": content})
        for call in item.get("tool_calls") or ():
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": call.get("arguments"),
                }
            )
        converted.append({"role": item.get("role"), "parts": parts})
    return converted


def _messages_attribute(messages: Any) -> str | None:
    if not isinstance(messages, list) or not all(isinstance(item, dict) for item in messages):
        return None
    return _json(to_otel_messages(messages))


class _Spans:
    """Pairs request/response and call/result events into spans, in journal order."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.trace_id = ""
        self.root_id = ""
        self.root: dict[str, Any] = {}
        self.notes: list[dict[str, Any]] = []
        self.earliest = 1 << 63  # the root span starts no later than its first child

    def spans(self) -> Iterator[dict[str, Any]]:
        open_requests: dict[str, Event] = {}
        open_calls: dict[str, Event] = {}
        for item in self.journal.events():
            if isinstance(item, JournalError):
                raise item
            event = item
            if event.kind == RUN_STARTED:
                self._start(event)
            elif event.kind == MODEL_REQUEST:
                open_requests[event.event_id] = event
            elif event.kind == MODEL_RESPONSE:
                request = open_requests.pop(event.parent_event_id or "", None)
                yield self._chat(request, event)
            elif event.kind == TOOL_CALL:
                open_calls[event.event_id] = event
            elif event.kind == TOOL_RESULT:
                call = open_calls.pop(event.parent_event_id or "", None)
                yield self._tool(call, event)
            elif event.kind == "input.received" and "input" not in self.root:
                self.root["input"] = event.payload.get("content")
            elif event.kind == NOTE:
                self.notes.append(
                    {
                        "timeUnixNano": str(_nanos(event.recorded_at)),
                        "name": str(event.payload.get("text", "note")),
                        "attributes": _attributes({"replay_tui.seq": event.seq}),
                    }
                )
            elif event.kind == RUN_ENDED:
                self.root["end"] = _nanos(event.recorded_at)
                self.root["output"] = event.payload.get("output")
                self.root["status"] = event.payload.get("status")
        yield self._root()

    def _start(self, event: Event) -> None:
        self.trace_id = _hex_id(f"replay-tui:{event.run_id}", 32)
        self.root_id = _hex_id(f"replay-tui:{event.run_id}:root", 16)
        self.root = {
            "start": _nanos(event.recorded_at),
            "agent": event.payload.get("agent") or event.run_id,
            "run_id": event.run_id,
        }

    def _span(
        self, event: Event, name: str, kind: int, start: int, end: int, attributes: dict[str, Any], error: Any = None
    ) -> dict[str, Any]:
        if not self.trace_id:
            raise JournalError("a journal to export starts with run.started", seq=event.seq)
        span: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": _hex_id(f"{event.run_id}:{event.seq}", 16),
            "parentSpanId": self.root_id,
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(max(end, start)),
            "attributes": _attributes(attributes),
            "status": {},
        }
        self.earliest = min(self.earliest, start) if start else self.earliest
        if error:
            message = error.get("message") if isinstance(error, dict) else str(error)
            span["status"] = {"code": STATUS_ERROR, "message": str(message or "")}
        return span

    def _chat(self, request_event: Event | None, response_event: Event) -> dict[str, Any]:
        raw_request = request_event.payload.get("request") if request_event else None
        request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
        payload = response_event.payload
        raw_response = payload.get("response")
        response: dict[str, Any] = raw_response if isinstance(raw_response, dict) else {}
        error = payload.get("error")
        model = request.get("model")
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
        for name, value in (request.get("params") or {}).items():
            if isinstance(value, (str, int, float, bool)):
                attributes[f"gen_ai.request.{name}"] = value
        attributes["gen_ai.input.messages"] = _messages_attribute(request.get("messages"))
        output = {
            "role": "assistant",
            "content": response.get("content"),
            "tool_calls": response.get("tool_calls") or [],
        }
        attributes["gen_ai.output.messages"] = _messages_attribute([output]) if response else None
        if response.get("finish_reason") is not None:
            attributes["gen_ai.response.finish_reasons"] = [str(response["finish_reason"])]
        for name, value in (response.get("usage") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                attributes[f"gen_ai.usage.{name}"] = value
        if error:
            attributes["error.type"] = str(error.get("type") if isinstance(error, dict) else "error")
        exact: dict[str, Any] = {
            "request": request,
            **{key: payload[key] for key in ("response", "error", "stream") if key in payload},
        }
        attributes[PAYLOAD_ATTRIBUTE] = _json(exact)
        start = _nanos(request_event.recorded_at if request_event else response_event.recorded_at)
        return self._span(
            request_event or response_event,
            f"chat {model}" if model else "chat",
            SPAN_KIND_CLIENT,
            start,
            _nanos(response_event.recorded_at),
            attributes,
            error,
        )

    def _tool(self, call_event: Event | None, result_event: Event) -> dict[str, Any]:
        call: dict[str, Any] = call_event.payload if call_event else {}
        payload = result_event.payload
        name = str(payload.get("tool") or call.get("tool") or "tool")
        error = payload.get("error")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": payload.get("call_id"),
            "gen_ai.tool.call.arguments": _json(call.get("arguments")) if call else None,
            "gen_ai.tool.call.result": _json(payload.get("result")) if "result" in payload else None,
        }
        if error:
            attributes["error.type"] = str(error.get("type") if isinstance(error, dict) else "error")
        exact: dict[str, Any] = {
            "call_id": payload.get("call_id"),
            "tool": name,
            "arguments": call.get("arguments"),
            **{key: payload[key] for key in ("result", "error", "duration_ms") if key in payload},
        }
        attributes[PAYLOAD_ATTRIBUTE] = _json(exact)
        start = _nanos(call_event.recorded_at if call_event else result_event.recorded_at)
        end = (
            start + int(float(payload["duration_ms"]) * 1_000_000)
            if isinstance(payload.get("duration_ms"), (int, float))
            else _nanos(result_event.recorded_at)
        )
        return self._span(
            call_event or result_event, f"execute_tool {name}", SPAN_KIND_INTERNAL, start, end, attributes, error
        )

    def _root(self) -> dict[str, Any]:
        root = self.root
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": root.get("agent"),
            "replay_tui.run_id": root.get("run_id"),
        }
        if "input" in root:
            attributes["gen_ai.input.messages"] = _json(
                [{"role": "user", "parts": [{"type": "text", "content": _text(root["input"])}]}]
            )
        if root.get("output") is not None:
            attributes["gen_ai.output.messages"] = _json(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": _text(root["output"])}],
                        "finish_reason": "stop",
                    }
                ]
            )
        start = min(int(root.get("start") or 0) or self.earliest, self.earliest)
        start = 0 if start == 1 << 63 else start
        span = {
            "traceId": self.trace_id,
            "spanId": self.root_id,
            "name": f"invoke_agent {root.get('agent')}",
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(max(int(root.get("end") or start), start)),
            "attributes": _attributes(attributes),
            "events": self.notes,
            "status": {"code": STATUS_ERROR, "message": "the run ended with an error"}
            if root.get("status") == "error"
            else {},
        }
        return span


def export_otlp(journal: Journal, out: IO[bytes]) -> OtlpExport:
    """Write the journal's spans to ``out`` as OTLP/JSON requests, one per line."""
    resource = {
        "attributes": _attributes(
            {
                "service.name": "replay-tui-export",
                "telemetry.sdk.name": "replay-tui",
                "telemetry.sdk.version": __version__,
            }
        )
    }
    scope = {"name": "replay_tui.analysis.export_otlp", "version": __version__}
    batch: list[dict[str, Any]] = []
    spans = requests = 0

    def flush() -> None:
        nonlocal requests
        request = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": batch}]}]}
        out.write(orjson.dumps(request) + b"\n")
        requests += 1
        batch.clear()

    source = _Spans(journal)
    for span in source.spans():
        batch.append(span)
        spans += 1
        if len(batch) >= SPANS_PER_REQUEST:
            flush()
    if batch:
        flush()
    return OtlpExport(spans, requests)
