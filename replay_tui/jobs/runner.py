"""The one runner: a job runs in the caller's thread or in a child process, and either way it
can be cancelled and reports throttled progress.

A child is ``python -m replay_tui.jobs NAME`` in its own session (process group): the request
goes in on stdin as one JSON line; the child answers with JSON lines on stdout (``started``,
``progress``, ``update`` for the request's callbacks (``{"group": pid}`` among them names a
process group it made besides its own, ``{"scratch": path}`` a directory it made in the temp directory
and removes when it ends), then ``result`` or ``error``). Cancelling kills the whole process group, so
helpers the child started (verify's worker pool) go with it; a job that stops itself (the
replay) is asked first and hands back what it has, and is killed only if it does not answer.
Once the child has ended, killed or not, the directories it named are removed: a killed replay
left its sandbox's scratch directory behind, with the copy of the journal in it.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Generic, TypeVar

from ..journal.depth import deep_enough
from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job, JobCancelled, JobError
from .throttle import throttled

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")
POLL_S = 0.1
KILL_WAIT_S = 5.0
STOP_WAIT_S = 5.0  # how long a job that stops itself has to answer a cancel before its groups are killed


def _never() -> bool:
    return False


def _ignore(done: int, total: int) -> None:
    return None


class JobRun(Generic[RequestT, ResultT]):
    """One run of one job; ``cancel`` may be called from any thread, before or during ``result``."""

    def __init__(
        self,
        job: Job[RequestT, ResultT],
        request: RequestT,
        *,
        progress: ProgressCallback | None = None,
        cancelled: CancelCheck | None = None,
        every_s: float = 0.1,
        on_started: Callable[[int], None] | None = None,
    ) -> None:
        self.job = job
        self.request = request
        self.progress = throttled(progress, every_s) if progress is not None else _ignore
        self._asked_to_stop = cancelled or _never
        self._cancelled = threading.Event()
        self.on_started = on_started  # child jobs: called with the child's pid (= its process group)
        self.process: subprocess.Popen[bytes] | None = None
        self._other_groups: list[int] = []  # process groups the child said it made (the replay's sandbox)
        self._scratch: list[str] = []  # directories the child said it made (the sandbox's scratch)

    def cancel(self) -> None:
        self._cancelled.set()
        if self.job.stops_itself:
            self._ask_to_stop()
        else:
            self._kill_group()

    def is_cancelled(self) -> bool:
        return self._cancelled.is_set() or self._asked_to_stop()

    def result(self) -> ResultT:
        """Blocking (call from a worker thread): the job's result; raises JobCancelled or JobError."""
        if self.is_cancelled():
            raise JobCancelled(f"{self.job.name}: cancelled")
        if not self.job.in_child:
            result = self.job.run(self.request, self.progress, self.is_cancelled)
            if self.is_cancelled():
                raise JobCancelled(f"{self.job.name}: cancelled", partial=result)
            return result
        return self._run_child()

    # -- child process -------------------------------------------------------------------------
    def _run_child(self) -> ResultT:
        line = json.dumps(self.job.request_to_json(self.request)).encode() + b"\n"
        with tempfile.TemporaryFile() as stderr:
            try:
                process = self.process = subprocess.Popen(
                    [sys.executable, "-m", "replay_tui.jobs", self.job.name],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    start_new_session=True,  # its own process group: cancel kills everything it started
                )
            except OSError as error:  # fork failed (the process limit), or no interpreter
                raise JobError(f"could not start the {self.job.name} child: {type(error).__name__}: {error}") from None
            if self._cancelled.is_set():  # cancelled while starting: too early for anything to hand back
                self._kill_group()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(line)
                process.stdin.close()
            except BrokenPipeError:
                pass
            answer = self._read_answers(process.stdout)
            process.wait()
            self._remove_scratch()
            if answer is None:
                if self.is_cancelled():
                    raise JobCancelled(f"{self.job.name}: cancelled")
                stderr.seek(0)
                lines = stderr.read().decode(errors="replace").strip().splitlines()
                raise JobError(lines[-1] if lines else f"the {self.job.name} child ended with {process.returncode}")
        if "error" in answer:
            raise JobError(str(answer["error"]))
        result = self.job.result_from_json(answer["result"])
        if self.is_cancelled():  # a job that stops itself answered the cancel with what it had
            raise JobCancelled(f"{self.job.name}: cancelled", partial=result)
        return result

    def _read_answers(self, stdout: IO[bytes]) -> dict[str, Any] | None:
        """The child's final ``result``/``error`` object; None when it ended without one or was cancelled
        (and, for a job that stops itself, did not answer within STOP_WAIT_S)."""
        buffer = b""
        stop_by: float | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                if self.is_cancelled():
                    if not self.job.stops_itself or (stop_by is not None and time.monotonic() > stop_by):
                        self._kill_group()
                        return None
                    if stop_by is None:  # asked by the caller's check, or by cancel() from another thread
                        self._ask_to_stop()
                        stop_by = time.monotonic() + STOP_WAIT_S
                if not selector.select(POLL_S):
                    continue
                chunk = os.read(stdout.fileno(), 1 << 16)
                if not chunk:
                    return None
                buffer += chunk
                if b"\n" not in chunk:
                    continue  # a long line (a replay's outcome) is split once, when it ends
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    answer = self._answer(raw)
                    if answer is not None:
                        return answer

    def _answer(self, raw: bytes) -> dict[str, Any] | None:
        try:
            message = _parsed(raw)
        except ValueError:
            return None  # not ours: a library printed to stdout
        if not isinstance(message, dict):
            return None
        if "started" in message and self.on_started is not None and self.process is not None:
            self.on_started(self.process.pid)
        counts = message.get("progress")
        if isinstance(counts, list) and len(counts) == 2 and all(type(count) is int for count in counts):
            self.progress(counts[0], counts[1])  # anything else is not the child's progress: never a raise here
        update = message.get("update")
        if isinstance(update, dict):
            if isinstance(update.get("group"), int):  # a process group the child made: a kill takes it too
                self._other_groups.append(update["group"])
            if isinstance(update.get("scratch"), str):
                self._scratch.append(update["scratch"])
            self.job.heard(self.request, update)
        return message if ("result" in message or "error" in message) else None

    def _ask_to_stop(self) -> None:
        """SIGTERM to the child alone: a job that stops itself ends its own work and answers."""
        process = self.process
        if process is not None and process.poll() is None:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def _kill_group(self) -> None:
        process = self.process
        if process is None:
            return
        # the child leads its group (its pid is the group id); the groups it said it made go too (the
        # replay's sandbox runs in a session of its own, which the child's death alone would not end)
        for group in (*self._other_groups, process.pid):
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            process.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass

    def _remove_scratch(self) -> None:
        """The directories the ended child named, if it did not remove them itself (it was killed). Only a
        ``replay-tui-`` directory right in the temp directory: the child names it, and this runs as the user."""
        temp = os.path.realpath(tempfile.gettempdir())
        for path in self._scratch:
            real = os.path.realpath(path)
            if os.path.dirname(real) == temp and os.path.basename(real).startswith("replay-tui-"):
                shutil.rmtree(real, ignore_errors=True)
        self._scratch.clear()


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:  # a replay's divergence in a payload nested as deep as the journal allows
        with deep_enough():
            return json.loads(raw)


def run_job(
    job: Job[RequestT, ResultT],
    request: RequestT,
    *,
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> ResultT:
    """Run ``job`` to its end (blocking); see ``JobRun`` to cancel from another thread."""
    return JobRun(job, request, progress=progress, cancelled=cancelled).result()
