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

import orjson

from ...harness.replay_support import observation_key
from ...harness.seam import ObservationMissing, StopRun, UnusableJournal
from ...journal import Event, Journal, JournalError
from ...journal.dialects import V1
from ...journal.model import SCHEMA_VERSION, event_of
from ..referee import KEY_FIELDS, OBSERVATION_KEY, Cursor, Mismatch, mismatch
from .scheduler import TapeTurns

__all__ = [
    "KEY_FIELDS",
    "OBSERVATION_KEY",
    "Divergence",
    "KeyedSource",
    "StrictSink",
    "StrictSource",
    "Tape",
    "mismatch",
]

#: Called with each produced event (kind, payload, step_id, parent_event_id) and each
#: observation request (kind, key): the child streams them to the parent, which decides.
Produced = Callable[[str, "dict[str, Any]", "str | None", "str | None"], None]
Requested = Callable[[str, Any], None]


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

    @classmethod
    def of(cls, found: Mismatch) -> "Divergence":
        return cls(found.seq, found.reason, found.produced, found.expected, parent_matches=found.parent_matches)


class UnrecordedCall(ObservationMissing):
    """An experiment asked for an observation the journal never recorded; ``request`` is the call."""

    def __init__(self, kind: str, key: str, request: dict[str, Any]) -> None:
        super().__init__(kind, key, "the journal never recorded it")
        self.request = request


class ReplayStopped(StopRun):
    """Raised for anything the agent does after the replay already stopped."""


class TapeUnreadable(UnusableJournal):
    """A journal line the tape reached cannot be read; ``error`` names file and line."""


class Tape(Cursor):
    """The referee's cursor, with the child's way of stopping: exceptions the agent cannot catch."""

    KEPT = 256  # events kept: read ahead (concurrent observations) or just consumed; a big dict costs per event

    def __init__(self, journal: Journal, start: int = 0, *, verified: bool = False) -> None:
        super().__init__(journal, start)
        self.stopped: BaseException | None = None
        # A journal the parent verified (every line parsed, schema-checked, chained) before it said "go":
        # its lines become Events without being checked again, the replay's main cost per event.
        self.trusted = verified and journal.dialect == V1
        self._read: dict[int, Event] = {}
        self._read_limit = self.KEPT

    def event_at(self, position: int) -> Event:
        """A recorded event; an unreadable line stops the replay (TapeUnreadable)."""
        if self.trusted:
            found = self._read.get(position) or self._trusted_event(position)
            if found is not None:
                return found
        try:
            return self.journal.event(position)
        except JournalError as error:
            raise self.stop(TapeUnreadable(error)) from None

    def advance_by(self, seq: int, kind: str) -> None:
        self._read.pop(self.position, None)  # consumed: the dict holds only what was read ahead
        super().advance_by(seq, kind)

    def _match_ahead(self, position: int, recorded: Event) -> None:
        super()._match_ahead(position, recorded)
        self._read.pop(position, None)

    def _trusted_event(self, position: int) -> Event | None:
        """The line as an Event, unchecked (``event_of``); None sends it the checked way."""
        try:
            line = orjson.loads(self.line_at(position))
            if type(line) is not dict or line.get("schema_version") != SCHEMA_VERSION:
                return None  # an older version is migrated the checked way
            event = event_of(line)
        except (orjson.JSONDecodeError, KeyError, IndexError):
            return None
        if len(self._read) >= self._read_limit:  # drop the consumed; the limit grows with a long lookahead
            self._read = {kept: event for kept, event in self._read.items() if kept >= self.position}
            self._read_limit = max(self.KEPT, 2 * len(self._read))
        self._read[position] = event
        return event

    def stop(self, reason: BaseException) -> BaseException:
        if self.stopped is None:
            self.stopped = reason
        return reason


class StrictSink:
    """EventSink of strict replay (see the module docstring).

    ``tee`` (optional) receives every produced event too: new-code runs with
    ``--out`` write their own journal through it. ``on_produce`` sees every produced
    event before it is judged (the child streams them to the parent); ``on_match``
    sees each matched event (progress).
    """

    def __init__(
        self,
        tape: Tape,
        *,
        tee: Any = None,
        on_match: Callable[[Event], None] | None = None,
        on_produce: Produced | None = None,
        turns: TapeTurns | None = None,
    ) -> None:
        self.tape = tape
        self.tee = tee
        self.on_match = on_match
        self.on_produce = on_produce
        # the order of writes (the recorded interleaving); the harness takes it from here
        self.turns = turns if turns is not None else TapeTurns(tape)

    def emit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        step_id: str | None,
        parent_event_id: str | None,
        position: int | None = None,
    ) -> Event:
        """Match one produced event: at ``position`` when the scheduler placed it, else at the cursor."""
        tape = self.tape
        with self.turns.lock:
            if tape.stopped is not None:
                raise ReplayStopped(f"{kind} after the replay stopped")
            if self.tee is not None:
                self.tee.emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id)
            if self.on_produce is not None:
                self.on_produce(kind, payload, step_id, parent_event_id)
            if position is None:
                found = tape.emit(kind, payload, step_id, parent_event_id)
            else:
                found = tape.emit_at(position, kind, payload, step_id, parent_event_id)
            if isinstance(found, Mismatch):
                raise tape.stop(Divergence.of(found))
        if self.on_match is not None:
            self.on_match(found)
        return found

    @property
    def last_seal_seq(self) -> int | None:
        """The recorded checkpoint the tape stepped over: the harness expects its seq to be skipped."""
        return self.tape.last_seal_seq

    def close(self) -> None:
        if self.tee is not None:
            self.tee.close()


class StrictSource:
    """ObservationSource of strict replay: the recorded observation with this kind and key
    (``Cursor.observe``); ``on_request`` sees each request (streamed to the parent)."""

    def __init__(self, tape: Tape, on_request: Requested | None = None) -> None:
        self.tape = tape
        self.on_request = on_request

    def observe(self, kind: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
        tape = self.tape
        if tape.stopped is not None:
            raise ReplayStopped(f"{kind} requested after the replay stopped")
        if self.on_request is not None:
            self.on_request(kind, key)
        found = tape.observe(kind, key)
        if isinstance(found, Mismatch):
            raise tape.stop(Divergence.of(found))
        return found.payload


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

    def observe(self, kind: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
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
