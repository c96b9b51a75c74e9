"""Run statistics (thread job): collected over an indexed journal that stays in this process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job, JobCancelled

StatsT = TypeVar("StatsT")
StatsT_co = TypeVar("StatsT_co", covariant=True)


class StatsSource(Protocol[StatsT_co]):
    """What collects the statistics and carries on from where it stopped (the app's live analysis)."""

    def render_stats(
        self, width: int, *, progress: ProgressCallback | None = None, cancelled: CancelCheck | None = None
    ) -> StatsT_co | None: ...


@dataclass(frozen=True)
class StatsRequest(Generic[StatsT]):
    source: StatsSource[StatsT]
    width: int


class StatsJob(Job[StatsRequest[StatsT], StatsT]):
    name = "stats"

    def run(self, request: StatsRequest[StatsT], progress: ProgressCallback, cancelled: CancelCheck) -> StatsT:
        result = request.source.render_stats(request.width, progress=progress, cancelled=cancelled)
        if result is None:
            raise JobCancelled("stats: cancelled")
        return result
