"""Verify the hash chain as a child job, so a long check never competes with the UI for the
interpreter lock (the check reads and hashes every line, and starts a worker pool)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..jobs import JobCancelled, JobError, JobRun

if TYPE_CHECKING:  # the verify job loads with the first check, after the first frame
    from ..jobs.verify import ChainResult, VerifyRequest

__all__ = ["ChainCheck"]


class ChainCheck:
    """One verify run at a time; ``cancel`` kills its whole process group (the pool goes with it), and every
    run after a cancel is cancelled too."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cancelled = threading.Event()
        self._run: JobRun[VerifyRequest, ChainResult] | None = None

    def run(self) -> ChainResult:
        """Blocking: call from a thread worker. A check can run again after it finished."""
        from ..jobs.verify import ChainResult, VerifyJob, VerifyRequest  # with the first check, not the first frame

        self._run = JobRun(VerifyJob(), VerifyRequest(str(self.path)), cancelled=self._cancelled.is_set)
        try:
            result: ChainResult = self._run.result()
        except JobCancelled:
            return ChainResult("cancelled", "not checked")
        except JobError as error:
            return ChainResult("error", f"cannot verify: {error}")
        return result

    def cancel(self) -> None:
        self._cancelled.set()
        if self._run is not None:
            self._run.cancel()
