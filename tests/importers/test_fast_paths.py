"""The import's fast paths write what the general ones would: the same bytes, checked side by side.

The import splices canonical JSON together (the envelope in ``append_canonical``, the model and tool
payloads in ``prepare``) and formats times per second; each must equal the plain construction.
"""

from __future__ import annotations

import gc
import os
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.importers import TraceImportError, import_trace
from replay_tui.importers.builder import prepare, rfc3339_of_nanos
from replay_tui.importers.otlp import parallel
from replay_tui.importers.otlp.trace import OtlpTrace
from replay_tui.importers.records import ModelRecord, ToolRecord
from replay_tui.journal import JournalWriter
from replay_tui.journal.canonical import canonical_json
from replay_tui.journal.hashing import call_key_of, hash_value

from .helpers import events_of

STRINGS = ["plain", 'quote " and \\ backslash', "\x00\x1f control \u2028", "\ue000\U0001f600 ünïcode", ""]


def _fixed_now() -> str:
    return "2026-11-29T10:00:00.000000Z"


def test_append_canonical_writes_the_bytes_append_writes(tmp_path: Path) -> None:
    payloads = [{"text": text, "value": [1.5, 1e16, -0.0, {"\ue000": 1, "\U0001f600": 2}]} for text in STRINGS]
    steps = [None, "step-01", *STRINGS]
    outputs = []
    for name, spliced, after in (
        ("append.jsonl", False, None),
        ("canonical.jsonl", True, None),
        ("mixed.jsonl", None, None),  # append_canonical and append by turns
        ("append-after.jsonl", False, (7, "sha256:" + "ab" * 32)),
        ("canonical-after.jsonl", True, (7, "sha256:" + "ab" * 32)),
    ):
        with JournalWriter(tmp_path / name, run_id='run "x" \ue000', now=_fixed_now, start_after=after) as writer:
            for index, payload in enumerate(payloads):
                parent = None if index == 0 else f"parent {STRINGS[index]}"
                recorded = None if index % 2 else f"2026-11-29T10:00:0{index}.000000Z"
                if spliced or (spliced is None and index % 2):
                    writer.append_canonical(
                        "note",
                        canonical_json(payload),
                        step_id=steps[index],
                        parent_event_id=parent,
                        recorded_at=recorded,
                    )
                else:
                    writer.append("note", payload, step_id=steps[index], parent_event_id=parent, recorded_at=recorded)
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[3] == outputs[4] != outputs[0]


def test_times_round_as_datetime_does() -> None:
    """Per-second formatting with the float's rounding (half to even), as ``datetime.fromtimestamp``."""
    rng = random.Random(15)
    cases = [1, 499, 500, 501, 1500, 2500, 999_999_500, 999_999_499, 1_700_000_000_000_000_000, -1, -500, -1_500]
    for _ in range(20_000):
        base = rng.randrange(-(10**18), 4 * 10**18)
        cases += [base, base - base % 1000 + 500, base - base % 10**9 + 999_999_500 + rng.randrange(-3, 3)]
    for nanos in cases:
        expected = datetime.fromtimestamp(nanos / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        assert rfc3339_of_nanos(nanos) == expected, nanos


def _parsed(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


@pytest.mark.parametrize("parsed_json", [True, False])
@pytest.mark.parametrize("failed", [True, False])
def test_spliced_payloads_equal_the_canonical_objects(parsed_json: bool, failed: bool) -> None:
    source = {"trace_id": "t\ue000", "span_id": 's"1', "line": 3}
    request = {"model": "m", "messages": [{"role": "user", "content": STRINGS[3]}], "params": {"temperature": 1.0}}
    response = {"content": STRINGS[1], "tool_calls": [{"id": "c1", "name": "w", "arguments": {"x": 1e16}}]}
    error = {"type": "timeout", "message": STRINGS[2], "code": None, "timeout": True} if failed else None
    model = ModelRecord(
        _parsed(request), _parsed(response), source, error=error, stream={"chunks": 2.0} if failed else None
    )
    request_hash = hash_value(_parsed(request), parsed=True)
    expected_request: dict[str, Any] = {
        "request": request,
        "request_hash": request_hash,
        "diagnostics": {"source": source},
    }
    expected_response: dict[str, Any] = {
        "request_hash": request_hash,
        "response": response,
        "diagnostics": {"source": source},
    }
    if failed:
        expected_response |= {"error": error, "stream": {"chunks": 2.0}}
    prepared = prepare(model, parsed_json=parsed_json)
    assert prepared.payloads == (canonical_json(expected_request), canonical_json(expected_response))
    assert prepared.links == ("c1",)

    tool = ToolRecord(
        "c1",
        STRINGS[3],
        _parsed({"city": STRINGS[1], "n": 2.0}),
        source,
        result=None if failed else _parsed({"t": -0.0}),
        error=error,
        duration_ms=None if failed else 12.0,
    )
    base = {
        "call_id": "c1",
        "call_key": call_key_of(tool.name, tool.arguments, parsed=True),
        "tool": tool.name,
    }
    outcome: dict[str, Any] = {"error": error} if failed else {"result": tool.result, "duration_ms": 12.0}
    expected_call = {**base, "arguments": tool.arguments, "diagnostics": {"source": source}}
    expected_result = {**base, **outcome, "diagnostics": {"source": source}}
    prepared = prepare(tool, parsed_json=parsed_json)
    assert prepared.payloads == (canonical_json(expected_call), canonical_json(expected_result))


def test_attributes_without_a_string_key_are_skipped(tmp_path: Path) -> None:
    """Hostile keys (a number, a list) once stopped the import with an internal error."""
    span = {
        "traceId": "a",
        "spanId": "b",
        "name": "lookup",
        "startTimeUnixNano": "1700000000000000000",
        "attributes": [
            {"key": 5, "value": {"stringValue": "number key"}},
            {"key": [1], "value": {"stringValue": "list key"}},
            {"key": "kept", "value": {"intValue": "7"}},
        ],
    }
    trace = tmp_path / "keys.otlp.jsonl"
    trace.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + b"\n")
    import_trace(trace, tmp_path / "out.jsonl")
    notes = [event for event in events_of(tmp_path / "out.jsonl") if event["kind"] == "note"]
    assert notes[0]["payload"]["data"] == {"attributes": {"kept": 7}}


def test_the_collector_is_paused_only_during_the_import(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[2] / "fixtures" / "imports" / "weather.otlp.jsonl"
    assert gc.isenabled()
    import_trace(trace, tmp_path / "a.jsonl")
    assert gc.isenabled()
    gc.disable()
    try:
        import_trace(trace, tmp_path / "b.jsonl")
        assert not gc.isenabled()
    finally:
        gc.enable()


FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "imports" / "weather.otlp.jsonl"


def _many_runs(path: Path, runs: int, *, logs_last: bool) -> None:
    """The fixture's run (a spans line, a logs line) ``runs`` times with fresh ids; blank lines between
    runs; with ``logs_last`` every log line comes after every span line (joined across workers' parts)."""
    span_lines, log_lines = [], []
    for run in range(runs):
        text = FIXTURE.read_text(encoding="utf-8")
        for old in sorted(set(re.findall(r'"(?:traceId|spanId|parentSpanId)":"([0-9a-f]+)"', text))):
            text = text.replace(old, f"{run:04x}{old[4:]}")
        spans, logs = text.splitlines()
        span_lines.append(spans)
        log_lines.append(logs)
    if logs_last:
        lines = [*span_lines, "", *log_lines]
    else:
        lines = [line for pair in zip(span_lines, log_lines) for line in (*pair, "")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _import_with(workers: int, trace: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setattr(parallel, "worker_count", lambda path: workers)
    import_trace(trace, out)
    return out.read_bytes()


@pytest.mark.parametrize("logs_last", [False, True])
def test_workers_write_the_journal_one_reader_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logs_last: bool
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 7, logs_last=logs_last)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    shared = _import_with(3, trace, tmp_path / "three.jsonl", monkeypatch)
    assert shared == alone
    events = events_of(tmp_path / "three.jsonl")
    assert sum(event["kind"] == "model.request" for event in events) == 14
    assert len(parallel._chunks(trace, 3)) == 3


@pytest.mark.parametrize(
    "spoil",
    [
        lambda line: line[: len(line) // 2],  # cut short
        lambda line: line.replace('"spanId":"', '"spanIdGone":"', 1),  # a span without its id
    ],
)
def test_workers_report_the_bad_line_one_reader_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: Any
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 6, logs_last=False)
    lines = trace.read_text(encoding="utf-8").splitlines()
    lines[12] = spoil(lines[12])  # a spans line in the last worker's part; the earlier parts are fine
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    messages = []
    for workers in (1, 3):
        with pytest.raises(TraceImportError) as error:
            _import_with(workers, trace, tmp_path / f"{workers}.jsonl", monkeypatch)
        messages.append(str(error.value))
        assert not (tmp_path / f"{workers}.jsonl").exists()
    assert messages[0] == messages[1] and "line 13" in messages[0]


def test_a_worker_that_dies_leaves_the_file_to_one_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 4, logs_last=True)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    failures = []
    read_in_parallel = parallel.read_in_parallel

    def watched(trace: OtlpTrace, workers: int) -> None:
        try:
            read_in_parallel(trace, workers)
        # a worker that died before it was sent its runs of lines is a broken pipe (OSError), one that died
        # later a failed exit: which one depends on the scheduler (under load the worker is dead before the write)
        except (OSError, parallel.WorkersFailed) as failure:
            failures.append(failure)
            raise

    monkeypatch.setattr(parallel, "read_in_parallel", watched)
    # the workers' interpreter cannot start
    monkeypatch.setattr(parallel, "_worker_environment", lambda: {**os.environ, "PYTHONHOME": str(tmp_path / "none")})
    assert _import_with(3, trace, tmp_path / "three.jsonl", monkeypatch) == alone
    assert failures
