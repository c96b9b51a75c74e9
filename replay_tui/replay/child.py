"""The replay child: isolate the network, then run the agent against the journal.

Started by ``runner.ReplayRunner`` as ``python -m replay_tui.replay.child SPEC_JSON``;
it speaks the protocol of ``protocol.py`` on the pipe the spec names. Isolation comes
before anything else, in particular before the agent module is imported, so
import-time network access is refused as well. The child imports only what a replay
needs (no Textual; deepdiff only when a divergence is reported), to start fast.
"""

from __future__ import annotations

import errno
import os
import platform
import sys
import time
import traceback
from typing import Any

from .hosts import HostsConfigError, hosts_in_config
from .isolation import GUARD_ONLY, NETNS_AUTO, Refusal, SocketGuard, isolate
from .protocol import (
    AGENT_CRASH,
    AGENT_IMPORT,
    ERROR,
    HELLO,
    INTERNAL_ERROR,
    JOURNAL_ERROR,
    MODEL_LIVE,
    PROGRESS,
    PROTOCOL_VERSION,
    REFUSAL,
    RESULT,
    TOOLS_LIVE,
    USAGE_ERROR,
    ProtocolError,
    ReplaySpec,
    encode,
)

TRACEBACK_LINES = 30


class Channel:
    """The write end of the protocol pipe. If the parent is gone, the child exits."""

    def __init__(self, fd: int, progress_interval_s: float = 0.05) -> None:
        self.fd = fd
        self.progress_interval_s = progress_interval_s
        self._next_progress = 0.0
        self._calls = 0
        os.set_inheritable(fd, False)  # agent subprocesses must not keep the pipe open

    def send(self, message_type: str, **fields: Any) -> None:
        data = encode(message_type, **fields)
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
            lines = "".join(traceback.format_exception(exc)).rstrip("\n").splitlines()[-TRACEBACK_LINES:]
        self.send(ERROR, kind=kind, message=message, traceback=lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m replay_tui.replay.child SPEC_JSON (started by replay-tui, not by hand)", file=sys.stderr)
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
    level = GUARD_ONLY if live or spec.isolation == GUARD_ONLY else NETNS_AUTO
    reason = None
    allow = list(spec.allow_hosts)
    config_error = None
    if live:
        reason = f"{spec.mode} experiment: the live plugin's hosts must be reachable"
        config = spec.model_config if spec.mode == MODEL_LIVE else spec.tools_config
        if config:
            try:
                allow += [host for host in hosts_in_config(config) if host not in allow]
            except HostsConfigError as error:
                config_error = str(error)
    elif spec.isolation == GUARD_ONLY:
        reason = "guard-only isolation was requested"
    info, guard = isolate(level, allow, report_refusal, reason)
    channel.send(HELLO, protocol=PROTOCOL_VERSION, pid=os.getpid(), isolation=info.to_json(), python=platform.python_version())
    if config_error is not None:
        channel.error(USAGE_ERROR, config_error)
        return 2
    sys.path[:0] = spec.sys_path
    return run_session(spec, channel, guard)


def run_session(spec: ReplaySpec, channel: Channel, guard: SocketGuard) -> int:
    """Everything after isolation; every failure becomes one protocol message."""
    from ..journal import JournalError

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
    channel.send(RESULT, **result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: agent threads must not hold the exit
