"""A strict replay or an experiment (child job): ``replay.parent.runner.ReplayRunner`` drives the
sandboxed child from ``python -m replay_tui.jobs replay``, so the parent's side of the replay
(verifying the journal, refereeing every line the agent produces) holds that process's
interpreter lock, not the app's: the keys stay as quick during a replay as without one. The
runner's steps, the child's isolation and the sandbox's process group come back as updates for
the request's callbacks; a cancel asks the job to stop, and it answers with the outcome so far.

Importing this module loads neither the runner nor the sandbox (the app imports it for its first
frame): they load in the job's child.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..journal.progress import CancelCheck, ProgressCallback
from ..replay.modes import STRICT
from .core import Aftercare, Job, Say

if TYPE_CHECKING:
    from ..replay.parent.outcome import ReplayOutcome
    from ..replay.parent.runner import Progress
    from ..replay.protocol import ReplaySpec

CANCEL_POLL_S = 0.1
DEFAULT_TIMEOUT_S = 600.0
STEP_EVERY_S = 0.05  # the child says a step this often at most (and at each new phase, and the last one)


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
        from ..replay.protocol import ReplaySpec
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
    on_progress: Callable[[Progress], None] | None = None  # the runner's steps (phase, seq), a few a second
    on_isolation: Callable[[str], None] | None = None  # the child's hello: the isolation in force, in words
    on_child: Callable[[int], None] | None = None  # the sandboxed child's pid, once spawned (it leads its group)
    on_scratch: Callable[[str], None] | None = None  # the sandbox's scratch directory, once made

    @classmethod
    def of(cls, request: ReplayRequest, journal: Path, root: str, **options: Any) -> ReplayJobRequest:
        """The job for what the user asked, run from ``root`` (the job's child runs niced: batch work,
        the keys come first)."""
        return cls(request.spec(journal, root), timeout_s=request.timeout_s, cwd=root, **options)


class SandboxAftercare(Aftercare):
    """What a replay job's child leaves that its own group does not hold: the sandbox leads a session of its
    own (``{"group": pid}``: killed with the job's child) and its scratch directory (``{"scratch": path}``,
    with the journal's copy in it) stays behind when the job's child is killed before its runner removed it."""

    def __init__(self) -> None:
        self._groups: list[int] = []
        self._scratch: list[str] = []

    def heard(self, update: dict[str, Any]) -> None:
        if isinstance(update.get("group"), int):
            self._groups.append(update["group"])
        if isinstance(update.get("scratch"), str):
            self._scratch.append(update["scratch"])

    def groups(self) -> list[int]:
        return list(self._groups)

    def ended(self) -> None:
        """The directories the child named, if its runner did not remove them (it was killed). Only a sandbox
        scratch directory right in the temp directory: the child names it, and this runs as the user."""
        from ..replay.parent.scratch import PREFIX

        temp = os.path.realpath(tempfile.gettempdir())
        for path in self._scratch:
            real = os.path.realpath(path)
            if os.path.dirname(real) == temp and os.path.basename(real).startswith(PREFIX):
                shutil.rmtree(real, ignore_errors=True)
        self._scratch.clear()


class ReplayJob(Job[ReplayJobRequest, "ReplayOutcome"]):
    """The outcome says cancelled, timeout, crashed or failed itself: this job never raises for those
    (a cancelled run's outcome, with the events it consumed, is ``JobCancelled.partial``)."""

    name = "replay"
    in_child = True
    stops_itself = True

    def run(self, request: ReplayJobRequest, progress: ProgressCallback, cancelled: CancelCheck) -> ReplayOutcome:
        from ..replay.parent.outcome import ReplayOutcome
        from ..replay.parent.runner import ReplayRunner
        from ..replay.protocol import HELLO

        def on_progress(step: Progress) -> None:
            if request.on_progress is not None:
                request.on_progress(step)  # first: a listener of the throttled counts reads the latest step
            progress(step.consumed, step.total)
            if cancelled():  # at once, before the next line: the watcher below only polls
                runner.cancel()

        def on_message(message: dict[str, Any]) -> None:
            if message.get("type") == HELLO and request.on_isolation is not None:
                isolation = message.get("isolation")
                summary = isolation.get("summary") if isinstance(isolation, dict) else None
                request.on_isolation(str(summary or "isolation unknown"))

        runner = ReplayRunner(
            request.spec, timeout_s=request.timeout_s, on_progress=on_progress, on_message=on_message, cwd=request.cwd
        )
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
            if runner.scratch is not None and request.on_scratch is not None:
                request.on_scratch(runner.scratch)
            if runner.pid is not None and request.on_child is not None:
                request.on_child(runner.pid)
            return runner.wait()
        finally:
            done.set()
            watcher.join()

    # -- the pipe ------------------------------------------------------------------------------
    def request_to_json(self, request: ReplayJobRequest) -> Any:
        return {"spec": request.spec.to_argv(), "timeout_s": request.timeout_s, "cwd": request.cwd}

    def request_from_json(self, data: Any) -> ReplayJobRequest:
        from ..replay.protocol import ProtocolError, ReplaySpec

        try:
            spec = ReplaySpec.from_argv(str(data["spec"]))
        except ProtocolError as error:
            raise ValueError(str(error)) from None
        timeout_s = data.get("timeout_s")
        return ReplayJobRequest(spec, float(timeout_s) if timeout_s is not None else None, data.get("cwd"))

    def result_to_json(self, result: ReplayOutcome) -> Any:
        return result.to_json()

    def result_from_json(self, data: Any) -> ReplayOutcome:
        from ..replay.parent.outcome import ReplayOutcome

        return ReplayOutcome.from_json(data)

    def child_request(self, request: ReplayJobRequest, say: Say) -> ReplayJobRequest:
        """Steps (a few a second, each new phase and the last one), the isolation, the sandbox's
        process group and its scratch directory, said as updates."""
        last: list[Any] = [None, float("-inf")]  # the phase and the time of the last step said

        def say_step(step: Progress) -> None:
            now = time.monotonic()
            if step.phase != last[0] or now - last[1] >= STEP_EVERY_S or step.consumed >= step.total:
                last[:] = [step.phase, now]
                say({"step": [step.phase, step.consumed, step.total, step.seq]})

        return replace(
            request,
            on_progress=say_step,
            on_isolation=lambda summary: say({"isolation": summary}),
            on_child=lambda pid: say({"group": pid}),
            on_scratch=lambda path: say({"scratch": path}),
        )

    def aftercare(self, request: ReplayJobRequest) -> Aftercare:
        return SandboxAftercare()

    def heard(self, request: ReplayJobRequest, update: dict[str, Any]) -> None:
        step, isolation, group, scratch = (update.get(name) for name in ("step", "isolation", "group", "scratch"))
        if request.on_progress is not None and isinstance(step, list) and len(step) == 4:
            from ..replay.parent.runner import Progress
            from ..replay.protocol import PHASES

            phase, consumed, total, seq = step
            if phase in PHASES and type(consumed) is int and type(total) is int:  # the runner checked them: be sure
                request.on_progress(Progress(phase, consumed, total, seq if type(seq) is int else None))
        if request.on_isolation is not None and isinstance(isolation, str):
            request.on_isolation(isolation)
        if request.on_child is not None and isinstance(group, int):
            request.on_child(group)
        if request.on_scratch is not None and isinstance(scratch, str):
            request.on_scratch(scratch)
