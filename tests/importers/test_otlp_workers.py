"""Pass one shared between readers that claim runs of lines one at a time: however the runs fall to the
readers, the journal is the one a single reader writes, and bad input is the same first bad line."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from replay_tui.importers import TraceImportError, otlp

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
