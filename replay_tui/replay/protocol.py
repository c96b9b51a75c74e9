"""The replay child protocol: what the parent sends, and the JSON lines the child streams back.

Parent to child: one ``ReplaySpec`` as a JSON string in argv
(``python -m replay_tui.replay.child.main SPEC_JSON``), plus the write end of a pipe whose
number is ``spec.protocol_fd``. The child writes nothing else to that pipe, and never
uses stdout or stderr for the protocol: agent code may print there freely.

Child to parent: one JSON object per line (UTF-8, ``\\n``-terminated), each with
``"type"`` and the fields below. Order: ``hello`` first; then any number of
``progress`` and ``refusal``; at most one ``divergence``; then exactly one of ``result``
or ``error``, after which the child exits. A child that exits without either crashed;
the parent reports its exit status and the last lines of its stderr.

===============  ==============================================================
type             fields
===============  ==============================================================
``hello``        ``protocol`` (int, 2), ``pid``, ``isolation`` {network_namespace,
                 namespace_method, socket_guard, allowed_hosts, reason, sandbox
                 {mechanism, layers [{name, in_force, detail}], summary}, summary},
                 ``python`` (version string)
``start``        ``resume_seq``: the state.snapshot a step-loop agent resumes
                 from, or null (the parent accepts only the one it computes)
``events``       ``items``: what the agent produced, in order, batched:
                 ``["e", kind, step_id, parent_event_id, payload]`` (an event) and
                 ``["o", kind, key]`` (an observation it asked for). The parent
                 compares them with its own journal: that alone is the verdict.
                 An observation event (served from the journal, judged by key)
                 carries its key fields only; the first event is sent at once
``progress``     ``phase`` ("verify", "load", "fast-forward", "replay"),
                 ``consumed`` (events matched so far), ``total`` (events in the
                 journal), ``seq`` (last seq matched, or null)
``refusal``      ``operation`` ("connect", "getaddrinfo", ...), ``target``, ``where``
                 (file:line of the agent code that asked)
``divergence``   ``report``: the divergence report object (see ``report.py``)
``result``       ``status``: "match" | "diverged" | "verification_failed" |
                 "unused_events" | "unrecorded_call" (experiments); ``consumed``,
                 ``total`` (events to consume), ``last_seq``, ``first_seq`` (first
                 seq re-run), ``from_seq``, ``resumed_from_snapshot`` (seq or
                 null), ``state_checks``, ``observations_served``, ``unused``
                 {count, first_seq, kinds} or null, ``refusals`` [...],
                 ``verification`` (verify report or null), ``elapsed_s``,
                 ``replay_s``, ``replay_cpu_s``, ``events_per_s``,
                 ``first_event_cpu_s``, ``child_cpu_s`` (the child's own CPU
                 figures, informational), ``phases`` (optional: each step of
                 the child's start-up and run, ``{cpu_s, wall_s}``), ``out``
                 (journal written, or null), ``experiment`` {mode, identical,
                 summary, stopped, first_difference, first_decision,
                 first_live_observation, alignment} or null, ``live_calls``
``error``        ``kind``: "agent_import" | "agent_crash" | "journal" | "usage" |
                 "internal"; ``message``; ``traceback`` (last lines, may be empty)
===============  ==============================================================

The child's ``divergence`` and ``result`` are its own view, used only for what the
parent cannot see (timings, refusals, the agent's traceback, a call an experiment's
journal never recorded). They can make a run fail, never pass: the parent decides from
the ``events`` stream, checking every state claim against its own copy of the state
(``state_book.py``), and judges an experiment from the journal the child wrote
(``experiment_verdict.py``), never from the child's summary.

Agent code runs in the child's process and can write on the pipe too, so the parent reads
every line as hostile (``decode``): the line's size against its type's limit (``LINE_LIMITS``),
then every field against its type's shape (``MESSAGE_SHAPES``: type, size, nothing missing,
nothing unknown), then its place in the order above (``MessageOrder``: a second ``hello`` is
forged). A line that fails any of these stops the run as a failed replay whose message names
the type and the field; the child cuts its own texts to fit (``clip``).

A timeout or a cancel is decided by the parent, which kills the child's process
group; it never appears on the pipe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import orjson

from .modes import MODES, STRICT
from .shapes import (
    AnyJson,
    AnyObject,
    Boolean,
    Integer,
    ListOf,
    MapOf,
    Nullable,
    Number,
    Record,
    ShapeError,
    Text,
)

PROTOCOL_VERSION = 2

HELLO, PROGRESS, REFUSAL, DIVERGENCE, RESULT, ERROR = "hello", "progress", "refusal", "divergence", "result", "error"
START, EVENTS = "start", "events"
MESSAGE_TYPES = frozenset({HELLO, PROGRESS, REFUSAL, DIVERGENCE, RESULT, ERROR, START, EVENTS})

#: Isolation a caller can ask for: "auto" (bubblewrap when installed, else the child's own
#: namespaces), "bwrap", "namespaces" (never bwrap), or "guard-only" (the socket guard
#: alone: an explicit, reported opt-out).
ISOLATIONS = ("auto", "bwrap", "namespaces", "guard-only")


# Error kinds.
AGENT_IMPORT, AGENT_CRASH, JOURNAL_ERROR, USAGE_ERROR, INTERNAL_ERROR = (
    "agent_import",
    "agent_crash",
    "journal",
    "usage",
    "internal",
)


#: Progress phases: "verify" (the parent's), "load" (bytes of the journal indexed), "fast-forward", "replay".
PHASES = ("verify", "load", "fast-forward", "replay")
#: What a child's ``result`` may claim (the parent decides from its own comparison).
RESULT_STATUSES = ("match", "diverged", "verification_failed", "unused_events", "unrecorded_call")
ERROR_KINDS = (AGENT_IMPORT, AGENT_CRASH, JOURNAL_ERROR, USAGE_ERROR, INTERNAL_ERROR)

#: Sizes the child keeps to (it cuts longer text itself) and the parent holds it to.
MAX_LINE = 64 << 20  # any line: events batch under 4 MiB, but one event may be as large as a journal line allows
SHORT_TEXT = 200  # names: an operation, a layer, a mechanism, a kind
TEXT = 4096  # a refusal's target and where, a layer's detail, a reason, one traceback line
LONG_TEXT = 64 << 10  # a summary, an error message
JOURNAL_TEXT = 16 << 20  # text taken from the journal (a step id, a reason quoting a payload): a journal line's limit
MAX_REFUSALS = 1000  # refusals kept (the guard's list, the parent's): the rest are counted
TRACEBACK_LINES = 200
LINE_LIMITS = {
    HELLO: 4 << 20,
    START: 4 << 10,
    PROGRESS: 4 << 10,
    REFUSAL: 16 << 10,
    ERROR: 2 << 20,
    RESULT: 32 << 20,
}

_COUNT = Integer()
_SEQ = Nullable(Integer())
_SECONDS = Nullable(Number())
_REFUSAL = Record(
    {"operation": Text(SHORT_TEXT), "target": Text(TEXT), "where": Nullable(Text(TEXT))}, optional=frozenset({"where"})
)
_LAYER = Record({"name": Text(SHORT_TEXT), "in_force": Boolean(), "detail": Text(TEXT)})
_SANDBOX_REPORT = Record({"mechanism": Text(SHORT_TEXT), "layers": ListOf(_LAYER, 64), "summary": Text(LONG_TEXT)})
ISOLATION_SHAPE = Record(
    {
        "network_namespace": Boolean(),
        "namespace_method": Nullable(Text(SHORT_TEXT)),
        "socket_guard": Boolean(),
        "allowed_hosts": ListOf(Text(TEXT), 10_000),
        "reason": Nullable(Text(LONG_TEXT)),
        "sandbox": Nullable(_SANDBOX_REPORT),
        "summary": Text(LONG_TEXT),
    }
)
_EVENT_REF = Record(
    {
        "seq": _SEQ,
        "kind": Text(JOURNAL_TEXT),
        "step_id": Nullable(Text(JOURNAL_TEXT)),
        "parent_event_id": Nullable(Text(JOURNAL_TEXT)),
        "key_name": Text(SHORT_TEXT),
        "key": AnyJson(),
        "event_id": Nullable(Text(JOURNAL_TEXT)),
    }
)
#: ``report.DivergenceReport.to_json()``.
REPORT_SHAPE = Record(
    {
        "seq": Integer(),
        "reason": Text(JOURNAL_TEXT),
        "expected": Nullable(_EVENT_REF),
        "actual": Nullable(_EVENT_REF),
        "state_before": Nullable(Text(JOURNAL_TEXT)),
        "step": Nullable(Text(JOURNAL_TEXT)),
        "mismatched": ListOf(Text(SHORT_TEXT), 16),
        "expected_payload": AnyJson(),
        "actual_payload": AnyJson(),
        "payload_diff": AnyObject(),
        "diff_lines": ListOf(Text(JOURNAL_TEXT), 1_000_000),
        "causal_chain": ListOf(_EVENT_REF, 1_000_000),
        "agent_traceback": ListOf(Text(JOURNAL_TEXT), TRACEBACK_LINES),
    }
)
_STOPPED = Record(
    {"kind": Nullable(Text(JOURNAL_TEXT)), "key": AnyJson(), "request": AnyJson(), "message": Text(LONG_TEXT)},
    optional=frozenset({"message"}),
)
_EXPERIMENT = Record(
    {
        "mode": Text(SHORT_TEXT, MODES),
        "identical": Boolean(),
        "summary": Text(JOURNAL_TEXT),
        "stopped": Nullable(_STOPPED),
        "first_difference": Nullable(AnyObject()),
        "first_decision": Nullable(AnyObject()),
        "first_live_observation": Nullable(AnyObject()),
        "alignment": AnyObject(),
    }
)
_UNUSED = Record({"count": _COUNT, "first_seq": _SEQ, "kinds": MapOf(_COUNT, 10_000, JOURNAL_TEXT)})
_LIVE_CALL = Record({"seq": Integer(), "kind": Text(SHORT_TEXT), "key": AnyJson()})
#: The fields of each message type (``type`` aside): the table of the module docstring, checked.
MESSAGE_SHAPES: dict[str, Record] = {
    HELLO: Record(
        {
            "protocol": Integer(PROTOCOL_VERSION, PROTOCOL_VERSION),
            "pid": Integer(1),
            "isolation": ISOLATION_SHAPE,
            "python": Text(SHORT_TEXT),
        }
    ),
    START: Record({"resume_seq": _SEQ}),
    EVENTS: Record({"items": ListOf(AnyJson(), 1 << 20)}),  # the referee checks each item (referee.py)
    PROGRESS: Record({"phase": Text(SHORT_TEXT, PHASES), "consumed": _COUNT, "total": _COUNT, "seq": _SEQ}),
    REFUSAL: _REFUSAL,
    DIVERGENCE: Record({"report": REPORT_SHAPE}),
    RESULT: Record(
        {
            "status": Text(SHORT_TEXT, RESULT_STATUSES),
            "consumed": _COUNT,
            "total": _COUNT,
            "refusals": ListOf(_REFUSAL, MAX_REFUSALS),
            "elapsed_s": Number(),
            "replay_s": Number(),
            "replay_cpu_s": _SECONDS,
            "events_per_s": _SECONDS,
            "unused": Nullable(_UNUSED),
            "verification": Nullable(AnyObject()),
            "out": Nullable(Text(TEXT)),
            "experiment": Nullable(_EXPERIMENT),
            "live_calls": ListOf(_LIVE_CALL, 1 << 20),
            "first_seq": Integer(1),
            "from_seq": _SEQ,
            "resumed_from_snapshot": _SEQ,
            "state_checks": _COUNT,
            "observations_served": _COUNT,
            "last_seq": _SEQ,
            "first_event_cpu_s": _SECONDS,
            "child_cpu_s": Number(),
            "phases": MapOf(Record({"cpu_s": Number(), "wall_s": Number()}), 16, SHORT_TEXT),
        },
        optional=frozenset({"resumed_from_snapshot", "state_checks", "observations_served", "last_seq", "phases"}),
    ),
    ERROR: Record(
        {
            "kind": Text(SHORT_TEXT, ERROR_KINDS),
            "message": Text(LONG_TEXT),
            "traceback": ListOf(Text(TEXT), TRACEBACK_LINES),
        }
    ),
}


class ProtocolError(Exception):
    """A line on the protocol pipe that is not a message this version knows; ``field`` names the field
    that is wrong, when one is."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ReplaySpec:
    """Everything the child needs, sent as JSON in argv."""

    journal: str
    agent: str | None = None  # "module:attr"; None = the one run.started recorded
    mode: str = STRICT
    from_seq: int | None = None
    strict: bool = True  # unused events at the end fail the replay
    verify_hash_chain: bool = True  # the parent verifies the chain before the child starts
    fail_on_unused_events: bool = False
    out: str | None = None  # experiment journal
    shuffle_seed: int | None = None  # shuffle mode: the seed of the permuted completion order
    model_config: str | None = None  # live model plugin config (model-live)
    tools_config: str | None = None  # live tool plugin config (tools-live)
    allow_hosts: list[str] = field(default_factory=list)
    isolation: str = "auto"  # one of ISOLATIONS
    require_isolation: bool = False  # a missing sandbox layer fails the run (exit 2)
    pass_env: list[str] = field(default_factory=list)  # environment variables the child may see
    sandbox: dict[str, Any] | None = None  # the SandboxPolicy the runner made (set by the runner)
    broker_fd: int = -1  # experiments: the child's end of the broker socketpair (live calls go through the parent)
    wait_for_go: bool = False  # read "go" on stdin before loading the agent (the parent verifies meanwhile)
    journal_verified: bool = False  # "go" comes only after the parent verified every line: the tape may trust them
    sys_path: list[str] = field(default_factory=list)  # prepended, so fixture agents import
    protocol_fd: int = -1
    progress_interval_s: float = 0.05

    def to_argv(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_argv(cls, text: str) -> "ReplaySpec":
        data = orjson.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ProtocolError(f"unknown spec fields: {', '.join(sorted(unknown))}")
        return cls(**data)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (ending in "…" when cut): what the child sends fits the shapes."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def encode(message_type: str, **fields_: Any) -> bytes:
    """One protocol line."""
    return orjson.dumps({"type": message_type, **fields_}, option=orjson.OPT_NON_STR_KEYS) + b"\n"


def encode_deep(value: Any) -> bytes:
    """JSON of a value orjson refuses only for its depth (over 255 levels)."""
    import json

    from ..journal.depth import deep_enough

    with deep_enough():
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _deep_or_none(line: bytes) -> Any:
    import json

    from ..journal.depth import deep_enough

    if b"\n" in line.rstrip(b"\n") or len(line) > MAX_LINE:
        return None
    try:
        with deep_enough():
            return json.loads(line)
    except (ValueError, RecursionError):
        return None


def decode(line: bytes) -> dict[str, Any]:
    """Parse one protocol line and check it against its type's shape (``MESSAGE_SHAPES``): every field,
    its type and its size. ProtocolError names the message type and the field when anything is off."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        message = _deep_or_none(line)  # orjson stops at a nesting depth the journal reader allows
        if message is None:
            raise ProtocolError(f"not JSON: {error}: {line[:120]!r}") from None
    if type(message) is not dict:
        raise ProtocolError(f"not a protocol message (a JSON object with a type): {line[:120]!r}")
    kind = message.get("type")
    if type(kind) is not str or kind not in MESSAGE_TYPES:
        expected = "one of " + ", ".join(sorted(MESSAGE_TYPES))
        raise ProtocolError(ShapeError("type", expected, kind).args[0], field="type")
    limit = LINE_LIMITS.get(kind, MAX_LINE)
    if len(line) > limit:
        raise ProtocolError(f"{kind} message: {len(line):,} bytes, over the {limit:,} a {kind} message may have")
    fields_ = {name: value for name, value in message.items() if name != "type"}
    try:
        MESSAGE_SHAPES[kind].check(fields_, "")
    except ShapeError as error:
        raise ProtocolError(f"{kind} message: {error}", field=error.field) from None
    return message


class MessageOrder:
    """The order of the module docstring, held: ``hello`` first and once (the child sends it before any
    agent code runs: a later one is forged), ``start`` at most once and ``events`` only after it, at most
    one ``divergence``, and nothing after the ``result`` or ``error`` that ends the run."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.ended_by: str | None = None

    def admit(self, kind: str) -> None:
        """Raise ProtocolError when a ``kind`` message cannot come now; else note it."""
        if self.ended_by is not None:
            raise ProtocolError(f"a {kind} message after the {self.ended_by} message that ended the run")
        if HELLO not in self.seen and kind != HELLO:
            raise ProtocolError(f"a {kind} message before the child's hello")
        if kind in (HELLO, START, DIVERGENCE) and kind in self.seen:
            raise ProtocolError(f"a second {kind} message (only the first one counts)")
        if kind == EVENTS and START not in self.seen:
            raise ProtocolError("events before the child started the replay (no start message)")
        if kind in (RESULT, ERROR):
            self.ended_by = kind
        self.seen.add(kind)
