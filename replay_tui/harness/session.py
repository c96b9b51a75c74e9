"""Sessions in a service: record one agent session inside a running process.

    async with record_session(CONFIG, directory=JOURNALS, session_id=sid, agent="svc.agent:answer", input=msg) as h:
        reply = await h.session.run()      # svc.agent.answer(h, msg), exactly what a replay calls

Each session gets its own journal, ``directory/<session_id>/`` (shards rotated as the jsonl
transport rotates them), with ``run.started`` naming ``agent`` and ``input.received`` holding
``input``: a replay calls that entry point with the harness and the recorded input, so a
service's session replays like any other journal. ``h.session.run()`` makes the same call while
recording, and its return value is the run's output (or set ``h.session.output`` yourself).

What a session promises a service:

* set-up does no blocking work on the event loop: the harness is built, the journal opened and the
  first events written in a worker thread, and so is the close at the end;
* sessions are isolated: each has its own harness, journal and lock, and ``current_harness()`` gives
  the code running in a session (hooks, tools, callbacks of a framework) that session's harness,
  through a context variable that tasks inherit;
* sessions record at ``info`` unless told otherwise (``level=``, ``[harness] level``, or
  ``$REPLAY_TUI_LEVEL``): what a replay needs, not every chunk of every stream (journal/levels.py);
  ``touch DIRECTORY/.trace/SESSION_ID`` turns ``trace`` on for one running session, from its next
  model call, without a restart;
* the block's outcome is the run's: an exception ends it with status ``error`` (``cancelled`` for a
  cancellation) and goes on up; a journal that cannot be written follows ``[harness]
  on_journal_error`` (``fail``: the session fails with ``RecordingFailed``; ``continue``: it goes
  on unrecorded, said once in the ``replay_tui.recording`` log), and never touches another session.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

from ..journal.levels import INFO
from .agents import StepAgent, load_agent
from .builder import Recording, build_harness
from .config import ConfigError, HarnessConfig, load_config
from .harness import CURRENT_HARNESS, Harness, HarnessError, current_harness

__all__ = ["Session", "current_harness", "record_session", "record_session_sync", "trace_flag_of"]

#: The directory, beside a service's journals, whose file named after a session turns trace on for it.
TRACE_FLAGS = ".trace"


def trace_flag_of(directory: str | Path, session_id: str) -> Path:
    """The file that turns ``trace`` on for one running session from its next model call: ``touch`` it
    (``DIRECTORY/.trace/SESSION_ID``); remove it to go back to the session's level."""
    return Path(directory) / TRACE_FLAGS / session_id


#: A session id becomes a directory name: letters, digits and ``._-``, not starting with a dot, at most 128.
_SESSION_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


@dataclass
class Session:
    """The session a harness records (``h.session``)."""

    session_id: str
    journal: Path
    agent: str
    input: Any
    harness: Harness = field(repr=False)
    output: Any = None

    async def run(self) -> Any:
        """Call the session's entry point with the harness and the recorded input, as a replay does; its
        return value is the run's output."""
        result = self._entry_point()(self.harness, self.recorded_input)
        if inspect.isawaitable(result):
            result = await result
        self.output = result
        return result

    def run_sync(self) -> Any:
        """``run`` for a sync entry point (``record_session_sync``)."""
        self.output = self._entry_point()(self.harness, self.recorded_input)
        return self.output

    def _entry_point(self) -> Callable[..., Any]:
        entry = load_agent(self.agent)
        if isinstance(entry, StepAgent):
            raise HarnessError(f"{self.agent} is a StepAgent: a session runs a function agent (h, input)")
        return entry

    @property
    def recorded_input(self) -> Any:
        """The input as the journal holds it (what a replay hands the entry point)."""
        event = self.harness.session_input
        return event.payload["content"] if event is not None else self.input


@contextlib.asynccontextmanager
async def record_session(
    config: HarnessConfig | str | Path,
    *,
    directory: str | Path,
    session_id: str,
    agent: str,
    input: Any,
    run_id: str | None = None,
    level: str | None = None,
) -> AsyncIterator[Harness]:
    """Record one session of a running service (see the module docstring)."""
    import asyncio

    recording = await asyncio.to_thread(_open, config, directory, session_id, agent, input, run_id, level)
    token = CURRENT_HARNESS.set(recording.harness)
    status, error = "ok", None  # type: tuple[str, BaseException | None]
    try:
        yield recording.harness
    except asyncio.CancelledError as cancelled:
        status, error = "cancelled", cancelled
        raise
    except BaseException as failure:
        status, error = "error", failure
        raise
    finally:
        CURRENT_HARNESS.reset(token)
        await _shielded_close(asyncio, recording, status, error)


@contextlib.contextmanager
def record_session_sync(
    config: HarnessConfig | str | Path,
    *,
    directory: str | Path,
    session_id: str,
    agent: str,
    input: Any,
    run_id: str | None = None,
    level: str | None = None,
) -> Iterator[Harness]:
    """``record_session`` for a sync service (a thread per request)."""
    recording = _open(config, directory, session_id, agent, input, run_id, level)
    token = CURRENT_HARNESS.set(recording.harness)
    status, error = "ok", None  # type: tuple[str, BaseException | None]
    try:
        yield recording.harness
    except BaseException as failure:
        status, error = ("cancelled" if isinstance(failure, KeyboardInterrupt) else "error"), failure
        raise
    finally:
        CURRENT_HARNESS.reset(token)
        _close(recording, status, error)


def _open(
    config: HarnessConfig | str | Path,
    directory: str | Path,
    session_id: str,
    agent: str,
    input: Any,
    run_id: str | None,
    level: str | None,
) -> Recording:
    """Build the session's harness, open its journal, write run.started and the input (in a worker thread)."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise HarnessError(
            f"session id {session_id!r} cannot name a journal: use 1 to 128 letters, digits, '.', '_' or '-', "
            "not starting with '.'"
        )
    load_agent(agent)  # a typo in the entry point fails the session before any journal is made
    if not isinstance(config, HarnessConfig):
        config = load_config(config)
    journal = Path(directory) / session_id
    if journal.exists():
        raise ConfigError(str(journal), "a journal of this session id exists already: a journal is never overwritten")
    journal.parent.mkdir(parents=True, exist_ok=True)
    recording = build_harness(
        config,
        journal=journal,
        run_id=run_id or f"session-{session_id}",
        agent=agent,
        level=level,
        default_level=INFO,
        trace_flag=trace_flag_of(directory, session_id),
    )
    harness = recording.harness
    try:
        recording.started(agent)
        harness.start_run(agent=agent)
        harness.session_input = harness.receive_input(input)
        harness.session = Session(session_id, journal, agent, input, harness)
    except BaseException:
        recording.close()
        raise
    return recording


async def _shielded_close(asyncio: Any, recording: Recording, status: str, error: BaseException | None) -> None:
    """Close in a worker thread; a cancellation of the request still lets the close finish (the journal
    gets its run.ended), and is raised after."""
    closing = asyncio.ensure_future(asyncio.to_thread(_close, recording, status, error))
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        await closing
        raise


def _close(recording: Recording, status: str, error: BaseException | None) -> None:
    harness = recording.harness
    try:
        if not harness.ended:
            session = getattr(harness, "session", None)
            output = session.output if session is not None and status == "ok" else None
            harness.end_run(status, output, error)
    finally:
        failures = recording.close()
    if failures:
        details = "; ".join(f"{plugin_id}: {type(failed).__name__}: {failed}" for plugin_id, failed in failures)
        raise HarnessError(f"plugins failed to stop: {details}")
