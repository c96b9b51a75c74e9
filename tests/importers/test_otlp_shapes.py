"""OTLP/JSON of the wrong shape is bad input: one error naming the file and line, never a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.importers import TraceImportError, import_trace

from .helpers import events_of

SPAN: dict[str, Any] = {
    "traceId": "a",
    "spanId": "b",
    "name": "chat m",
    "startTimeUnixNano": "1700000000000000000",
    "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
}


def _with_span(**fields: Any) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{**SPAN, **fields}]}]}]}


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ({"resourceSpans": "x"}, "resourceSpans: a list of objects"),
        ({"resourceSpans": [{"scopeSpans": [5]}]}, "scopeSpans: a list of objects"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": ["x"]}]}]}, "spans: a list of objects"),
        (_with_span(events=[5]), "events: a list of objects"),
        (_with_span(status="x"), "status: an object"),
        (_with_span(startTimeUnixNano="99999999999999999999999"), "startTimeUnixNano: nanoseconds since 1970"),
        (_with_span(endTimeUnixNano="-5"), "endTimeUnixNano: nanoseconds since 1970"),
        (_with_span(startTimeUnixNano=str(2**64)), "startTimeUnixNano: nanoseconds since 1970"),
        (_with_span(endTimeUnixNano=2**63), None),  # beyond a signed 64-bit number, within OTLP's: imported
        (_with_span(attributes=[{"key": "k", "value": {"intValue": "many"}}]), "an OTLP AnyValue"),
        (_with_span(attributes=[{"key": "k", "value": {"bytesValue": "not base64!"}}]), "an OTLP AnyValue"),
        (_with_span(attributes=[{"key": "k", "value": {"arrayValue": [1]}}]), "an OTLP AnyValue"),
        ({**_with_span(), "resourceLogs": [{"scopeLogs": [{"logRecords": [1]}]}]}, "logRecords: a list of objects"),
    ],
)
def test_wrong_shapes_name_the_line(tmp_path: Path, request_: dict[str, Any], expected: str | None) -> None:
    trace = tmp_path / "bad.otlp.jsonl"
    trace.write_bytes(orjson.dumps(_with_span()) + b"\n" + orjson.dumps(request_) + b"\n")
    if expected is None:
        import_trace(trace, tmp_path / "out.jsonl", format="otlp")
        return
    with pytest.raises(TraceImportError) as error:
        import_trace(trace, tmp_path / "out.jsonl", format="otlp")
    assert str(trace) in str(error.value.path) and "line 2" in str(error.value) and expected in str(error.value)
    assert not (tmp_path / "out.jsonl").exists()


def test_an_int64_beyond_json_exact_integers_is_kept_as_text(tmp_path: Path) -> None:
    trace = tmp_path / "big.otlp.jsonl"
    big = [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "9223372036854775807"}}]
    trace.write_bytes(orjson.dumps(_with_span(attributes=SPAN["attributes"] + big)) + b"\n")
    import_trace(trace, tmp_path / "out.jsonl", format="otlp")
    responses = [event for event in events_of(tmp_path / "out.jsonl") if event["kind"] == "model.response"]
    assert responses[0]["payload"]["response"]["usage"] == {"input_tokens": "9223372036854775807"}


def test_the_error_never_carries_the_trace_s_control_characters(tmp_path: Path) -> None:
    trace = tmp_path / "escape.otlp.jsonl"
    hostile = {"intValue": "many", "\x1b]0;owned\x07\u009b31m": 1}
    trace.write_bytes(orjson.dumps(_with_span(attributes=[{"key": "k", "value": hostile}])) + b"\n")
    with pytest.raises(TraceImportError) as error:
        import_trace(trace, tmp_path / "out.jsonl", format="otlp")
    assert "an OTLP AnyValue" in str(error.value)
    assert all(" " <= char <= "~" for char in str(error.value).replace(str(trace), ""))
