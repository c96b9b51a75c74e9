"""Follow mode: watch a growing journal with watchfiles and tell the screen what changed.

``Follower.run`` is the body of an exclusive async worker. It waits on
``watchfiles.awatch`` (the journal file's directory, or the shard directory, not
recursive), refreshes the reader in a thread when something changed there — and once
a second anyway, so a filesystem that sends no notifications still gets followed —
scans the new events for secrets, and posts ``JournalGrew``. The reader holds back a
partial last line until its newline arrives and reports rotation, truncation and
replacement; its message travels in ``JournalGrew.message`` for the screen to show.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Callable

import anyio
from textual.message import Message
from watchfiles import Change, awatch

from ..analysis.annotations import SIDECAR_SUFFIX
from ..journal import Journal, JournalError, JournalOpenError, RefreshResult
from .live_analysis import LiveAnalysis
from .messages import JournalGrew, Notice

DEBOUNCE_MS = 100  # longest a burst of writes is gathered before the view catches up
STEP_MS = 10
IDLE_REFRESH_MS = 1000  # refresh even without a notification


def watched_directory(journal: Journal) -> Path:
    """A shard directory is watched itself; a file through its directory, so a file replaced
    by another (a new inode under the same name) is still seen."""
    return journal.path if journal.is_directory else journal.path.parent


def is_journal_change(journal: Journal) -> Callable[[Change, str], bool]:
    """Only the journal (or its shards) wakes the follower, not its sidecar or its neighbours."""
    if journal.is_directory:
        return lambda change, path: ".jsonl" in Path(path).name and not path.endswith(SIDECAR_SUFFIX)
    name = journal.path.name
    return lambda change, path: Path(path).name == name


def refresh_once(journal: Journal, live: LiveAnalysis) -> tuple[RefreshResult, list[int], int]:
    """One refresh plus the secret scan of what it brought, and the bytes of a line still
    being written (runs in a thread)."""
    try:
        result = journal.refresh()
    except JournalOpenError:
        # A shard listed a moment before the writer gzipped it away: the .gz is there now.
        time.sleep(0.05)
        result = journal.refresh()
    if result.reset:
        live.reset()
    return result, live.scan_followed(), journal.pending_tail_bytes()


class Follower:
    """One follow session of a journal; ``stop`` ends it within a watch step."""

    def __init__(self, journal: Journal, live: LiveAnalysis, post: Callable[[Message], object]) -> None:
        self.journal = journal
        self.live = live
        self.post = post
        self._stop: anyio.Event | None = None
        self._pending_tail = 0

    async def run(self) -> None:
        self._stop = anyio.Event()
        # A writer may truncate the file to nothing and start over: while following, an empty
        # journal is a moment between two runs, not an error.
        self.journal.allow_empty = True
        await self._refresh()  # what arrived between indexing and now
        async for _changes in awatch(
            watched_directory(self.journal),
            watch_filter=is_journal_change(self.journal),
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            rust_timeout=IDLE_REFRESH_MS,
            yield_on_timeout=True,
            recursive=False,
            stop_event=self._stop,
        ):
            await self._refresh()

    async def _refresh(self) -> None:
        try:
            result, flagged, pending_tail = await asyncio.to_thread(refresh_once, self.journal, self.live)
        except (JournalError, OSError) as error:
            self.post(Notice(f"follow: {error}", "error"))
            return
        tail_changed, self._pending_tail = pending_tail != self._pending_tail, pending_tail
        if result.new_events or result.reset or result.new_shards or flagged or tail_changed:
            self.post(JournalGrew(result.new_events, result.message, flagged_seqs=flagged, reset=bool(result.reset)))

    def stop(self) -> None:
        """Let the watch thread return at its next step (cancelling alone waits for its timeout)."""
        if self._stop is not None:
            self._stop.set()
