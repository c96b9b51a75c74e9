"""A strict replay or an experiment (thread job): ``replay.runner.ReplayRunner`` drives the
sandboxed child; this job runs it, reports its progress, cancels it when asked and turns a child
that could not be spawned into a failed outcome.

Importing this module loads neither the runner nor the sandbox (the app imports it for its first
frame): they load with the first replay.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..journal.progress import CancelCheck, ProgressCallback
from ..replay.protocol import HELLO, STRICT, ReplaySpec
from .core import CHILD_NICENESS, Job

if TYPE_CHECKING:
    from ..replay.runner import Progress, ReplayOutcome, ReplayRunner

CANCEL_POLL_S = 0.1
DEFAULT_TIMEOUT_S = 600.0


@dataclass
class ReplayRequest:
    """What the user asked for: a strict replay or an experiment, the agent and the configs."""

    mode: str = STRICT
    agent: str | None = None  # "module:attr"; None = the entry point run.started recorded
    agent_path: list[str] = field(default_factory=list)
    model_config: str | None = None
    tools_config: str | None = None
    out: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def label(self) -> str:
        return "replay" if self.mode == STRICT else f"{self.mode} experiment"

    def spec(self, journal: Path, root: str) -> ReplaySpec:
        """The child's spec; ``root`` is the agent's project (where the app was started, as for the CLI)."""
        from ..replay.sandbox import pass_env_default

        return ReplaySpec(
            journal=str(journal.resolve()),
            agent=self.agent or None,
            mode=self.mode,
            out=self.out,
            model_config=self.model_config,
            tools_config=self.tools_config,
            sys_path=[os.path.abspath(path) for path in self.agent_path] + [root],
            pass_env=pass_env_default(),  # the sandbox scrubs the rest of the environment
        )


@dataclass(frozen=True)
class ReplayJobRequest:
    spec: ReplaySpec
    timeout_s: float | None = None
    cwd: str | None = None
    niceness: int = 0  # added to the child's process group once spawned (the app: CHILD_NICENESS)
    on_progress: Callable[[Progress], None] | None = None  # every step of the runner (phase, seq), unthrottled
    on_message: Callable[[dict[str, Any]], None] | None = None  # the child's protocol messages
    on_isolation: Callable[[str], None] | None = None  # the child's hello: the isolation in force, in words
    on_runner: Callable[[ReplayRunner], None] | None = None  # the runner, once made (its pid leads the group)

    @classmethod
    def of(cls, request: ReplayRequest, journal: Path, root: str, **options: Any) -> ReplayJobRequest:
        """The job for what the user asked, run from ``root``, niced (batch work: the keys come first)."""
        options.setdefault("niceness", CHILD_NICENESS)
        return cls(request.spec(journal, root), timeout_s=request.timeout_s, cwd=root, **options)

    def hear(self, message: dict[str, Any]) -> None:
        """One protocol message from the child, passed on; the hello also as its isolation summary."""
        if self.on_message is not None:
            self.on_message(message)
        if message.get("type") == HELLO and self.on_isolation is not None:
            isolation = message.get("isolation")
            summary = isolation.get("summary") if isinstance(isolation, dict) else None
            self.on_isolation(str(summary or "isolation unknown"))


class ReplayJob(Job[ReplayJobRequest, "ReplayOutcome"]):
    """The outcome says cancelled, timeout, crashed or failed itself: this job never raises for those
    (a cancelled run's outcome, with the events it consumed, is ``JobCancelled.partial``)."""

    name = "replay"

    def run(self, request: ReplayJobRequest, progress: ProgressCallback, cancelled: CancelCheck) -> ReplayOutcome:
        from ..replay.runner import ReplayOutcome, ReplayRunner

        def on_progress(step: Progress) -> None:
            if request.on_progress is not None:
                request.on_progress(step)  # first: a listener of the throttled counts reads the latest step
            progress(step.consumed, step.total)
            if cancelled():  # at once, before the next line: the watcher below only polls
                runner.cancel()

        runner = ReplayRunner(
            request.spec,
            timeout_s=request.timeout_s,
            on_progress=on_progress,
            on_message=request.hear,
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
            try:
                runner.start()
            except Exception as error:  # the child could not be spawned (bad python, fd limits)
                message = f"could not start the replay child: {type(error).__name__}: {error}"
                return ReplayOutcome.failed(request.spec, "internal", message)
            lower_priority(runner.pid, request.niceness)
            return runner.wait()
        finally:
            done.set()
            watcher.join()


def lower_priority(pid: int | None, niceness: int) -> None:
    """Nice the child's process group (its pid leads it), so on a busy machine the UI gets the CPU
    first; the replay still uses every idle cycle."""
    if pid is None or niceness <= 0:
        return
    try:
        os.setpriority(os.PRIO_PGRP, pid, niceness)
    except OSError:  # not permitted or already gone: the replay runs at normal priority
        pass
