"""Pass one's fast path: a line of OTLP/JSON spans decoded straight into typed structs (msgspec), then
into the reduced spans ``decode.reduce_span`` makes, without the dict of dicts a JSON parser builds.

Only the plain shape takes this path: spans without log records, strings where OTLP puts strings, an
``AnyValue`` with no key OTLP does not define. Anything else (a wrong type, a missing field, a line that
is not JSON, a value out of range) answers None and the line is read again by the checked path
(``lines.line_requests``), so bad input gets the one error message it always got. Values other than
strings are parsed by orjson from their raw JSON, as the checked path parses them, and converted by the
same ``any_value``. One difference is left: a number too big for a float (``1e400``) in a field the import
never reads (a resource attribute, a span's links) is skipped here, where orjson refuses the line.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import getrecursionlimit
from typing import Any

import orjson

from .decode import any_value, gen_ai_events, int_value, nanos, operation

try:
    import msgspec
    from msgspec import UNSET, Raw, Struct, UnsetType
except ImportError:  # the checked path reads every line
    msgspec = None  # type: ignore[assignment]

Reduced = dict[str, Any]
#: How deep orjson (the checked path) nests; msgspec stops at Python's recursion limit, so the fast path
#: is taken only while that limit is lower (the default, 1,000), and a line too deep for one is for both.
ORJSON_DEPTH = 1024

if msgspec is not None:
    # What the fast path reads of a request (msgspec skips the rest); module level, so the
    # annotations resolve.

    class AnyValue(Struct, forbid_unknown_fields=True, gc=False):
        stringValue: str | UnsetType = UNSET
        intValue: Raw | UnsetType = UNSET
        doubleValue: Raw | UnsetType = UNSET
        boolValue: Raw | UnsetType = UNSET
        arrayValue: Raw | UnsetType = UNSET
        kvlistValue: Raw | UnsetType = UNSET
        bytesValue: Raw | UnsetType = UNSET

    class KeyValue(Struct, gc=False):
        key: str
        value: AnyValue

    class Span(Struct, gc=False):
        traceId: str | None | UnsetType = UNSET
        spanId: str | None | UnsetType = UNSET
        parentSpanId: str | None | UnsetType = UNSET
        name: str | None | UnsetType = UNSET
        startTimeUnixNano: str | int | None | UnsetType = UNSET
        endTimeUnixNano: str | int | None | UnsetType = UNSET
        attributes: list[KeyValue] | None | UnsetType = UNSET
        events: Raw | UnsetType = UNSET
        status: Raw | UnsetType = UNSET

    class ScopeSpans(Struct, gc=False):
        spans: list[Span] | None | UnsetType = UNSET

    class ResourceSpans(Struct, gc=False):
        scopeSpans: list[ScopeSpans] | None | UnsetType = UNSET
        instrumentationLibrarySpans: list[ScopeSpans] | None | UnsetType = UNSET

    class Request(Struct, gc=False):
        resourceSpans: list[ResourceSpans] | None | UnsetType = UNSET
        resourceLogs: Raw | UnsetType = UNSET


def reader() -> Callable[[bytes, int], list[Reduced] | None] | None:
    """``spans(line, number)``: the line's reduced spans, or None for the checked path; None without msgspec.
    The checked path's own helpers (``decode``: their one home) convert the values."""
    if msgspec is None:
        return None

    decode = msgspec.json.Decoder(Request).decode
    fields = AnyValue.__struct_fields__[1:]

    def value_of(value: AnyValue) -> Any:
        """``any_value`` of the value as the checked path parses it (the same keys, orjson's values)."""
        for field in fields:  # any_value's order after stringValue: the first one present decides
            raw = getattr(value, field)
            if raw is not UNSET:
                try:
                    parsed = orjson.loads(memoryview(raw))
                    if field == "intValue":
                        return int_value(parsed)
                    if field == "doubleValue" or field == "boolValue":
                        return parsed  # as any_value answers them
                    return any_value({field: parsed})
                except Exception:  # noqa: BLE001 (the error names every key: made below, from all of them)
                    break
        found = {
            field: orjson.loads(memoryview(raw)) for field in fields if (raw := getattr(value, field)) is not UNSET
        }
        return any_value(found)

    def spans(line: bytes, number: int) -> list[Reduced] | None:
        if getrecursionlimit() > ORJSON_DEPTH:
            return None  # msgspec nests as deep as Python may: deeper than orjson, which would refuse the line
        try:
            if not line.isascii():
                line.decode("utf-8")  # msgspec does not check the fields it skips; the checked path names the line
            request = decode(line)
        except Exception:  # noqa: BLE001 (not JSON, a wrong shape, nested too deep: the checked path names it)
            return None
        if request.resourceLogs is not UNSET or request.resourceSpans is UNSET:
            return None  # logs (rare, and joined by the checked path) or no spans: read it the checked way
        reduced: list[Reduced] = []
        try:
            for resource in request.resourceSpans or ():
                for scope in resource.scopeSpans or resource.instrumentationLibrarySpans or ():
                    for span in scope.spans or ():
                        reduced.append(reduce_span(span, number))
        except Exception:  # noqa: BLE001 (whatever it is, the checked path names it)
            return None
        return reduced

    def reduce_span(span: Span, number: int) -> Reduced:
        """``decode.reduce_span`` of the span: the same keys and values (``test_otlp_spans`` holds them together)."""
        if not span.spanId:
            raise ValueError("no spanId")  # the checked path names the span
        attrs: dict[str, Any] = {}
        for item in span.attributes or ():
            value = item.value
            text = value.stringValue
            attrs[item.key] = text if text is not UNSET else value_of(value)
        events = gen_ai_events(orjson.loads(memoryview(span.events))) if span.events is not UNSET else []
        status = (orjson.loads(memoryview(span.status)) if span.status is not UNSET else None) or {}
        if type(status) is not dict:
            raise ValueError("a status that is not an object")
        name = span.name if span.name is not UNSET else None
        parent = span.parentSpanId if span.parentSpanId is not UNSET else None
        start = span.startTimeUnixNano if span.startTimeUnixNano is not UNSET else None
        end = span.endTimeUnixNano if span.endTimeUnixNano is not UNSET else None
        return {
            "trace": span.traceId or "",
            "span": span.spanId,
            "parent": parent or None,
            "name": name,
            "start": nanos(start, "startTimeUnixNano"),
            "end": nanos(end, "endTimeUnixNano"),
            "line": number,
            "op": operation(str(name or ""), attrs),
            "attrs": attrs,
            "status": status,
            "events": events,
        }

    return spans
