"""OTLP/JSON decoded: an ``AnyValue`` as plain JSON, attributes as a dict, times as nanoseconds, a request's
spans and log records, and a span reduced to what the mapping reads of it (``reduce_span``).

Bad shapes raise ``Shape``, which the reader turns into an error naming the line. The fast path
(``fast_spans``) reduces plain lines the same way from msgspec structs; ``tests/importers/test_otlp_spans.py``
holds the two together (every shape, both ways, the same reduced spans and the same journal).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

from ...journal.canonical import MAX_EXACT_INT

#: The operations of a model call (``gen_ai.operation.name``).
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


LAST_NANOS = 2**64  # OTLP's fixed64 (2554-07-21T23:34:33Z); the index holds times as unsigned 64-bit


class Shape(Exception):
    """Part of a request is not of the OTLP/JSON shape; the message says what was expected there.
    ``OtlpTrace._take`` names the line."""


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain JSON value (an int64 beyond JSON's exact range stays a string)."""
    if not isinstance(value, Mapping):
        return value
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            return int_value(value["intValue"])
        if "doubleValue" in value:
            return value["doubleValue"]
        if "boolValue" in value:
            return value["boolValue"]
        if "arrayValue" in value:
            return [any_value(item) for item in (value["arrayValue"] or {}).get("values") or ()]
        if "kvlistValue" in value:
            return attributes((value["kvlistValue"] or {}).get("values") or ())
        if "bytesValue" in value:
            return base64.b64decode(value["bytesValue"], validate=True).hex()
    except (AttributeError, TypeError, ValueError):  # binascii.Error is a ValueError
        kinds = ", ".join(sorted("".join(c if " " <= c <= "~" else "?" for c in str(key)[:40]) for key in value)[:4])
        raise Shape(f"an OTLP AnyValue whose value parses (found one with {kinds})") from None
    return None


def int_value(value: Any) -> int | str:
    """An ``intValue`` as an int (beyond JSON's exact range, as text); raises what ``int()`` raises."""
    number = int(value)
    return number if -MAX_EXACT_INT <= number <= MAX_EXACT_INT else str(number)


def attributes(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` items as a dict; an item without a string key is skipped."""
    if type(items) is list:
        try:  # the well-formed case in one comprehension; anything odd takes the checked loop
            return {
                item["key"]: text if type(text := item["value"].get("stringValue")) is str else any_value(item["value"])
                for item in items
                if type(item["key"]) is str
            }
        except (TypeError, KeyError, AttributeError):
            pass
    converted: dict[str, Any] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        value = item.get("value")
        text = value.get("stringValue") if isinstance(value, dict) else None  # most attributes are strings
        converted[item["key"]] = text if text is not None else any_value(value)
    return converted


def gen_ai_events(events: Any) -> list[dict[str, Any]]:
    """A span's ``gen_ai.*`` events (name and attributes as a dict)."""
    return [
        {"name": event.get("name"), "attrs": attributes(event.get("attributes"))}
        for event in objects(events, "events")
        if str(event.get("name", "")).startswith("gen_ai.")
    ]


def nanos(value: Any, field: str) -> int:
    """Nanoseconds since 1970 (0 when missing or not a number)."""
    try:
        nanos = int(value or 0)
    except (TypeError, ValueError):
        return 0
    if not 0 <= nanos < LAST_NANOS:
        raise Shape(f"{field}: nanoseconds since 1970, an unsigned 64-bit number (found {nanos})")
    return nanos


def spans_of(request: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], Mapping[str, Any]]]:
    for resource_spans in objects(request.get("resourceSpans"), "resourceSpans"):
        scopes = resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans")
        for scope_spans in objects(scopes, "scopeSpans"):
            scope = scope_spans.get("scope") or {}
            for span in objects(scope_spans.get("spans"), "spans"):
                yield span, scope


def log_records(request: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for resource_logs in objects(request.get("resourceLogs"), "resourceLogs"):
        for scope_logs in objects(resource_logs.get("scopeLogs"), "scopeLogs"):
            yield from objects(scope_logs.get("logRecords"), "logRecords")


def objects(items: Any, field: str) -> list[dict[str, Any]]:
    """A list of JSON objects (a missing or empty one as an empty list)."""
    if not items:
        return []
    if type(items) is not list or not all(type(item) is dict for item in items):
        raise Shape(f"{field}: a list of objects")
    return items


def operation(name: str, attrs: Mapping[str, Any]) -> str:
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        return {"LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}.get(kind.upper(), kind.lower())
    head = name.split(" ", 1)[0]
    return head if head in MODEL_OPERATIONS or head in ("execute_tool", "invoke_agent") else ""


def reduce_span(span: Mapping[str, Any], line: int) -> dict[str, Any]:
    """What the mapping reads of a span, attributes as a dict (``fast_spans`` makes the same from a plain line)."""
    get = span.get
    attrs = attributes(get("attributes"))
    events = objects(get("events"), "events")  # checked before the status, as always
    status = get("status") or {}
    if type(status) is not dict:
        raise Shape("status: an object")
    name = get("name")
    return {
        "trace": str(get("traceId") or ""),
        "span": str(get("spanId") or ""),  # never empty: _take checks
        "parent": get("parentSpanId") or None,
        "name": name,
        "start": nanos(get("startTimeUnixNano"), "startTimeUnixNano"),
        "end": nanos(get("endTimeUnixNano"), "endTimeUnixNano"),
        "line": line,
        "op": operation(str(name or ""), attrs),
        "attrs": attrs,
        "status": status,
        "events": gen_ai_events(events),
    }
