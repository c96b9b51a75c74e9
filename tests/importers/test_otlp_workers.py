"""Pass one shared between readers that claim runs of lines one at a time: however the runs fall to the
readers, the journal is the one a single reader writes, and bad input is the same first bad line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from replay_tui import importers
from replay_tui.importers import TraceImportError, otlp
from replay_tui.journal import JournalOpenError

from .test_fast_paths import _import_with, _many_runs


@pytest.mark.parametrize("workers", [2, 3])
def test_many_small_runs_claimed_by_turns_write_what_one_reader_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 9, logs_last=True)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    monkeypatch.setattr(otlp, "CHUNK_BYTES", 1500)  # about a line per run: every reader claims several
    assert len(otlp._chunks(trace, -(-trace.stat().st_size // 1500))) > 2 * workers
    claimed: list[list[int]] = []
    read_chunks = otlp.read_chunks

    def watched(path: str, chunks: list[tuple[int, int, int]], claims: str, spool: object) -> object:
        waited = time.monotonic() + 60
        while not os.listdir(claims) and time.monotonic() < waited:  # until a worker has claimed a run
            time.sleep(0.005)
        found, size = read_chunks(path, chunks, claims, spool)  # type: ignore[arg-type]
        claimed.append([index for index, _state in found])
        return found, size

    monkeypatch.setattr(otlp, "read_chunks", watched)  # this process's reads (the workers run their own)
    assert _import_with(workers, trace, tmp_path / "shared.jsonl", monkeypatch) == alone
    [own] = claimed
    total = len(otlp._chunks(trace, -(-trace.stat().st_size // 1500)))
    assert own == sorted(own) and 0 not in own and len(own) < total  # the workers read the first run, at least


def test_the_first_bad_line_wins_whoever_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 8, logs_last=False)
    lines = trace.read_text(encoding="utf-8").splitlines()
    lines[9] = lines[9][: len(lines[9]) // 2]  # line 10 cut short
    lines[18] = lines[18].replace('"spanId":"', '"spanIdGone":"', 1)  # a later bad line
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    messages = []
    for workers in (1, 2, 3):
        monkeypatch.setattr(otlp, "CHUNK_BYTES", 1500)
        with pytest.raises(TraceImportError) as error:
            _import_with(workers, trace, tmp_path / f"{workers}.jsonl", monkeypatch)
        messages.append(str(error.value))
        assert not (tmp_path / f"{workers}.jsonl").exists()
    assert messages[0] == messages[1] == messages[2] and "line 10" in messages[0]


def test_one_document_over_many_lines_is_read_alone_and_the_workers_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 3, logs_last=False)
    requests = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line]
    spans = [request for request in requests if "resourceSpans" in request]
    document = tmp_path / "one.otlp.json"
    document.write_text(json.dumps({"resourceSpans": [s for r in spans for s in r["resourceSpans"]]}, indent=2))
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def kept(*arguments: Any, **options: Any) -> subprocess.Popen[bytes]:
        started.append(popen(*arguments, **options))
        return started[-1]

    alone = _import_with(1, document, tmp_path / "alone.jsonl", monkeypatch)
    monkeypatch.setattr(otlp.subprocess, "Popen", kept)
    assert _import_with(2, document, tmp_path / "two.jsonl", monkeypatch) == alone
    assert started and all(process.returncode is not None for process in started)


def test_the_source_is_hashed_while_pass_one_reads_it(tmp_path: Path) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 2, logs_last=False)
    hashed = importers._HashedMeanwhile(trace, None)
    assert hashed.result() == hashlib.sha256(trace.read_bytes()).hexdigest()
    assert importers._HashedMeanwhile(trace, "known").result() == "known"
    big = tmp_path / "big"
    with open(big, "wb") as handle:
        handle.truncate(1 << 34)  # 16 GiB of holes: minutes to hash, unless stopped
    hashed = importers._HashedMeanwhile(big, None)
    hashed.stop()
    hashed._thread.join(timeout=30)
    assert not hashed._thread.is_alive()
    with pytest.raises(JournalOpenError, match="gone: no such file"):  # files are opened as journals are
        importers._HashedMeanwhile(tmp_path / "gone", None).result()


def test_each_reader_counts_the_lines_it_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line numbers are counted by the readers (the runs they skip), not ahead of them: a bad line anywhere is
    named by its own number, whoever reads it, after runs read well or badly."""
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 8, logs_last=False)
    lines = trace.read_text(encoding="utf-8").splitlines()
    for bad in (4, 11, 20):
        spoiled = list(lines)
        spoiled[bad - 1] = spoiled[bad - 1][:40]
        trace.write_text("\n".join(spoiled) + "\n", encoding="utf-8")
        for workers in (2, 3):
            monkeypatch.setattr(otlp, "CHUNK_BYTES", 1500)
            with pytest.raises(TraceImportError) as error:
                _import_with(workers, trace, tmp_path / "out.jsonl", monkeypatch)
            assert f": line {bad}: a complete OTLP/JSON request" in str(error.value)
