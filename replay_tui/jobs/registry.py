"""Every job by name. ``python -m replay_tui.jobs NAME`` runs only the child jobs listed here."""

from __future__ import annotations

from typing import Any

from .core import Job
from .environment import EnvironmentJob
from .export import ExportJob
from .replay import ReplayJob
from .search import FilterJob, SearchJob
from .secrets import SecretScanJob
from .stats import StatsJob
from .verify import VerifyJob

_ALL: tuple[Job[Any, Any], ...] = (
    VerifyJob(),
    SecretScanJob(),
    ExportJob(),
    EnvironmentJob(),
    StatsJob(),
    SearchJob(),
    FilterJob(),
    ReplayJob(),
)
JOBS: dict[str, Job[Any, Any]] = {job.name: job for job in _ALL}


def child_job(name: str) -> Job[Any, Any]:
    """The child job called ``name``; KeyError with a message for anything else."""
    job = JOBS.get(name)
    if job is None or not job.in_child:
        names = ", ".join(sorted(n for n, j in JOBS.items() if j.in_child))
        raise KeyError(f"{name!r} is not a child job (child jobs: {names})")
    return job
