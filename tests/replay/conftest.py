"""Shared fixtures for replay tests: a loopback listener that counts who reached it."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


class LoopbackListener:
    """A TCP server on 127.0.0.1 that accepts in a thread and counts connections."""

    def __init__(self) -> None:
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.2)
        self.port: int = self.server.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def wait_for(self, count: int, timeout: float = 10.0) -> int:
        """The count once it reaches `count` (or at the deadline): the kernel completes a client's
        connect before this thread's accept() has counted it."""
        deadline = time.monotonic() + timeout
        while self.accepted < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.server.close()


@pytest.fixture
def listener() -> Iterator[LoopbackListener]:
    server = LoopbackListener()
    try:
        yield server
    finally:
        server.close()
