"""Inspect AI evals on the mockllm provider with a tool, imported from .eval and .json logs."""

from __future__ import annotations

import itertools
import json
import zipfile
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.importers import TraceImportError, import_trace

from .conftest import SAMPLES, Produce
from .helpers import events_of, kinds, of_kind

LONG_SYSTEM_PREFIX = "You answer weather questions. Use the weather tool. Answer in one sentence"


def test_live_inspect_eval(produce: Produce, tmp_path: Path) -> None:
    log = produce("inspect", "run.eval")
    _check_weather_sample(log, tmp_path)


def test_json_log(tmp_path: Path) -> None:
    _check_weather_sample(_json_log(tmp_path), tmp_path)


def _check_weather_sample(log: Path, tmp_path: Path) -> None:
    [result] = import_trace(log, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == [
        "run.started",
        "input.received",
        "state.transition",
        "state.transition",
        "model.request",
        "model.response",
        "tool.call",
        "tool.result",
        "model.request",
        "model.response",
        "state.transition",
        "note",
        "run.ended",
    ]
    imported = events[0]["payload"]["imported"]
    assert imported["format"] == "inspect" and imported["detail"]["sample_id"] == 1 and imported["detail"]["epoch"] == 1
    assert events[1]["payload"]["content"] == "What is the weather in Oslo?"
    assert events[1]["payload"]["context"]["target"] == "snow"
    request = of_kind(events, "model.request")[0]["payload"]["request"]
    assert request["model"] == "mockllm/model" and request["tools"][0]["name"] == "weather_tool"
    assert request["messages"][0]["content"].startswith(LONG_SYSTEM_PREFIX)  # an attachment:// reference, resolved
    assert "attachment://" not in result.path.read_text()
    call = of_kind(events, "tool.call")[0]["payload"]
    assert call["tool"] == "weather_tool" and call["arguments"] == {"city": "Oslo"}
    assert of_kind(events, "tool.result")[0]["payload"]["result"] == "snow, -3 C"
    # state and store changes are JSON Patches: the transitions' hashes chain from the initial state
    transitions = of_kind(events, "state.transition")
    for earlier, later in itertools.pairwise(transitions):
        assert later["payload"]["before_hash"] == earlier["payload"]["after_hash"]
    assert events[0]["payload"]["initial_state"]["messages"][0]["content"] == "What is the weather in Oslo?"
    assert of_kind(events, "note")[0]["payload"]["text"] == "score (includes): C"
    assert events[-1]["payload"] == {"status": "ok", "output": "The weather: snow, -3 C."}
    assert of_kind(events, "model.response")[1]["payload"]["diagnostics"]["source"]["event"] == "model"


def test_zip_missing_a_sample_member_names_it(tmp_path: Path) -> None:
    pytest.importorskip("zipfile_zstd")  # the copy below reads the sample's zstd members itself
    broken = tmp_path / "broken.eval"
    with zipfile.ZipFile(SAMPLES / "weather.eval") as source, zipfile.ZipFile(broken, "w") as target:
        for info in source.infolist():
            if not info.filename.startswith("samples/"):
                target.writestr(info.filename, source.read(info.filename))
    with pytest.raises(TraceImportError) as caught:
        import_trace(broken, tmp_path / "out.jsonl")
    assert (
        str(caught.value)
        == f"{broken}: samples/1_epoch_1.json: a sample member that summaries.json lists (the zip is missing it)"
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_several_samples_and_epochs_become_a_directory_of_journals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = json.loads(_json_log(tmp_path).read_text())
    second = json.loads(json.dumps(log["samples"][0]))
    second["epoch"] = 2
    log["samples"].append(second)
    two = tmp_path / "two.json"
    two.write_text(json.dumps(log))
    out = tmp_path / "runs"
    assert main(["import", str(two), "-o", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == ["sample-1-epoch-1.jsonl", "sample-1-epoch-2.jsonl"]
    assert capsys.readouterr().out.count("wrote ") == 2


def _json_log(tmp_path: Path) -> Path:
    """The .eval sample as Inspect's own reader loads it, written back as a JSON log."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(SAMPLES / "weather.eval"))
    path = tmp_path / "one.json"
    write_eval_log(log, str(path), format="json")
    return path
