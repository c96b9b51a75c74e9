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


#: Start-up (an interpreter and the harness imports) on a machine at load 10+ with cold caches; the
#: clock for catching a line half-written starts only once the writer is going.
START_DEADLINE_S = 120.0
#: How long to look for the file ending mid-line before killing the writer anyway (a whole last line
#: is a valid outcome too: the test then checks that nothing is partial).
HUNT_S = 5.0


def _kill_mid_write(path, line_size, stderr_path):
    """Start the writer, wait until it has written a few lines, then SIGKILL it, preferably mid-line."""
    with open(stderr_path, "wb") as stderr:
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(line_size)], cwd=ROOT, stderr=stderr)
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while _size(path) <= 3 * line_size:
            if child.poll() is not None:  # e.g. an import error: say so now, not after the deadline
                pytest.fail(f"the writer exited ({child.returncode}) before writing 3 lines:\n{_tail(stderr_path)}")
            assert time.monotonic() < deadline, f"the writer wrote no 3 lines in {START_DEADLINE_S:g} s"
            time.sleep(0.01)
        hunt_ends = time.monotonic() + HUNT_S
        while time.monotonic() < hunt_ends and child.poll() is None:
            size = _size(path)
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    break  # caught it mid-line
        assert child.poll() is None, f"the writer died by itself ({child.returncode}):\n{_tail(stderr_path)}"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _size(path):
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def _tail(path):
    return path.read_bytes()[-2000:].decode("utf-8", "replace")


@pytest.mark.parametrize("round_", range(3))
def test_killed_writer_leaves_at_most_one_partial_line(tmp_path, round_):
    path = tmp_path / "crash.jsonl"
    _kill_mid_write(path, line_size=1000 * 1000, stderr_path=tmp_path / "writer.err")
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
