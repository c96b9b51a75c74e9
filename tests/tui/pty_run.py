"""Run a command in a pseudo-terminal (as a user's terminal would), read what it draws, send keys."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from pathlib import Path


class PtyProcess:
    """A child on the slave side of a pty of ``columns`` x ``rows``; ``screen`` is every byte it wrote."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        columns: int = 160,
        rows: int = 45,
        env: dict[str, str] | None = None,
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = {
            **os.environ,
            "TERM": "xterm-256color",
            "COLUMNS": str(columns),
            "LINES": str(rows),
            **(env or {}),
        }
        environment.pop("TEXTUAL", None)
        self.process = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=environment, start_new_session=True
        )
        os.close(slave)
        self.master = master
        self.screen = b""

    def read_until(self, needle: bytes, timeout: float = 30.0) -> float | None:
        """Read until ``needle`` was drawn; the monotonic time it arrived, or None on timeout or exit."""
        deadline = time.monotonic() + timeout
        while needle not in self.screen:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.master], [], [], min(left, 0.1))
            if ready:
                try:
                    chunk = os.read(self.master, 1 << 16)
                except OSError:
                    return None
                if not chunk:
                    return None
                self.screen += chunk
        return time.monotonic()

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def drain(self, seconds: float) -> None:
        self.read_until(b"\0never\0", timeout=seconds)

    def finish(self, timeout: float = 30.0) -> int:
        """Wait for the exit code, reading meanwhile so the child never blocks on a full pty."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.drain(0.1)
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # its own session: the app and any child it started
            except ProcessLookupError:
                pass
        code = self.process.wait()
        os.close(self.master)
        return code
