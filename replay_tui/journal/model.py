"""The schema v1 event model and its validation.

Validation runs on every event read, so it is a table walk with no allocation on
the happy path; the error it raises names the field and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .errors import SchemaError, UnknownKindError, missing

SCHEMA_VERSION = 1

RUN_STARTED = "run.started"
INPUT_RECEIVED = "input.received"
MODEL_REQUEST = "model.request"
MODEL_RESPONSE = "model.response"
TOOL_CALL = "tool.call"
TOOL_RESULT = "tool.result"
CLOCK_READ = "clock.read"
RANDOM_DRAW = "random.draw"
STATE_TRANSITION = "state.transition"
STATE_SNAPSHOT = "state.snapshot"
RUN_ENDED = "run.ended"

#: Observations are what replay serves from the journal instead of calling out.
OBSERVATION_KINDS = frozenset({MODEL_RESPONSE, TOOL_RESULT, CLOCK_READ, RANDOM_DRAW})
#: Fields that describe the recording, not the run; excluded from logical comparison.
DIAGNOSTIC_FIELDS = frozenset({"recorded_at", "duration_ms", "diagnostics"})

Check = tuple[str, Callable[[Any], bool]]

_STR: Check = ("a string", lambda v: type(v) is str)
_INT: Check = ("an integer", lambda v: type(v) is int)
_POS_INT: Check = ("a positive integer", lambda v: type(v) is int and v > 0)
_NUMBER: Check = ("a number", lambda v: type(v) in (int, float))
_OBJECT: Check = ("an object", lambda v: type(v) is dict)
_ARRAY: Check = ("an array", lambda v: type(v) is list)
_ANY: Check = ("any JSON value", lambda v: True)
_STR_OR_NULL: Check = ("a string or null", lambda v: v is None or type(v) is str)
_OBJECT_OR_NULL: Check = ("an object or null", lambda v: v is None or type(v) is dict)
_HASH: Check = ('a hash "sha256:<64 hex>"', lambda v: type(v) is str and len(v) == 71 and v.startswith("sha256:"))
_HASH_OR_NULL: Check = ("a hash or null", lambda v: v is None or _HASH[1](v))
_STATUS: Check = ('one of "ok", "error", "cancelled"', lambda v: v in ("ok", "error", "cancelled"))

# (field, check, required)
PayloadSpec = tuple[tuple[str, Check, bool], ...]

PAYLOAD_SPECS: Mapping[str, PayloadSpec] = {
    RUN_STARTED: (
        ("agent", _STR, True),
        ("environment", _OBJECT, True),
        ("harness", _OBJECT, True),
        ("reducer_version", _STR, True),
        ("snapshot_every", _INT, True),
        ("initial_state", _ANY, True),
    ),
    INPUT_RECEIVED: (("role", _STR, True), ("content", _ANY, True), ("context", _ANY, False)),
    MODEL_REQUEST: (("request_hash", _HASH, True), ("request", _OBJECT, True)),
    MODEL_RESPONSE: (
        ("request_hash", _HASH, True),
        ("response", _OBJECT_OR_NULL, True),
        ("stream", _OBJECT_OR_NULL, False),
        ("error", _OBJECT_OR_NULL, False),
    ),
    TOOL_CALL: (("call_id", _STR, True), ("call_key", _HASH, True), ("tool", _STR, True), ("arguments", _OBJECT, True)),
    TOOL_RESULT: (
        ("call_id", _STR, True),
        ("call_key", _HASH, True),
        ("tool", _STR, True),
        ("result", _ANY, False),
        ("error", _OBJECT_OR_NULL, False),
        ("duration_ms", _NUMBER, False),
    ),
    CLOCK_READ: (("source", _STR, True), ("value", _ANY, True)),
    RANDOM_DRAW: (("source", _STR, True), ("value", _ANY, True)),
    STATE_TRANSITION: (
        ("cause_seq", _POS_INT, True),
        ("before_hash", _HASH, True),
        ("after_hash", _HASH, True),
        ("reducer_version", _STR, True),
        ("patch", _ARRAY, True),
    ),
    STATE_SNAPSHOT: (("state_hash", _HASH, True), ("state", _ANY, True)),
    RUN_ENDED: (("status", _STATUS, True), ("output", _ANY, False), ("error", _ANY, False)),
}

KINDS = frozenset(PAYLOAD_SPECS)

_ENVELOPE: tuple[tuple[str, Check], ...] = (
    ("run_id", _STR),
    ("seq", _POS_INT),
    ("event_id", _STR),
    ("kind", _STR),
    ("step_id", _STR_OR_NULL),
    ("parent_event_id", _STR_OR_NULL),
    ("recorded_at", _STR),
    ("payload", _OBJECT),
    ("prev_event_hash", _HASH_OR_NULL),
)


@dataclass(frozen=True, slots=True)
class Event:
    """One journal event. ``raw`` is the object exactly as recorded (hashed form)."""

    seq: int
    kind: str
    run_id: str
    event_id: str
    step_id: str | None
    parent_event_id: str | None
    recorded_at: str
    payload: dict[str, Any]
    prev_event_hash: str | None
    event_hash: str | None
    raw: dict[str, Any]

    @property
    def is_observation(self) -> bool:
        return self.kind in OBSERVATION_KINDS

    def logical_payload(self) -> dict[str, Any]:
        """The payload without diagnostic fields, for comparisons."""
        return strip_diagnostics(self.payload)


def strip_diagnostics(payload: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key not in DIAGNOSTIC_FIELDS}


def validate_event(obj: Any) -> Event:
    """Check ``obj`` against schema v1 and wrap it; raises SchemaError naming the field."""
    if type(obj) is not dict:
        raise SchemaError("(line)", "a JSON object", obj)
    seq = obj.get("seq")
    for field, (expected, ok) in _ENVELOPE:
        value = obj.get(field, _ABSENT)
        if value is _ABSENT:
            raise SchemaError(field, expected, missing(), seq=seq if type(seq) is int else None)
        if not ok(value):
            raise SchemaError(field, expected, value, seq=seq if type(seq) is int else None)
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise SchemaError("schema_version", str(SCHEMA_VERSION), obj.get("schema_version", missing()), seq=seq)
    kind = obj["kind"]
    spec = PAYLOAD_SPECS.get(kind)
    if spec is None:
        raise UnknownKindError("kind", "one of " + ", ".join(sorted(KINDS)), kind, seq=seq)
    payload = obj["payload"]
    for field, (expected, ok), required in spec:
        value = payload.get(field, _ABSENT)
        if value is _ABSENT:
            if required:
                raise SchemaError(f"payload.{field}", expected + f" (required for {kind})", missing(), seq=seq)
        elif not ok(value):
            raise SchemaError(f"payload.{field}", expected, value, seq=seq)
    event_hash = obj.get("event_hash")
    if event_hash is not None and not _HASH[1](event_hash):
        raise SchemaError("event_hash", _HASH[0], event_hash, seq=seq)
    return Event(
        seq=seq,
        kind=kind,
        run_id=obj["run_id"],
        event_id=obj["event_id"],
        step_id=obj["step_id"],
        parent_event_id=obj["parent_event_id"],
        recorded_at=obj["recorded_at"],
        payload=payload,
        prev_event_hash=obj["prev_event_hash"],
        event_hash=event_hash,
        raw=obj,
    )


_ABSENT = object()


def event_id_for(run_id: str, seq: int) -> str:
    """Deterministic event id: the same run and seq always give the same id."""
    return f"{run_id}:{seq}"
