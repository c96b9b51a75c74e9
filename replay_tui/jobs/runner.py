"""The one runner: a job runs in the caller's thread or in a child process, and either way it
can be cancelled and reports throttled progress.

A child is ``python -m replay_tui.jobs NAME`` in its own session (process group), supervised by
``journal/processes.py``: the request goes in on stdin as one JSON line; the child answers with JSON
lines on stdout (``started``, ``progress``, ``update`` for the request's callbacks, then ``result`` or
``error``). Cancelling kills the whole process group, so helpers the child started (verify's worker
pool) go with it; a job that stops itself (the replay) is asked first and hands back what it has, and
is killed only if it does not answer. What the child leaves that its group does not hold (the replay's
sandbox, a session of its own, and its scratch directory) is the job's to say: its ``Aftercare`` hears
every update, names the groups a kill takes too, and cleans up once the child has ended, killed or not.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..journal.depth import deep_enough
from ..journal.processes import Supervised, read_lines
from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job, JobCancelled, JobError
from .throttle import throttled

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")
POLL_S = 0.1
KILL_WAIT_S = 5.0
STOP_WAIT_S = 5.0  # how long a job that stops itself has to answer a cancel before its groups are killed
_KILLED = "killed"  # the read loop ended because the cancel killed the child


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
        self.process: Any = None  # the child's subprocess.Popen, once started
        self._child: Supervised | None = None
        self._aftercare = job.aftercare(request)  # what the child leaves that its process group does not hold

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
        try:
            child = self._child = Supervised.start([sys.executable, "-m", "replay_tui.jobs", self.job.name])
        except OSError as error:  # fork failed (the process limit), or no interpreter
            raise JobError(f"could not start the {self.job.name} child: {type(error).__name__}: {error}") from None
        process = self.process = child.process
        child.drain(stderr=True)
        if self._cancelled.is_set():  # cancelled while starting: too early for anything to hand back
            self._kill_group()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(line)
            process.stdin.close()
        except BrokenPipeError:
            pass
        answer = self._read_answers(process.stdout.fileno())
        process.stdout.close()
        child.wait()
        self._aftercare.ended()
        if answer is None:
            if self.is_cancelled():
                raise JobCancelled(f"{self.job.name}: cancelled")
            last = child.last_stderr_line()
            raise JobError(last if last is not None else f"the {self.job.name} child ended with {process.returncode}")
        if "error" in answer:
            raise JobError(str(answer["error"]))
        result = self.job.result_from_json(answer["result"])
        if self.is_cancelled():  # a job that stops itself answered the cancel with what it had
            raise JobCancelled(f"{self.job.name}: cancelled", partial=result)
        return result

    def _read_answers(self, stdout: int) -> dict[str, Any] | None:
        """The child's final ``result``/``error`` object; None when it ended without one or was cancelled
        (and, for a job that stops itself, did not answer within STOP_WAIT_S)."""
        stop_by: float | None = None

        def stop() -> str | None:
            nonlocal stop_by
            if not self.is_cancelled():
                return None
            if not self.job.stops_itself or (stop_by is not None and time.monotonic() > stop_by):
                self._kill_group()
                return _KILLED
            if stop_by is None:  # asked by the caller's check, or by cancel() from another thread
                self._ask_to_stop()
                stop_by = time.monotonic() + STOP_WAIT_S
            return None

        ended = read_lines(stdout, self._answer, stop=stop, poll_s=POLL_S)  # a long line (an outcome) is split once
        return ended if isinstance(ended, dict) else None

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
            self._aftercare.heard(update)
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
        """The child's process group, and the groups its job's aftercare names (the replay's sandbox runs in a
        session of its own, which the child's death alone would not end)."""
        child = self._child
        if child is None:
            return
        child.kill(also=self._aftercare.groups())
        child.wait(KILL_WAIT_S)


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
