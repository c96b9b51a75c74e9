"""A writer killed mid-write (SIGKILL, in a real subprocess) leaves at most one partial
last line, and the reader and verify tolerate and report it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from replay_tui.journal import Journal, verify_journal
from replay_tui.journal.verify import TRUNCATED

from .helpers import ROOT

WRITER = """
import sys
from replay_tui.harness import Harness, JsonlSink
size = int(sys.argv[2])
harness = Harness(sink=JsonlSink(sys.argv[1], run_id="crash", fsync="never"), run_id="crash")
harness.start_run(agent="tests:crash")
index = 0
while True:
    index += 1
    harness.receive_input("x" * size + str(index))
"""


def _kill_mid_write(path, line_size, deadline_s=20.0):
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(line_size)], cwd=ROOT)
    try:
        started = time.monotonic()
        with_lines = False
        while time.monotonic() - started < deadline_s:
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                continue
            if size > 3 * line_size:
                with_lines = True
                with open(path, "rb") as handle:
                    handle.seek(size - 1)
                    if handle.read(1) != b"\n":
                        break  # caught it mid-line
        assert with_lines, "the writer never got going"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("round_", range(3))
def test_killed_writer_leaves_at_most_one_partial_line(tmp_path, round_):
    path = tmp_path / "crash.jsonl"
    _kill_mid_write(path, line_size=1000 * 1000)
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    for number, line in enumerate(complete, 1):
        assert orjson.loads(line)["seq"] == number  # every complete line is whole and in order
    partial = bytes(tail)

    journal = Journal(path)
    journal.index()
    assert len(journal) == len(complete)
    assert journal.event(len(complete) - 1).seq == len(complete)
    assert journal.pending_tail_bytes() == len(partial)
    journal.close()

    report = verify_journal(path)
    assert report.events == len(complete)
    if partial:
        assert not report.ok and report.fault.kind == TRUNCATED
        assert report.fault.seq == len(complete) + 1
        assert "no newline" in report.to_text()
    else:
        assert report.ok
