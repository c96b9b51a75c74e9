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

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ...journal.processes import DEADLINE, Supervised
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
    TOOLS_LIVE,
    MessageOrder,
    ProtocolError,
    ReplaySpec,
    decode,
)
from ..report import DivergenceReport
from ..sandbox import BWRAP
from .outcome import ReplayOutcome
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
MAX_PROTOCOL_LINE = MAX_LINE  # the child batches events under 4 MiB; anything this long is hostile
#: The error kind of a run the child's protocol stream broke (a malformed, misplaced or oversized message).
PROTOCOL = "protocol"
POLL_S = 0.25
_STOPPED = "stopped"  # the read loop ended because the run stops (a protocol fault, a failed check)


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
        self._child: Supervised | None = None  # the child, in a session of its own (journal/processes.py)
        self._cancelled = threading.Event()
        self._wake_r: int | None = None  # a self-pipe: cancel() wakes wait() at once
        self._wake_w: int | None = None
        self._wake_lock = threading.Lock()
        self._launch: Launch | None = None
        self._broker: Broker | None = None  # experiments: the live calls the parent makes for the child
        self._early: ReplayOutcome | None = None  # decided before any child started (verification, usage)
        self._referee: Any = None  # referee.Referee once the child said where it starts
        self._journal: Any = None  # the parent's own Journal: the only one the verdict reads
        self._child_divergence: DivergenceReport | None = None
        self._protocol_fault: str | None = None
        self._order = MessageOrder()
        self._stop_reason: str | None = None

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child else None

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
        if self._child is not None or self._early is not None:
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
            # its own session and process group, so a kill takes agent subprocesses too; stdin says "go" once
            # the parent has verified its journal (the child starts meanwhile)
            self._child = Supervised.start(
                self._launch.argv,
                spawn=self.spawner,  # fork-server hook
                pass_fds=(write_fd,) + ((broker_fd,) if broker_fd >= 0 else ()),
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
                stdin = self._child.process.stdin
                assert stdin is not None
                stdin.write(b"go\n")
                stdin.close()
            except OSError:
                pass  # the child is gone already: wait() reports how it ended
        self._child.drain(stdout=True, stderr=True)

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
        assert self._child is not None, "start() first"
        try:
            return self._follow()
        finally:
            self._clean_up()

    def _follow(self) -> ReplayOutcome:
        child = self._child
        assert child is not None
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
            child.await_exit(2.0)  # bwrap exits just after the child closed the pipe
        child.kill()
        exit_code = child.reap()
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
        child.join_drains(2.0)
        outcome.stderr_tail = list(child.stderr_tail)
        outcome.stdout_tail = list(child.stdout_tail)
        if outcome.elapsed_s is None:
            outcome.elapsed_s = round(time.perf_counter() - self._started, 4)
        return outcome

    def _read_protocol(self, outcome: ReplayOutcome) -> str | None:
        """Read the child's protocol lines until it closes the pipe or is stopped; what ended it
        (CANCELLED, TIMEOUT) or None."""
        assert self._child is not None and self._wake_r is not None, "start() spawned the child"
        deadline = None if self.timeout_s is None else self._started + self.timeout_s

        def stop() -> str | None:  # asked before each wait and each line: a cancel ends it at once
            if self._cancelled.is_set():
                return CANCELLED
            return _STOPPED if self._stop_reason is not None else None

        ended = self._child.read_lines(
            self._pipe.fileno(),
            lambda line: self._handle(line, outcome),
            stop=stop,
            deadline=deadline,
            poll_s=POLL_S,
            wake_fd=self._wake_r,
            max_line=MAX_PROTOCOL_LINE,
            too_long=lambda: self._fault(f"a protocol line over {MAX_PROTOCOL_LINE >> 20} MiB"),
        )
        if ended == DEADLINE:
            return TIMEOUT
        return None if ended is _STOPPED else ended

    def _clean_up(self) -> None:
        """Leave nothing behind: the child's group (if not reaped yet), its scratch dir, the broker, the pipes."""
        if self._child is not None:
            self._child.stop()  # no kill once reaped: the pid may belong to another process by now
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
            if self._child is not None:
                self._child.stderr_tail.append(f"(replay-tui: {self._protocol_fault})")
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

    def _close(self) -> None:
        self._close_wake_pipe()
        self._pipe.close()

    def _close_wake_pipe(self) -> None:
        with self._wake_lock:
            if self._wake_w is not None and self._wake_r is not None:
                os.close(self._wake_w)
                os.close(self._wake_r)
                self._wake_w = self._wake_r = None


def run_replay(spec: ReplaySpec, **options: Any) -> ReplayOutcome:
    """Convenience: start, follow and return the outcome of one replay."""
    return ReplayRunner(spec, **options).run()
