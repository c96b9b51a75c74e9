"""A strict replay or an experiment (thread job): ``replay.runner.ReplayRunner`` drives the
sandboxed child; this job runs it, reports its progress and cancels it when asked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..journal.progress import CancelCheck, ProgressCallback
from ..replay.protocol import ReplaySpec
from ..replay.runner import Progress, ReplayOutcome, ReplayRunner
from .core import Job

CANCEL_POLL_S = 0.1


@dataclass(frozen=True)
class ReplayJobRequest:
    spec: ReplaySpec
    timeout_s: float | None = None
    cwd: str | None = None
    on_progress: Callable[[Progress], None] | None = None  # the runner's own progress (phase, seq)
    on_message: Callable[[dict[str, Any]], None] | None = None  # the child's protocol messages
    on_runner: Callable[[ReplayRunner], None] | None = None  # the runner, once made (e.g. to lower its priority)


class ReplayJob(Job[ReplayJobRequest, ReplayOutcome]):
    """The outcome says cancelled, timeout or crashed itself: this job never raises for those."""

    name = "replay"

    def run(self, request: ReplayJobRequest, progress: ProgressCallback, cancelled: CancelCheck) -> ReplayOutcome:
        def on_progress(step: Progress) -> None:
            progress(step.consumed, step.total)
            if request.on_progress is not None:
                request.on_progress(step)

        runner = ReplayRunner(
            request.spec,
            timeout_s=request.timeout_s,
            on_progress=on_progress,
            on_message=request.on_message,
            cwd=request.cwd,
        )
        if request.on_runner is not None:
            request.on_runner(runner)
        done = threading.Event()

        def watch() -> None:  # the runner blocks in wait(): a cancel reaches it from here
            while not done.wait(CANCEL_POLL_S):
                if cancelled():
                    runner.cancel()
                    return

        watcher = threading.Thread(target=watch, name="replay-job-cancel", daemon=True)
        watcher.start()
        try:
            return runner.run()
        finally:
            done.set()
            watcher.join()
