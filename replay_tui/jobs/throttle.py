"""Throttled progress: a long loop may report every item, the listener hears a few a second."""

from __future__ import annotations

import time

from ..journal.progress import ProgressCallback

PROGRESS_EVERY_S = 0.1


def throttled(progress: ProgressCallback, every_s: float = PROGRESS_EVERY_S) -> ProgressCallback:
    """``progress`` called at most once per ``every_s`` seconds, and always for the last step
    (``done >= total``), so the listener never misses that the loop finished."""
    last = float("-inf")

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= every_s or (total and done >= total):
            last = now
            progress(done, total)

    return report
