"""Matching the agent's events against the journal: the one home of that logic, harness-free.

The child uses it (through ``tape.py``) only to stop early; the parent runs the same
``Cursor`` over its own copy of the journal on the events the child streams back, and
only the parent's result is the verdict. The parent also checks each state claim the
agent's events make against its own copy of the state (``state_book.py``): matching
hashes prove nothing if the child computed them. Nothing here imports the harness, so
the app can run a referee without importing agent-side code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..journal import Event, Journal, JournalError
from ..journal.depth import deep_enough
from ..journal.dialects import V1
from ..journal.levels import info_request
from ..journal.model import (
    CHAIN_CHECKPOINT,
    CLOCK_READ,
    DIAGNOSTIC_FIELDS,
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    NOTE,
    OBSERVATION_KINDS,
    RANDOM_DRAW,
    RUN_ENDED,
    RUN_SEALED,
    RUN_STARTED,
    SCHEMA_VERSION,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
)
from .modes import MODEL_LIVE, TOOLS_LIVE

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
#: The key fields a produced event is placed by, where not all of ``KEY_FIELDS`` (``Cursor.place``; only those
#: the produced event has): a framework state's transition is made from the state when it is written, so only
#: its after_hash is known before its turn, and for one that sets a member of the state
#: (``Harness.arecord_state_member``) only that member and its value; a snapshot's state too (by kind alone).
PLACED_BY: dict[str, tuple[str, ...]] = {
    STATE_TRANSITION: ("after_hash", "member", "member_hash"),
    STATE_SNAPSHOT: (),
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
#: Per experiment, the observation kinds served from the journal (the others are live).
EXPERIMENT_SERVED_KINDS: dict[str, frozenset[str]] = {
    MODEL_LIVE: frozenset({TOOL_RESULT, CLOCK_READ, RANDOM_DRAW}),
    TOOLS_LIVE: frozenset({MODEL_RESPONSE, CLOCK_READ, RANDOM_DRAW}),
}
#: Observations: served from the tape, judged by their key fields (a subset of _PAYLOAD_UNCHECKED).
SERVED_KINDS = frozenset({MODEL_RESPONSE, TOOL_RESULT, CLOCK_READ, RANDOM_DRAW})
_IGNORED_FIELDS = {STATE_TRANSITION: ("reducer_version", "patch"), STATE_SNAPSHOT: ("resume",)}
_ABSENT = object()
#: Events between the agent's that the agent never produces: the recorder's seals, an importer's notes.
NOT_PRODUCED_KINDS = frozenset({CHAIN_CHECKPOINT, RUN_SEALED, NOTE})
#: Events whose state claims the parent checks against its own copy of the state (state_book.py).
STATEFUL_KINDS = frozenset({RUN_STARTED, STATE_TRANSITION, STATE_SNAPSHOT})


@dataclass
class Mismatch:
    """Where and why the agent left the journal (what a divergence report is built from)."""

    seq: int
    reason: str
    produced: dict[str, Any] | None
    expected: Event | None
    parent_matches: bool = True


def _first_payload_difference(
    recorded: dict[str, Any], produced: dict[str, Any], ignored: tuple[str, ...]
) -> str | None:
    """The first top-level payload field that differs, diagnostics and ``ignored`` excluded."""
    for name in sorted(set(recorded) | set(produced)):
        if name in DIAGNOSTIC_FIELDS or name in ignored:
            continue
        if recorded.get(name, _ABSENT) != produced.get(name, _ABSENT):
            return name
    return None


def deleted_reason(seq: int, found: int) -> str:
    return (
        f"the journal has no event with seq {seq} (the next recorded event is seq {found}): "
        "an event was deleted or the seqs were edited"
    )


def produced_event(
    kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None
) -> dict[str, Any]:
    return {"kind": kind, "step_id": step_id, "parent_event_id": parent_event_id, "payload": payload}


def at_recorded_level(recorded: Event, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A produced event's payload in the form the recorded one was kept in: a full request against a request an
    ``info`` journal kept as its summary is compared (and reported) as its summary (journal/levels.py)."""
    if kind == MODEL_REQUEST and recorded.kind == MODEL_REQUEST and "summary" in recorded.payload:
        return info_request(payload)
    return payload


def mismatch(
    recorded: Event, kind: str, payload: dict[str, Any], step_id: str | None, parent: str | None
) -> tuple[str, bool] | None:
    """Why ``recorded`` and the produced event differ, or None. Returns (reason, parent_matches)."""
    payload = at_recorded_level(recorded, kind, payload)
    if (
        recorded.payload == payload
        and recorded.kind == kind
        and recorded.step_id == step_id
        and recorded.parent_event_id == parent
    ):
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
            return (
                f"payload.{field} differs (its key matches: the journal was edited, or the key does not cover it)",
                True,
            )
    if recorded.step_id != step_id:
        return f"step_id differs: the journal has {recorded.step_id!r}, the agent is in {step_id!r}", True
    if recorded.parent_event_id != parent:
        return f"parent differs: the journal has {recorded.parent_event_id!r}, the agent gave {parent!r}", False
    return None


def nearest_snapshot(journal: Journal, seq: int) -> Event | None:
    """The last state.snapshot at or before ``seq`` (None: start from the beginning)."""
    position = journal.position_of_seq(seq)
    if position is None:
        position = len(journal) - 1
    needle = b'"state.snapshot"'
    for candidate in range(position, -1, -1):
        if needle not in journal.line_bytes(candidate):
            continue
        event = journal.event(candidate)
        if event.kind == STATE_SNAPSHOT and event.seq <= seq:
            return event
    return None


READ_AHEAD_BYTES = 256 << 10


class Cursor:
    """The recorded events in order with a cursor: checks each produced event and observation request.

    ``emit`` and ``observe`` return the recorded event, or a ``Mismatch`` (the first one
    is kept in ``stopped``). Reading an unreadable line raises ``JournalError``.
    """

    LOOKAHEAD = 4096

    def __init__(self, journal: Journal, start: int = 0) -> None:
        self.journal = journal
        self.start = start
        self.position = start
        self.total = len(journal)
        # A run.sealed after the run is a signature over the chain, not an event of the run: not on the tape.
        while self.total > start and getattr(journal.try_event(self.total - 1), "kind", None) == RUN_SEALED:
            self.total -= 1
        self.last_seq: int | None = None
        self.reserved: set[int] = set()  # positions of observations served but not yet written
        # Positions matched before the cursor reached them (concurrent flows writing in another order than
        # recorded, e.g. a clock read on an event loop that could not wait its turn), with their seqs.
        self.ahead: dict[int, int] = {}
        self.reordered = 0  # events matched ahead of their recorded turn
        self.last_position: int | None = None  # position of the event matched last
        self.state_checks = 0
        self.observations = 0
        self.ended = False  # a recorded run.ended was matched
        self.last_seal_seq: int | None = None  # the last chain.checkpoint stepped over (see ``peek``)
        self._block: list[bytes] = []  # recorded lines read ahead (``line_at``), from position _block_start
        self._block_start = 0

    @property
    def consumed(self) -> int:
        return self.position - self.start + len(self.ahead)

    def line_at(self, position: int) -> bytes:
        """The recorded line's bytes (no newline), read a block at a time: the tape and the referee go
        forward line by line, and a read per line was a tenth of the replay's CPU."""
        offset = position - self._block_start
        if not 0 <= offset < len(self._block):
            self._block, self._block_start, offset = self.journal.line_run(position, READ_AHEAD_BYTES), position, 0
        return self._block[offset]

    @property
    def next_seq(self) -> int:
        if self.last_seq is not None:
            return self.last_seq + 1
        if self.start == 0:
            return 1
        return self.journal.event(self.start - 1).seq + 1

    def event_at(self, position: int) -> Event:
        return self.journal.event(position)

    def peek(self) -> Event | None:
        """The next recorded event of the run, or None at the end.

        A ``chain.checkpoint`` is the recorder's signature over the chain so far, not an event the agent
        produced: it is stepped over (and counted as consumed). Only looked at here, where the fast path of
        ``RefereeCursor.check`` gives up, so journals without checkpoints pay nothing for them."""
        while self.position < self.total:
            event = self.event_at(self.position)
            if event.kind != CHAIN_CHECKPOINT:
                return event
            self.position += 1
            self.last_seq = self.last_seal_seq = event.seq
        return None

    def advance(self, event: Event) -> None:
        self.advance_by(event.seq, event.kind)

    def advance_by(self, seq: int, kind: str) -> None:
        self.reserved.discard(self.position)
        self.last_position = self.position
        self.position += 1
        self.last_seq = seq
        self._count(kind)
        while self.position in self.ahead:  # matched already: the cursor steps over it
            self.last_seq = self.ahead.pop(self.position)
            self.position += 1

    def _count(self, kind: str) -> None:
        if kind in (STATE_TRANSITION, STATE_SNAPSHOT):
            self.state_checks += 1
        elif kind in OBSERVATION_KINDS:
            self.observations += 1
        elif kind == RUN_ENDED:
            self.ended = True

    def _window(self) -> range:
        """The positions a produced event may match: from the cursor, a bounded look ahead."""
        return range(self.position, min(self.total, self.position + self.LOOKAHEAD))

    def place(
        self,
        kind: str,
        fields: dict[str, Any],
        *,
        answers: str | None = None,
        taken: "set[int] | frozenset[int]" = frozenset(),
        step_id: str | None = None,
        parent: str | None = None,
    ) -> int | None:
        """Where a produced event of ``kind`` goes: the first recorded event from the cursor on, not matched or
        ``taken`` yet, of that kind whose key fields equal those in ``fields`` (and, for an observation, that
        answers the event ``answers``). None: no such event in the window. A run.ended goes only at the cursor:
        nothing of the run is recorded after it. Concurrent flows find their own events this way, whatever
        order they come in; which of them is written when is the scheduler's (``scheduler.py``). Of several
        events alike in kind and key (parallel MCP sessions each send the same ``notifications/initialized``),
        the first that hangs from ``parent`` (the parent it will be written with, when known) is taken, then
        the first in ``step_id``'s step, else the first: each session's notification goes where that session's
        was recorded, whichever session sends first."""
        self.peek()  # steps over a checkpoint at the cursor
        names = [name for name in PLACED_BY.get(kind, KEY_FIELDS.get(kind, ())) if name in fields]
        best: int | None = None
        best_rank = -1
        for position in self._window():
            if position in self.ahead or position in taken:
                continue
            recorded = self.event_at(position)
            if recorded.kind == kind and (answers is None or recorded.parent_event_id == answers):
                payload = recorded.payload
                if all(payload.get(name) == fields[name] for name in names):
                    same_parent = parent is None or recorded.parent_event_id == parent
                    same_step = step_id is None or recorded.step_id == step_id
                    rank = 2 * same_parent + same_step
                    if rank == 3:
                        return position
                    if rank > best_rank:
                        best, best_rank = position, rank
            if recorded.kind == RUN_ENDED or kind == RUN_ENDED:
                break
        return best

    def emit_at(
        self, position: int, kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None
    ) -> Event | Mismatch:
        """Compare a produced event with the recorded event at ``position`` (placed by ``place``): at the
        cursor it is ``emit``; ahead of it, a match is kept until the cursor reaches it."""
        self.peek()
        if position == self.position or position in self.ahead or not 0 <= position < self.total:
            return self.emit(kind, payload, step_id, parent_event_id)
        recorded = self.event_at(position)
        found = mismatch(recorded, kind, payload, step_id, parent_event_id)
        if found is not None:
            reason, parent_matches = found
            produced = produced_event(kind, at_recorded_level(recorded, kind, payload), step_id, parent_event_id)
            return Mismatch(recorded.seq, reason, produced, recorded, parent_matches)
        self._match_ahead(position, recorded)
        return recorded

    def _match_ahead(self, position: int, recorded: Event) -> None:
        self.ahead[position] = recorded.seq
        self.reserved.discard(position)
        self.last_position = position
        self.reordered += 1
        self._count(recorded.kind)

    def _exact_ahead(
        self, kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None
    ) -> Event | None:
        """A recorded event ahead of the cursor, in the window, that the produced one matches exactly (a
        concurrent flow's event written before its recorded turn); matched, or None."""
        if kind in (RUN_STARTED, INPUT_RECEIVED, RUN_ENDED):
            return None  # the run's own order: never out of turn
        for position in self._window():
            if position == self.position or position in self.ahead:
                continue
            recorded = self.event_at(position)
            if recorded.kind == kind and mismatch(recorded, kind, payload, step_id, parent_event_id) is None:
                self._match_ahead(position, recorded)
                return recorded
            if recorded.kind == RUN_ENDED:
                break
        return None

    def emit(
        self, kind: str, payload: dict[str, Any], step_id: str | None, parent_event_id: str | None
    ) -> Event | Mismatch:
        """Compare one produced event with the recorded event of the same seq."""
        recorded = self.peek()  # first: it steps over a checkpoint, which moves next_seq
        seq = self.next_seq
        if recorded is None or recorded.seq != seq:
            produced = produced_event(kind, payload, step_id, parent_event_id)
            reason = "the journal ends before this event" if recorded is None else deleted_reason(seq, recorded.seq)
            return Mismatch(seq, reason, produced, None)
        found = mismatch(recorded, kind, payload, step_id, parent_event_id)
        if found is not None:
            early = self._exact_ahead(kind, payload, step_id, parent_event_id)
            if early is not None:
                return early
            reason, parent_matches = found
            produced = produced_event(kind, at_recorded_level(recorded, kind, payload), step_id, parent_event_id)
            return Mismatch(seq, reason, produced, recorded, parent_matches)
        self.advance(recorded)
        return recorded

    def observe(self, kind: str, key: Any) -> Event | Mismatch:
        """The recorded observation with this kind and key: normally the next event.

        Concurrent tool calls ask for their results before the other calls are written,
        so this looks a little ahead for the first one with that key not yet handed out;
        ``emit`` still checks each at its own seq when the harness writes it.
        """
        field = OBSERVATION_KEY.get(kind)
        if field is None:
            seq = self.next_seq
            return Mismatch(
                seq,
                f"the agent asked for a {kind}, which is not an observation",
                produced_event(kind, {}, None, None),
                None,
            )
        for position in range(self.position, min(self.total, self.position + self.LOOKAHEAD)):
            if position in self.reserved:
                continue
            recorded = self.event_at(position)
            if recorded.kind == kind and recorded.payload.get(field) == key:
                self.reserved.add(position)
                return recorded
            if recorded.kind == RUN_ENDED:
                break
        recorded_next = self.peek()  # first: it steps over a checkpoint, which moves next_seq
        seq = self.next_seq
        produced = produced_event(kind, {field: key}, None, None)
        if recorded_next is None:
            return Mismatch(seq, f"the agent asked for a {kind} but the journal has ended", produced, None)
        produced["step_id"] = recorded_next.step_id
        if recorded_next.seq != seq:
            return Mismatch(seq, deleted_reason(seq, recorded_next.seq), produced, None)
        recorded_key = recorded_next.payload.get(OBSERVATION_KEY.get(recorded_next.kind, ""))
        reason = (
            f"the agent asked for {kind} {field}={key}, which the journal does not record here; "
            f"at seq {recorded_next.seq} it has {recorded_next.kind}"
            + (f" for {recorded_key}" if recorded_key is not None else "")
        )
        return Mismatch(seq, reason, produced, recorded_next)

    def unused(self) -> dict[str, Any] | None:
        """Recorded events of the run after the cursor (count, first seq, kinds), or None; a pure query.

        Checkpoints, seals and notes are the recorder's or an importer's, never the agent's: wherever they
        sit (mid-run after a divergence, or at the end), they are not unused events."""
        count, first_seq = 0, None
        kinds: dict[str, int] = {}
        for position, item in enumerate(self.journal.events(self.position, self.total), self.position):
            if position in self.ahead:
                continue
            if isinstance(item, JournalError):
                count += 1  # unreadable, but still a recorded line nobody consumed
                continue
            if item.kind in NOT_PRODUCED_KINDS:
                continue
            count += 1
            first_seq = item.seq if first_seq is None else first_seq
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        return {"count": count, "first_seq": first_seq, "kinds": kinds} if count else None


class RefereeCursor(Cursor):
    """The parent's cursor. Over a journal the parent has verified (every line parsed, schema-checked and
    chained), a produced event is first compared with the recorded line as parsed, without building an
    Event: the common case costs one ``orjson.loads`` and one comparison. Anything that does not match
    there goes the full way (``Cursor.emit``/``observe``), which finds the exact reason or the journal error.
    """

    RAW_KEPT = 256  # parsed lines kept: read ahead (concurrent observations) or just compared

    def __init__(self, journal: Journal, start: int = 0, *, verified: bool = False) -> None:
        super().__init__(journal, start)
        self.fast = verified and journal.dialect == V1
        self._raw: dict[int, dict[str, Any]] = {}
        self._raw_limit = self.RAW_KEPT

    def raw_at(self, position: int) -> dict[str, Any] | None:
        """The recorded line at ``position`` as parsed, or None (then the full path decides)."""
        found = self._raw.get(position)
        if found is None:
            try:
                found = orjson.loads(self.line_at(position))
            except orjson.JSONDecodeError:
                return None
            if type(found) is not dict or found.get("schema_version") != SCHEMA_VERSION:
                return None  # an older version is migrated on the full path
            if len(self._raw) >= self._raw_limit:  # drop the consumed; the limit grows with a long lookahead
                self._raw = {kept: line for kept, line in self._raw.items() if kept >= self.position}
                self._raw_limit = max(self.RAW_KEPT, 2 * len(self._raw))
            self._raw[position] = found
        return found

    def check(self, kind: str, payload: dict[str, Any], step_id: str | None, parent: str | None) -> Mismatch | None:
        """``emit``, for the referee: None when the produced event matches the recorded one."""
        if self.fast and self.position < self.total:
            recorded = self.raw_at(self.position)
            if (
                recorded is not None
                and _same_payload(kind, recorded.get("payload"), payload)
                and recorded.get("kind") == kind
                and recorded.get("step_id") == step_id
                and recorded.get("parent_event_id") == parent
                and recorded.get("seq") == self.next_seq
                and type(recorded.get("seq")) is int
            ):
                self._raw.pop(self.position, None)
                self.advance_by(recorded["seq"], kind)
                return None
        found = self.emit(kind, payload, step_id, parent)
        return found if isinstance(found, Mismatch) else None

    def check_request(self, kind: str, key: Any) -> Mismatch | None:
        """``observe``, for the referee: None when the journal has that observation to serve."""
        field = OBSERVATION_KEY.get(kind)
        if self.fast and field is not None:
            for position in range(self.position, min(self.total, self.position + self.LOOKAHEAD)):
                if position in self.reserved:
                    continue
                recorded = self.raw_at(position)
                if recorded is None:
                    break  # the full path reads it and says what is wrong
                payload = recorded.get("payload")
                if recorded.get("kind") == kind and type(payload) is dict and payload.get(field) == key:
                    self.reserved.add(position)
                    return None
                if recorded.get("kind") == RUN_ENDED:
                    break
        found = self.observe(kind, key)
        return found if isinstance(found, Mismatch) else None


class Referee:
    """The parent's judge: follows the child's stream of produced events over its own journal.

    Items: ``["e", kind, step_id, parent_event_id, payload]`` (an event the agent produced)
    and ``["o", kind, key]`` (an observation it asked for). The first mismatch, a malformed
    item or an unreadable journal line stops it; later items are ignored.
    """

    def __init__(self, journal: Journal, start: int = 0, *, verified: bool = False) -> None:
        from .state_book import StateBook, check_event

        self.cursor = RefereeCursor(journal, start, verified=verified)
        self.mismatch: Mismatch | None = None
        self.fault: str | None = None  # the child's stream broke the protocol, or the journal is unreadable
        self.fault_kind = "internal"  # "journal" when the parent's journal is unreadable there (exit 2)
        # The parent's own copy of the state, advanced by the agent's patches (state_book.py): from
        # run.started, or from the snapshot a resumed step-loop agent starts after.
        self.state: StateBook | None = None
        self._check_state = check_event
        if start > 0:
            resumed = journal.event(start - 1)
            if resumed.kind == STATE_SNAPSHOT:
                self.state, _ = check_event(None, RUN_STARTED, {"initial_state": resumed.payload.get("state")})

    @property
    def stopped(self) -> bool:
        return self.mismatch is not None or self.fault is not None

    def feed(self, items: Any) -> None:
        if self.stopped:
            return
        if not isinstance(items, list):
            self.fault = "the child sent events that are not a list"
            return
        with deep_enough():  # once per batch: the limit is a process-wide setting
            for item in items:
                try:
                    found = self._one(item)
                except RecursionError:
                    self.fault = "an event is nested deeper than the replay can compare"
                    return
                except JournalError as error:
                    self.fault, self.fault_kind = str(error), "journal"
                    return
                if isinstance(found, Mismatch):
                    self.mismatch = found
                    return
                if found is MALFORMED:
                    self.fault = f"the child sent a malformed event item: {str(item)[:120]}"
                    return

    def _one(self, item: Any) -> Mismatch | object | None:
        """None when the item holds; its Mismatch; or MALFORMED."""
        if type(item) is list and len(item) == 5 and item[0] == "e":
            _, kind, step_id, parent, payload = item
            if (
                type(kind) is str
                and type(payload) is dict
                and (step_id is None or type(step_id) is str)
                and (parent is None or type(parent) is str)
            ):
                found = self.cursor.check(kind, payload, step_id, parent)
                if found is None and kind in STATEFUL_KINDS:  # the hashes matched the journal: are they true?
                    self.state, false_claim = self._check_state(self.state, kind, payload)
                    if false_claim is not None:
                        recorded = self.cursor.journal.event(self.cursor.last_position or 0)
                        return Mismatch(
                            recorded.seq, false_claim, produced_event(kind, payload, step_id, parent), recorded
                        )
                return found
        elif type(item) is list and len(item) == 3 and item[0] == "o" and type(item[1]) is str:
            return self.cursor.check_request(item[1], item[2])
        return MALFORMED


def _same_payload(kind: str, recorded: Any, produced: dict[str, Any]) -> bool:
    """Equal as ``mismatch`` judges them: an observation (served from the tape) by its key fields alone."""
    if kind not in SERVED_KINDS:
        return bool(recorded == produced)
    if type(recorded) is not dict:
        return False
    for name in KEY_FIELDS[kind]:
        expected, actual = recorded.get(name), produced.get(name)
        if expected != actual or type(expected) is not type(actual):
            return False
    return True


def slim_payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What the child sends of a produced event: an observation's payload was served from the journal,
    and only its key fields are compared, so only they cross the pipe (the rest would be parsed for nothing)."""
    if kind in SERVED_KINDS:
        return {name: payload.get(name) for name in KEY_FIELDS[kind]}
    return payload


#: What ``Referee._one`` returns for an item that is not one the protocol knows.
MALFORMED = object()
