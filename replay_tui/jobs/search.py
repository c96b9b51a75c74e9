"""Search and filter (thread jobs): they read the indexed journal of this process."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from ..analysis.marks import ReplayMarks
from ..analysis.search import Query, find_next, matching_positions
from ..journal import Journal
from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job

FIRST_SCREENFUL = 200  # a filter shows its first rows as soon as there are this many


@dataclass(frozen=True)
class SearchRequest:
    journal: Journal
    query: Query
    start: int
    direction: int = 1
    replay: ReplayMarks | None = None


class SearchJob(Job[SearchRequest, "int | None"]):
    """The position of the next (or previous) match, wrapping around once; None when none matches."""

    name = "search"

    def run(self, request: SearchRequest, progress: ProgressCallback, cancelled: CancelCheck) -> int | None:
        total = len(request.journal)
        return find_next(
            request.journal,
            request.query,
            request.start,
            request.direction,
            wrap=True,
            cancelled=cancelled,
            replay=request.replay,
            progress=lambda done: progress(done, total),
        )


@dataclass(frozen=True)
class FilterRequest:
    journal: Journal
    query: Query
    replay: ReplayMarks | None = None
    on_rows: Callable[[array[int], int], None] | None = None  # the rows so far and the events scanned
    rows: array[int] = field(default_factory=lambda: array("Q"))


class FilterJob(Job[FilterRequest, "array[int]"]):
    """Every matching position, in order; ``on_rows`` sees the first screenful early."""

    name = "filter"

    def run(self, request: FilterRequest, progress: ProgressCallback, cancelled: CancelCheck) -> array[int]:
        rows, total = request.rows, len(request.journal)
        for position in matching_positions(
            request.journal,
            request.query,
            cancelled=cancelled,
            replay=request.replay,
            progress=lambda done: progress(done, total),
        ):
            rows.append(position)
            if len(rows) == FIRST_SCREENFUL and request.on_rows is not None:
                request.on_rows(rows, position + 1)
        return rows
