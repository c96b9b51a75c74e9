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

from ...journal.safe_text import safe
from ..broker import Broker
from ..hosts import HostsConfigError, hosts_in_config
from ..isolation import IsolationInfo, Refusal
from ..protocol import (
    AGENT_IMPORT,
    DIVERGENCE,
    ERROR,
    EVENTS,
    HELLO,
    JOURNAL_JUDGED_MODES,
    MAX_LINE,
    MAX_REFUSALS,
    MODEL_LIVE,
    PROGRESS,
    REFUSAL,
    RESULT,
    SHUFFLE,
    START,
    STRICT,
    TOOLS_LIVE,
    MessageOrder,
    ProtocolError,
    ReplaySpec,
    decode,
)
from ..report import DivergenceReport
from ..sandbox import BWRAP
from .sandbox_launch import CollectError, Launch, LaunchRefused, prepare_launch, unreadable_path_hint

# Outcome statuses, re-exported ("X as X" is mypy's explicit re-export); their home is statuses.py.
from .statuses import CANCELLED as CANCELLED
from .statuses import CRASHED as CRASHED
from .statuses import DIVERGED as DIVERGED
from .statuses import FAILED as FAILED
from .statuses import MATCH as MATCH
from .statuses import TIMEOUT as TIMEOUT
from .statuses import UNRECORDED_CALL as UNRECORDED_CALL
from .statuses import UNUSED_EVENTS as UNUSED_EVENTS
from .statuses import VERIFICATION_FAILED as VERIFICATION_FAILED

#: Verification faults that mean "cannot be read" rather than "was changed".
UNREADABLE_FAULTS = frozenset(
    {"truncated_last_line", "malformed_line", "schema", "unknown_kind", "unsupported_version"}
)
#: Progress phases that count journal events (the "load" phase counts bytes indexed).
EVENT_PHASES = frozenset({"replay", "fast-forward"})
STDERR_LINES = 40
OUTPUT_LINE_BYTES = 4096  # of each line the child prints (stdout, stderr), the head is kept; the rest is counted
MAX_PROTOCOL_LINE = MAX_LINE  # the child batches events under 4 MiB; anything this long is hostile
#: The error kind of a run the child's protocol stream broke (a malformed, misplaced or oversized message).
PROTOCOL = "protocol"
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
    refusals: list[Refusal] = field(default_factory=list)  # the first MAX_REFUSALS
    refusals_dropped: int = 0  # refusals after those (counted, not kept)
    unused: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # {kind, message, traceback}
    out: str | None = None
    experiment: dict[str, Any] | None = None
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    child_exit: int | None = None
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)
    child_startup_s: float | None = None  # spawn to the child's hello (sandbox entered)
    first_event_s: float | None = None  # spawn to the first event the agent produced
    first_event_cpu_s: float | None = None  # the child's CPU from exec to its first event (stable under load)
    child_cpu_s: float | None = None  # the child's CPU in all, as it reports it (informational)
    child_phases: dict[str, dict[str, float]] | None = None  # each step of the child, as it reports it (benches)
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
        if (
            self.status == FAILED
            and self.error
            and self.error.get("kind") in ("journal", "usage", "agent_import", "isolation")
        ):
            return 2
        return 1

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["ok"] = self.ok
        data["isolation"] = self.isolation.to_json() if self.isolation else None
        data["divergence"] = self.divergence.to_json() if self.divergence else None
        data["refusals"] = [refusal.to_json() for refusal in self.refusals]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayOutcome:
        """Rebuild from ``to_json`` output (``replay --json``); ValueError names the field that is wrong.
        Fields this version does not know are ignored, so older and newer results both load."""
        if not isinstance(data.get("status"), str):
            raise ValueError("field status: expected a string (match, diverged, timeout, cancelled, crashed, ...)")
        values: dict[str, Any] = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        values.setdefault("journal", "")
        values.setdefault("mode", STRICT)
        for name in ("consumed", "total", "state_checks", "observations_served", "refusals_dropped"):
            if not isinstance(values.get(name, 0), int) or isinstance(values.get(name), bool):
                raise ValueError(f"field {name}: expected a whole number")
        isolation, divergence = data.get("isolation"), data.get("divergence")
        values["isolation"] = IsolationInfo.from_json(isolation) if isinstance(isolation, dict) else None
        if divergence is not None and not (isinstance(divergence, dict) and isinstance(divergence.get("seq"), int)):
            raise ValueError("field divergence: expected an object with an integer seq")
        if divergence:  # a short report (seq and reason only) is still one
            divergence = {
                "reason": "",
                "expected": None,
                "actual": None,
                "state_before": None,
                "step": None,
                **divergence,
            }
        values["divergence"] = DivergenceReport.from_json(divergence) if divergence else None
        refusals = data.get("refusals") or []
        values["refusals"] = [
            Refusal(str(item.get("operation")), str(item.get("target")), item.get("where"))
            for item in refusals
            if isinstance(item, dict)
        ]
        return cls(**values)

    @classmethod
    def failed(cls, spec: ReplaySpec, kind: str, message: str, *, status: str = FAILED, **fields: Any) -> ReplayOutcome:
        """The outcome of a run that never reached a verdict (its child could not start, its worker
        was lost): never a match, and the error says why in ``message``."""
        outcome = cls(status=status, journal=spec.journal, mode=spec.mode, **fields)
        outcome.fail(kind, message, status=status)
        return outcome

    def fail(self, kind: str, message: str, *, status: str = FAILED) -> None:
        """Turn this outcome into a failure that says why (the one shape of ``error`` the parent writes)."""
        self.status = status
        self.error = {"kind": kind, "message": message, "traceback": []}

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
            lines.append(
                f"fast-forwarded seq 1 to {self.from_seq - 1} without reporting; reported from seq={self.from_seq}"
            )
        if self.verification and self.verification.get("ok"):
            chain = self.verification.get("chain")
            lines.append(f"hash chain: {chain} ({self.verification.get('events')} events)")
        elif self.verification is None and self.status not in (VERIFICATION_FAILED,):
            lines.append("hash chain: not verified (--no-verify-hash-chain)")
        if self.status == MATCH and self.experiment is None:
            lines.append(
                f"checked: {self.state_checks} state hashes, {self.observations_served} observations served from the journal"
            )
        if self.unused and self.unused.get("count") and self.status == DIVERGED and not self.experiment:
            lines.append(
                f"not replayed after the divergence: {self.unused['count']} events from seq={self.unused.get('first_seq')}"
            )
        elif self.unused and self.unused.get("count") and self.status != UNUSED_EVENTS:
            lines.append(
                f"unused recorded events: {self.unused['count']}, the first at seq={self.unused.get('first_seq')}"
            )
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
        if self.status == FAILED and self.error and self.error.get("kind") == "usage":
            return safe("\n".join(lines), multiline=True)  # refused before any agent code ran: no isolation
        if self.isolation:
            lines.append(f"isolation: {self.isolation.summary}")
        if self.refusals:
            count = len(self.refusals) + self.refusals_dropped
            lines.append(f"refused network access ({count}):")
            lines.extend(f"  {refusal}" for refusal in self.refusals[:20])
            if count > 20:
                lines.append(f"  … and {count - 20} more")
        else:
            lines.append("refused network access: none attempted")
        if self.error and self.error.get("traceback"):
            lines.append("child traceback (last lines):")
            lines.extend(f"  {line}" for line in self.error["traceback"][-15:])
        if self.status in (CRASHED, TIMEOUT, FAILED) and self.stderr_tail:
            lines.append("child stderr (last lines):")
            lines.extend(f"  {line}" for line in self.stderr_tail[-15:])
        return safe("\n".join(lines), multiline=True)  # journal text, agent output: never raw to a terminal


def allowed_hosts(spec: ReplaySpec) -> list[str]:
    """The broker's allowlist: ``--allow-host`` and the hosts the live plugin's config names."""
    allowed = list(spec.allow_hosts)
    config = spec.model_config if spec.mode == MODEL_LIVE else spec.tools_config
    if config:
        try:
            allowed += [host for host in hosts_in_config(config) if host not in allowed]
        except HostsConfigError:
            pass  # the child reports the unreadable config as a usage error
    return allowed


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
        spawner: Callable[..., Any] | None = None,
    ) -> None:
        self.spec = spec
        # -- fork-server hook (issue 18): starts the child instead of subprocess.Popen, same call;
        # returns an object with Popen's pid/stdin/stdout/stderr/poll/wait (+ await_exit).
        self.spawner = spawner
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
        self._launch: Launch | None = None
        self._broker: Broker | None = None  # experiments: the live calls the parent makes for the child
        self._early: ReplayOutcome | None = None  # decided before any child started (verification, usage)
        self._referee: Any = None  # referee.Referee once the child said where it starts
        self._journal: Any = None  # the parent's own Journal: the only one the verdict reads
        self._child_divergence: DivergenceReport | None = None
        self._protocol_fault: str | None = None
        self._order = MessageOrder()
        self._stop_reason: str | None = None
        self._reaped = False  # once reaped, the child's pid (and group id) may be reused: never kill it again
        self._exit_code: int | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def scratch(self) -> str | None:
        """The child's scratch directory, once launched (this runner removes it when the run ends)."""
        return self._launch.scratch if self._launch is not None else None

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
        """Verify the journal, make the sandbox's scratch dir and spawn the child; follow it with ``wait``."""
        if self._process is not None or self._early is not None:
            raise RuntimeError("a ReplayRunner runs one child; make a new runner for another replay")
        self._started = time.perf_counter()
        if self.spec.out and os.path.lexists(self.spec.out):
            message = f"--out {self.spec.out} already exists; an experiment never overwrites a journal"
            self._early = self._failed("usage", message)
            return
        with self._wake_lock:
            self._wake_r, self._wake_w = os.pipe()
        read_fd, write_fd = os.pipe()
        if self.spec.mode in (MODEL_LIVE, TOOLS_LIVE) and self.spec.isolation != "guard-only":
            self._broker = Broker(allowed_hosts(self.spec))
        broker_fd = self._broker.child_fd if self._broker is not None else -1
        try:
            self._launch = prepare_launch(
                self.spec, write_fd, python=self.python, env=self.env, cwd=self.cwd, broker_fd=broker_fd
            )
        except (LaunchRefused, OSError) as refused:
            os.close(read_fd)
            os.close(write_fd)
            self._close_wake_pipe()
            self._stop_broker()
            kind = refused.kind if isinstance(refused, LaunchRefused) else "journal"
            self._early = self._failed(kind, str(refused))
            return
        self._spawned = time.perf_counter()
        try:
            spawn: Callable[..., Any] = self.spawner or subprocess.Popen  # fork-server hook
            self._process = spawn(
                self._launch.argv,
                pass_fds=(write_fd,) + ((broker_fd,) if broker_fd >= 0 else ()),
                stdin=subprocess.PIPE,  # "go" once the parent has verified its journal (the child starts meanwhile)
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill takes agent subprocesses too
                cwd=self._launch.cwd,
                env=self._launch.env,
            )
        except BaseException:
            self._launch.cleanup()
            self._stop_broker()
            os.close(read_fd)
            self._close_wake_pipe()
            raise
        finally:
            os.close(write_fd)
            if self._broker is not None:
                self._broker.close_child_end()
        self._pipe = os.fdopen(read_fd, "rb", buffering=0)
        try:
            early = self._preflight()
        except BaseException:
            self._clean_up()
            raise
        if early is not None:  # the agent never runs: the child is still waiting for "go"
            self._early = early
            self._clean_up()
        else:
            try:
                assert self._process.stdin is not None
                self._process.stdin.write(b"go\n")
                self._process.stdin.close()
            except OSError:
                pass  # the child is gone already: wait() reports how it ended
        for stream, tail in ((self._process.stderr, self._stderr), (self._process.stdout, self._stdout)):
            thread = threading.Thread(target=_drain, args=(stream, tail), daemon=True)
            thread.start()
            self._drains.append(thread)

    def _outcome(self, status: str, **fields: Any) -> ReplayOutcome:
        return ReplayOutcome(
            status=status, journal=self.spec.journal, mode=self.spec.mode, timeout_s=self.timeout_s, **fields
        )

    def _failed(self, kind: str, message: str, **fields: Any) -> ReplayOutcome:
        """An outcome decided before the agent ran (usage, isolation, an unreadable journal)."""
        return ReplayOutcome.failed(self.spec, kind, message, timeout_s=self.timeout_s, **fields)

    def _preflight(self) -> ReplayOutcome | None:
        """What the parent checks while the child starts (before it may load the agent): the chain, its own journal."""
        from ...journal import Journal, JournalError, verify_journal

        spec = self.spec
        verification = None
        if spec.verify_hash_chain:
            if self.on_progress is not None:
                self.on_progress(Progress("verify", 0, 0, None))
            try:
                verification = verify_journal(spec.journal).to_json()
            except (JournalError, OSError) as error:
                return self._failed("journal", str(error))
            if not verification.get("ok"):
                fault = verification.get("fault") or {}
                if (
                    fault.get("kind") in UNREADABLE_FAULTS
                ):  # bad input, not tampering: exit 2, like any unreadable journal
                    where = f"line {fault['line']}: " if fault.get("line") is not None else ""
                    message = f"{spec.journal}: {where}{fault.get('message')}"
                    return self._failed("journal", message, verification=verification)
                return self._outcome(VERIFICATION_FAILED, verification=verification)
        if spec.mode not in JOURNAL_JUDGED_MODES:
            try:
                self._journal = Journal(spec.journal)
                self._journal.index()
            except (JournalError, OSError) as error:
                return self._failed("journal", str(error))
        self._verification = verification
        return None

    def wait(self) -> ReplayOutcome:
        """Follow the child to its end; returns the outcome (never raises for child failures).

        Whatever ends it (the verdict, a callback that raises, KeyboardInterrupt in the caller), the child's
        process group is killed and reaped, its scratch dir removed, the broker stopped and every pipe closed."""
        if self._early is not None:
            self._early.elapsed_s = round(time.perf_counter() - self._started, 4)
            return self._early
        assert self._process is not None, "start() first"
        try:
            return self._follow()
        finally:
            self._clean_up()

    def _follow(self) -> ReplayOutcome:
        outcome = self._outcome(CRASHED, verification=self._verification)
        ended_by = self._read_protocol(outcome)
        if ended_by is not None:
            outcome.status = ended_by
        elif self._stop_reason in (None, PROTOCOL):
            self._decide(outcome)
        # The pipe closes only when the child exits, so its exit status is already set;
        # killing the group (before reaping, while the group id cannot be reused) takes
        # whatever the agent started and left behind.
        if ended_by is None and self._stop_reason is None:
            self._await_exit(2.0)  # bwrap exits just after the child closed the pipe
        self._kill()
        exit_code = self._reap()
        outcome.child_exit = exit_code
        if ended_by is None and outcome.status == MATCH and exit_code != 0:
            outcome.status = CRASHED  # a result line followed by a failing exit is no match
        if ended_by is None and outcome.status == CRASHED and outcome.error is None and exit_code == 0:
            outcome.fail("internal", "the child exited without a result")
        if self._launch is not None:
            if self.spec.out:
                deadline = None if self.timeout_s is None else self._started + self.timeout_s
                try:
                    outcome.out = self._launch.collect_out(self.spec.out, deadline)
                except CollectError as error:
                    outcome.out = None
                    if ended_by is None and outcome.status in (MATCH, DIVERGED, UNRECORDED_CALL):
                        outcome.experiment = None
                        outcome.fail(PROTOCOL, str(error))
            if self._launch.policy.mechanism == BWRAP and exit_code is not None and exit_code > 128:
                outcome.child_exit = 128 - exit_code  # bwrap exits 128+N when the child dies of signal N
        if ended_by is None and self._stop_reason is None and self.spec.mode in JOURNAL_JUDGED_MODES:
            self._judge_experiment(outcome)
        for thread in self._drains:
            thread.join(timeout=2)
        outcome.stderr_tail = list(self._stderr)
        outcome.stdout_tail = list(self._stdout)
        if outcome.elapsed_s is None:
            outcome.elapsed_s = round(time.perf_counter() - self._started, 4)
        return outcome

    def _read_protocol(self, outcome: ReplayOutcome) -> str | None:
        """Read the child's protocol lines until it closes the pipe or is stopped; what ended it
        (CANCELLED, TIMEOUT) or None."""
        assert self._process is not None and self._wake_r is not None, "start() spawned the child"
        deadline = None if self.timeout_s is None else self._started + self.timeout_s
        pending: list[bytes] = []  # bytes of the line being read
        pending_size = 0
        with selectors.DefaultSelector() as selector:
            selector.register(self._pipe, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                if self._cancelled.is_set():
                    return CANCELLED
                if self._stop_reason is not None:
                    return None
                wait_s = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.perf_counter()))
                if deadline is not None and time.perf_counter() >= deadline:
                    return TIMEOUT
                ready = selector.select(wait_s)
                if not any(key.fileobj is self._pipe for key, _ in ready):
                    if self._process.poll() is not None and not selector.select(0):
                        return None  # exited, but a process it forked still holds the pipe open
                    continue
                chunk = self._pipe.read(65536)
                if not chunk:
                    return None  # the child closed the pipe: it has exited (or is exiting)
                if b"\n" not in chunk:  # only new bytes are searched: a long line costs linear time
                    pending.append(chunk)
                    pending_size += len(chunk)
                    if pending_size > MAX_PROTOCOL_LINE:
                        self._fault(f"a protocol line over {MAX_PROTOCOL_LINE >> 20} MiB")
                    continue
                *lines, rest = (b"".join(pending) + chunk).split(b"\n")
                pending, pending_size = [rest], len(rest)
                for line in lines:
                    if self._cancelled.is_set():
                        return CANCELLED  # at once: one read can hold the rest of a short run
                    if self._stop_reason is not None:
                        return None
                    if line:
                        self._handle(line, outcome)

    def _clean_up(self) -> None:
        """Leave nothing behind: the child's group (if not reaped yet), its scratch dir, the broker, the pipes."""
        if not self._reaped:
            self._kill()
            self._reap()
        self._close()
        if self._launch is not None:
            self._launch.cleanup()
        self._stop_broker()

    def _stop_broker(self) -> None:
        if self._broker is not None:
            self._broker.stop()
            self._broker = None

    def _decide(self, outcome: ReplayOutcome) -> None:
        """The verdict, from the parent's own comparison; the child's claims can only make it fail."""
        claimed = outcome.status
        referee = self._referee
        if self._protocol_fault is not None:
            if referee is None or referee.mismatch is None:  # a divergence the parent found itself stands
                outcome.divergence = None
                outcome.fail(PROTOCOL, self._protocol_fault)
                return
        if outcome.experiment is not None or self.spec.mode in JOURNAL_JUDGED_MODES:
            outcome.divergence = self._child_divergence
            return  # experiments: the child's summary of its own new journal (see the README)
        if referee is None:
            if claimed in (MATCH, UNUSED_EVENTS, DIVERGED):
                outcome.fail("internal", "the child claimed a result but never started the replay")
            return
        cursor = referee.cursor
        outcome.consumed, outcome.total, outcome.last_seq = (
            cursor.consumed,
            cursor.total - cursor.start,
            cursor.last_seq,
        )
        outcome.state_checks, outcome.observations_served = cursor.state_checks, cursor.observations
        outcome.unused = cursor.unused()
        if referee.mismatch is not None:
            outcome.status = DIVERGED
            outcome.divergence = self._report(referee.mismatch)
            outcome.error = None
            return
        if referee.fault is not None:
            # "internal": the child's events broke the protocol; "journal": the parent's journal is unreadable there
            outcome.fail(PROTOCOL if referee.fault_kind == "internal" else referee.fault_kind, referee.fault)
            return
        if outcome.status not in (MATCH, UNUSED_EVENTS):
            if outcome.status == DIVERGED:  # the child saw a divergence the parent did not: still a failure
                outcome.divergence = self._child_divergence
            return
        if not cursor.ended:
            outcome.fail(
                "internal",
                f"the child claimed {claimed!r}, but the agent never reached the recorded run.ended "
                f"({outcome.consumed} of {outcome.total} events produced)",
            )
            return
        if outcome.unused and (self.spec.strict or self.spec.fail_on_unused_events):
            outcome.status = UNUSED_EVENTS
        else:
            outcome.status = MATCH

    def _judge_experiment(self, outcome: ReplayOutcome) -> None:
        """The parent's verdict on an experiment, from the journal the child wrote (experiment_verdict.py):
        the child's summary is replaced; its claims (a call the journal never saw) can only make it fail."""
        claimed = outcome.status
        if claimed not in (MATCH, DIVERGED, UNRECORDED_CALL):
            return  # the child failed, crashed or was stopped: there is nothing to judge
        if outcome.out is None:
            outcome.experiment = None
            outcome.fail("internal", "the child wrote no experiment journal")
            return
        from ...journal import Journal, JournalError
        from ..experiment_verdict import judge_experiment
        from .shuffle_verdict import judge_shuffle

        stopped = (outcome.experiment or {}).get("stopped") if claimed == UNRECORDED_CALL else None
        if claimed == UNRECORDED_CALL and not (isinstance(stopped, dict) and isinstance(stopped.get("kind"), str)):
            stopped = {"kind": "observation", "key": "(not said)", "request": None}
        try:
            with Journal(self.spec.journal) as recorded:
                recorded.index()
                if self.spec.mode == SHUFFLE:
                    verdict = judge_shuffle(recorded, outcome.out, stopped)
                else:
                    verdict = judge_experiment(self.spec.mode, recorded, outcome.out, stopped)
        except (JournalError, OSError) as error:
            outcome.experiment = None
            outcome.fail("journal", str(error))
            return
        if verdict.error is not None:
            outcome.experiment, outcome.divergence = None, None
            outcome.fail("internal", verdict.error)
            return
        outcome.experiment, outcome.live_calls = verdict.experiment, verdict.live_calls
        outcome.consumed, outcome.total, outcome.last_seq = verdict.consumed, verdict.total, verdict.last_seq
        outcome.state_checks, outcome.divergence = verdict.state_checks, verdict.divergence
        outcome.status = verdict.status
        if verdict.status == MATCH and claimed != MATCH:
            outcome.fail("internal", f"the child reported {claimed!r}, but the journal it wrote matches the recording")

    def _report(self, found: Any) -> DivergenceReport:
        from ..report import build_report

        report = build_report(
            self._journal,
            found.seq,
            found.reason,
            found.produced,
            expected=found.expected,
            parent_matches=found.parent_matches,
        )
        child = self._child_divergence
        if child is not None and child.seq == found.seq and getattr(child, "agent_traceback", None):
            report.agent_traceback = child.agent_traceback
        return report

    def _start_referee(self, message: dict[str, Any]) -> None:
        from ..referee import Referee, nearest_snapshot

        journal = self._journal
        resume_seq = message.get("resume_seq")
        start = 0
        if resume_seq is not None:
            snapshot = nearest_snapshot(journal, self.spec.from_seq) if self.spec.from_seq else None
            if snapshot is None or snapshot.seq != resume_seq:
                self._fault(
                    f"the child asked to resume from seq {resume_seq!r}, which is not the snapshot for --from-seq"
                )
                return
            start = (journal.position_of_seq(resume_seq) or 0) + 1
        verified = bool(self._verification and self._verification.get("ok"))  # every line parsed and checked
        self._referee = Referee(journal, start, verified=verified)

    def _fault(self, problem: str) -> None:
        """The child broke the protocol: the run stops here and fails, saying how (the first fault is kept)."""
        if self._protocol_fault is None:
            self._protocol_fault = f"the child broke the protocol: {problem}"
            self._stderr.append(f"(replay-tui: {self._protocol_fault})")
        self._stop_reason = PROTOCOL

    def _handle(self, line: bytes, outcome: ReplayOutcome) -> None:
        """One line from the child: checked (its shape, ``decode``; its place, ``MessageOrder``) before use."""
        try:
            message = decode(line)
            self._order.admit(message["type"])
        except ProtocolError as error:
            self._fault(str(error))
            return
        kind = message["type"]
        if kind == EVENTS:
            if outcome.first_event_s is None:
                outcome.first_event_s = round(time.perf_counter() - self._spawned, 4)
            if self._referee is not None:
                self._referee.feed(message["items"])
            return
        if kind == START:
            if self._journal is None:
                self._fault("a start message in an experiment (an experiment is judged from the journal it writes)")
                return
            try:
                self._journal.index()
                self._start_referee(message)
            except Exception as error:  # the parent's journal: unreadable is a journal error, never a traceback
                self._stop_reason = "journal"
                outcome.fail("journal", str(error))
        elif kind == HELLO:
            self._hello(message, outcome)
        elif kind == PROGRESS:
            progress = Progress(message["phase"], message["consumed"], message["total"], message["seq"])
            if progress.phase in EVENT_PHASES:
                outcome.consumed, outcome.total, outcome.last_seq = progress.consumed, progress.total, progress.seq
            if self.on_progress is not None:
                self.on_progress(progress)
        elif kind == REFUSAL:
            if len(outcome.refusals) < MAX_REFUSALS:
                outcome.refusals.append(Refusal(message["operation"], message["target"], message.get("where")))
            else:
                outcome.refusals_dropped += 1
        elif kind == DIVERGENCE:
            self._child_divergence = DivergenceReport.from_json(message["report"])
        elif kind == RESULT:
            self._apply_result(message, outcome)
        elif kind == ERROR:
            self._child_error(message, outcome)
        if self.on_message is not None and self._stop_reason != PROTOCOL:
            self.on_message(message)

    def _hello(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The isolation the child entered, checked against the sandbox the parent launched it into."""
        outcome.child_startup_s = round(time.perf_counter() - self._spawned, 4)
        isolation = IsolationInfo.from_json(message["isolation"])
        launched = self._launch.policy.mechanism if self._launch is not None else None
        said = isolation.sandbox.get("mechanism") if isolation.sandbox is not None else None
        if launched is not None and said != launched:
            self._fault(
                f"hello message: field isolation.sandbox.mechanism: the child was launched with {launched!r}, found {said!r}"
            )
            return
        outcome.isolation = isolation
        missing = isolation.missing_layers or ([] if isolation.sandbox else ["sandbox"])
        if self.spec.require_isolation and missing:
            self._stop_reason = "isolation"
            outcome.fail("isolation", "--require-isolation: missing sandbox layer(s): " + ", ".join(missing))

    def _child_error(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The child's error, in the user's terms: their journal (not its copy), and why an agent did not import."""
        outcome.status = FAILED
        text: str = message["message"]
        copy = self._launch.journal_copy if self._launch is not None else None
        if copy:  # the user knows their journal, not its copy
            text = text.replace(copy, self.spec.journal)
        if message["kind"] == AGENT_IMPORT and self._launch is not None:
            text += unreadable_path_hint(self._launch)
        outcome.error = {"kind": message["kind"], "message": text, "traceback": list(message["traceback"])}

    def _apply_result(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The child's own view: its status is a claim (``_decide`` checks it), its timings are informational."""
        outcome.status = str(message.get("status", FAILED))
        names = [
            "first_seq",
            "from_seq",
            "resumed_from_snapshot",
            "elapsed_s",
            "replay_s",
            "replay_cpu_s",
            "events_per_s",
            "first_event_cpu_s",
            "child_cpu_s",
        ]
        if self.spec.mode in JOURNAL_JUDGED_MODES:
            names += ["consumed", "total", "state_checks", "observations_served", "unused", "experiment"]
        if self.spec.out:
            names.append("out")
        for name in names:
            if name in message:
                setattr(outcome, name, message[name])
        outcome.child_phases = message.get("phases")
        outcome.live_calls = list(message.get("live_calls") or [])
        if message.get("last_seq") is not None and self.spec.mode in JOURNAL_JUDGED_MODES:
            outcome.last_seq = message["last_seq"]

    def _await_exit(self, limit_s: float) -> None:
        """Wait for the child to exit without reaping it (its process group stays ours to kill)."""
        assert self._process is not None
        if hasattr(self._process, "await_exit"):  # fork-server hook: the child is the server's, not ours
            self._process.await_exit(limit_s)
            return
        deadline = time.perf_counter() + limit_s
        while time.perf_counter() < deadline:
            try:
                if os.waitid(os.P_PID, self._process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
            except ChildProcessError:
                return
            time.sleep(0.005)

    def _kill(self) -> None:
        assert self._process is not None
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> int | None:
        assert self._process is not None
        if not self._reaped:
            try:
                self._exit_code = self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
                self._exit_code = self._process.wait()
            self._reaped = True
        return self._exit_code

    def _close(self) -> None:
        self._close_wake_pipe()
        self._pipe.close()

    def _close_wake_pipe(self) -> None:
        with self._wake_lock:
            if self._wake_w is not None and self._wake_r is not None:
                os.close(self._wake_w)
                os.close(self._wake_r)
                self._wake_w = self._wake_r = None


def _drain(stream: IO[bytes] | None, tail: collections.deque[str]) -> None:
    """Keep the last lines of a child stream; reading it also keeps the child from blocking.

    Bounded whatever the agent prints: of each line only the first ``OUTPUT_LINE_BYTES`` are kept (a
    512 MiB line without a newline is read in chunks, never held whole) and the rest is counted."""
    if stream is None:
        return
    read = getattr(stream, "read1", stream.read)
    head, cut = b"", 0

    def keep(line: bytes, more: int) -> None:
        shown = line.decode("utf-8", "replace").rstrip("\r")
        tail.append(shown + (f" … ({more:,} more bytes)" if more else ""))

    while chunk := read(1 << 16):
        *ended, rest = chunk.split(b"\n")
        for part in ended:
            line = head + part
            keep(line[:OUTPUT_LINE_BYTES], cut + max(0, len(line) - OUTPUT_LINE_BYTES))
            head, cut = b"", 0
        head += rest
        if len(head) > OUTPUT_LINE_BYTES:
            cut += len(head) - OUTPUT_LINE_BYTES
            head = head[:OUTPUT_LINE_BYTES]
    if head or cut:
        keep(head, cut)
    stream.close()


def run_replay(spec: ReplaySpec, **options: Any) -> ReplayOutcome:
    """Convenience: start, follow and return the outcome of one replay."""
    return ReplayRunner(spec, **options).run()
