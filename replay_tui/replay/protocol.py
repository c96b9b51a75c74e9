"""The replay child protocol: what the parent sends, and the JSON lines the child streams back.

Parent to child: one ``ReplaySpec`` as a JSON string in argv
(``python -m replay_tui.replay.child SPEC_JSON``), plus the write end of a pipe whose
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
                 figures, informational), ``out``
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

A timeout or a cancel is decided by the parent, which kills the child's process
group; it never appears on the pipe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import orjson

PROTOCOL_VERSION = 2

HELLO, PROGRESS, REFUSAL, DIVERGENCE, RESULT, ERROR = "hello", "progress", "refusal", "divergence", "result", "error"
START, EVENTS = "start", "events"
MESSAGE_TYPES = frozenset({HELLO, PROGRESS, REFUSAL, DIVERGENCE, RESULT, ERROR, START, EVENTS})

#: Isolation a caller can ask for: "auto" (bubblewrap when installed, else the child's own
#: namespaces), "bwrap", "namespaces" (never bwrap), or "guard-only" (the socket guard
#: alone: an explicit, reported opt-out).
ISOLATIONS = ("auto", "bwrap", "namespaces", "guard-only")

#: Replay modes. ``strict`` and ``new-code`` serve every observation from the journal
#: in order; the other two make one group of dependencies live.
STRICT, NEW_CODE, MODEL_LIVE, TOOLS_LIVE = "strict", "new-code", "model-live", "tools-live"
MODES = (STRICT, NEW_CODE, MODEL_LIVE, TOOLS_LIVE)

# Error kinds.
AGENT_IMPORT, AGENT_CRASH, JOURNAL_ERROR, USAGE_ERROR, INTERNAL_ERROR = (
    "agent_import",
    "agent_crash",
    "journal",
    "usage",
    "internal",
)


class ProtocolError(Exception):
    """A line on the protocol pipe that is not a message this version knows."""


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

    if b"\n" in line.rstrip(b"\n") or len(line) > (64 << 20):
        return None
    try:
        with deep_enough():
            return json.loads(line)
    except (ValueError, RecursionError):
        return None


def decode(line: bytes) -> dict[str, Any]:
    """Parse and check one protocol line."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        message = _deep_or_none(line)  # orjson stops at a nesting depth the journal reader allows
        if message is None:
            raise ProtocolError(f"not JSON: {error}: {line[:120]!r}") from None
    if type(message) is not dict or message.get("type") not in MESSAGE_TYPES:
        raise ProtocolError(f"not a protocol message: {line[:120]!r}")
    return message
