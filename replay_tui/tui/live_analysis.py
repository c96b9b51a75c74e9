"""Secret marks and run statistics that keep up with a growing journal.

At open, a child process scans the events indexed then (``scan_opening``); follow mode
scans each event it adds with ``scan_event`` (``scan_followed``), so the two never
scan the same position and neither waits for the other. Statistics are collected
only when the stats screen asks, and only over events not collected before: a
``StatsCollector`` carries on from where it stopped, even after a cancel.
Truncation or replacement of the journal (``reset``) starts both over.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..jobs import JobError, JobRun
from ..journal import Event, Journal, JournalError
from ..journal.progress import CancelCheck, ProgressCallback

if TYPE_CHECKING:  # stats, their rendering and the secret tables load when first used, not for the first frame
    from rich.console import Group

    from ..analysis.stats import RunStats, StatsCollector
    from ..jobs.secrets import SecretScanRequest


class SecretScanChild:
    """``analysis.secrets.scan_events`` over the first ``end`` events, as a child job."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._run: JobRun[SecretScanRequest, list[int]] | None = None

    def flagged_seqs(self, path: Path, end: int, *, cancelled: CancelCheck | None = None) -> list[int] | None:
        from ..jobs.secrets import SecretScanJob, SecretScanRequest

        run = self._run = JobRun(
            SecretScanJob(),
            SecretScanRequest(str(path), end),
            cancelled=lambda: self._cancelled.is_set() or (cancelled is not None and cancelled()),
        )
        try:
            seqs: list[int] = run.result()
        except JobError:
            return None  # cancelled, or the journal changed under it (follow mode rescans) or cannot be read
        return seqs

    def cancel(self) -> None:
        self._cancelled.set()
        if self._run is not None:
            self._run.cancel()


class LiveAnalysis:
    """Thread-safe: workers add to it, the UI thread reads ``secret_seqs``."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.secret_seqs: set[int] = set()
        self.generation = 0  # bumped by reset; a worker of an older generation drops its result
        self.opening_scanned = False
        self._claimed = False  # the opening scan has claimed its range; follow mode scans the rest
        self._opening_end = 0  # positions before this belong to the opening scan
        self._followed_end = 0  # follow mode has scanned up to here
        self._lock = threading.Lock()
        self._stats_lock = threading.RLock()
        self._collector: StatsCollector | None = None  # made by the first stats() call
        self._stats_end = 0
        self._scanner = SecretScanChild()

    def reset(self) -> None:
        """The journal was truncated or replaced: forget everything."""
        with self._lock, self._stats_lock:
            self.generation += 1
            self.secret_seqs.clear()  # in place: the timeline's marks hold this set
            self.opening_scanned = self._claimed = False
            self._opening_end = self._followed_end = 0
            self._collector = None
            self._stats_end = 0

    # -- secrets ------------------------------------------------------------
    def begin_opening_scan(self) -> tuple[int, int]:
        """Claim the events indexed now for the opening scan: (generation, end position)."""
        with self._lock:
            self._opening_end = self._followed_end = max(self._followed_end, len(self.journal))
            self._claimed = True
            return self.generation, self._opening_end

    def scan_opening(self, generation: int, end: int, *, cancelled: CancelCheck | None = None) -> list[int] | None:
        """Scan positions [0, end) in a child process (blocking: call from a thread worker);
        None when cancelled or outdated. A million events take the child about 20 s of CPU,
        which in a thread would hold the interpreter lock the UI needs for every key."""
        seqs = self._scanner.flagged_seqs(self.journal.path, end, cancelled=cancelled)
        with self._lock:
            if seqs is None or generation != self.generation:
                return None
            self.secret_seqs.update(seqs)
            self.opening_scanned = True
        return seqs

    def cancel(self) -> None:
        """Stop the opening scan's child (the app is closing)."""
        self._scanner.cancel()

    def scan_followed(self) -> list[int]:
        """Scan the events follow mode added since the last call; returns the newly flagged seqs."""
        with self._lock:
            start, end = self._followed_end, len(self.journal)
            if not self._claimed:
                return []  # nothing claimed yet: the opening scan will cover these
            self._followed_end = end
            generation = self.generation
        from ..analysis.secrets import scan_event

        flagged = [
            event.seq for event in self.journal.events(start, end) if isinstance(event, Event) and scan_event(event)
        ]
        with self._lock:
            if generation != self.generation:
                return []
            self.secret_seqs.update(flagged)
        return flagged

    # -- stats --------------------------------------------------------------
    def stats(
        self, *, progress: ProgressCallback | None = None, cancelled: CancelCheck | None = None
    ) -> RunStats | None:
        """Collect the events not collected yet; the stats so far, or None when cancelled."""
        from ..analysis.stats import PROGRESS_EVERY, StatsCollector

        with self._stats_lock:
            if self._collector is None:  # the name, not the path: the screen is narrow
                self._collector = StatsCollector(self.journal.path.name, self.journal.dialect)
            collector, start, end = self._collector, self._stats_end, len(self.journal)
            for position, item in enumerate(self.journal.events(start, end), start):
                if isinstance(item, JournalError):
                    collector.add_error(item)
                else:
                    collector.add(item)
                self._stats_end = position + 1
                if (position + 1 - start) % PROGRESS_EVERY == 0:
                    if progress is not None:
                        progress(position + 1, end)
                    if cancelled is not None and cancelled():
                        return None
            return collector.result()

    def render_stats(
        self, width: int, *, progress: ProgressCallback | None = None, cancelled: CancelCheck | None = None
    ) -> tuple[RunStats, Group] | None:
        """Stats and their rendering, made under the lock so a later collect cannot change them mid-render."""
        from ..analysis.stats_render import render_stats

        with self._stats_lock:
            stats = self.stats(progress=progress, cancelled=cancelled)
            return None if stats is None else (stats, render_stats(stats, width=width))

    @property
    def stats_collected(self) -> int:
        """Events collected into the stats so far (the screen compares it with the journal)."""
        return self._stats_end
