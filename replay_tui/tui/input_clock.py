"""Let long scans step aside while the user is pressing keys.

Search, filter and watch scans are CPU-bound Python threads; with the GIL, a key
that arrives while one runs waits for the interpreter many times over before its
frame is drawn. The app notes every key and click here, and those scans call
``politely(cancelled)`` as their cancel check, which pauses the scan until the
keys stop for a moment. Scans finish a little later; keys stay fast.
"""

from __future__ import annotations

import time
from typing import Callable

INPUT_GRACE_S = 0.15
PAUSE_STEP_S = 0.005


class UserInputClock:
    """When the user last gave input; read from worker threads, written on the UI thread."""

    def __init__(self, grace_s: float = INPUT_GRACE_S) -> None:
        self.grace_s = grace_s
        self.quiet_from = 0.0

    def touch(self) -> None:
        self.quiet_from = time.monotonic() + self.grace_s

    @property
    def busy(self) -> bool:
        return time.monotonic() < self.quiet_from

    def politely(self, cancelled: Callable[[], bool]) -> Callable[[], bool]:
        """A cancel check that first waits while the user is typing."""

        def check() -> bool:
            while self.busy:
                if cancelled():
                    return True
                time.sleep(PAUSE_STEP_S)
            return cancelled()

        return check
