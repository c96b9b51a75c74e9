"""The one child-process supervisor (journal/processes.py): its own session, lines read with a deadline and a
stop check, the whole group killed, reaped once, the last stderr lines kept."""

from __future__ import annotations

import os
import sys
import time

from replay_tui.journal.processes import DEADLINE, Supervised, last_line, read_lines


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def test_the_child_leads_its_own_session_and_a_kill_takes_what_it_started():
    started = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
    child = Supervised.start(python(started + "print('ready', flush=True); time.sleep(60)"))
    assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
    assert child.process.stdout is not None
    ready = read_lines(child.process.stdout.fileno(), lambda line: line, deadline=time.perf_counter() + 60)
    assert ready == b"ready"
    child.stop()
    assert child.reaped and child.exit_code is not None and child.exit_code < 0
    deadline = time.monotonic() + 10
    while group_alive(child.pid) and time.monotonic() < deadline:  # the grandchild dies at once, then is reaped by init
        time.sleep(0.02)
    assert not group_alive(child.pid)
    child.kill()  # reaped: the group id may be another's by now, so nothing is sent


def test_reading_ends_at_the_deadline_and_at_the_stop_check():
    child = Supervised.start(python("import time; time.sleep(60)"))
    try:
        assert child.process.stdout is not None
        fd = child.process.stdout.fileno()
        assert child.read_lines(fd, lambda line: line, deadline=time.perf_counter() + 0.2, poll_s=0.05) == DEADLINE
        calls = []

        def stop() -> str | None:
            calls.append(1)
            return "cancelled" if len(calls) > 2 else None

        assert child.read_lines(fd, lambda line: line, stop=stop, poll_s=0.01) == "cancelled"
    finally:
        child.stop()


def test_lines_are_split_once_and_an_overlong_line_is_said():
    write = "import sys; sys.stdout.write('a' * 300000 + '\\n\\n' + 'b\\nc\\n'); sys.stdout.flush()"
    child = Supervised.start(python(write))
    lines: list[bytes] = []
    too_long: list[int] = []
    assert child.process.stdout is not None
    ended = child.read_lines(
        child.process.stdout.fileno(), lines.append, max_line=100_000, too_long=lambda: too_long.append(1)
    )
    assert ended is None and [len(line) for line in lines] == [300000, 1, 1] and too_long
    assert child.reap() == 0


def test_the_last_stderr_lines_are_kept_bounded():
    code = "import sys; sys.stderr.write('x' * 10000 + '\\n' + ''.join(f'line {n}\\n' for n in range(100)) + '  \\n')"
    child = Supervised.start(python(code))
    child.drain(stderr=True, stdout=True)
    child.reap()
    assert child.last_stderr_line() == "line 99"
    assert len(child.stderr_tail) == 40 and child.stderr_tail[0] == "line 61"
    assert last_line(["", "  "]) is None
