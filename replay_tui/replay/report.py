"""The divergence report: where a replay left the recording, and why.

The text form keeps exactly the shape DESIGN.md gives::

    Replay divergence at seq=12
    expected: tool.result callKey=sha256:aaa…
    actual:   tool.call   callKey=sha256:bbb…
    state before: sha256:ccc…
    step: step-05

followed by the structural diff (deepdiff) of the expected and actual logical
payloads and the causal chain that led to the step. ``to_json`` is the same
report as one object; ``from_json`` rebuilds it on the parent side of the pipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..journal import Event, Journal, JournalError, hash_value
from ..journal.model import (
    CLOCK_READ,
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    RANDOM_DRAW,
    RUN_ENDED,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
    strip_diagnostics,
)
from ..journal.safe_text import safe, safe_line, safe_value

HASH_SHOWN = 16  # hex digits of a hash shown in the text form; --json has them whole
CHAIN_LIMIT = 10_000  # causes followed back (the JSON form keeps them all)
CHAIN_SHOWN = 12
#: Keys computed from the rest of the payload: in the text diff they are left out when the
#: fields they were computed from are shown (the JSON diff keeps everything).
DERIVED_KEYS = ("call_key", "request_hash")  # the text form shows the root and the last causes

# kind -> (label in the report, payload field that is the event's key)
_KEYS: dict[str, tuple[str, str]] = {
    TOOL_CALL: ("callKey", "call_key"),
    TOOL_RESULT: ("callKey", "call_key"),
    MODEL_REQUEST: ("requestHash", "request_hash"),
    MODEL_RESPONSE: ("requestHash", "request_hash"),
    STATE_TRANSITION: ("afterHash", "after_hash"),
    STATE_SNAPSHOT: ("stateHash", "state_hash"),
    CLOCK_READ: ("source", "source"),
    RANDOM_DRAW: ("source", "source"),
    INPUT_RECEIVED: ("role", "role"),
    RUN_STARTED: ("agent", "agent"),
    RUN_ENDED: ("status", "status"),
}


def key_of(kind: str, payload: dict[str, Any]) -> tuple[str, Any]:
    """(label, value) of the field that identifies an event of this kind."""
    label, name = _KEYS.get(kind, ("key", ""))
    return label, payload.get(name) if name else None


def short(value: Any) -> str:
    """A key or hash for the text form: one escaped line (journal text is hostile), hashes cut short."""
    text = str(value)
    if text.startswith("sha256:") and len(text) == 71:
        return text[: 7 + HASH_SHOWN] + "…"
    return safe_line(text, 80)


@dataclass
class EventRef:
    """An event as a report shows it: enough to find it and to see its key."""

    seq: int | None
    kind: str
    step_id: str | None
    parent_event_id: str | None
    key_name: str
    key: Any
    event_id: str | None = None

    @classmethod
    def of(cls, event: Event) -> "EventRef":
        name, key = key_of(event.kind, event.payload)
        return cls(event.seq, event.kind, event.step_id, event.parent_event_id, name, key, event.event_id)

    @classmethod
    def of_produced(cls, produced: dict[str, Any]) -> "EventRef":
        name, key = key_of(produced["kind"], produced.get("payload") or {})
        return cls(
            produced.get("seq"), produced["kind"], produced.get("step_id"), produced.get("parent_event_id"), name, key
        )

    def label(self, width: int = 0) -> str:
        return f"{safe_line(self.kind):<{width}} {self.key_name}={short(self.key)}"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "EventRef | None":
        if data is None:
            return None
        names = ("seq", "kind", "step_id", "parent_event_id", "key_name", "key", "event_id")
        fields: dict[str, Any] = {name: data.get(name) for name in names}  # JSON from a report file: untyped
        return cls(**fields)


@dataclass
class DivergenceReport:
    """The first point where the agent and the journal disagree."""

    seq: int
    reason: str
    expected: EventRef | None  # None: the journal has nothing at this seq
    actual: EventRef | None  # None: the agent stopped before producing it
    state_before: str | None
    step: str | None
    mismatched: list[str] = field(default_factory=list)  # kind, step_id, parent, key
    expected_payload: Any = None
    actual_payload: Any = None
    payload_diff: dict[str, Any] = field(default_factory=dict)  # deepdiff, JSON form
    diff_lines: list[str] = field(default_factory=list)  # deepdiff, human form
    causal_chain: list[EventRef] = field(default_factory=list)  # root first
    agent_traceback: list[str] = field(default_factory=list)  # when the agent's run ended on an exception

    def to_text(self) -> str:
        width = max(len(self.expected.kind) if self.expected else 0, len(self.actual.kind) if self.actual else 0)
        expected = (
            self.expected.label(width) if self.expected else f"nothing (the journal has no event at seq {self.seq})"
        )
        actual = self.actual.label(width) if self.actual else "nothing (the agent produced no event here)"
        lines = [
            f"Replay divergence at seq={self.seq}",
            f"expected: {expected}",
            f"actual:   {actual}",
            f"state before: {short(self.state_before) if self.state_before else 'unknown'}",
            f"step: {safe_line(self.step, 200) if self.step else '(run level)'}",
            "",
            f"why: {safe(self.reason, multiline=True)}",
        ]
        if self.diff_lines:
            lines.append("payload diff (expected -> actual, logical payloads):")
            lines.extend(f"  {safe_line(line, 400)}" for line in self.diff_lines)
        if self.agent_traceback:
            lines.append("the agent raised (last traceback lines):")
            lines.extend(f"  {safe_line(line)}" for line in self.agent_traceback)
        if self.causal_chain:
            chain = self.causal_chain
            lines.append(f"causal chain (root first, {len(chain)} events):")
            shown = chain if len(chain) <= CHAIN_SHOWN else [chain[0], None, *chain[-(CHAIN_SHOWN - 1) :]]
            for ref in shown:
                if ref is None:
                    lines.append(f"  … {len(chain) - CHAIN_SHOWN} earlier causes (see --json) …")
                else:
                    step = safe_line(ref.step_id, 40) if ref.step_id else "(run)"
                    lines.append(
                        f"  seq={ref.seq:<6} {safe_line(ref.kind):<16} {step:<10} {ref.key_name}={short(ref.key)}"
                    )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["expected"] = self.expected.to_json() if self.expected else None
        data["actual"] = self.actual.to_json() if self.actual else None
        data["causal_chain"] = [ref.to_json() for ref in self.causal_chain]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "DivergenceReport":
        """Rebuild from ``to_json`` output; fields this version does not know are ignored."""
        values = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        values["expected"] = EventRef.from_json(data.get("expected"))
        values["actual"] = EventRef.from_json(data.get("actual"))
        values["causal_chain"] = [EventRef.from_json(ref) for ref in data.get("causal_chain") or []]
        return cls(**values)


def structural_diff(expected: Any, actual: Any) -> tuple[dict[str, Any], list[str]]:
    """deepdiff of two logical payloads: (JSON-safe tree, human lines). Imported on use."""
    from deepdiff import DeepDiff

    try:
        diff = DeepDiff(expected, actual, verbose_level=2)
        if not diff:
            return {}, []
        return orjson.loads(diff.to_json()), diff.pretty().splitlines()
    except (RecursionError, orjson.JSONDecodeError, TypeError):  # deeper than deepdiff or orjson go
        return _deep_structural_diff(expected, actual)


def _deep_structural_diff(expected: Any, actual: Any) -> tuple[dict[str, Any], list[str]]:
    """The deepdiff shapes (tree and lines) made without recursion, for payloads nested ~1,000 levels deep."""
    from ..analysis.diff import walk_changes

    tree: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    for change in walk_changes(expected, actual):
        path = "root" + "".join(f"[{part!r}]" for part in change.parts)
        if change.kind == "changed":
            tree.setdefault("values_changed", {})[path] = {"new_value": change.after, "old_value": change.before}
            lines.append(
                f"Value of {path} changed from {safe_value(change.before, 200)} to {safe_value(change.after, 200)}."
            )
        else:
            where = "dictionary" if isinstance(change.parts[-1], str) else "iterable"
            report = f"{where}_item_{change.kind}"
            tree.setdefault(report, {})[path] = change.after if change.kind == "added" else change.before
            lines.append(f"Item {path} {change.kind} {'to' if change.kind == 'added' else 'from'} {where}.")
    return tree, lines


def without_derived_keys(lines: list[str]) -> list[str]:
    """Drop call_key/request_hash lines when the fields they hash are in the diff too."""
    derived = [line for line in lines if any(f"root['{name}']" in line for name in DERIVED_KEYS)]
    if len(derived) == len(lines):
        return lines
    return [line for line in lines if line not in derived]


def mismatched_fields(expected: Event | None, produced: dict[str, Any] | None, parent_matches: bool) -> list[str]:
    """Which of the compared envelope fields differ (kind, step_id, parent, key)."""
    if expected is None or produced is None:
        return ["presence"]
    found = []
    if expected.kind != produced["kind"]:
        found.append("kind")
    if expected.step_id != produced.get("step_id"):
        found.append("step_id")
    if not parent_matches:
        found.append("parent")
    if key_of(expected.kind, expected.payload) != key_of(produced["kind"], produced.get("payload") or {}):
        found.append("key")
    return found


def state_before(journal: Journal, position: int, initial_state: Any = None) -> str | None:
    """The recorded state hash just before ``position``: last transition or snapshot, else the initial state."""
    for candidate in range(min(position, len(journal)) - 1, -1, -1):
        line = journal.line_bytes(candidate)
        if line and b"state." not in line and b"run.started" not in line:
            continue  # cannot be a state event: skip the parse
        event = journal.try_event(candidate)
        if not isinstance(event, Event):
            continue
        if event.kind == STATE_TRANSITION:
            return event.payload.get("after_hash")
        if event.kind == STATE_SNAPSHOT:
            return event.payload.get("state_hash")
        if event.kind == RUN_STARTED:
            return hash_value(event.payload.get("initial_state"))
    return hash_value(initial_state) if initial_state is not None else None


def causal_chain(journal: Journal, position: int | None, parent_event_id: str | None) -> list[EventRef]:
    """The chain of causes, root first, ending at the expected event (or at the actual event's parent)."""
    from ..analysis.causal import CausalIndex

    index = CausalIndex(journal)
    start = position
    if start is None and parent_event_id:
        start = index.position_of(parent_event_id)
    if start is None:
        return []
    chain = index.chain_to_root(start, limit=CHAIN_LIMIT)
    refs = []
    for pos in chain:
        event = journal.try_event(pos)
        if isinstance(event, Event):
            refs.append(EventRef.of(event))
    return refs


def build_report(
    journal: Journal,
    seq: int,
    reason: str,
    produced: dict[str, Any] | None,
    *,
    expected: Event | None = None,
    parent_matches: bool = True,
    state_hash: str | None = None,
) -> DivergenceReport:
    """Assemble the report for a divergence at ``seq``.

    ``produced`` is what the agent emitted there ({kind, step_id, parent_event_id,
    payload}), or None when it stopped short. ``expected`` defaults to the journal's
    event with that seq. ``state_hash`` is the live state hash, used when the
    journal cannot say (no transition before this point).
    """
    position: int | None = None
    if expected is None:
        position = journal.position_of_seq(seq)
        found = journal.try_event(position) if position is not None else None
        expected = found if isinstance(found, Event) else None
    else:
        position = journal.position_of_seq(expected.seq)
    expected_payload = strip_diagnostics(expected.payload) if expected else None
    actual_payload = strip_diagnostics(produced.get("payload") or {}) if produced else None
    diff_tree, diff_lines = structural_diff(expected_payload, actual_payload)
    diff_lines = without_derived_keys(diff_lines)
    before_position = position if position is not None else len(journal)
    recorded_state = state_before(journal, before_position)
    step = (expected.step_id if expected else None) or (produced.get("step_id") if produced else None)
    try:
        chain = causal_chain(journal, position, produced.get("parent_event_id") if produced else None)
    except JournalError:
        chain = []
    return DivergenceReport(
        seq=seq,
        reason=reason,
        expected=EventRef.of(expected) if expected else None,
        actual=EventRef.of_produced(dict(produced, seq=seq)) if produced else None,
        state_before=recorded_state or state_hash,
        step=step,
        mismatched=mismatched_fields(expected, produced, parent_matches),
        expected_payload=expected_payload,
        actual_payload=actual_payload,
        payload_diff=diff_tree,
        diff_lines=diff_lines,
        causal_chain=chain,
    )
