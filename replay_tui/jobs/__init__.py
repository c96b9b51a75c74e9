"""Long computations as jobs (typed request, result and progress), run by one runner in a thread
or in a child process; see core.py and runner.py. This layer never imports Textual."""

from __future__ import annotations

from .core import Job, JobCancelled, JobError
from .runner import JobRun, run_job
from .throttle import throttled

__all__ = ["Job", "JobCancelled", "JobError", "JobRun", "run_job", "throttled"]
