"""OpenAI Agents SDK trace exports -> records.

The input is what the SDK's exporters hand over: ``trace`` and ``trace.span`` objects
(``Trace.export()`` / ``Span.export()``), one JSON object per line as a
``TracingProcessor`` writes them, or one JSON document (a list, or the backend's
``{"data": [...]}`` batch). Spans map by ``span_data.type``:

* ``agent`` -> the input its agent started from (``input.received``; later spans hang from it);
* ``generation`` -> a model call with its messages (chat-completions models);
* ``response`` -> a model call *without content*: the SDK exports only the response id,
  so such runs are view-only;
* ``function`` -> a tool call and result (the call id comes from the model answer that asked);
* ``handoff``, ``guardrail``, ``custom``, ``mcp_tools`` and the rest -> notes; the SDK's
  own ``turn`` / ``task`` bookkeeping spans (usage totals only) are left out.

One journal per trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .errors import TraceImportError, not_json
from .format import Format, Head, ImportedJournal, Input
from .messages import (
    from_openai_chat,
    last_user_text,
    parse_arguments,
    response_from_messages,
)
from .plain import TextBudget, plain_record, shown
from .records import EndRecord, InputRecord, ModelRecord, NoteRecord, Record, ToolRecord
from .runs import Run, write_runs

NAME = "openai-agents"

BOOKKEEPING = frozenset({"turn", "task"})
NO_CONTENT = "no message content captured (the Agents SDK exports only the id of a Responses API call)"
#: The export is read whole (a JSON document or lines): bigger files are refused.
MAX_EXPORT_BYTES = 1 << 30


def read_items(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, item) for every exported trace or span in the file."""
    size = path.stat().st_size
    if size > MAX_EXPORT_BYTES:
        raise TraceImportError(
            str(path), None, f"an Agents SDK export of at most {MAX_EXPORT_BYTES >> 30} GiB (it has {size >> 20} MiB)"
        )
    data = path.read_bytes()
    try:
        whole = orjson.loads(data)
    except orjson.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("data"), list):
        whole = whole["data"]
    if isinstance(whole, list):
        items = [(f"item {index}", item) for index, item in enumerate(whole)]
    elif isinstance(whole, dict):
        items = [("item 0", whole)]
    else:
        items = []
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"line {number}", orjson.loads(line)))
            except orjson.JSONDecodeError as error:
                expected = "one JSON object of an Agents SDK trace export"
                raise not_json(str(path), f"line {number}", expected, error.msg) from None
    for where, item in items:
        if not isinstance(item, dict) or item.get("object") not in ("trace", "trace.span"):
            raise TraceImportError(str(path), where, 'an Agents SDK export object ("object": "trace" or "trace.span")')
        if item["object"] == "trace.span" and not isinstance(item.get("span_data"), dict):
            raise TraceImportError(str(path), where, "a span_data object in every trace.span")
        key = "id" if item["object"] == "trace" else "trace_id"
        if not isinstance(item.get(key), str) or not item[key]:
            raise TraceImportError(str(path), where, f"a string {key} in every {item['object']}")
        if item["object"] == "trace.span":
            if not isinstance(item.get("id"), str) or not item["id"]:
                raise TraceImportError(str(path), where, "a string id in every trace.span")
            if item.get("parent_id") is not None and not isinstance(item["parent_id"], str):
                raise TraceImportError(str(path), where, "a parent_id that is a span id (a string) or null")
    return items


def traces(path: Path) -> dict[str, dict[str, Any]]:
    """trace id -> {"trace": the trace object or None, "spans": [(where, span)]}, in file order."""
    grouped: dict[str, dict[str, Any]] = {}
    seen: dict[tuple[str, str], str] = {}  # (trace id, span id) -> where it was first
    for where, item in read_items(path):
        trace_id = item["id"] if item["object"] == "trace" else item["trace_id"]
        entry = grouped.setdefault(trace_id, {"trace": None, "spans": []})
        if item["object"] == "trace":
            entry["trace"] = item
            continue
        first = seen.setdefault((trace_id, item["id"]), where)
        if first != where:
            raise TraceImportError(
                str(path), where, f"span ids unique in their trace ({shown(item['id'])} is at {first} too)"
            )
        entry["spans"].append((where, item))
    if not any(entry["spans"] for entry in grouped.values()):
        raise TraceImportError(str(path), None, "at least one trace.span in the Agents SDK export")
    return grouped


def _rfc3339(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value.replace("+00:00", "Z")


class TraceRecords:
    """The records of one exported trace."""

    def __init__(self, path: Path, spans: list[tuple[str, dict[str, Any]]], budget: TextBudget | None = None) -> None:
        self.path = path
        self.budget = budget
        self.spans = sorted(spans, key=lambda pair: str(pair[1].get("started_at") or ""))
        self.children: dict[str, list[dict[str, Any]]] = {}
        for _, span in self.spans:
            self.children.setdefault(str(span.get("parent_id")), []).append(span)
        self.types = {str(span.get("id")): span["span_data"].get("type") for _, span in self.spans}
        self.parents = {str(span.get("id")): str(span.get("parent_id")) for _, span in self.spans}

    def _scope(self, span_id: str) -> str | None:
        seen = 0
        while seen < 256:
            span_id = self.parents.get(span_id, "")
            if not span_id or span_id == "None":
                return None
            if self.types.get(span_id) == "agent":
                return span_id
            seen += 1
        return None

    def _first_question(self, agent_id: str) -> Any:
        """The user's question: the last user message of the first model call below the agent."""
        pending = list(self.children.get(agent_id, ()))
        visited = {agent_id}  # parent ids may loop: each span is looked at once
        while pending:
            span = pending.pop(0)
            span_id = str(span.get("id"))
            if span_id in visited:
                continue
            visited.add(span_id)
            data = span["span_data"]
            if data.get("type") == "generation" and isinstance(data.get("input"), list):
                return last_user_text(from_openai_chat(data["input"]))
            pending[:0] = self.children.get(span_id, [])
        return None

    def records(self) -> Iterator[Record]:
        """Each span's record (checked: plain JSON of bounded size), then the run's end."""
        pending_calls: dict[str | None, list[dict[str, Any]]] = {}
        answer: Any = None
        failed: Any = None
        for where, span in self.spans:
            try:
                record = self._span(where, span, pending_calls)
            except (AttributeError, TypeError, ValueError, KeyError, IndexError) as error:
                raise TraceImportError(
                    str(self.path), where, f"an Agents SDK span of the exported shape ({shown(error, 80)})"
                ) from None
            if span.get("error") and failed is None:
                failed = span["error"]
            if record is None:
                continue
            if span["span_data"].get("type") == "generation":
                answer = (record.response or {}).get("content")
            yield plain_record(record, self.path, where, self.budget)
        status = "error" if failed else "ok"
        ended = _rfc3339(self.spans[-1][1].get("ended_at")) if self.spans else None
        yield plain_record(EndRecord(status, answer, failed, at=ended), self.path, "the run's end")

    def _span(self, where: str, span: dict[str, Any], pending_calls: dict[str | None, list[dict[str, Any]]]) -> Any:
        """The record of one span (None for the SDK's own bookkeeping)."""
        data = span["span_data"]
        kind = data.get("type")
        span_id = str(span.get("id"))
        source = {"trace_id": span.get("trace_id"), "span_id": span_id, "record": where}
        at = _rfc3339(span.get("started_at"))
        scope = self._scope(span_id)
        if kind == "agent":
            question = self._first_question(span_id)
            context = {"agent": data.get("name"), "tools": data.get("tools"), "handoffs": data.get("handoffs")}
            content = question if question is not None else data.get("name")
            return InputRecord(content, source, context=context, scope=span_id, at=at)
        if kind == "generation":
            record = _generation(data, source, at, scope)
            pending_calls[scope] = list((record.response or {}).get("tool_calls") or ())
            return record
        if kind == "response":
            request: dict[str, Any] = {"model": None, "messages": []}
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            response = {
                "content": None,
                "tool_calls": [],
                "finish_reason": None,
                "usage": usage,
                "response_id": data.get("response_id"),
            }
            return ModelRecord(
                request, response, source, scope=scope, at=at, content_complete=False, missing=NO_CONTENT
            )
        if kind == "function":
            return _function(span, data, source, at, scope, pending_calls.get(scope, []))
        bookkeeping = data.get("data") if isinstance(data.get("data"), dict) else {}
        if kind == "custom" and bookkeeping.get("sdk_span_type") in BOOKKEEPING:
            return None
        return NoteRecord(_note_text(kind, data), source, data=data, scope=scope, at=at)


def _generation(data: Mapping[str, Any], source: dict[str, Any], at: str | None, scope: str | None) -> ModelRecord:
    inputs, outputs = data.get("input"), data.get("output")
    messages = from_openai_chat(inputs) if isinstance(inputs, list) else None
    output = from_openai_chat(outputs) if isinstance(outputs, list) else None
    request: dict[str, Any] = {"model": data.get("model"), "messages": messages or []}
    config = {name: value for name, value in (data.get("model_config") or {}).items() if value is not None}
    if config:
        request["params"] = config
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    finish = "tool_calls" if output and any(item.get("tool_calls") for item in output) else ("stop" if output else None)
    response = response_from_messages(output or [], finish, usage or {})
    missing = "" if messages is not None and output is not None else "no message content captured"
    return ModelRecord(request, response, source, scope=scope, at=at, content_complete=not missing, missing=missing)


def _function(
    span: Mapping[str, Any],
    data: Mapping[str, Any],
    source: dict[str, Any],
    at: str | None,
    scope: str | None,
    pending: list[dict[str, Any]],
) -> ToolRecord:
    name = str(data.get("name") or "function")
    arguments = parse_arguments(data.get("input"))
    call_id = f"span-{source['span_id']}"
    for index, call in enumerate(pending):  # the model answer that asked for it knows its call id
        if call.get("name") == name and call.get("arguments") == arguments:
            call_id = str(call.get("id"))
            del pending[index]
            break
    error = None
    if span.get("error"):
        failure = span["error"]
        error = {
            "type": "ToolError",
            "message": str(failure.get("message") if isinstance(failure, dict) else failure),
            "code": None,
            "timeout": False,
        }
    output = data.get("output")
    complete = data.get("input") is not None and (output is not None or error is not None)
    return ToolRecord(
        call_id,
        name,
        arguments,
        source,
        result=output,
        error=error,
        duration_ms=_duration_ms(span),
        scope=scope,
        at=at,
        content_complete=complete,
    )


def _duration_ms(span: Mapping[str, Any]) -> float | None:
    from datetime import datetime

    try:
        started = datetime.fromisoformat(str(span.get("started_at")))
        ended = datetime.fromisoformat(str(span.get("ended_at")))
    except ValueError:
        return None
    return round((ended - started).total_seconds() * 1000, 3)


def _note_text(kind: Any, data: Mapping[str, Any]) -> str:
    if kind == "handoff":
        return f"handoff from {data.get('from_agent')} to {data.get('to_agent')}"
    if kind == "guardrail":
        return f"guardrail {data.get('name')}" + (" triggered" if data.get("triggered") else " passed")
    name = data.get("name")
    return f"{kind} {name}" if name else str(kind)


def sniff(head: Head) -> bool:
    """A ``trace`` or ``trace.span`` object first (or the backend's ``{"data": [...]}`` batch)."""
    record = head.record
    if record is None:
        return False
    return record.get("object") in ("trace", "trace.span") or (
        isinstance(record.get("data"), list) and "type" not in record
    )


def import_agents(source: Input, out: Path) -> list[ImportedJournal]:
    """One journal per trace of the export (a directory ``out`` of them when there are several)."""
    path = source.path
    digest = source.digest()
    runs: list[Run] = []
    budget = TextBudget()  # shared by every trace of the file
    for trace_id, entry in traces(path).items():
        if not entry["spans"]:
            continue
        trace = entry["trace"] or {}
        detail = {"trace_id": trace_id, "workflow_name": trace.get("workflow_name"), "group_id": trace.get("group_id")}
        spans = TraceRecords(path, entry["spans"], budget)
        started = spans.spans[0][1].get("started_at")
        runs.append(
            Run(
                f"trace-{trace_id}",
                f"agents-{digest[:12]}-{len(runs) + 1}",
                list(spans.records()),
                detail,
                started_at=str(started).replace("+00:00", "Z") if started else None,
            )
        )
    return write_runs(path, out, NAME, digest, runs, source.joined)


FORMAT = Format(NAME, sniff, import_agents, joinable=True)
