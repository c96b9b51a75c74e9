"""Incident report: gather everything a teammate needs about one run, then render it.

``build_report`` collects, from the journal alone (plus an optional replay
result and the annotations sidecar): the run header and environment, the
verification result, the divergence, the causal chain to the failing step with
the state before and after each event, the state transitions of the steps on
that chain, the bookmarks and notes, and a stats overview. ``render_html`` and
``render_markdown`` (in export_html / export_markdown) turn it into one
self-contained file.

The failing step is the first divergence when a replay result is given, else the
first error (a failed tool or model call, or run.ended with status error), else
the last event. Every payload and state value shown passes through the secret
scan's ``mask_secrets``, so a report never spreads a key that redaction missed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Literal

import orjson

from .. import __version__
from ..journal import Event, Journal, VerifyReport, verify_journal
from ..journal.describe import compact, describe
from ..journal.model import (
    MODEL_RESPONSE,
    RUN_ENDED,
    RUN_STARTED,
    STATE_TRANSITION,
    TOOL_RESULT,
)
from ..journal.pointer import resolve as resolve_pointer
from ..journal.progress import CancelCheck
from .annotations import Annotation, AnnotationError, AnnotationStore, sidecar_path
from .causal import CausalIndex
from .diff import diff_values
from .secrets import mask_secrets
from .state import StateHistory
from .stats import RunStats, compute_stats

StageProgress = Callable[[str, float], None]  # (stage, fraction of the whole export done)
Format = Literal["html", "md"]

PAYLOAD_CHARS = 4000  # a payload longer than this is cut in the report (and says so)
VALUE_CHARS = 400
TRANSITION_SEARCH_AFTER = 64  # events after the failing one searched for the state changes it caused
TRANSITION_SEARCH_LIMIT = 200_000  # events searched between the chain's root and the failing event
CHAIN_LIMIT = 200  # chain events kept (the newest); older ones are summarised by a count
CHAIN_TAIL = 12  # chain events nearest the failure: shown open, and whose state changes are collected


class ExportError(Exception):
    """The report cannot be built or written; the message names the file."""


class ExportCancelled(ExportError):
    pass


# -- the report model -------------------------------------------------------------
@dataclass(frozen=True)
class EventView:
    seq: int
    kind: str
    step_id: str | None
    event_id: str
    parent_event_id: str | None
    recorded_at: str
    summary: str
    payload_json: str
    payload_truncated: bool
    is_error: bool


@dataclass(frozen=True)
class StateChange:
    pointer: str
    change: str  # added | removed | changed
    before: str  # JSON text, "" when absent
    after: str


@dataclass(frozen=True)
class ChainLink:
    event: EventView
    role: str  # root | cause | failing | effect
    state_changes: tuple[StateChange, ...]
    state_status: str

    @property
    def state_problem(self) -> bool:
        """The state could not be rebuilt here (a patch that does not apply, or builds too much)."""
        return self.state_status.startswith("problem: ")


@dataclass(frozen=True)
class FailurePoint:
    seq: int
    reason: str  # "first divergence" | "first error" | "last event"
    description: str


@dataclass
class ReplaySection:
    """A replay result as the report shows it; ``replay/parent/results.py`` reads one from ``replay --json``."""

    source: str
    status: str
    headline: str
    ok: bool | None
    isolation: str | None = None
    divergence: dict[str, Any] | None = None
    diff_lines: list[str] = field(default_factory=list)
    journal_note: str | None = None  # the result names another journal
    error: str | None = None
    expected_payload_json: str | None = None  # masked, cut to PAYLOAD_CHARS
    actual_payload_json: str | None = None


@dataclass
class AnnotationView:
    annotation: Annotation
    event: EventView | None  # None: stale (the journal at this path changed)


@dataclass
class IncidentReport:
    journal_path: str
    generated_at: str
    version: str
    run: dict[str, Any]
    environment: dict[str, Any]
    harness: dict[str, Any]
    verification: VerifyReport
    stats: RunStats
    failure: FailurePoint | None
    chain: list[ChainLink]
    chain_cut: bool  # True when the chain had more than CHAIN_LIMIT events
    step_transitions: list[ChainLink]
    overall_state: tuple[StateChange, ...]
    overall_state_range: tuple[int, int] | None
    replay: ReplaySection | None
    annotations: list[AnnotationView]
    annotations_error: str | None
    masked_values: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"Incident report: {self.run.get('run_id') or Path(self.journal_path).name}"


# -- pieces -------------------------------------------------------------------------
class _Masker:
    """Masks secrets and counts them across the whole report."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, value: Any) -> Any:
        masked, count = mask_secrets(value)
        self.count += count
        return masked


def _json_text(value: Any, limit: int) -> tuple[str, bool]:
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        text = repr(value)
    if len(text) > limit:
        return text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown)", True
    return text, False


def summarize(kind: str, payload: dict[str, Any]) -> str:
    """One line that says what an event is about (payload already masked): the describer's report style."""
    return describe(kind, payload, "report")


def is_error_event(event: Event) -> bool:
    payload = event.payload
    if event.kind in (TOOL_RESULT, MODEL_RESPONSE):
        return bool(payload.get("error"))
    return event.kind == RUN_ENDED and payload.get("status") == "error"


def view_of(event: Event, mask: Callable[[Any], Any]) -> EventView:
    payload = mask(event.logical_payload())
    text, cut = _json_text(payload, PAYLOAD_CHARS)
    return EventView(
        seq=event.seq,
        kind=event.kind,
        step_id=event.step_id,
        event_id=event.event_id,
        parent_event_id=event.parent_event_id,
        recorded_at=event.recorded_at,
        summary=summarize(event.kind, payload),
        payload_json=text,
        payload_truncated=cut,
        is_error=is_error_event(event),
    )


def state_changes(before: Any, after: Any, mask: Callable[[Any], Any]) -> tuple[StateChange, ...]:
    """Each changed JSON pointer with its value before and after (masked, cut to VALUE_CHARS)."""
    diff = diff_values(before, after)
    changes = []
    for pointer in diff.paths:
        kind = diff.kind_of(pointer) or "changed"
        values = []
        for state in (before, after):
            try:
                values.append(_json_text(mask(resolve_pointer(state, pointer)), VALUE_CHARS)[0])
            except KeyError:
                values.append("")
        changes.append(StateChange(pointer or "(whole state)", kind, values[0], values[1]))
    return tuple(changes)


def ref_label(ref: Any) -> str:
    """'tool.call callKey=sha256:…' for an EventRef in a replay result's JSON."""
    if not isinstance(ref, dict):
        return "nothing"
    key = ref.get("key")
    key_text = str(key)
    if key_text.startswith("sha256:") and len(key_text) == 71:
        key_text = key_text[:23] + "…"
    return f"{ref.get('kind')} {ref.get('key_name', 'key')}={compact(key_text, 60)}"


# -- building ---------------------------------------------------------------------
def _failure_point(
    journal: Journal, stats: RunStats, replay: ReplaySection | None
) -> tuple[FailurePoint | None, int | None]:
    """(what failed and where, its position in the journal)."""
    if len(journal) == 0:
        return None, None
    if replay is not None and replay.divergence is not None:
        seq = replay.divergence["seq"]
        position = journal.position_of_seq(seq)
        reason = replay.divergence.get("reason") or "the agent and the journal disagree here"
        if position is None:  # the agent went past the end of the recording
            position = len(journal) - 1
            reason += f" (seq {seq} is past the journal's end; the chain ends at its last event)"
        return FailurePoint(seq, "first divergence", str(reason)), position
    if stats.first_error_seq is not None:
        position = journal.position_of_seq(stats.first_error_seq)
        if position is not None:
            return FailurePoint(stats.first_error_seq, "first error", stats.first_error or "error"), position
    for position in range(len(journal) - 1, -1, -1):  # the last event that can be read
        last = journal.try_event(position)
        if isinstance(last, Event):
            return FailurePoint(
                last.seq, "last event", "no error was recorded; the chain leads to the last event"
            ), position
    return None, None


def _transitions_near_chain(
    journal: Journal, chain_events: list[Event], start: int, stop: int, cancelled: CancelCheck | None
) -> tuple[list[int], bool]:
    """Positions of state.transition events in the failing step or caused by one of ``chain_events``
    (the tail of the chain), between ``start`` and a little after ``stop``."""
    steps = {chain_events[-1].step_id} - {None}
    causes = {event.seq for event in chain_events}
    chain_positions = {journal.position_of_seq(event.seq) for event in chain_events}
    begin = max(start, stop - TRANSITION_SEARCH_LIMIT)
    end = min(len(journal), stop + TRANSITION_SEARCH_AFTER + 1)
    marker = STATE_TRANSITION.encode()
    found = []
    for position in range(begin, end):
        if cancelled is not None and position % 4096 == 0 and cancelled():
            raise ExportCancelled("export cancelled")
        if position in chain_positions or (journal.has_hash_chain and marker not in journal.line_bytes(position)):
            continue
        event = journal.try_event(position)
        if isinstance(event, Event) and event.kind == STATE_TRANSITION:
            if event.step_id in steps or event.payload.get("cause_seq") in causes:
                found.append(position)
    return found, begin > start


def _annotations(journal: Journal, mask: Callable[[Any], Any]) -> tuple[list[AnnotationView], str | None]:
    try:
        store = AnnotationStore.open(journal.path)
    except AnnotationError as error:
        return [], str(error)
    stale = {a.key for a in store.stale(journal)}
    views = []
    for annotation in store.all():
        event = None
        if annotation.key not in stale:
            position = journal.position_of_seq(annotation.seq)
            found = journal.try_event(position) if position is not None else None
            event = view_of(found, mask) if isinstance(found, Event) else None
        views.append(AnnotationView(annotation._replace(note=mask(annotation.note)), event))
    return views, None


def build_report(
    journal: Journal,
    *,
    replay: ReplaySection | None = None,
    progress: StageProgress | None = None,
    cancelled: CancelCheck | None = None,
) -> IncidentReport:
    """Collect the report for an indexed journal (``replay``: a replay result read by replay/parent/results.py).
    Raises ExportCancelled."""

    def stage(name: str, fraction: float) -> None:
        if cancelled is not None and cancelled():
            raise ExportCancelled("export cancelled")
        if progress is not None:
            progress(name, fraction)

    mask = _Masker()
    if replay is not None and replay.divergence is not None:
        for side in ("expected", "actual"):
            if replay.divergence.get(f"{side}_payload") is not None:
                text, _ = _json_text(mask(replay.divergence[f"{side}_payload"]), PAYLOAD_CHARS)
                setattr(replay, f"{side}_payload_json", text)
    stage("verifying the hash chain", 0.0)
    verification = verify_journal(journal.path)
    stage("collecting stats", 0.3)
    stats = compute_stats(journal, cancelled=cancelled)
    if not stats.complete:
        raise ExportCancelled("export cancelled")
    stage("following the causal chain", 0.7)

    first = journal.try_event(0) if len(journal) else None
    started = first.payload if isinstance(first, Event) and first.kind == RUN_STARTED else {}
    failure, failing_position = _failure_point(journal, stats, replay)
    found = (
        _collect_chain(journal, failing_position, mask, cancelled) if failing_position is not None else _ChainFindings()
    )
    stage("reading bookmarks and notes", 0.9)
    annotations, annotations_error = _annotations(journal, mask)

    ended = _run_ended(journal)
    run = {
        "run_id": stats.run_id,
        "agent": stats.agent,
        "status": stats.status or "not ended",
        "started_at": stats.started_at,
        "ended_at": stats.ended_at,
        "duration_ms": stats.duration_ms,
        "events": stats.events,
        "first_seq": stats.first_seq,
        "last_seq": stats.last_seq,
        "dialect": journal.dialect,
        "hash_chain": journal.has_hash_chain,
        "reducer_version": started.get("reducer_version"),
        "output": mask(ended.get("output")) if ended else None,
        "error": mask(ended.get("error")) if ended else None,
    }
    report = IncidentReport(
        journal_path=str(journal.path),
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        version=__version__,
        run=run,
        environment=mask(started.get("environment") or {}),
        harness=mask(started.get("harness") or {}),
        verification=verification,
        stats=stats,
        failure=failure,
        chain=found.chain,
        chain_cut=found.chain_cut,
        step_transitions=found.transitions,
        overall_state=found.overall,
        overall_state_range=found.overall_range,
        replay=replay,
        annotations=annotations,
        annotations_error=annotations_error,
        notes=found.notes,
    )
    report.masked_values = mask.count
    stage("done", 1.0)
    return report


@dataclass
class _ChainFindings:
    chain: list[ChainLink] = field(default_factory=list)
    chain_cut: bool = False
    transitions: list[ChainLink] = field(default_factory=list)
    overall: tuple[StateChange, ...] = ()
    overall_range: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)


def _collect_chain(
    journal: Journal, failing_position: int, mask: Callable[[Any], Any], cancelled: CancelCheck | None
) -> _ChainFindings:
    """The causal chain to ``failing_position`` with state diffs, the state changes near its tail,
    and the state before the tail against the state after the failing step."""
    found = _ChainFindings()
    history = StateHistory(journal)
    positions: list[int] = list(CausalIndex(journal).chain_to_root(failing_position))
    if len(positions) > CHAIN_LIMIT:
        positions, found.chain_cut = positions[-CHAIN_LIMIT:], True
    readable = [(p, e) for p, e in ((p, journal.try_event(p)) for p in positions) if isinstance(e, Event)]
    if not readable:
        found.notes.append(
            f"the failing event (line {failing_position + 1}) cannot be read, so there is no chain to show"
        )
        return found
    positions = [p for p, _ in readable]
    chain_events = [e for _, e in readable]
    orphan = chain_events[0].parent_event_id is not None and not found.chain_cut
    if orphan:
        found.notes.append(
            f"the chain stops at seq {chain_events[0].seq}: its cause {chain_events[0].parent_event_id} cannot be found or read"
        )
    for index, (position, event) in enumerate(readable):
        role = (
            "failing"
            if position == failing_position
            else "root"
            if index == 0 and not (found.chain_cut or orphan)
            else "cause"
        )
        found.chain.append(_link(history, position, event, role, mask, cancelled))
    tail_start = max(0, len(positions) - CHAIN_TAIL)
    nearby, searched_partly = _transitions_near_chain(
        journal, chain_events[tail_start:], positions[tail_start], failing_position, cancelled
    )
    if searched_partly:
        found.notes.append(
            f"state transitions were searched in the {TRANSITION_SEARCH_LIMIT:,} events before the failing one only"
        )
    for position in nearby:
        nearby_event = journal.try_event(position)
        if isinstance(nearby_event, Event):
            role = "effect" if position > failing_position else "cause"
            found.transitions.append(_link(history, position, nearby_event, role, mask, cancelled))
    first_state = history.at(positions[tail_start], cancelled)
    last_state = history.at(max([failing_position, *nearby]), cancelled)
    if first_state is None or last_state is None:
        raise ExportCancelled("export cancelled")
    found.overall = state_changes(first_state.before, last_state.after, mask)
    found.overall_range = (first_state.seq, last_state.seq)
    return found


def _link(
    history: StateHistory,
    position: int,
    event: Event,
    role: str,
    mask: Callable[[Any], Any],
    cancelled: CancelCheck | None,
) -> ChainLink:
    state = history.at(position, cancelled)
    if state is None:
        raise ExportCancelled("export cancelled")
    return ChainLink(view_of(event, mask), role, state_changes(state.before, state.after, mask), state.status)


def _run_ended(journal: Journal) -> dict[str, Any] | None:
    if not len(journal):
        return None
    last = journal.try_event(len(journal) - 1)
    return last.payload if isinstance(last, Event) and last.kind == RUN_ENDED else None


# -- writing ----------------------------------------------------------------------
def render(report: IncidentReport, fmt: Format) -> str:
    if fmt == "html":
        from .export_html import render_html

        return render_html(report)
    from .export_markdown import render_markdown

    return render_markdown(report)


def summary_line(report: IncidentReport, output: str | os.PathLike[str], size: int, fmt: str) -> str:
    """What ``export`` says after writing: the file, the failing step, the notes, what was masked."""
    failure = report.failure
    where = (
        f"; failing step seq {failure.seq} ({failure.reason}), chain of {len(report.chain)} event(s)" if failure else ""
    )
    masked = f"; {report.masked_values} secret value(s) masked" if report.masked_values else ""
    return (
        f"wrote {output} ({size / 1024:.1f} KiB, {fmt}){where}; {len(report.annotations)} bookmark(s)/note(s){masked}"
    )


def write_report(report: IncidentReport, output: str | os.PathLike[str], fmt: Format) -> int:
    """Render and write atomically; returns bytes written. Never writes over the journal or its sidecar."""
    target = Path(output)
    protected = {Path(report.journal_path).resolve(), sidecar_path(report.journal_path).resolve()}
    if target.resolve() in protected or (
        Path(report.journal_path).is_dir() and Path(report.journal_path).resolve() in target.resolve().parents
    ):
        raise ExportError(f"{target}: refusing to write the report over the journal or its annotations")
    data = render(report, fmt).encode("utf-8")
    directory = target.parent if str(target.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise ExportError(f"{target}: cannot be written ({error.strerror or error})") from None
    return len(data)
