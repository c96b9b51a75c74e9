"""The replay child: enter the sandbox, then run the agent against the parent's copy of the journal.

Started by ``runner.ReplayRunner`` as ``python -m replay_tui.replay.child.main SPEC_JSON``
(inside bubblewrap when installed); it speaks the protocol of ``protocol.py`` on the
pipe the spec names. The sandbox (``sandbox.enter_sandbox``) comes before anything
else, in particular before the agent module is imported, so import-time access is
refused as well. Every event the agent produces is streamed to the parent, which
alone decides the verdict. The child imports only what a replay
needs (no Textual; deepdiff only when a divergence is reported), to start fast.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from typing import Any

import orjson

from ..isolation import GUARD_ONLY, Refusal, SocketGuard, isolate
from ..modes import MODEL_LIVE, TOOLS_LIVE
from ..protocol import (
    AGENT_CRASH,
    AGENT_IMPORT,
    ERROR,
    EVENTS,
    HELLO,
    INTERNAL_ERROR,
    JOURNAL_ERROR,
    LONG_TEXT,
    PROGRESS,
    PROTOCOL_VERSION,
    REFUSAL,
    RESULT,
    TEXT,
    USAGE_ERROR,
    ProtocolError,
    ReplaySpec,
    clip,
    encode,
    encode_deep,
)
from ..referee import slim_payload
from ..sandbox import NETWORK_NAMESPACE, SandboxPolicy, enter_sandbox

TRACEBACK_LINES = 30
BATCH_EVENTS = 256  # produced events per "events" message (fewer writes, no round trips)
BATCH_BYTES = 4 << 20  # ... and at most about this many bytes of them


class Channel:
    """The write end of the protocol pipe. If the parent is gone, the child exits."""

    def __init__(self, fd: int, progress_interval_s: float = 0.05) -> None:
        self.fd = fd
        self.progress_interval_s = progress_interval_s
        self._next_progress = 0.0
        self._calls = 0
        self._batch: list[bytes] = []
        self._batch_bytes = 0
        self._first_sent = False  # the first event goes out alone: the parent sees the agent start at once
        self.first_event_cpu_s: float | None = None  # CPU this process spent from exec to the first event
        # each step of the start-up and the run, {cpu_s, wall_s} (informational: benches list them)
        self.phases: dict[str, dict[str, float]] = {}
        self._phase_mark = (time.process_time(), time.perf_counter())
        # a concurrent agent's flows produce events and requests from several threads: one line at a time
        self._lock = threading.RLock()
        os.set_inheritable(fd, False)  # agent subprocesses must not keep the pipe open

    def produce(self, kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None) -> None:
        """One event the agent produced, for the parent's verdict (serialized now: payloads may change later)."""
        payload = slim_payload(kind, payload)
        try:
            item = orjson.dumps(["e", kind, step_id, parent_event_id, payload], option=orjson.OPT_NON_STR_KEYS)
        except orjson.JSONEncodeError:  # deeper than orjson goes: the stdlib codec, with room to recurse
            item = encode_deep(["e", kind, step_id, parent_event_id, payload])
        with self._lock:
            self._batch.append(item)
            self._batch_bytes += len(item)
            if len(self._batch) >= BATCH_EVENTS or self._batch_bytes >= BATCH_BYTES or not self._first_sent:
                if not self._first_sent:
                    self._first_sent, self.first_event_cpu_s = True, round(time.process_time(), 4)
                self.flush()

    def phase(self, name: str) -> None:
        """The step just done (``name``) took the CPU and wall time since the last one. The sandbox's fork (the
        agent runs as the first process of a new PID namespace) starts this process's CPU clock again: a step
        across it counts this process's CPU only."""
        cpu, wall = time.process_time(), time.perf_counter()
        last_cpu, last_wall = self._phase_mark
        self.phases[name] = {
            "cpu_s": round(cpu - last_cpu if cpu >= last_cpu else cpu, 5),
            "wall_s": round(wall - last_wall, 5),
        }
        self._phase_mark = (cpu, wall)

    def request(self, kind: str, key: Any) -> None:
        """One observation the agent asked for."""
        item = orjson.dumps(["o", kind, key], option=orjson.OPT_NON_STR_KEYS)
        with self._lock:
            self._batch.append(item)
            if len(self._batch) >= BATCH_EVENTS:
                self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._batch:
                items, self._batch, self._batch_bytes = self._batch, [], 0
                self._write(b'{"type":"' + EVENTS.encode() + b'","items":[' + b",".join(items) + b"]}\n")

    def send(self, message_type: str, **fields: Any) -> None:
        with self._lock:
            self.flush()  # events first: every other message comes after the events it follows
            self._write(encode(message_type, **fields))

    def _write(self, data: bytes) -> None:
        try:
            while data:
                written = os.write(self.fd, data)
                data = data[written:]
        except OSError as error:
            if error.errno in (errno.EPIPE, errno.EBADF):
                os._exit(3)  # nobody is listening any more
            raise

    def progress(self, phase: str, consumed: int, total: int, seq: int | None, *, force: bool = False) -> None:
        """Throttled: at most one progress line per interval (the clock is read every
        64 calls, so per-event callers stay cheap), unless forced."""
        self._calls += 1
        if not force and self.progress_interval_s > 0 and self._calls & 63:
            return
        now = time.monotonic()
        if force or now >= self._next_progress:
            self._next_progress = now + self.progress_interval_s
            self.send(PROGRESS, phase=phase, consumed=consumed, total=total, seq=seq)

    def error(self, kind: str, message: str, exc: BaseException | None = None) -> None:
        lines: list[str] = []
        if exc is not None:
            import traceback  # only on the way out: the child imports what a replay needs, to start fast

            lines = "".join(traceback.format_exception(exc)).rstrip("\n").splitlines()[-TRACEBACK_LINES:]
        self.send(ERROR, kind=kind, message=clip(message, LONG_TEXT), traceback=[clip(line, TEXT) for line in lines])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m replay_tui.replay.child.main SPEC_JSON (started by replay-tui, not by hand)",
            file=sys.stderr,
        )
        return 2
    try:
        spec = ReplaySpec.from_argv(argv[1])
    except (ProtocolError, ValueError, TypeError) as error:
        print(f"replay child: bad spec: {error}", file=sys.stderr)
        return 2
    channel = Channel(spec.protocol_fd, spec.progress_interval_s)

    def report_refusal(refusal: Refusal) -> None:
        channel.send(REFUSAL, **refusal.to_json())

    live = spec.mode in (MODEL_LIVE, TOOLS_LIVE)
    report = enter_sandbox(SandboxPolicy(**spec.sandbox)) if spec.sandbox is not None else None
    channel.phase("sandbox")
    reason = None
    allow = list(spec.allow_hosts)
    config_error = None
    broker = None
    if live and spec.broker_fd >= 0:
        from ..broker import BrokerClient

        os.set_inheritable(spec.broker_fd, False)  # agent subprocesses get no way to the broker
        broker = BrokerClient(spec.broker_fd)
    if live:
        reason = (
            f"{spec.mode} experiment: live calls to the allowed hosts are made by the parent's broker"
            if broker is not None
            else f"{spec.mode} experiment: the live plugin's hosts are reached through the socket guard alone"
        )
        config = spec.model_config if spec.mode == MODEL_LIVE else spec.tools_config
        if config:
            from ..hosts import HostsConfigError, hosts_in_config  # tomllib: experiments only

            try:
                allow += [host for host in hosts_in_config(config) if host not in allow]
            except HostsConfigError as error:
                config_error = str(error)
    elif spec.isolation == GUARD_ONLY:
        reason = "guard-only isolation was requested"
    info, guard = isolate(GUARD_ONLY, allow, report_refusal, reason, broker)
    if report is not None:
        info.sandbox = report.to_json()
        netns = next(layer for layer in report.layers if layer.name == NETWORK_NAMESPACE)
        info.network_namespace = netns.in_force
        info.namespace_method = report.mechanism if netns.in_force else None
        info.reason = reason if reason or netns.in_force else netns.detail
        if broker is not None:
            info.namespace_method = f"{report.mechanism} + broker"
    channel.send(
        HELLO, protocol=PROTOCOL_VERSION, pid=os.getpid(), isolation=info.to_json(), python=sys.version.split()[0]
    )
    channel.phase("guard_and_hello")
    if config_error is not None:
        channel.error(USAGE_ERROR, config_error)
        return 2
    sys.path[:0] = spec.sys_path
    return run_session(spec, channel, guard)


def run_session(spec: ReplaySpec, channel: Channel, guard: SocketGuard) -> int:
    """Everything after isolation; every failure becomes one protocol message."""
    from ...journal import JournalError

    try:
        from .engine import ReplaySession, UsageError
        from .entry_point import AgentImportError
    except Exception as error:  # our own install is broken: still say so on the pipe
        channel.error(INTERNAL_ERROR, f"replay engine unavailable: {type(error).__name__}: {error}", error)
        return 1
    try:
        session = ReplaySession(spec, channel, guard)
        result = session.run()
    except UsageError as error:
        channel.error(USAGE_ERROR, str(error))
        return 2
    except JournalError as error:
        channel.error(JOURNAL_ERROR, str(error))
        return 2
    except AgentImportError as error:
        channel.error(AGENT_IMPORT, str(error), error.__cause__)
        return 2
    except Exception as error:
        channel.error(INTERNAL_ERROR, f"{type(error).__name__}: {error}", error)
        return 1
    except SystemExit as error:  # agent code called sys.exit() mid-run
        channel.error(AGENT_CRASH, f"the agent called sys.exit({error.code!r}) during the replay", error)
        return 1
    cpu_s = round(time.process_time(), 4)  # the whole child, start-up included (for benches: bwrap hides it)
    channel.phase("result")
    channel.send(
        RESULT, **result, first_event_cpu_s=channel.first_event_cpu_s, child_cpu_s=cpu_s, phases=channel.phases
    )
    return 0


def run() -> None:
    """The process: ``main``, then out without interpreter teardown (agent threads must not hold the exit).
    ``child_command`` calls it from its bootstrap; ``python -m`` below."""
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
