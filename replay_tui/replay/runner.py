"""Parent side of a replay: start the child, follow its protocol, time it out or cancel it.

One small class serves the CLI, the app and CI::

    runner = ReplayRunner(ReplaySpec(journal="run.jsonl"), timeout_s=60,
                          on_progress=lambda p: print(p.consumed, p.total))
    outcome = runner.run()          # blocks; callbacks run on this thread
    # from another thread, at any time: runner.cancel()
    outcome.status, outcome.divergence, outcome.exit_code

The app runs ``run()`` in a worker thread and forwards callbacks to the UI thread.
The parent never imports agent code: everything it knows comes over the pipe.
"""

from __future__ import annotations

import collections
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable

import orjson

from ..journal.safe_text import safe
from .isolation import IsolationInfo, Refusal
from .protocol import (
    DIVERGENCE,
    ERROR,
    HELLO,
    PROGRESS,
    REFUSAL,
    RESULT,
    ProtocolError,
    ReplaySpec,
    decode,
)
from .report import DivergenceReport

# Outcome statuses.
MATCH = "match"
DIVERGED = "diverged"
VERIFICATION_FAILED = "verification_failed"
UNUSED_EVENTS = "unused_events"
TIMEOUT = "timeout"
CANCELLED = "cancelled"
CRASHED = "crashed"
UNRECORDED_CALL = "unrecorded_call"  # an experiment asked for an observation the journal never saw
FAILED = "error"  # the child reported an error (agent import, journal, usage, internal)

#: Progress phases that count journal events (the "load" phase counts bytes indexed).
EVENT_PHASES = frozenset({"replay", "fast-forward"})
STDERR_LINES = 40
POLL_S = 0.25


@dataclass(frozen=True)
class Progress:
    """How far a replay is: ``consumed`` of ``total`` journal events, last ``seq`` matched."""

    phase: str
    consumed: int
    total: int
    seq: int | None

    @property
    def fraction(self) -> float:
        return self.consumed / self.total if self.total else 0.0


@dataclass
class ReplayOutcome:
    """Everything known about one finished replay (or experiment)."""

    status: str
    journal: str
    mode: str
    isolation: IsolationInfo | None = None
    consumed: int = 0
    total: int = 0
    last_seq: int | None = None
    first_seq: int | None = None  # first seq the agent re-ran (after a snapshot resume: snapshot + 1)
    from_seq: int | None = None  # --from-seq: events before it were fast-forwarded, not reported
    resumed_from_snapshot: int | None = None  # seq of the state.snapshot a step-loop agent resumed from
    state_checks: int = 0  # state.transition / state.snapshot hashes that matched
    observations_served: int = 0
    divergence: DivergenceReport | None = None
    refusals: list[Refusal] = field(default_factory=list)
    unused: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # {kind, message, traceback}
    out: str | None = None
    experiment: dict[str, Any] | None = None
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    child_exit: int | None = None
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)
    child_startup_s: float | None = None
    elapsed_s: float | None = None  # whole child run, from start-up to result
    replay_s: float | None = None  # the replay loop alone
    replay_cpu_s: float | None = None  # CPU seconds of the replay loop (stable under machine load)
    events_per_s: float | None = None  # consumed / replay_s
    timeout_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == MATCH

    @property
    def exit_code(self) -> int:
        """0 match; 2 unusable input (journal, usage, agent import); 1 everything else."""
        if self.status == MATCH:
            return 0
        if self.status == FAILED and self.error and self.error.get("kind") in ("journal", "usage", "agent_import"):
            return 2
        return 1

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["ok"] = self.ok
        data["isolation"] = self.isolation.to_json() if self.isolation else None
        data["divergence"] = self.divergence.to_json() if self.divergence else None
        data["refusals"] = [refusal.to_json() for refusal in self.refusals]
        return data

    def headline(self) -> str:
        if self.experiment is not None:
            return self._experiment_headline()
        where = f"{self.consumed} of {self.total} events consumed"
        at = f"at seq={self.last_seq}" if self.last_seq is not None else "before the first event"
        if self.status == MATCH:
            return f"Replay matched: {where}; every key and state hash agrees with the journal."
        if self.status == DIVERGED and self.divergence:
            return f"Replay diverged at seq={self.divergence.seq} ({where})."
        if self.status == VERIFICATION_FAILED:
            return "Replay not started: the journal failed verification."
        if self.status == UNUSED_EVENTS and self.unused:
            return (
                f"Replay left {self.unused.get('count')} recorded event(s) unused, "
                f"the first at seq={self.unused.get('first_seq')} ({where})."
            )
        if self.status == TIMEOUT:
            return f"Replay timed out after {self.timeout_s:g} s {at} ({where}); the child was killed."
        if self.status == CANCELLED:
            return f"Replay cancelled {at} ({where}); the child was killed."
        if self.status == CRASHED:
            return f"Replay child crashed ({describe_exit(self.child_exit)}) {at} ({where})."
        if self.error:
            return f"Replay failed ({self.error.get('kind')}): {self.error.get('message')}"
        return f"Replay ended: {self.status}"

    def _experiment_headline(self) -> str:
        experiment = self.experiment or {}
        mode = experiment.get("mode", self.mode)
        stopped = experiment.get("stopped")
        if stopped and stopped.get("kind"):
            request = stopped.get("request") or {}
            call = ""
            if request.get("tool"):
                call = f" (the call: {request['tool']} {json_text(request.get('arguments'))})"
            return f"Experiment {mode} stopped: the journal has no {stopped['kind']} for {stopped['key']}{call}."
        if experiment.get("identical"):
            return f"Experiment {mode}: the new trajectory matches the recording ({self.consumed} events written)."
        return f"Experiment {mode}: the new trajectory differs from the recording ({self.consumed} events written, {self.total} recorded)."

    def to_text(self) -> str:
        lines = [self.headline()]
        if self.divergence:
            lines += ["", self.divergence.to_text(), ""]
        if self.status == VERIFICATION_FAILED and self.verification and self.verification.get("fault"):
            fault = self.verification["fault"]
            where = ", ".join(f"{name} {fault[name]}" for name in ("seq", "line") if fault.get(name) is not None)
            lines.append(f"verification failed ({where or 'journal'}): {fault.get('kind')}: {fault.get('message')}")
            if fault.get("expected") or fault.get("found"):
                lines.append(f"  expected {fault.get('expected')}, found {fault.get('found')}")
        if self.resumed_from_snapshot is not None:
            lines.append(
                f"resumed from the state.snapshot at seq={self.resumed_from_snapshot} "
                f"(the nearest at or before --from-seq {self.from_seq}); replayed from seq={self.first_seq}"
            )
        elif self.from_seq is not None and self.from_seq > 1:
            lines.append(f"fast-forwarded seq 1 to {self.from_seq - 1} without reporting; reported from seq={self.from_seq}")
        if self.verification and self.verification.get("ok"):
            chain = self.verification.get("chain")
            lines.append(f"hash chain: {chain} ({self.verification.get('events')} events)")
        if self.status == MATCH and self.experiment is None:
            lines.append(f"checked: {self.state_checks} state hashes, {self.observations_served} observations served from the journal")
        if self.unused and self.unused.get("count") and self.status == DIVERGED and not self.experiment:
            lines.append(f"not replayed after the divergence: {self.unused['count']} events from seq={self.unused.get('first_seq')}")
        elif self.unused and self.unused.get("count") and self.status != UNUSED_EVENTS:
            lines.append(f"unused recorded events: {self.unused['count']}, the first at seq={self.unused.get('first_seq')}")
        if self.experiment:
            lines.append(f"experiment: {self.experiment.get('summary')}")
            alignment = self.experiment.get("alignment") or {}
            if alignment.get("differences"):
                lines.append(
                    f"  {alignment['differences']} differing events: {alignment.get('changed', 0)} changed, "
                    f"{alignment.get('only_a', 0)} only recorded, {alignment.get('only_b', 0)} only new"
                )
            lines.append(f"  live calls: {len(self.live_calls)}")
        if self.out:
            lines.append(f"experiment journal: {self.out}")
        if self.isolation:
            lines.append(f"isolation: {self.isolation.summary}")
        if self.refusals:
            lines.append(f"refused network access ({len(self.refusals)}):")
            lines.extend(f"  {refusal}" for refusal in self.refusals[:20])
            if len(self.refusals) > 20:
                lines.append(f"  … and {len(self.refusals) - 20} more")
        else:
            lines.append("refused network access: none attempted")
        if self.error and self.error.get("traceback"):
            lines.append("child traceback (last lines):")
            lines.extend(f"  {line}" for line in self.error["traceback"][-15:])
        if self.status in (CRASHED, TIMEOUT, FAILED) and self.stderr_tail:
            lines.append("child stderr (last lines):")
            lines.extend(f"  {line}" for line in self.stderr_tail[-15:])
        return safe("\n".join(lines), multiline=True)  # journal text, agent output: never raw to a terminal


def json_text(value: Any, limit: int = 200) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class ReplayRunner:
    """Runs one replay child and turns its protocol stream into a ``ReplayOutcome``.

    Callbacks are called on the thread that calls ``run``/``wait``. ``cancel`` may be
    called from any thread, before or during the run.
    """

    def __init__(
        self,
        spec: ReplaySpec,
        *,
        timeout_s: float | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        python: str = sys.executable,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self.timeout_s = timeout_s
        self.on_progress = on_progress
        self.on_message = on_message
        self.python = python
        self.cwd = cwd
        self.env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._cancelled = threading.Event()
        self._wake_r: int | None = None  # a self-pipe: cancel() wakes wait() at once
        self._wake_w: int | None = None
        self._wake_lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stdout: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._drains: list[threading.Thread] = []

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def cancel(self) -> None:
        """Stop the run: the child's process group is killed and the outcome says cancelled."""
        self._cancelled.set()
        with self._wake_lock:
            if self._wake_w is not None:
                os.write(self._wake_w, b"x")

    def run(self) -> ReplayOutcome:
        self.start()
        return self.wait()

    def start(self) -> None:
        """Spawn the child. Returns at once; follow it with ``wait``."""
        if self._process is not None:
            raise RuntimeError("a ReplayRunner runs one child; make a new runner for another replay")
        with self._wake_lock:
            self._wake_r, self._wake_w = os.pipe()
        read_fd, write_fd = os.pipe()
        self.spec.protocol_fd = write_fd
        self._started = time.perf_counter()
        try:
            self._process = subprocess.Popen(
                [self.python, "-m", "replay_tui.replay.child", self.spec.to_argv()],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill takes agent subprocesses too
                cwd=self.cwd,
                env=self.env,
            )
        finally:
            os.close(write_fd)
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)
        for stream, tail in ((self._process.stderr, self._stderr), (self._process.stdout, self._stdout)):
            thread = threading.Thread(target=_drain, args=(stream, tail), daemon=True)
            thread.start()
            self._drains.append(thread)

    def wait(self) -> ReplayOutcome:
        """Follow the child to its end; returns the outcome (never raises for child failures)."""
        assert self._process is not None, "start() first"
        outcome = ReplayOutcome(status=CRASHED, journal=self.spec.journal, mode=self.spec.mode, timeout_s=self.timeout_s)
        deadline = None if self.timeout_s is None else self._started + self.timeout_s
        selector = selectors.DefaultSelector()
        selector.register(self._pipe, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        buffer = b""
        ended_by: str | None = None
        try:
            while True:
                if self._cancelled.is_set():
                    ended_by = CANCELLED
                    break
                wait_s = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.perf_counter()))
                if deadline is not None and time.perf_counter() >= deadline:
                    ended_by = TIMEOUT
                    break
                ready = selector.select(wait_s)
                if not any(key.fileobj is self._pipe for key, _ in ready):
                    if self._process.poll() is not None and not selector.select(0):
                        break  # exited, but a process it forked still holds the pipe open
                    continue
                chunk = self._pipe.read(65536)
                if not chunk:
                    break  # the child closed the pipe: it has exited (or is exiting)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:
                        self._handle(line, outcome)
        except BaseException:  # KeyboardInterrupt in the caller: never leave the child behind
            self._kill()
            self._reap()
            self._close()
            raise
        finally:
            selector.close()
        if ended_by is not None:
            outcome.status = ended_by
        # The pipe closes only when the child exits, so its exit status is already set;
        # killing the group (before reaping, while the group id cannot be reused) takes
        # whatever the agent started and left behind.
        self._kill()
        exit_code = self._reap()
        outcome.child_exit = exit_code
        if ended_by is None and outcome.status == CRASHED and outcome.error is None and exit_code == 0:
            outcome.error = {"kind": "internal", "message": "the child exited without a result", "traceback": []}
            outcome.status = FAILED
        for thread in self._drains:
            thread.join(timeout=2)
        outcome.stderr_tail = list(self._stderr)
        outcome.stdout_tail = list(self._stdout)
        if outcome.elapsed_s is None:
            outcome.elapsed_s = round(time.perf_counter() - self._started, 4)
        self._close()
        return outcome

    def _handle(self, line: bytes, outcome: ReplayOutcome) -> None:
        try:
            message = decode(line)
        except ProtocolError as error:
            self._stderr.append(f"(replay-tui: bad protocol line: {error})")
            return
        kind = message["type"]
        if kind == HELLO:
            outcome.child_startup_s = round(time.perf_counter() - self._started, 4)
            outcome.isolation = IsolationInfo.from_json(message.get("isolation") or {})
        elif kind == PROGRESS:
            progress = Progress(message.get("phase", ""), message.get("consumed", 0), message.get("total", 0), message.get("seq"))
            if progress.phase in EVENT_PHASES:
                outcome.consumed, outcome.total, outcome.last_seq = progress.consumed, progress.total, progress.seq
            if self.on_progress is not None:
                self.on_progress(progress)
        elif kind == REFUSAL:
            outcome.refusals.append(Refusal(message.get("operation", "?"), message.get("target", "?"), message.get("where")))
        elif kind == DIVERGENCE:
            outcome.divergence = DivergenceReport.from_json(message["report"])
        elif kind == RESULT:
            self._apply_result(message, outcome)
        elif kind == ERROR:
            outcome.status = FAILED
            outcome.error = {key: message.get(key) for key in ("kind", "message", "traceback")}
        if self.on_message is not None:
            self.on_message(message)

    def _apply_result(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        outcome.status = message.get("status", FAILED)
        for name in (
            "consumed", "total", "first_seq", "from_seq", "resumed_from_snapshot", "state_checks", "observations_served",
            "unused", "verification", "out", "experiment", "elapsed_s", "replay_s", "replay_cpu_s", "events_per_s",
        ):
            if name in message:
                setattr(outcome, name, message[name])
        outcome.live_calls = list(message.get("live_calls") or [])
        if message.get("last_seq") is not None:
            outcome.last_seq = message["last_seq"]

    def _kill(self) -> None:
        assert self._process is not None
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> int | None:
        assert self._process is not None
        try:
            return self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()
            return self._process.wait()

    def _close(self) -> None:
        with self._wake_lock:
            if self._wake_w is not None and self._wake_r is not None:
                os.close(self._wake_w)
                os.close(self._wake_r)
                self._wake_w = self._wake_r = None
        self._pipe.close()


def _drain(stream: IO[bytes] | None, tail: collections.deque[str]) -> None:
    """Keep the last lines of a child stream; reading it also keeps the child from blocking."""
    if stream is None:
        return
    for raw in iter(stream.readline, b""):
        tail.append(raw.decode("utf-8", "replace").rstrip("\n"))
    stream.close()


def run_replay(spec: ReplaySpec, **options: Any) -> ReplayOutcome:
    """Convenience: start, follow and return the outcome of one replay."""
    return ReplayRunner(spec, **options).run()
