"""Pass one's fast path (``otlp/fast_spans.py``, msgspec structs) reduces a line of plain spans as the checked path
does: the journal is the same bytes with it and without it, and any other line goes the checked way."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from replay_tui.importers import TraceImportError, import_trace
from replay_tui.importers.otlp import decode
from replay_tui.importers.otlp import lines as otlp_lines

from .test_fast_paths import FIXTURE, _many_runs

pytest.importorskip("msgspec")


@pytest.fixture(autouse=True)
def default_recursion_limit() -> Iterator[None]:
    """The fast path runs under Python's default recursion limit (some tests leave it raised)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def test_a_raised_recursion_limit_turns_the_fast_path_off() -> None:
    line = FIXTURE.read_bytes().splitlines()[0]
    assert otlp_lines.FAST_SPANS is not None and otlp_lines.FAST_SPANS(line, 1) is not None
    sys.setrecursionlimit(5000)  # msgspec would nest deeper than orjson: the checked path decides
    assert otlp_lines.FAST_SPANS(line, 1) is None


def _both_ways(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes]:
    import_trace(trace, tmp_path / "fast.jsonl")
    with monkeypatch.context() as patched:
        patched.setattr(otlp_lines, "FAST_SPANS", None)
        import_trace(trace, tmp_path / "checked.jsonl")
    return (tmp_path / "fast.jsonl").read_bytes(), (tmp_path / "checked.jsonl").read_bytes()


def _odd_spans(path: Path) -> None:
    """Spans of every value kind, events, statuses, ids and times as numbers, a span without attributes."""
    values = [
        {"stringValue": "text \u2028 \ue000"},
        {"intValue": "9007199254740993"},  # beyond JSON's exact integers: kept as text
        {"intValue": 7},
        {"doubleValue": 1.5},
        {"doubleValue": 1e16},
        {"boolValue": True},
        {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}},
        {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}},
        {"bytesValue": "AAEC"},
        {},
    ]
    spans = [
        {
            "traceId": "t1",
            "spanId": f"s{index}",
            "parentSpanId": "s0" if index else "",
            "name": "execute_tool lookup" if index % 2 else "invoke_agent helper",
            "startTimeUnixNano": 1_700_000_000_000_000_000 + index
            if index % 3
            else str(1_700_000_000_000_000_000 + index),
            "endTimeUnixNano": "1700000000000000999",
            "attributes": [{"key": f"attr.{index}", "value": value}, {"key": f"attr.{index}", "value": value}],
            "events": [
                {"name": "gen_ai.user.message", "attributes": [{"key": "content", "value": value}]},
                {"name": "x"},
            ],
            "status": {"code": 2, "message": "failed"} if index == 3 else {},
        }
        for index, value in enumerate(values)
    ]
    spans.append({"traceId": "t1", "spanId": "bare", "name": "lookup", "startTimeUnixNano": 1})  # no attributes
    chat = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    request = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": spans + chat}]}]}
    legacy = {"resourceSpans": [{"instrumentationLibrarySpans": [{"spans": [dict(spans[1], spanId="old")]}]}]}
    path.write_bytes(orjson.dumps(request) + b"\n" + orjson.dumps(legacy) + b"\n")


@pytest.mark.parametrize("shape", ["fixture", "many runs", "odd spans"])
def test_the_fast_path_writes_the_checked_path_s_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    trace = tmp_path / "trace.otlp.jsonl"
    if shape == "fixture":
        trace.write_bytes(FIXTURE.read_bytes())
    elif shape == "many runs":
        _many_runs(trace, 5, logs_last=True)
    else:
        _odd_spans(trace)
    fast, checked = _both_ways(trace, tmp_path, monkeypatch)
    assert fast == checked


def test_plain_lines_take_the_fast_path_and_others_do_not() -> None:
    assert otlp_lines.FAST_SPANS is not None
    spans_line = FIXTURE.read_bytes().splitlines()[0]
    reduced = otlp_lines.FAST_SPANS(spans_line, 3)
    assert reduced is not None and len(reduced) == 4 and {span["line"] for span in reduced} == {3}
    request = orjson.loads(spans_line)
    checked = [decode.reduce_span(span, 3) for span, _scope in decode.spans_of(request)]  # type: ignore[arg-type]
    assert reduced == checked
    logs_line = FIXTURE.read_bytes().splitlines()[1]
    hostile = [
        logs_line,  # log records: joined the checked way
        spans_line[: len(spans_line) // 2],  # cut short
        spans_line.replace(b'"spanId":"', b'"spanIdGone":"', 1),  # no span id
        spans_line.replace(b'"chat"}', b'"chat","other":1}', 1),  # a key OTLP does not define
        spans_line.replace(b'"startTimeUnixNano":"', b'"startTimeUnixNano":"99', 1),  # beyond 64 bits
        b'{"resourceSpans":{}}',
        b"[]",
        b'{"resourceSpans":[{"resource":{"x":"\xff"},"scopeSpans":[]}]}',  # invalid UTF-8 in a field not read
        b'{"resourceSpans":[{"resource":{"x":' + b"[" * 1500 + b"]" * 1500 + b"}}]}",  # nested too deep
    ]
    assert all(otlp_lines.FAST_SPANS(line, 1) is None for line in hostile)


def test_invalid_utf8_and_deep_nesting_are_named_as_ever(tmp_path: Path) -> None:
    trace = tmp_path / "trace.otlp.jsonl"
    good = FIXTURE.read_bytes().splitlines()[0]
    for bad, expected in (
        (b'{"resourceSpans":[{"resource":{"x":"\xff"},"scopeSpans":[]}]}', "line 2"),
        (b'{"resourceSpans":[{"resource":{"x":' + b"[" * 1500 + b"]" * 1500 + b"}}]}", "line 2"),
    ):
        trace.write_bytes(good + b"\n" + bad + b"\n")
        with pytest.raises(TraceImportError) as error:
            import_trace(trace, tmp_path / "out.jsonl")
        assert expected in str(error.value) and "not JSON" in str(error.value)


def test_bad_input_names_the_same_line_with_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace.otlp.jsonl"
    _many_runs(trace, 3, logs_last=False)
    lines = trace.read_bytes().splitlines()
    lines[3] = lines[3].replace(b'"startTimeUnixNano":"', b'"startTimeUnixNano":"99', 1)
    trace.write_bytes(b"\n".join(lines) + b"\n")
    messages = []
    for fast in (otlp_lines.FAST_SPANS, None):
        monkeypatch.setattr(otlp_lines, "FAST_SPANS", fast)
        with pytest.raises(TraceImportError) as error:
            import_trace(trace, tmp_path / "out.jsonl")
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "line 4" in messages[0] and "startTimeUnixNano" in messages[0]
