"""Verify the hash chain as a child job, so a long check never competes with the UI for the
interpreter lock (the check reads and hashes every line, and starts a worker pool)."""

from __future__ import annotations

from pathlib import Path

from ..jobs import JobCancelled, JobError, JobRun
from ..jobs.verify import ChainResult, VerifyJob, VerifyRequest, result_of

__all__ = ["ChainCheck", "ChainResult", "result_of"]


class ChainCheck:
    """One verify run; ``cancel`` kills its whole process group (the pool goes with it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._run = JobRun(VerifyJob(), VerifyRequest(str(path)))

    def run(self) -> ChainResult:
        """Blocking: call from a thread worker. A check can run again after it finished."""
        self._run = JobRun(VerifyJob(), VerifyRequest(str(self.path)), cancelled=self._run.is_cancelled)
        try:
            result: ChainResult = self._run.result()
        except JobCancelled:
            return ChainResult("cancelled", "not checked")
        except JobError as error:
            return ChainResult("error", f"cannot verify: {error}")
        return result

    def cancel(self) -> None:
        self._run.cancel()
