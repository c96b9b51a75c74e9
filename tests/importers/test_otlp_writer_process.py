"""Pass two written by pass one's worker (``writer_process``): the journal is the bytes one process writes;
a writer that dies is replaced by this process, a writer's error is the error, and no worker outlives
the import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_tui.importers import import_trace
from replay_tui.importers.builder import local_writer
from replay_tui.importers.otlp import parallel, writer_process
from replay_tui.importers.otlp import trace as otlp_trace
from replay_tui.importers.otlp.trace import OtlpTrace
from replay_tui.journal.canonical import canonical_string
from replay_tui.journal.writer import SplicedEvent

from .test_fast_paths import _import_with, _many_runs

ROOT = Path(__file__).resolve().parents[2]
SERVE = "import sys; from replay_tui.importers.otlp.writer_process import serve; sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))"


class _Watched(writer_process.PipedWriter):
    """A PipedWriter that counts its frames and, with ``kill_after`` set, kills its process after as many."""

    made: list[_Watched] = []
    kill_after: int | None = None

    def __init__(self, *arguments: Any) -> None:
        self.frames = 0
        _Watched.made.append(self)  # first: opening may fail
        super().__init__(*arguments)

    def _flush(self) -> None:
        super()._flush()
        self.frames += 1
        if self.kill_after is not None and self.frames == self.kill_after:
            self._process.kill()
            self._process.wait()


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> type[_Watched]:
    monkeypatch.setattr(_Watched, "made", [])
    monkeypatch.setattr(otlp_trace, "PipedWriter", _Watched)
    monkeypatch.setattr(parallel, "cpu_free", lambda: True)  # whatever the machine's load
    monkeypatch.setattr(writer_process, "BATCH_EVENTS", 7)  # many frames, some mid-record
    return _Watched


def test_the_worker_writes_what_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched: type[_Watched]
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 7, logs_last=True)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    assert not watched.made
    shared = _import_with(2, trace, tmp_path / "two.jsonl", monkeypatch)
    assert shared == alone
    [piped] = watched.made
    assert piped.frames > 3 and piped._process.returncode == 0  # it wrote, in frames, and ended


def test_a_writer_that_dies_leaves_pass_two_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched: type[_Watched]
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 7, logs_last=False)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    monkeypatch.setattr(_Watched, "kill_after", 2)
    failures: list[Exception] = []
    flush = _Watched._flush

    def noted(self: _Watched) -> None:
        try:
            flush(self)
        except writer_process.WriterProcessFailed as failure:
            failures.append(failure)
            raise

    monkeypatch.setattr(_Watched, "_flush", noted)
    assert _import_with(3, trace, tmp_path / "three.jsonl", monkeypatch) == alone
    assert failures and len(watched.made) == 1 and watched.made[0]._process.returncode != 0


def test_the_writers_error_is_the_error_and_the_file_there_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched: type[_Watched]
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 3, logs_last=False)
    for workers in (1, 2):
        out = tmp_path / f"{workers}.jsonl"
        out.write_bytes(b"someone's file\n")
        with pytest.raises(FileExistsError):
            _import_with(workers, trace, out, monkeypatch)
        assert out.read_bytes() == b"someone's file\n"
    [piped] = watched.made
    assert piped._process.returncode is not None  # ended, not left waiting


def test_bad_input_found_in_pass_one_ends_the_kept_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 4, logs_last=False)
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def kept(*arguments: Any, **options: Any) -> subprocess.Popen[bytes]:
        process = popen(*arguments, **options)
        started.append(process)
        return process

    monkeypatch.setattr(parallel.subprocess, "Popen", kept)
    monkeypatch.setattr(parallel, "worker_count", lambda path: 2)
    monkeypatch.setattr(OtlpTrace, "_settle_fidelity", lambda self: 1 / 0)  # fails after pass one
    with pytest.raises(ZeroDivisionError):
        import_trace(trace, tmp_path / "out.jsonl")
    assert started and all(process.returncode is not None for process in started)
    assert not (tmp_path / "out.jsonl").exists()


def _writer_process() -> subprocess.Popen[bytes]:
    """A process running ``serve``, as pass one's kept worker does."""
    return subprocess.Popen(
        [sys.executable, "-c", SERVE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _events(count: int) -> list[SplicedEvent]:
    kinds = [canonical_string(kind) for kind in ("note", "model.request", "tool.call")]
    return [
        (
            kinds[seq % 3],
            b'{"n":%d,"text":%s}' % (seq, canonical_string("\u00e9\u2028" * (seq % 5))),
            b"null",
            b"null",
            b'"t"',
        )
        for seq in range(count)
    ]


def _linked(events: list[SplicedEvent], ids: list[bytes]) -> Any:
    for event in events:
        ids.append((yield event))


def test_piped_writer_writes_the_bytes_of_journal_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One at a time and in runs, across frame boundaries: the same lines, the same event ids answered."""
    monkeypatch.setattr(writer_process, "BATCH_EVENTS", 5)
    events = _events(23)
    here_ids: list[bytes] = []
    here = local_writer(tmp_path / "here.jsonl", "run-1")
    here.append_spliced(*events[0][:2], parent_json=b"null", step_json=b"null", recorded_at_json=b'"t"')
    here.append_spliced_all(_linked(events[1:], here_ids))
    here.close()
    process = _writer_process()
    there_ids: list[bytes] = []
    there = writer_process.PipedWriter(process, tmp_path / "there.jsonl", "run-1")
    assert there.append_spliced(*events[0][:2], parent_json=b"null", step_json=b"null", recorded_at_json=b'"t"') == (
        b'"run-1:1"'
    )
    there.append_spliced_all(_linked(events[1:], there_ids))
    assert there.last_seq == 23
    there.close()
    assert process.returncode == 0
    assert there_ids == here_ids and (tmp_path / "there.jsonl").read_bytes() == (tmp_path / "here.jsonl").read_bytes()


def test_a_writer_process_told_nothing_ends(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SERVE], input=b"", capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert done.returncode == 0 and done.stdout == b""


def test_a_frame_cut_by_an_interrupt_ends_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer would take what comes next for the rest of the frame (and wait for it): it is ended."""
    monkeypatch.setattr(writer_process, "BATCH_EVENTS", 5)
    process = _writer_process()
    piped = writer_process.PipedWriter(process, tmp_path / "cut.jsonl", "run-1")
    send = writer_process.send_frame

    def cut(pipe: Any, tag: bytes, payload: bytes = b"") -> None:
        if tag == b"E":
            pipe.write(writer_process._HEADER.pack(tag, len(payload)) + payload[: len(payload) // 2])
            pipe.flush()
            raise KeyboardInterrupt
        send(pipe, tag, payload)

    monkeypatch.setattr(writer_process, "send_frame", cut)
    with pytest.raises(KeyboardInterrupt):
        piped.append_spliced_all(_linked(_events(12), []))
    piped.close()  # at once, not waiting on a writer that waits for the rest of the frame
    assert process.returncode is not None


def test_with_no_cpu_free_this_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched: type[_Watched]
) -> None:
    trace = tmp_path / "runs.otlp.jsonl"
    _many_runs(trace, 3, logs_last=False)
    alone = _import_with(1, trace, tmp_path / "one.jsonl", monkeypatch)
    monkeypatch.setattr(parallel, "cpu_free", lambda: False)
    assert _import_with(2, trace, tmp_path / "two.jsonl", monkeypatch) == alone
    assert not watched.made
