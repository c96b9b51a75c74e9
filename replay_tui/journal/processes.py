"""One child-process supervisor: a child in a session of its own, read with deadlines, its group killed, reaped.

The jobs runner (``python -m replay_tui.jobs NAME``), the replay runner (the sandboxed child) and the fork
server's parent half all start a helper process the same way and must leave nothing behind, whatever ends
the run: the child leads a new session (its pid is its process-group id), so one ``killpg`` takes whatever
it started; its pipes are read in a selector loop that also wakes for a cancel and for a deadline; it is
reaped once (after that its pid, and with it the group id, may be reused: it is never signalled again);
and the last lines it wrote to stderr are kept, bounded whatever it prints, to say why it ended.
"""

from __future__ import annotations

import collections
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

#: The last lines of a stream that are kept, and the head of each line (the rest is counted, never held).
TAIL_LINES = 40
LINE_BYTES = 4096
#: What ``read_lines`` returns when the deadline passed.
DEADLINE = "deadline"
REAP_WAIT_S = 10.0


def kill_group(group: int) -> None:
    """SIGKILL to a whole process group; one that is gone already (or not ours) is no error."""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def drain(stream: IO[bytes], tail: collections.deque[str], line_bytes: int = LINE_BYTES) -> None:
    """Read ``stream`` to its end (which keeps the writer from blocking), keeping its last lines in ``tail``;
    closes it. Bounded whatever is printed: of each line only the first ``line_bytes`` are kept (a 512 MiB line
    without a newline is read in chunks, never held whole) and the rest is counted."""
    read = getattr(stream, "read1", stream.read)
    head, cut = b"", 0

    def keep(line: bytes, more: int) -> None:
        shown = line.decode("utf-8", "replace").rstrip("\r")
        tail.append(shown + (f" … ({more:,} more bytes)" if more else ""))

    while chunk := read(1 << 16):
        *ended, rest = chunk.split(b"\n")
        for part in ended:
            line = head + part
            keep(line[:line_bytes], cut + max(0, len(line) - line_bytes))
            head, cut = b"", 0
        head += rest
        if len(head) > line_bytes:
            cut += len(head) - line_bytes
            head = head[:line_bytes]
    if head or cut:
        keep(head, cut)
    stream.close()


def last_line(lines: Iterable[str]) -> str | None:
    """The last line that is not blank, stripped; None when there is none."""
    for line in reversed(list(lines)):
        if line.strip():
            return line.strip()
    return None


def read_lines(
    fd: int,
    on_line: Callable[[bytes], Any],
    *,
    stop: Callable[[], Any] = lambda: None,
    deadline: float | None = None,
    poll_s: float = 0.25,
    wake_fd: int | None = None,
    exited: Callable[[], bool] | None = None,
    max_line: int | None = None,
    too_long: Callable[[], None] | None = None,
) -> Any:
    """Read the lines written to ``fd`` and hand each non-empty one to ``on_line``, until one of these ends it:

    - ``stop()`` returns something other than None (asked before each wait and before each line): returned;
    - ``on_line`` returns something other than None: returned;
    - the ``deadline`` (``time.perf_counter``) passed: ``DEADLINE``;
    - the writer closed ``fd``, or ``exited()`` says it is gone while a process it forked holds ``fd``: None.

    Bytes on ``wake_fd`` only wake the wait (a cancel from another thread). A line longer than ``max_line``
    calls ``too_long`` (once per chunk read) and keeps being read; only new bytes are searched for the end
    of a line, so a long line costs linear time."""
    pending: list[bytes] = []  # bytes of the line being read
    pending_size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        if wake_fd is not None:
            selector.register(wake_fd, selectors.EVENT_READ)
        while True:
            stopped = stop()
            if stopped is not None:
                return stopped
            wait_s = poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.perf_counter()))
            if deadline is not None and time.perf_counter() >= deadline:
                return DEADLINE
            ready = selector.select(wait_s)
            if not any(key.fd == fd for key, _ in ready):
                if exited is not None and exited() and not selector.select(0):
                    return None  # exited, but a process it forked still holds the pipe open
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None  # the writer closed the pipe: it has exited (or is exiting)
            if b"\n" not in chunk:
                pending.append(chunk)
                pending_size += len(chunk)
                if max_line is not None and pending_size > max_line and too_long is not None:
                    too_long()
                continue
            *lines, rest = (b"".join(pending) + chunk).split(b"\n")
            pending, pending_size = [rest], len(rest)
            for line in lines:
                stopped = stop()
                if stopped is not None:
                    return stopped
                if line:
                    answer = on_line(line)
                    if answer is not None:
                        return answer


class Supervised:
    """One child process in a session of its own (``start``), or one made by a spawner called like
    ``subprocess.Popen`` (the fork server). ``kill`` takes its whole group, ``reap`` waits for it once."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.stdout_tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._drains: list[threading.Thread] = []
        self._reaped = False
        self.exit_code: int | None = None

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        spawn: Callable[..., Any] | None = None,
        stdin: Any = subprocess.PIPE,
        stdout: Any = subprocess.PIPE,
        stderr: Any = subprocess.PIPE,
        pass_fds: Sequence[int] = (),
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Supervised:
        """Start ``argv`` leading a new session; OSError (or the spawner's error) when it cannot start."""
        process = (spawn or subprocess.Popen)(
            list(argv),
            pass_fds=tuple(pass_fds),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # its own process group: a kill takes whatever it started
            cwd=cwd,
            env=env,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    @property
    def reaped(self) -> bool:
        return self._reaped

    def drain(self, *, stdout: bool = False, stderr: bool = False) -> None:
        """Keep the last lines of the child's stdout and/or stderr, each read by a thread of its own."""
        streams = ((stderr, self.process.stderr, self.stderr_tail), (stdout, self.process.stdout, self.stdout_tail))
        for wanted, stream, tail in streams:
            if wanted and stream is not None:
                thread = threading.Thread(target=drain, args=(stream, tail), daemon=True)
                thread.start()
                self._drains.append(thread)

    def join_drains(self, timeout_s: float = 2.0) -> None:
        for thread in self._drains:
            thread.join(timeout=timeout_s)

    def exited(self) -> bool:
        """Whether the child has ended (``Popen.poll``)."""
        return self.process.poll() is not None

    def read_lines(self, fd: int, on_line: Callable[[bytes], Any], **options: Any) -> Any:
        """``read_lines`` on a pipe the child writes, ending too when the child is gone (see ``read_lines``)."""
        return read_lines(fd, on_line, exited=self.exited, **options)

    def await_exit(self, limit_s: float) -> None:
        """Wait up to ``limit_s`` for the child to exit without reaping it (its process group stays ours to kill)."""
        if hasattr(self.process, "await_exit"):  # a spawner's child (the fork server's) is not ours to wait for
            self.process.await_exit(limit_s)
            return
        deadline = time.perf_counter() + limit_s
        while time.perf_counter() < deadline:
            try:
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
            except ChildProcessError:
                return
            time.sleep(0.005)

    def kill(self, also: Iterable[int] = ()) -> None:
        """SIGKILL to the child's process group and to the groups in ``also`` (ones it made besides its own);
        never once the child is reaped (its group id may belong to another process by then)."""
        if self._reaped:
            return
        for group in (*also, self.pid):
            kill_group(group)

    def reap(self, timeout_s: float = REAP_WAIT_S) -> int | None:
        """Wait for the child (once): its exit status. One that does not end in ``timeout_s`` is killed first."""
        if not self._reaped:
            try:
                self.exit_code = self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                self.exit_code = self.process.wait()
            self._reaped = True
        return self.exit_code

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait up to ``timeout_s`` (None: as long as it takes) for the child to end, reaping it; whether it did."""
        try:
            self.exit_code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self._reaped = True
        return True

    def stop(self, also: Iterable[int] = (), timeout_s: float = REAP_WAIT_S) -> int | None:
        """Kill the group (and ``also``) unless reaped, then reap: nothing is left running."""
        self.kill(also)
        return self.reap(timeout_s)

    def last_stderr_line(self) -> str | None:
        """The last line the child wrote to stderr that is not blank (once its drain has ended)."""
        self.join_drains()
        return last_line(self.stderr_tail)
