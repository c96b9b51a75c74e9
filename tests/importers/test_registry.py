"""Formats behind one protocol: each real sample is claimed by its own format's sniff and no other's, and a
format is added by registering it (``registry.REGISTRY``) with nothing else to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.importers import FORMATS, TraceImportError, detect_format, import_trace, registry
from replay_tui.importers.format import SNIFF_BYTES, Format, Head, ImportedJournal, Input
from replay_tui.importers.records import EndRecord, InputRecord
from replay_tui.importers.runs import Run, write_runs

from .conftest import SAMPLES
from .helpers import events_of, kinds

SAMPLE_FORMATS = {
    "weather.otlp.jsonl": "otlp",
    "weather.agents.jsonl": "openai-agents",
    "weather.eval": "inspect",
    "weather.cassette.yaml": "vcr",
}


def _head(path: Path) -> Head:
    with open(path, "rb") as handle:
        return Head(path, handle.read(SNIFF_BYTES))


def test_the_registry_names_every_format_once() -> None:
    names = [known.name for known in registry.REGISTRY]
    assert tuple(names) == FORMATS and len(set(names)) == len(names)
    assert set(SAMPLE_FORMATS.values()) == set(names)  # a real sample of each


@pytest.mark.parametrize("sample", sorted(SAMPLE_FORMATS))
def test_each_sample_is_claimed_by_its_own_format_alone(sample: str) -> None:
    head = _head(SAMPLES / sample)
    claimed = [known.name for known in registry.REGISTRY if known.sniff(head)]
    assert claimed == [SAMPLE_FORMATS[sample]]  # no other sniff claims it: the registry's order is not what decides
    assert detect_format(SAMPLES / sample) == SAMPLE_FORMATS[sample]


def test_a_registered_format_is_detected_and_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def sniff(head: Head) -> bool:
        return head.text.startswith(b"GREETING ")

    def run(source: Input, out: Path) -> list[ImportedJournal]:
        said = source.path.read_text(encoding="utf-8").removeprefix("GREETING ").strip()
        records = [InputRecord(said, {"line": 1}), EndRecord("ok", said, None)]
        return write_runs(source.path, out, "greeting", source.digest(), [Run("greeting", "greeting-1", records, {})])

    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, Format("greeting", sniff, run)))
    trace = tmp_path / "hello.txt"
    trace.write_text("GREETING hello there\n", encoding="utf-8")
    assert detect_format(trace) == "greeting"
    [journal] = import_trace(trace, tmp_path / "hello.jsonl")
    events = events_of(journal.path)
    assert kinds(events) == ["run.started", "input.received", "run.ended"]
    assert events[0]["payload"]["imported"]["format"] == "greeting"
    with pytest.raises(TraceImportError, match="sources of one format to join"):  # not joinable: refused as a join
        import_trace([trace, trace], tmp_path / "both.jsonl")
