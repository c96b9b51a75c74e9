"""Tape matching: the journal as a tape the replayed agent must follow event by event.

``StrictSink`` is the harness's ``EventSink`` in strict replay: every event the agent
produces is compared with the recorded event of the same seq on kind, step_id,
parent and key, and the recorded event is handed back (so ids, seqs and hashes stay
the recorded ones). ``StrictSource`` serves observations from the same tape: the
recorded observation with the kind and key asked for, normally the next event. The first
mismatch raises ``Divergence``, a ``StopRun`` (a BaseException) so agent code that catches
``Exception`` cannot swallow it; after it, the sink refuses everything.

Experiments use ``KeyedSource`` instead: recorded observations of the replayed
kinds, looked up by key (call_key, request_hash, clock/random source), each used
once; a key the journal never saw raises ``UnrecordedCall``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable

from ..journal import Event, Journal, JournalError
from ..journal.model import (
    CLOCK_READ,
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    DIAGNOSTIC_FIELDS,
    RANDOM_DRAW,
    RUN_ENDED,
    RUN_SEALED,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
)
from ..harness.replay_support import observation_key
from ..harness.seam import ObservationMissing, StopRun

#: The payload fields that are an event's key, compared in strict matching.
KEY_FIELDS: dict[str, tuple[str, ...]] = {
    MODEL_REQUEST: ("request_hash",),
    MODEL_RESPONSE: ("request_hash",),
    TOOL_CALL: ("call_key",),
    TOOL_RESULT: ("call_key",),
    STATE_TRANSITION: ("before_hash", "after_hash"),
    STATE_SNAPSHOT: ("state_hash",),
    CLOCK_READ: ("source",),
    RANDOM_DRAW: ("source",),
    INPUT_RECEIVED: ("role", "content"),
    RUN_ENDED: ("status", "output"),
    RUN_STARTED: ("initial_state",),
}
#: The field an observation is looked up by.
OBSERVATION_KEY = {MODEL_RESPONSE: "request_hash", TOOL_RESULT: "call_key", CLOCK_READ: "source", RANDOM_DRAW: "source"}

_WHAT_CHANGED = {
    "request_hash": "the model request changed",
    "call_key": "the tool name or arguments changed",
    "before_hash": "the state before this transition differs",
    "after_hash": "the reducer produced a different state",
    "state_hash": "the snapshot state differs",
    "source": "a different clock or random source was read",
    "content": "the input differs",
    "role": "the input role differs",
    "status": "the run ended with a different status",
    "output": "the run produced a different output",
}


#: Observations are served from the tape, so they equal the recording by construction;
#: run.started describes the replaying harness, not the agent's behaviour.
_PAYLOAD_UNCHECKED = frozenset({MODEL_RESPONSE, TOOL_RESULT, CLOCK_READ, RANDOM_DRAW, RUN_STARTED})
#: A transition is judged by its hashes: several patches produce the same after_hash
#: (journals recorded before the harness made patches deterministic wrote their ops in
#: hash-seed order), and a new reducer version that computes the same states is no divergence.
#: A snapshot's ``resume`` block is the harness's restart bookkeeping (step count, causal
#: cursor), which harness versions write differently; the state and its hash are what count.
_IGNORED_FIELDS = {STATE_TRANSITION: ("reducer_version", "patch"), STATE_SNAPSHOT: ("resume",)}


def _first_payload_difference(recorded: dict[str, Any], produced: dict[str, Any], ignored: tuple[str, ...]) -> str | None:
    """The first top-level payload field that differs, diagnostics and ``ignored`` excluded."""
    for name in sorted(set(recorded) | set(produced)):
        if name in DIAGNOSTIC_FIELDS or name in ignored:
            continue
        if recorded.get(name, _ABSENT) != produced.get(name, _ABSENT):
            return name
    return None


_ABSENT = object()


class Divergence(StopRun):
    """The agent left the tape. Carries what the report needs; built into a report by the engine."""

    def __init__(
        self,
        seq: int,
        reason: str,
        produced: dict[str, Any] | None,
        expected: Event | None,
        *,
        parent_matches: bool = True,
    ) -> None:
        super().__init__(f"replay divergence at seq={seq}: {reason}")
        self.seq = seq
        self.reason = reason
        self.produced = produced
        self.expected = expected
        self.parent_matches = parent_matches


class UnrecordedCall(ObservationMissing):
    """An experiment asked for an observation the journal never recorded; ``request`` is the call."""

    def __init__(self, kind: str, key: str, request: dict[str, Any]) -> None:
        super().__init__(kind, key, "the journal never recorded it")
        self.request = request


class ReplayStopped(StopRun):
    """Raised for anything the agent does after the replay already stopped."""


class TapeUnreadable(StopRun):
    """A journal line the tape reached cannot be read; ``error`` names file and line."""

    def __init__(self, error: JournalError) -> None:
        super().__init__(str(error))
        self.error = error


class Tape:
    """The recorded events in order with a cursor, shared by the strict sink and source."""

    def __init__(self, journal: Journal, start: int = 0) -> None:
        self.journal = journal
        self.start = start
        self.position = start
        self.total = len(journal)
        # A run.sealed after the run is a signature over the chain, not an event of the run: not on the tape.
        while self.total > start and getattr(journal.try_event(self.total - 1), "kind", None) == RUN_SEALED:
            self.total -= 1
        self.last_seq: int | None = None
        self.stopped: BaseException | None = None
        self.reserved: set[int] = set()  # positions of observations served but not yet written

    @property
    def consumed(self) -> int:
        return self.position - self.start

    @property
    def next_seq(self) -> int:
        if self.last_seq is not None:
            return self.last_seq + 1
        if self.start == 0:
            return 1
        return self.journal.event(self.start - 1).seq + 1

    def peek(self) -> Event | None:
        """The next recorded event, or None at the end."""
        return self.event_at(self.position) if self.position < self.total else None

    def event_at(self, position: int) -> Event:
        """A recorded event; an unreadable line stops the replay (TapeUnreadable)."""
        try:
            return self.journal.event(position)
        except JournalError as error:
            raise self.stop(TapeUnreadable(error)) from None

    def advance(self, event: Event) -> None:
        self.reserved.discard(self.position)
        self.position += 1
        self.last_seq = event.seq

    def stop(self, reason: BaseException) -> BaseException:
        if self.stopped is None:
            self.stopped = reason
        return reason

    def unused(self) -> dict[str, Any] | None:
        """Recorded events after the cursor: count, first seq and kinds."""
        left = self.total - self.position
        if left <= 0:
            return None
        kinds: dict[str, int] = {}
        first_seq = None
        for item in self.journal.events(self.position, self.total):
            if isinstance(item, JournalError):
                continue
            first_seq = item.seq if first_seq is None else first_seq
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        return {"count": left, "first_seq": first_seq, "kinds": kinds}


def deleted_reason(seq: int, found: int) -> str:
    return (
        f"the journal has no event with seq {seq} (the next recorded event is seq {found}): "
        "an event was deleted or the seqs were edited"
    )


def produced_event(kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None) -> dict[str, Any]:
    return {"kind": kind, "step_id": step_id, "parent_event_id": parent_event_id, "payload": payload}


def mismatch(recorded: Event, kind: str, payload: dict[str, Any], step_id: str | None, parent: str | None) -> tuple[str, bool] | None:
    """Why ``recorded`` and the produced event differ, or None. Returns (reason, parent_matches)."""
    if recorded.payload == payload and recorded.kind == kind and recorded.step_id == step_id and recorded.parent_event_id == parent:
        return None  # the common case, decided by one C-level comparison
    if recorded.kind != kind:
        return f"kind differs: the journal has {recorded.kind}, the agent produced {kind}", True
    for name in KEY_FIELDS.get(kind, ()):
        expected, actual = recorded.payload.get(name), payload.get(name)
        if expected != actual or type(expected) is not type(actual):
            return f"{name} differs: {_WHAT_CHANGED.get(name, 'the key changed')}", True
    if kind not in _PAYLOAD_UNCHECKED:
        field = _first_payload_difference(recorded.payload, payload, _IGNORED_FIELDS.get(kind, ()))
        if field is not None:
            return f"payload.{field} differs (its key matches: the journal was edited, or the key does not cover it)", True
    if recorded.step_id != step_id:
        return f"step_id differs: the journal has {recorded.step_id!r}, the agent is in {step_id!r}", True
    if recorded.parent_event_id != parent:
        return f"parent differs: the journal has {recorded.parent_event_id!r}, the agent gave {parent!r}", False
    return None


class StrictSink:
    """EventSink of strict replay (see the module docstring).

    ``tee`` (optional) receives every produced event too: new-code runs with
    ``--out`` write their own journal through it. ``on_match`` sees each matched
    event (progress).
    """

    def __init__(self, tape: Tape, *, tee: Any = None, on_match: Callable[[Event], None] | None = None) -> None:
        self.tape = tape
        self.tee = tee
        self.on_match = on_match

    def emit(self, kind: str, payload: dict, *, step_id: str | None, parent_event_id: str | None) -> Event:
        tape = self.tape
        if tape.stopped is not None:
            raise ReplayStopped(f"{kind} after the replay stopped")
        if self.tee is not None:
            self.tee.emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id)
        seq = tape.next_seq
        recorded = tape.peek()
        if recorded is None or recorded.seq != seq:
            produced = produced_event(kind, payload, step_id, parent_event_id)
            reason = "the journal ends before this event" if recorded is None else deleted_reason(seq, recorded.seq)
            raise tape.stop(Divergence(seq, reason, produced, None))
        found = mismatch(recorded, kind, payload, step_id, parent_event_id)
        if found is not None:
            reason, parent_matches = found
            produced = produced_event(kind, payload, step_id, parent_event_id)
            raise tape.stop(Divergence(seq, reason, produced, recorded, parent_matches=parent_matches))
        tape.advance(recorded)
        if self.on_match is not None:
            self.on_match(recorded)
        return recorded

    def close(self) -> None:
        if self.tee is not None:
            self.tee.close()


class StrictSource:
    """ObservationSource of strict replay: the recorded observation with this kind and key.

    It is normally the very next recorded event. Concurrent tool calls (``atool``)
    ask for their results before the other calls are written, so the source looks
    a little ahead for the first observation with that key not yet handed out; the
    sink still checks each one at its own seq when the harness writes it.
    """

    LOOKAHEAD = 4096

    def __init__(self, tape: Tape) -> None:
        self.tape = tape

    def observe(self, kind: str, key: str, request: dict) -> dict:
        tape = self.tape
        if tape.stopped is not None:
            raise ReplayStopped(f"{kind} requested after the replay stopped")
        field = OBSERVATION_KEY[kind]
        for position in range(tape.position, min(tape.total, tape.position + self.LOOKAHEAD)):
            if position in tape.reserved:
                continue
            recorded = tape.event_at(position)
            if recorded.kind == kind and recorded.payload.get(field) == key:
                tape.reserved.add(position)
                return recorded.payload
            if recorded.kind == RUN_ENDED:
                break
        seq = tape.next_seq
        produced = produced_event(kind, {field: key}, None, None)
        recorded = tape.peek()
        if recorded is None:
            raise tape.stop(Divergence(seq, f"the agent asked for a {kind} but the journal has ended", produced, None))
        produced["step_id"] = recorded.step_id
        if recorded.seq != seq:
            raise tape.stop(Divergence(seq, deleted_reason(seq, recorded.seq), produced, None))
        recorded_key = recorded.payload.get(OBSERVATION_KEY.get(recorded.kind, ""))
        reason = (
            f"the agent asked for {kind} {field}={key}, which the journal does not record here; "
            f"at seq {recorded.seq} it has {recorded.kind}" + (f" for {recorded_key}" if recorded_key is not None else "")
        )
        raise tape.stop(Divergence(seq, reason, produced, recorded))


class KeyedSource:
    """ObservationSource of experiments: recorded observations by (kind, key), each used once.

    Like the harness's ``RecordedObservations``, but it keeps the events, not only
    their payloads, so the report can say which recorded observations were never
    asked for (with their seqs) and show the call the journal never saw.
    """

    def __init__(self, events: Iterable[Event], kinds: Iterable[str]) -> None:
        self.kinds = frozenset(kinds)
        self._by_key: dict[tuple[str, Any], deque[Event]] = {}
        self._used: set[int] = set()
        self._all: list[Event] = []
        for event in events:
            if event.kind in self.kinds:
                self._by_key.setdefault((event.kind, observation_key(event)), deque()).append(event)
                self._all.append(event)

    def observe(self, kind: str, key: str, request: dict) -> dict:
        queue = self._by_key.get((kind, key))
        if not queue:
            raise UnrecordedCall(kind, key, dict(request))
        event = queue.popleft()
        self._used.add(event.seq)
        return event.payload

    def unused(self) -> dict[str, Any] | None:
        left = [event for event in self._all if event.seq not in self._used]
        if not left:
            return None
        kinds: dict[str, int] = {}
        for event in left:
            kinds[event.kind] = kinds.get(event.kind, 0) + 1
        return {"count": len(left), "first_seq": left[0].seq, "kinds": kinds}

