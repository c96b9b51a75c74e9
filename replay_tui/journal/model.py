"""The schema v1 event model and its validation.

Validation runs on every event read, so it is a table walk with no allocation on
the happy path; the error it raises names the field and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
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
#: Signed seals over the chain head (see seal.py); only a run.sealed may follow run.ended.
RUN_SEALED = "run.sealed"
CHAIN_CHECKPOINT = "chain.checkpoint"
#: What an imported trace said that has no other kind (a handoff, a score, a log line); never replayed.
NOTE = "note"
SEAL_KINDS = frozenset({RUN_SEALED, CHAIN_CHECKPOINT})

#: Observations are what replay serves from the journal instead of calling out.
OBSERVATION_KINDS = frozenset({MODEL_RESPONSE, TOOL_RESULT, CLOCK_READ, RANDOM_DRAW})
#: Fields that describe the recording, not the run; excluded from logical comparison.
DIAGNOSTIC_FIELDS = frozenset({"recorded_at", "duration_ms", "diagnostics"})


class Check:
    """A field type: what a message says it expects, and a Python test of ``v``. A plain class, not a frozen
    dataclass (3 M instructions at import, on every start): the tables below are its only instances."""

    __slots__ = ("expected", "test")

    def __init__(self, expected: str, test: str) -> None:
        self.expected = expected
        self.test = test  # an expression over the value ``v``

    def __call__(self, v: Any) -> bool:
        return bool(eval(self.test, {}, {"v": v}))  # only on the slow, explaining path


_STR = Check("a string", "type(v) is str")
_INT = Check("an integer", "type(v) is int")
_POS_INT = Check("a positive integer", "type(v) is int and v > 0")
_NUMBER = Check("a number", "type(v) is int or type(v) is float")
_OBJECT = Check("an object", "type(v) is dict")
_ARRAY = Check("an array", "type(v) is list")
_ANY = Check("any JSON value", "True")
_STR_OR_NULL = Check("a string or null", "v is None or type(v) is str")
_OBJECT_OR_NULL = Check("an object or null", "v is None or type(v) is dict")
_HASH = Check('a hash "sha256:<64 hex>"', 'type(v) is str and len(v) == 71 and v.startswith("sha256:")')
_HASH_OR_NULL = Check("a hash or null", f"v is None or ({_HASH.test})")
_SCHEMA_VERSION = Check(f"the integer {SCHEMA_VERSION}", f"type(v) is int and v == {SCHEMA_VERSION}")
_STATUS = Check('one of "ok", "error", "cancelled"', 'v == "ok" or v == "error" or v == "cancelled"')

# (field, check, required)
PayloadSpec = tuple[tuple[str, Check, bool], ...]

_SEAL_SPEC: PayloadSpec = (
    ("algorithm", _STR, True),
    ("key_id", _STR, True),
    ("head_seq", _POS_INT, True),
    ("head_hash", _HASH, True),
    ("signature", _STR, True),
)

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
    # the request, or at level info its summary (journal/levels.py): one of the two (check_event)
    MODEL_REQUEST: (("request_hash", _HASH, True), ("request", _OBJECT, False), ("summary", _OBJECT, False)),
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
    RUN_SEALED: _SEAL_SPEC,
    CHAIN_CHECKPOINT: _SEAL_SPEC,
    NOTE: (("text", _STR, True), ("data", _ANY, False)),
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


def _compiled_function(lines: list[str], namespace: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    exec("\n".join(lines), namespace)  # noqa: S102 - source built from the constant tables of this module
    test: Callable[[dict[str, Any]], bool] = namespace["test"]
    return test


@cache
def _envelope_test() -> Callable[[dict[str, Any]], bool]:
    """The envelope's fields and the schema version, one straight-line function that every kind's test calls:
    compiled once, not once per kind (compiling costs about 70 K instructions a line, and the envelope is
    most of each test's lines: the app's first frame meets seven kinds)."""
    lines = ["def test(o):", "    try:"]
    for field, check in (*_ENVELOPE, ("schema_version", _SCHEMA_VERSION)):
        lines.append(f"        v = o[{field!r}]")
        lines.append(f"        if not ({check.test}): return False")
    lines += ["    except KeyError:", "        return False", "    return True"]
    return _compiled_function(lines, {})


def _compile_event_test(spec: PayloadSpec) -> Callable[[dict[str, Any]], bool]:
    """One straight-line function per kind for envelope and payload together.

    Reading a million events calls it a million times, so it is generated from the
    tables above instead of looping over them; when it says no, the slow
    ``_explain_*`` functions walk the same tables to say which field is wrong.
    """
    lines = ["def test(o):", "    if not envelope(o): return False", "    p = o['payload']", "    try:"]
    for field, check, required in spec:
        if check is _ANY and not required:
            continue
        if required:
            lines.append(f"        v = p[{field!r}]")
            lines.append(f"        if not ({check.test}): return False")
        else:
            lines.append(f"        v = p.get({field!r}, ABSENT)")
            lines.append(f"        if v is not ABSENT and not ({check.test}): return False")
    lines += ["        pass", "    except KeyError:", "        return False", "    return True"]
    return _compiled_function(lines, {"ABSENT": _ABSENT, "envelope": _envelope_test()})


_ABSENT = object()
#: Each kind's test, compiled the first time an event of the kind is checked (``_compiled_test``): compiling
#: all of them was 4 ms of every start, the app's first frame included, which meets a few kinds.
_EVENT_TESTS: dict[str, Callable[[dict[str, Any]], bool]] = {}


def _compiled_test(kind: Any) -> Callable[[dict[str, Any]], bool] | None:
    """The test of ``kind``, compiled now if it is a known kind met for the first time (else None)."""
    if type(kind) is not str or kind not in PAYLOAD_SPECS:
        return None
    test = _EVENT_TESTS[kind] = _compile_event_test(PAYLOAD_SPECS[kind])
    return test


def compile_event_tests() -> None:
    """Every kind's test compiled now (a fork server, once, before its children would each compile theirs)."""
    for kind in PAYLOAD_SPECS:
        if kind not in _EVENT_TESTS:
            _compiled_test(kind)


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


def _explain_envelope(obj: dict[str, Any]) -> None:
    """Raise the SchemaError that names the first bad envelope field."""
    seq = obj.get("seq") if type(obj.get("seq")) is int else None
    for field, check in _ENVELOPE:
        value = obj.get(field, _ABSENT)
        if value is _ABSENT:
            raise SchemaError(field, check.expected, missing(), seq=seq)
        if not check(value):
            raise SchemaError(field, check.expected, value, seq=seq)
    version = obj.get("schema_version", _ABSENT)
    if not _SCHEMA_VERSION(version):
        raise SchemaError(
            "schema_version", _SCHEMA_VERSION.expected, missing() if version is _ABSENT else version, seq=seq
        )


def check_event(obj: Any) -> None:
    """Check ``obj`` against schema v1; raises SchemaError naming the field."""
    if type(obj) is not dict:
        raise SchemaError("(line)", "a JSON object", obj)
    kind = obj.get("kind")
    test = _EVENT_TESTS.get(kind) if type(kind) is str else None
    if test is None:
        test = _compiled_test(kind)
    if test is None or not test(obj):
        _explain_envelope(obj)
        if test is None:
            raise UnknownKindError("kind", "one of " + ", ".join(sorted(KINDS)), obj["kind"], seq=obj["seq"])
        _explain_payload(obj)
    if kind == MODEL_REQUEST and "request" not in obj["payload"] and "summary" not in obj["payload"]:
        expected = "an object (required for model.request; an info journal keeps payload.summary instead)"
        raise SchemaError("payload.request", expected, missing(), seq=obj["seq"])
    event_hash = obj.get("event_hash")
    if event_hash is not None and not (
        type(event_hash) is str and len(event_hash) == 71 and event_hash.startswith("sha256:")
    ):
        raise SchemaError("event_hash", _HASH.expected, event_hash, seq=obj["seq"])


def _explain_payload(obj: dict[str, Any]) -> None:
    """Raise the SchemaError that names the first bad payload field."""
    seq, kind, payload = obj["seq"], obj["kind"], obj["payload"]
    for field, check, required in PAYLOAD_SPECS[kind]:
        value = payload.get(field, _ABSENT)
        if value is _ABSENT:
            if required:
                raise SchemaError(f"payload.{field}", f"{check.expected} (required for {kind})", missing(), seq=seq)
        elif not check(value):
            raise SchemaError(f"payload.{field}", check.expected, value, seq=seq)


def validate_event(obj: Any) -> Event:
    """Check ``obj`` against schema v1 and wrap it as an Event."""
    check_event(obj)
    return event_of(obj)


def event_of(obj: dict[str, Any]) -> Event:
    """Wrap a parsed v1 line as an Event without checking it (``validate_event`` checks first).

    Only for lines already checked elsewhere (the replay child's copy of a journal the parent
    verified); a missing field raises ``KeyError``."""
    return new_event(
        obj["seq"],
        obj["kind"],
        obj["run_id"],
        obj["event_id"],
        obj["step_id"],
        obj["parent_event_id"],
        obj["recorded_at"],
        obj["payload"],
        obj["prev_event_hash"],
        obj.get("event_hash"),
        obj,
    )


#: The Event's fields in order, and each slot's setter: ``new_event`` fills them.
EVENT_FIELDS = (
    "seq",
    "kind",
    "run_id",
    "event_id",
    "step_id",
    "parent_event_id",
    "recorded_at",
    "payload",
    "prev_event_hash",
    "event_hash",
    "raw",
)
_new = object.__new__
(
    _set_seq,
    _set_kind,
    _set_run_id,
    _set_event_id,
    _set_step_id,
    _set_parent,
    _set_recorded_at,
    _set_payload,
    _set_prev_hash,
    _set_event_hash,
    _set_raw,
) = (getattr(Event, name).__set__ for name in EVENT_FIELDS)


def new_event(
    seq: int,
    kind: str,
    run_id: str,
    event_id: str,
    step_id: str | None,
    parent_event_id: str | None,
    recorded_at: str,
    payload: dict[str, Any],
    prev_event_hash: str | None,
    event_hash: str | None,
    raw: dict[str, Any],
) -> Event:
    """``Event(...)`` (positional, in ``EVENT_FIELDS`` order) without the frozen dataclass's ``__init__``, whose
    eleven ``object.__setattr__`` calls cost three times as much: the same object, each field set through its
    slot. Every event a reader, the replay's tape or the writer makes comes this way."""
    event = _new(Event)
    _set_seq(event, seq)
    _set_kind(event, kind)
    _set_run_id(event, run_id)
    _set_event_id(event, event_id)
    _set_step_id(event, step_id)
    _set_parent(event, parent_event_id)
    _set_recorded_at(event, recorded_at)
    _set_payload(event, payload)
    _set_prev_hash(event, prev_event_hash)
    _set_event_hash(event, event_hash)
    _set_raw(event, raw)
    return event


def event_id_for(run_id: str, seq: int) -> str:
    """Deterministic event id: the same run and seq always give the same id."""
    return f"{run_id}:{seq}"
