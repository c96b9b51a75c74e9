"""The JSONL transport: canonical lines, rotation into gzipped shards, fsync policy."""

from __future__ import annotations

import gzip

import orjson
import pytest

from replay_tui.harness import Harness, JsonlSink, build_harness
from replay_tui.harness.config import config_from_mapping
from replay_tui.journal import canonical_json, open_journal, verify_journal


def _fill(sink, count=200):
    harness = Harness(sink=sink, run_id="rot")
    harness.start_run(agent="tests:rotation")
    for index in range(count):
        harness.receive_input(f"message {index} " + "x" * 200)
    harness.end_run("ok")


def test_lines_are_canonical_and_flushed_per_event(tmp_path):
    path = tmp_path / "one.jsonl"
    sink = JsonlSink(path, run_id="one")
    harness = Harness(sink=sink, run_id="one")
    harness.start_run(agent="tests:one")
    harness.receive_input({"b": 1, "a": [1.5, "é"]})
    # flushed: readable before close
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert canonical_json(orjson.loads(line)) == line
    harness.end_run("ok")


def test_rotation_writes_gzipped_shards_read_as_one_journal(tmp_path):
    directory = tmp_path / "run"
    _fill(JsonlSink(directory, run_id="rot", rotate_bytes=8 * 1024))
    shards = sorted(directory.iterdir())
    assert len(shards) > 3
    assert all(shard.name.endswith(".jsonl.gz") for shard in shards[:-1]) and shards[-1].name.endswith(".jsonl")
    with gzip.open(shards[0]) as first:
        assert orjson.loads(first.readline())["seq"] == 1
    journal = open_journal(directory)
    assert len(journal) == 204  # 200 inputs, run.started, run.ended, two snapshots
    assert journal.event(203).kind == "run.ended"
    assert verify_journal(directory).ok


def test_a_path_without_jsonl_suffix_is_a_shard_directory_with_the_default_size(tmp_path):
    sink = JsonlSink(tmp_path / "run-dir", run_id="d")
    assert sink.writer.rotate_bytes == 128 * 1024 * 1024
    sink.close()


def test_transport_plugin_options_are_checked(tmp_path):
    config = config_from_mapping(
        {"plugins": [{"id": "j", "type": "jsonl", "options": {"fsync": "sometimes"}}]}, source="t.toml"
    )
    with pytest.raises(ValueError, match="fsync must be never, always or close"):
        build_harness(config, journal=tmp_path / "x.jsonl")
    config = config_from_mapping(
        {"plugins": [{"id": "j", "type": "jsonl", "options": {"fsync": "always", "rotate_bytes": 4096}}]}
    )
    with build_harness(config, journal=tmp_path / "shards", run_id="p") as recording:
        _fill(recording.harness.sink, 50)
    assert verify_journal(tmp_path / "shards").ok
    assert len(list((tmp_path / "shards").glob("*.jsonl.gz"))) >= 2


def test_a_writer_never_appends_to_an_old_run(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text("")
    with pytest.raises(FileExistsError):
        JsonlSink(path, run_id="x")
