"""The seam between the harness and whoever drives it (record or replay).

The harness never knows whether it is recording or replaying: it writes every
event through an ``EventSink`` and asks an ``ObservationSource`` for each
observation kind it was given one for. Record mode = a JSONL sink and no
sources; strict replay = the replay engine's checking sink and a source for all
four observation kinds; an experiment = sources for some kinds only.
"""

from __future__ import annotations

import builtins
from typing import Any, Mapping, Protocol, runtime_checkable

from ..journal import Event, JournalError

__all__ = [
    "EventSink",
    "ObservationMissing",
    "ObservationSource",
    "RecordedToolError",
    "RecordedToolTimeout",
    "StopRun",
    "UnusableJournal",
    "error_from_payload",
    "error_to_payload",
]


@runtime_checkable
class EventSink(Protocol):
    """Where the harness bus sends events. The sink assigns seq, event_id and hashes.

    ``emit`` returns the Event as it stands in the journal; the harness uses its
    ``event_id`` as the parent of the events it causes and feeds it to the reducer.
    """

    def emit(
        self, kind: str, payload: dict[str, Any], *, step_id: str | None, parent_event_id: str | None
    ) -> Event: ...

    def close(self) -> None: ...


@runtime_checkable
class SealingSink(Protocol):
    """A sink that may put a seal of its own (``chain.checkpoint``) between two of the harness's events.

    ``last_seal_seq`` is the seq of the last such seal: the one seq the harness lets the sink skip.
    """

    last_seal_seq: int | None


@runtime_checkable
class ObservationSource(Protocol):
    def observe(self, kind: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
        """Recorded payload for observation `kind` (model.response, tool.result, clock.read, random.draw)
        answering `key` (request_hash, call_key, or the clock/random source name). Raises
        ObservationMissing (define it in seam.py) when there is none."""
        ...


class StopRun(BaseException):
    """Raised by a sink or a source to end the run at once: ``run_agent`` writes no
    run.ended and re-raises it. A BaseException, so an agent's ``except Exception``
    cannot swallow a replay divergence."""


class UnusableJournal(StopRun):
    """The journal being replayed cannot be used here: a line the replay reached cannot be read, or a
    recorded payload is not in the shape its recorder writes (a journal is hostile). ``error`` names the
    seq or line and what was expected. A StopRun, so an SDK that turns its transport's exceptions into its
    own (``except Exception``) cannot hide it, and the replay ends on a journal error, not a divergence."""

    def __init__(self, error: JournalError) -> None:
        super().__init__(str(error))
        self.error = error


class ObservationMissing(StopRun):
    """A source has no recorded observation for this kind and key."""

    def __init__(self, kind: str, key: str, detail: str = "") -> None:
        self.kind = kind
        self.key = key
        self.detail = detail
        super().__init__(f"no recorded {kind} for {key}" + (f": {detail}" if detail else ""))


class RecordedToolError(Exception):
    """Stand-in for a recorded error whose type is not a Python builtin.

    ``type_name`` is the recorded type (e.g. ``"crm.errors.RateLimited"``), ``code``
    the recorded code, ``payload`` the whole recorded error object.
    """

    def __init__(
        self, type_name: str, message: str, code: Any = None, payload: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.type_name = type_name
        self.message = message
        self.code = code
        self.payload = dict(payload or {})

    def __str__(self) -> str:
        return f"{self.type_name}: {self.message}"


class RecordedToolTimeout(RecordedToolError, TimeoutError):
    """Stand-in for a recorded timeout of a non-builtin type; still a ``TimeoutError``."""


_JSON_SCALARS = (str, int, float, bool, type(None))


def error_to_payload(error: BaseException, *, timeout: bool = False) -> dict[str, Any]:
    """The recorded form of an error: ``{type, message, code, timeout}`` (+ ``args`` when plain).

    Builtin exceptions are recorded by bare name (``KeyError``), others by
    ``module.QualName``, so ``error_from_payload`` can tell them apart.
    """
    cls = type(error)
    if isinstance(error, RecordedToolError):
        type_name = error.type_name
    elif cls.__module__ == "builtins":
        type_name = cls.__qualname__
    else:
        type_name = f"{cls.__module__}.{cls.__qualname__}"
    code = getattr(error, "code", None)
    payload: dict[str, Any] = {
        "type": type_name,
        "message": error.message if isinstance(error, RecordedToolError) else str(error),
        "code": code if isinstance(code, _JSON_SCALARS) else str(code),
        "timeout": bool(timeout or isinstance(error, TimeoutError)),
    }
    if cls.__module__ == "builtins" and all(isinstance(arg, _JSON_SCALARS) for arg in error.args):
        payload["args"] = list(error.args)
    return payload


#: What a call's observation holds when the agent stopped waiting for it (its task was cancelled).
CANCELLED_MESSAGE = "tool call cancelled"


def cancellation_payload() -> dict[str, Any]:
    """The recorded error of a call the agent cancelled while it ran: not something the world answered, but
    what the agent did, so a replay writes it when the agent cancels, never hands it back as an answer."""
    return {**error_to_payload(RuntimeError(CANCELLED_MESSAGE)), "cancelled": True}


def is_cancellation(payload: Mapping[str, Any]) -> bool:
    """Whether an observation's payload records that the agent cancelled the call (``cancellation_payload``;
    journals written before the flag have the same error without it)."""
    error = payload.get("error")
    if not isinstance(error, Mapping):
        return False
    if error.get("cancelled") is True:
        return True
    return error.get("type") == "RuntimeError" and error.get("message") == CANCELLED_MESSAGE and not error.get("code")


def error_from_payload(payload: Mapping[str, Any]) -> Exception:
    """The exception to raise for a recorded error.

    Accepts the error object or a whole observation payload carrying ``error``.
    A builtin ``Exception`` subclass is rebuilt as itself (from the recorded
    ``args`` when present); anything else becomes ``RecordedToolTimeout`` when the
    error was a timeout, ``RecordedToolError`` otherwise.
    """
    nested = payload.get("error")
    error: Mapping[str, Any] = nested if isinstance(nested, Mapping) else payload
    type_name = str(error.get("type") or "Exception")
    message = str(error.get("message") or "")
    timed_out = bool(error.get("timeout"))
    builtin = getattr(builtins, type_name, None) if "." not in type_name else None
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        args = error.get("args")
        try:
            rebuilt = builtin(*args) if isinstance(args, list) else builtin(message)
        except Exception:  # a builtin with an unusual constructor (UnicodeDecodeError...)
            rebuilt = None
        if rebuilt is not None and (not timed_out or isinstance(rebuilt, TimeoutError)):
            return rebuilt
    stand_in = RecordedToolTimeout if timed_out else RecordedToolError
    return stand_in(type_name, message, error.get("code"), error)
