"""``replay-tui import SPANS LOGS``: OTLP spans and the logs that carry their content, written to two files by
the OpenTelemetry SDK's span and log exporters (the real producer, content in log events only), joined into
one journal: the same journal as from one file holding both, errors told of each file's own lines."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from replay_tui.cli import main
from replay_tui.importers import TraceImportError, import_trace

from .conftest import SAMPLES, Produce
from .helpers import events_of, kinds, of_kind
from .test_otlp import WEATHER_RUN


@pytest.fixture
def two_files(produce: Produce, tmp_path: Path) -> tuple[Path, Path]:
    logs = tmp_path / "logs.otlp.jsonl"
    spans = produce(
        "otlp",
        "spans.otlp.jsonl",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="EVENT_ONLY",
        OTLP_LOGS_OUT=str(logs),
    )
    assert b"resourceLogs" not in spans.read_bytes() and b"resourceSpans" not in logs.read_bytes()
    return spans, logs


def test_spans_and_their_logs_in_two_files_join_into_one_journal(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    spans, logs = two_files
    [alone] = import_trace(spans, tmp_path / "alone.jsonl")
    assert alone.fidelity["reason"] == "no message content captured"  # the spans alone carry none
    [joined] = import_trace([spans, logs], tmp_path / "joined.jsonl")
    one_file = tmp_path / "both.otlp.jsonl"
    one_file.write_bytes(spans.read_bytes() + logs.read_bytes())
    [single] = import_trace(one_file, tmp_path / "single.jsonl")
    events, expected = events_of(joined.path), events_of(single.path)
    assert kinds(events) == WEATHER_RUN and joined.fidelity == single.fidelity
    assert of_kind(events, "model.response")[1]["payload"]["response"]["content"] == "The weather: snow, -3 C."
    assert [e["payload"] for e in events[1:]] == [e["payload"] for e in expected[1:]]  # the same run, event for event
    imported = events[0]["payload"]["imported"]
    assert imported["file_name"] == "spans.otlp.jsonl+logs.otlp.jsonl"
    assert imported["sha256"] == expected[0]["payload"]["imported"]["sha256"]  # the bytes read are the same
    assert [(part["file"], part["lines"]) for part in imported["detail"]["joined"]] == [
        ("spans.otlp.jsonl", [1, 1]),
        ("logs.otlp.jsonl", [2, 1]),
    ]
    assert not list(tmp_path.glob(".replay-tui-joining-*"))  # the joined input is removed


def test_the_cli_takes_several_sources(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    assert main(["import", str(two_files[0]), str(two_files[1]), "-o", str(out)]) == 0
    assert kinds(events_of(out)) == WEATHER_RUN


def test_an_error_names_the_source_and_its_own_line(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    spans, logs = two_files
    broken = tmp_path / "broken-logs.otlp.jsonl"
    broken.write_bytes(logs.read_bytes() + b'{"resourceLogs": [{"scopeLogs": 5}]}\n')
    with pytest.raises(TraceImportError) as raised:
        import_trace([spans, broken], tmp_path / "out.jsonl")
    assert raised.value.path == str(broken) and str(raised.value).startswith(f"{broken}: line 2"), str(raised.value)
    assert not (tmp_path / "out.jsonl").exists()


def test_what_cannot_be_joined_is_refused(two_files: tuple[Path, Path], tmp_path: Path) -> None:
    spans, _ = two_files
    with pytest.raises(TraceImportError, match="sources of one format to join"):
        import_trace([spans, SAMPLES / "weather.cassette.yaml"], tmp_path / "a.jsonl")
    pretty = tmp_path / "pretty.otlp.json"
    pretty.write_bytes(orjson.dumps(orjson.loads(spans.read_bytes()), option=orjson.OPT_INDENT_2))
    with pytest.raises(TraceImportError, match="one JSON document over several lines"):
        import_trace([spans, pretty], tmp_path / "b.jsonl")
    assert not list(tmp_path.glob("?.jsonl"))
