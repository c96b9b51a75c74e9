"""Align two journals of the same agent and find where their trajectories part.

Alignment works in two levels, so an inserted or removed step does not shift
every later comparison:

1. steps are aligned by ``step_id`` (run-level events by kind and occurrence),
   in order of first appearance, with a longest-matching-blocks diff;
2. inside a pair of steps, events are aligned by (kind, key) - the key being the
   call_key, request_hash, state hash or source - and what is left over is paired
   by kind, in order.

A pair is "same" when kind, step_id, parent (through the alignment: the partner of
A's parent must be B's parent), key and logical payload all agree. Event ids,
seqs, hashes and diagnostic fields never count. ``replay-tui diff`` prints the first
difference and a summary; experiments use ``first_difference`` to report the first
decision where two runs differ; the app's comparison screen uses ``align_journals``.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Sequence

import orjson

from ..journal import Event, Journal, JournalError, canonical_json
from ..journal.canonical import canonical_json_of_parsed
from ..journal.collector import collector_paused
from ..journal.levels import recorded_level
from ..journal.model import (
    DIAGNOSTIC_FIELDS,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    strip_diagnostics,
)
from ..journal.progress import CancelCheck
from ..journal.safe_text import safe_line
from .report import EventRef, key_of, structural_diff, without_derived_keys

PairStatus = Literal["same", "changed", "only_a", "only_b"]
#: run.started fields that describe how a run was set up, not what the agent did: they are
#: listed as setup differences, never as the first difference of two trajectories.
SETUP_FIELDS = frozenset({"agent", "environment", "harness"})
#: The kinds where an agent decides something; experiments report the first of these that differs.
DECISION_KINDS = frozenset({MODEL_REQUEST, MODEL_RESPONSE, TOOL_CALL})


@dataclass(frozen=True)
class AlignedPair:
    """One row of the alignment: an event of A, of B, or of both."""

    a: Event | None
    b: Event | None
    status: PairStatus
    differs_in: tuple[str, ...] = ()  # kind, step_id, parent, key, payload

    @property
    def step_id(self) -> str | None:
        event = self.a or self.b
        return event.step_id if event else None

    @property
    def kind(self) -> str:
        event = self.a or self.b
        return event.kind if event else "?"

    def describe(self) -> str:
        a = f"A seq={self.a.seq}" if self.a else "not in A"
        b = f"B seq={self.b.seq}" if self.b else "not in B"
        return f"{a} / {b} ({safe_line(self.step_id, 80) if self.step_id else 'run level'}): {safe_line(self.kind)}"

    def payload_diff(self) -> tuple[dict[str, Any], list[str]]:
        """deepdiff of the logical payloads (A -> B)."""
        return structural_diff(
            strip_diagnostics(self.a.payload) if self.a else None,
            strip_diagnostics(self.b.payload) if self.b else None,
        )

    def to_json(self, with_diff: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "step_id": self.step_id,
            "kind": self.kind,
            "differs_in": list(self.differs_in),
            "a": EventRef.of(self.a).to_json() if self.a else None,
            "b": EventRef.of(self.b).to_json() if self.b else None,
        }
        if with_diff:
            data["payload_diff"], data["diff_lines"] = self.payload_diff()
        return data


@dataclass
class Alignment:
    """The aligned rows of two journals, in trajectory order."""

    pairs: list[AlignedPair]
    a_events: int
    b_events: int
    a_label: str = "A"
    b_label: str = "B"
    setup: list[str] = field(default_factory=list)  # run.started setup fields that differ
    _differences: list[AlignedPair] | None = field(default=None, repr=False)

    @property
    def differences(self) -> list[AlignedPair]:
        if self._differences is None:
            self._differences = [pair for pair in self.pairs if pair.status != "same"]
        return self._differences

    @property
    def identical(self) -> bool:
        return not self.differences

    def first_difference(self, kinds: Iterable[str] | None = None) -> AlignedPair | None:
        """The first row that differs, optionally only among ``kinds``."""
        wanted = frozenset(kinds) if kinds is not None else None
        for pair in self.differences:
            if wanted is None or pair.kind in wanted:
                return pair
        return None

    def summary(self) -> dict[str, Any]:
        statuses = Counter(pair.status for pair in self.differences)
        kinds = Counter(pair.kind for pair in self.differences)
        steps: list[str] = []
        for pair in self.differences:
            step = pair.step_id or "(run level)"
            if step not in steps:
                steps.append(step)
        return {
            "a_events": self.a_events,
            "b_events": self.b_events,
            "aligned": len(self.pairs),
            "differences": len(self.differences),
            "changed": statuses.get("changed", 0),
            "only_a": statuses.get("only_a", 0),
            "only_b": statuses.get("only_b", 0),
            "by_kind": dict(kinds.most_common()),
            "steps": steps,
            "setup_differences": self.setup,
        }

    def to_json(self) -> dict[str, Any]:
        first = self.first_difference()
        return {
            "a": self.a_label,
            "b": self.b_label,
            "identical": self.identical,
            "first_difference": first.to_json(with_diff=True) if first else None,
            "summary": self.summary(),
            "differences": [pair.to_json() for pair in self.differences],
        }

    def to_text(self, max_steps: int = 12) -> str:
        lines = [f"A: {self.a_label} ({self.a_events} events)", f"B: {self.b_label} ({self.b_events} events)"]
        if self.setup:
            lines.append("Run setup differs (not counted as a difference): " + ", ".join(self.setup))
        first = self.first_difference()
        if first is None:
            lines.append("No difference: every event aligns on kind, step, parent, key and logical payload.")
            return "\n".join(lines)
        lines.append(f"First difference: {first.describe()}")
        width = max(len(first.a.kind) if first.a else 0, len(first.b.kind) if first.b else 0)
        lines.append(f"  A: {EventRef.of(first.a).label(width) if first.a else 'nothing'}")
        lines.append(f"  B: {EventRef.of(first.b).label(width) if first.b else 'nothing'}")
        if first.differs_in:
            lines.append(f"  differs in: {', '.join(first.differs_in)}")
        diff_lines = without_derived_keys(first.payload_diff()[1])
        if diff_lines:
            lines.append("  payload diff (A -> B, logical payloads):")
            lines.extend(f"    {safe_line(line, 400)}" for line in diff_lines[:40])
            if len(diff_lines) > 40:
                lines.append(f"    … and {len(diff_lines) - 40} more")
        summary = self.summary()
        rest = summary["differences"] - 1
        lines.append(
            f"Summary: {summary['differences']} difference(s) ({rest} after the first): "
            f"{summary['changed']} changed, {summary['only_a']} only in A, {summary['only_b']} only in B."
        )
        lines.append(
            "  by kind: " + ", ".join(f"{safe_line(kind)} {count}" for kind, count in summary["by_kind"].items())
        )
        steps = [safe_line(step, 60) for step in summary["steps"]]
        shown = ", ".join(steps[:max_steps]) + (
            f", … ({len(steps) - max_steps} more)" if len(steps) > max_steps else ""
        )
        lines.append(f"  steps: {shown}")
        return "\n".join(lines)


# -- alignment ----------------------------------------------------------------------


def read_events(journal: Journal, cancelled: CancelCheck | None = None) -> list[Event]:
    """All events of a journal; the first unreadable line raises (naming file and line)."""
    events: list[Event] = []
    for position, item in enumerate(journal.events()):
        if isinstance(item, JournalError):
            raise item
        if cancelled is not None and position % 4096 == 0 and cancelled():
            raise InterruptedError("comparison cancelled")
        events.append(item)
    return events


def align_journals(a: Journal, b: Journal, cancelled: CancelCheck | None = None) -> Alignment:
    """Align two indexed journals (see the module docstring)."""
    with collector_paused():  # hundreds of thousands of small dicts: the cyclic collector only slows this down
        a_events, b_events = read_events(a, cancelled), read_events(b, cancelled)
        alignment = align_events(a_events, b_events)
    alignment.a_label, alignment.b_label = str(a.path), str(b.path)
    return alignment


def align_events(a_events: Sequence[Event], b_events: Sequence[Event]) -> Alignment:
    """Align two event sequences in order; the reusable core of ``align_journals``."""
    rows = align_rows(a_events, b_events)
    return Alignment(_judge(rows), len(a_events), len(b_events), setup=setup_differences(a_events, b_events))


def align_rows(a_events: Sequence[Event], b_events: Sequence[Event]) -> list[tuple[Event | None, Event | None]]:
    """Which event of A goes with which of B (either may be None), in trajectory order; not judged yet."""
    a_steps, b_steps = _group_by_step(a_events), _group_by_step(b_events)
    a_keys, b_keys = [key for key, _ in a_steps], [key for key, _ in b_steps]
    rows: list[tuple[Event | None, Event | None]] = []
    if a_keys == b_keys:
        for (_, a_group), (_, b_group) in zip(a_steps, b_steps):
            rows.extend(_align_within_step(a_group, b_group))
    else:
        matcher = difflib.SequenceMatcher(a=a_keys, b=b_keys, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for offset in range(i2 - i1):
                    rows.extend(_align_within_step(a_steps[i1 + offset][1], b_steps[j1 + offset][1]))
            else:
                rows.extend((event, None) for _, group in a_steps[i1:i2] for event in group)
                rows.extend((None, event) for _, group in b_steps[j1:j2] for event in group)
    return rows


def _group_by_step(events: Sequence[Event]) -> list[tuple[str, list[Event]]]:
    """Events grouped by step, in order of the step's first event. Run-level events stand alone."""
    groups: dict[str, list[Event]] = {}
    run_level: Counter[str] = Counter()
    for event in events:
        if event.step_id is None:
            run_level[event.kind] += 1
            key = f"\0run:{event.kind}:{run_level[event.kind]}"
        else:
            key = event.step_id
        groups.setdefault(key, []).append(event)
    return list(groups.items())


def _token(event: Event) -> tuple[str, Any]:
    label, key = key_of(event.kind, event.payload)
    return event.kind, key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)


def _align_within_step(a_group: list[Event], b_group: list[Event]) -> list[tuple[Event | None, Event | None]]:
    a_tokens, b_tokens = [_token(e) for e in a_group], [_token(e) for e in b_group]
    if a_tokens == b_tokens:
        return list(zip(a_group, b_group))
    rows: list[tuple[Event | None, Event | None]] = []
    matcher = difflib.SequenceMatcher(a=a_tokens, b=b_tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(zip(a_group[i1:i2], b_group[j1:j2]))
        else:
            rows.extend(_pair_by_kind(a_group[i1:i2], b_group[j1:j2]))
    return rows


def _pair_by_kind(a_part: list[Event], b_part: list[Event]) -> list[tuple[Event | None, Event | None]]:
    """Leftovers: pair equal kinds in order; keep each side's order in the output."""
    rows: list[tuple[Event | None, Event | None]] = []
    j = 0
    for a_event in a_part:
        match = next((k for k in range(j, len(b_part)) if b_part[k].kind == a_event.kind), None)
        if match is None:
            rows.append((a_event, None))
            continue
        rows.extend((None, b_event) for b_event in b_part[j:match])
        rows.append((a_event, b_part[match]))
        j = match + 1
    rows.extend((None, b_event) for b_event in b_part[j:])
    return rows


def _judge(
    rows: list[tuple[Event | None, Event | None]],
    partner_id: dict[str, str] | None = None,
    partner_seq: dict[int, int] | None = None,
) -> list[AlignedPair]:
    """Each row as an AlignedPair; ``partner_id``/``partner_seq`` (updated here) hold pairs aligned before these rows."""
    partner_id = {} if partner_id is None else partner_id
    partner_seq = {} if partner_seq is None else partner_seq
    partner_id.update((a.event_id, b.event_id) for a, b in rows if a is not None and b is not None)
    partner_seq.update((a.seq, b.seq) for a, b in rows if a is not None and b is not None)
    pairs = []
    for a, b in rows:
        if a is None:
            pairs.append(AlignedPair(None, b, "only_b"))
        elif b is None:
            pairs.append(AlignedPair(a, None, "only_a"))
        else:
            differs = _differences(a, b, partner_id, partner_seq)
            pairs.append(AlignedPair(a, b, "changed" if differs else "same", differs))
    return pairs


_PATCH_FIELDS = frozenset({"patch", "reducer_version"})
_RESUME = frozenset({"resume"})


def _without(payload: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key not in names}


def setup_differences(a_events: Sequence[Event], b_events: Sequence[Event]) -> list[str]:
    """Which run-setup fields of run.started differ (agent, environment.*, harness.*)."""
    if not a_events or not b_events or a_events[0].kind != RUN_STARTED or b_events[0].kind != RUN_STARTED:
        return []
    a, b = _with_level(a_events[0].payload), _with_level(b_events[0].payload)
    found: list[str] = []
    for name in sorted(SETUP_FIELDS):
        a_value, b_value = a.get(name), b.get(name)
        if isinstance(a_value, dict) and isinstance(b_value, dict):
            found.extend(
                f"{name}.{key}"
                for key in sorted(set(a_value) | set(b_value))
                if not _same_json(a_value.get(key), b_value.get(key))
            )
        elif not _same_json(a_value, b_value):
            found.append(name)
    return found


def _with_level(run_started: dict[str, Any]) -> dict[str, Any]:
    """``run.started`` with its level said, so a journal written before levels compares as ``trace``."""
    harness = run_started.get("harness")
    if not isinstance(harness, dict):
        return run_started
    return {**run_started, "harness": {**harness, "level": recorded_level(run_started)}}


def _logical(payload: dict[str, Any]) -> dict[str, Any]:
    """``strip_diagnostics`` for a comparison, which only reads it: the payload itself when it has none."""
    for name in DIAGNOSTIC_FIELDS:
        if name in payload:
            return strip_diagnostics(payload)
    return payload


def _same_json(a: Any, b: Any) -> bool:
    """Equal in canonical (RFC 8785) form, as the hash chain sees them: ``3`` is ``3.0``, key order never
    counts, ``true`` is not ``1``. Any depth the reader accepts (canonical_json is iterative). Two values
    parsed from JSON that orjson writes alike are the same value: two runs of one agent mostly agree, member
    for member, and that test costs neither the sort nor the canonical spelling's checks."""
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except (TypeError, orjson.JSONEncodeError):
        pass  # deeper than orjson writes: the canonical form says
    try:
        return canonical_json_of_parsed(a) == canonical_json_of_parsed(b)
    except RecursionError:
        return canonical_json(a) == canonical_json(b)


def _differences(
    a: Event, b: Event, partner_id: dict[str, str], partner_seq: dict[int, int], alike: bool = False
) -> tuple[str, ...]:
    """What differs in an aligned pair (kind, step_id, parent, key, payload). ``alike``: the two payloads are the
    same bytes (``journal_diff`` knows it from the lines): equal, but for a transition's cause, compared through
    the alignment."""
    found = []
    if a.kind != b.kind:
        found.append("kind")
    if a.step_id != b.step_id:
        found.append("step_id")
    if (partner_id.get(a.parent_event_id) if a.parent_event_id else None) != b.parent_event_id:
        found.append("parent")
    if a.kind != RUN_STARTED and key_of(a.kind, a.payload) != key_of(b.kind, b.payload):
        found.append("key")
    if alike:
        if a.kind == STATE_TRANSITION and b.kind == STATE_TRANSITION:
            cause = a.payload.get("cause_seq")
            if not _same_json(partner_seq.get(cause), cause):  # type: ignore[arg-type]
                found.append("payload")
        return tuple(found)
    a_payload, b_payload = _payload_parts(a, b)
    if a.kind == STATE_TRANSITION and b.kind == STATE_TRANSITION:
        # cause_seq is a position: compare it through the alignment, like parents
        a_payload = dict(a_payload, cause_seq=partner_seq.get(a_payload.get("cause_seq")))  # type: ignore[arg-type]
    if not _same_json(a_payload, b_payload):
        found.append("payload")
    return tuple(found)


def _payload_parts(a: Event, b: Event) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two payloads as compared: logical (no diagnostics), without what only describes the set-up (run.started),
    how a patch was written when both transitions reach the same states, and a snapshot's resume bookkeeping.
    A transition's ``cause_seq`` is the caller's: it is compared through the alignment, like parents."""
    a_payload, b_payload = _logical(a.payload), _logical(b.payload)
    if a.kind == RUN_STARTED and b.kind == RUN_STARTED:
        a_payload, b_payload = _without(a_payload, SETUP_FIELDS), _without(b_payload, SETUP_FIELDS)
    if a.kind == STATE_TRANSITION and b.kind == STATE_TRANSITION:
        if a_payload.get("before_hash") == b_payload.get("before_hash") and a_payload.get(
            "after_hash"
        ) == b_payload.get("after_hash"):
            # same states: how the patch was written (op order) and the reducer's label do not matter
            a_payload, b_payload = _without(a_payload, _PATCH_FIELDS), _without(b_payload, _PATCH_FIELDS)
    if a.kind == STATE_SNAPSHOT and b.kind == STATE_SNAPSHOT:
        # "resume" is bookkeeping for a restart (step count, causal cursor as seqs)
        a_payload, b_payload = _without(a_payload, _RESUME), _without(b_payload, _RESUME)
    return a_payload, b_payload
