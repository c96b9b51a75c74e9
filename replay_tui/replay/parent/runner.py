"""Parent side of a replay: start the child, follow its protocol, time it out or cancel it.

One small class serves the CLI, the app and CI::

    runner = ReplayRunner(ReplaySpec(journal="run.jsonl"), timeout_s=60,
                          on_progress=lambda p: print(p.consumed, p.total))
    outcome = runner.run()          # blocks; callbacks run on this thread
    # from another thread, at any time: runner.cancel()
    outcome.status, outcome.divergence, outcome.exit_code

The app runs ``run()`` in a worker thread and forwards callbacks to the UI thread.
The parent never imports agent code: everything it knows comes over the pipe.

The runner is the child-process supervisor (``journal/processes.py``: its own session, read with a
deadline, the group killed, reaped) around the sandbox's launch (``sandbox_launch.py``), plus a
``ProtocolSession`` (``session.py``) that reads the protocol and decides the verdict.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, BinaryIO, Callable

from ...journal.processes import DEADLINE, Supervised
from ..broker import Broker
from ..hosts import HostsConfigError, hosts_in_config
from ..modes import JOURNAL_JUDGED_MODES, MODEL_LIVE, TOOLS_LIVE
from ..protocol import MAX_LINE, ReplaySpec
from ..sandbox import BWRAP
from .outcome import ReplayOutcome
from .sandbox_launch import CollectError, Launch, LaunchRefused, prepare_launch
from .session import PROTOCOL, ProtocolSession
from .session import Progress as Progress  # re-exported: the runner's callbacks take it

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
MAX_PROTOCOL_LINE = MAX_LINE  # the child batches events under 4 MiB; anything this long is hostile
POLL_S = 0.25
_STOPPED = "stopped"  # the read loop ended because the run stops (a protocol fault, a failed check)


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
        self._journal: Any = None  # the parent's own Journal: the only one the verdict reads
        self._session: ProtocolSession | None = None  # the protocol and the verdict, once the child may run
        self._pipe: BinaryIO | None = None  # the protocol pipe's read end, once the child is spawned

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
        try:
            return self.wait()
        except BaseException:  # raised between start() and wait()'s own clean-up (a signal handler's exit)
            self._clean_up()
            raise

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
        # Whatever ends start() from here (a SIGTERM the CLI turns into SystemExit lands anywhere), the child's
        # group is killed and its scratch dir removed: nothing runs on, nothing is left behind.
        try:
            try:
                # its own session and process group, so a kill takes agent subprocesses too; stdin says "go"
                # once the parent has verified its journal (the child starts meanwhile)
                self._child = Supervised.start(
                    self._launch.argv,
                    spawn=self.spawner,  # fork-server hook
                    pass_fds=(write_fd,) + ((broker_fd,) if broker_fd >= 0 else ()),
                    cwd=self._launch.cwd,
                    env=self._launch.env,
                )
            finally:
                os.close(write_fd)
                if self._broker is not None:
                    self._broker.close_child_end()
            self._pipe = os.fdopen(read_fd, "rb", buffering=0)
            early = self._preflight()
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
        except BaseException:
            if self._pipe is None:
                os.close(read_fd)
            self._clean_up()
            raise

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
        assert self._child is not None
        self._session = ProtocolSession(
            spec,
            self._launch,
            self._journal,
            verification,
            self._spawned,
            on_progress=self._progressed,  # the callbacks as they are then (a caller may set them late)
            on_message=self._heard,
            note=self._child.stderr_tail.append,
        )
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
        session = self._session
        assert child is not None and session is not None
        outcome = self._outcome(CRASHED, verification=self._verification)
        ended_by = self._read_protocol(outcome)
        if ended_by is not None:
            outcome.status = ended_by
        elif session.stop_reason in (None, PROTOCOL):
            self._decide(outcome)
        # The pipe closes only when the child exits, so its exit status is already set;
        # killing the group (before reaping, while the group id cannot be reused) takes
        # whatever the agent started and left behind.
        if ended_by is None and session.stop_reason is None:
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
        if ended_by is None and session.stop_reason is None and self.spec.mode in JOURNAL_JUDGED_MODES:
            session.judge_experiment(outcome)
        child.join_drains(2.0)
        outcome.stderr_tail = list(child.stderr_tail)
        outcome.stdout_tail = list(child.stdout_tail)
        if outcome.elapsed_s is None:
            outcome.elapsed_s = round(time.perf_counter() - self._started, 4)
        return outcome

    def _read_protocol(self, outcome: ReplayOutcome) -> str | None:
        """Read the child's protocol lines until it closes the pipe or is stopped; what ended it
        (CANCELLED, TIMEOUT) or None."""
        session = self._session
        assert self._child is not None and session is not None and self._wake_r is not None, "start() spawned it"
        assert self._pipe is not None
        deadline = None if self.timeout_s is None else self._started + self.timeout_s

        def stop() -> str | None:  # asked before each wait and each line: a cancel ends it at once
            if self._cancelled.is_set():
                return CANCELLED
            return _STOPPED if session.stop_reason is not None else None

        ended = self._child.read_lines(
            self._pipe.fileno(),
            lambda line: session.handle(line, outcome),
            stop=stop,
            deadline=deadline,
            poll_s=POLL_S,
            wake_fd=self._wake_r,
            max_line=MAX_PROTOCOL_LINE,
            too_long=lambda: session.fault(f"a protocol line over {MAX_PROTOCOL_LINE >> 20} MiB"),
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

    def _progressed(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    def _heard(self, message: dict[str, Any]) -> None:
        if self.on_message is not None:
            self.on_message(message)

    def _decide(self, outcome: ReplayOutcome) -> None:
        assert self._session is not None
        self._session.decide(outcome)

    def _close(self) -> None:
        self._close_wake_pipe()
        if self._pipe is not None:
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
