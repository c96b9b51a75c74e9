"""`replay-tui diff` over journals of any size: walk both in step, hold only what differs.

Two runs of one agent mostly agree, event for event. While the next events of A and B have the
same kind and step they are paired as they come and judged at once (``compare._differences``, so
the verdicts are those of ``align_journals``): a pair that agrees is counted and dropped, one that
differs is kept. Only the first pair whose kind or step differs (an inserted or removed event, steps
in another order) hands the rest of both journals to the full step alignment of ``compare``, which
holds them in memory. Memory is then the differing tail, and for the usual case (the same run, or
the same run with edited values) the id maps of the pairs seen, a few dozen bytes per event.

Two big v1 journals are walked in step by worker processes, as ``verify`` checks one (``_in_parallel``):
each takes a run of positions of both, reads, checks and judges its pairs as the walk in step would, and
hands back the pairs that differ, the ids of every pair, and the parent (and a transition's cause) it
could not look up because the pair they name came before its run. The parent process settles those in
journal order with the ids of the runs before, and takes over, walking in step itself, from the first
position where a run stopped (a kind or step that differs, a line that cannot be read, the end of one
journal): the verdicts, the errors and their order are the walk's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import Any

import orjson

from ...analysis.search import iter_lines
from ...journal import Event, Journal, JournalError
from ...journal.collector import collector_paused
from ...journal.dialects import V1, to_v1
from ...journal.model import STATE_TRANSITION, validate_event
from ...journal.progress import CancelCheck
from ...journal.reader import check_duplicate_keys, parse_line
from ..compare import (
    AlignedPair,
    Alignment,
    _differences,
    _judge,
    _payload_parts,
    _same_json,
    align_rows,
    setup_differences,
)
from ..report import key_of

#: Journals this long (both) are walked by worker processes; a run of this many positions is one task.
PARALLEL_MIN_EVENTS = 50_000
CHUNK_EVENTS = 20_000


@dataclass
class StreamedAlignment(Alignment):
    """An Alignment that keeps only the pairs that differ (``pairs``) and counts the rest."""

    agreeing: int = 0  # pairs that agreed and were not kept

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        summary["aligned"] += self.agreeing
        return summary


#: The members of a line the writer wrote, in its (RFC 8785) order.
_WRITTEN_ORDER = (
    "event_hash",
    "event_id",
    "kind",
    "parent_event_id",
    "payload",
    "prev_event_hash",
    "recorded_at",
    "run_id",
    "schema_version",
    "seq",
    "step_id",
)
_PAYLOAD_STARTS, _PAYLOAD_ENDS = b',"payload":', b',"prev_event_hash":'


def _events(
    journal: Journal, cancelled: CancelCheck | None, start: int = 0, stop: int | None = None
) -> Iterator[tuple[Event, bytes | None]]:
    """Every event in order (from position ``start``, up to ``stop``), with its payload's JSON when the line
    shows it (``_read``); the first unreadable line raises, naming file and line like verify. A v1 journal is
    read in big blocks (``iter_lines``) rather than one read per event, which is most of the time of a diff;
    anything else goes through ``Journal.try_event``."""
    end = len(journal) if stop is None else min(stop, len(journal))
    if journal.dialect != V1:
        for position in range(start, end):
            item = journal.try_event(position)
            if isinstance(item, JournalError):
                raise item
            if cancelled is not None and position % 4096 == 0 and cancelled():
                raise InterruptedError("comparison cancelled")
            yield item, None
        return
    for position, line in iter_lines(journal, start, end):
        if cancelled is not None and position % 4096 == 0 and cancelled():
            raise InterruptedError("comparison cancelled")
        yield _read(journal, position, line)


_Read = tuple[Event, bytes | None]


def _pairs(
    a: Journal, b: Journal, cancelled: CancelCheck | None, start: int = 0, stop: int | None = None
) -> Iterator[tuple[_Read | None, _Read | None]]:
    """``zip_longest`` of both journals' ``_events``, A's line read first (its error comes first). A line that is
    the same bytes in both (a copy, a journal that shares lines with the other) is read and checked once."""
    if a.dialect != V1 or b.dialect != V1:
        yield from zip_longest(_events(a, cancelled, start, stop), _events(b, cancelled, start, stop))
        return
    end = min(len(a), len(b)) if stop is None else min(stop, len(a), len(b))
    for (position, a_line), (_, b_line) in zip(iter_lines(a, start, end), iter_lines(b, start, end)):
        if cancelled is not None and position % 4096 == 0 and cancelled():
            raise InterruptedError("comparison cancelled")
        a_read = _read(a, position, a_line)
        yield a_read, (a_read if b_line == a_line and a_read[1] is not None else _read(b, position, b_line))
    if stop is None or stop > end:
        longer, other = (a, b) if len(a) > len(b) else (b, a)
        for read in _events(longer, cancelled, end, stop):
            yield (read, None) if longer is a else (None, read)


def _written(obj: dict[str, Any]) -> bytes | None:
    """What orjson writes for ``obj``; None for a value nested deeper than it writes (it reads 1,024 levels)."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return None


def _read(journal: Journal, position: int, line: bytes) -> _Read:
    """The event at ``position`` from its line, and its payload's JSON when the line is its own serialization in
    the writer's member order (else None); an unreadable line raises, naming file and line like verify.

    A line that is exactly what orjson writes for it hides no duplicate key (``parse_line``'s own test), and
    its payload is the bytes between its ``"payload":`` and its ``,"prev_event_hash":``: before the payload
    only ids and a kind, after it only hashes, ids, a time and numbers, none of which can hold those bytes (a
    quote in a string is escaped). Two such payloads alike in bytes are alike: the comparison needs no
    serialization of its own."""
    path, limit = str(journal.path), journal.max_line_bytes
    payload_json = None
    try:
        try:
            obj = orjson.loads(line) if len(line) <= limit else None
        except orjson.JSONDecodeError:
            obj = None
        if type(obj) is not dict:
            obj = parse_line(line, path=path, line=position + 1, max_line_bytes=limit)  # raises: what is wrong
        elif tuple(obj) == _WRITTEN_ORDER and _written(obj) == line:
            payload_json = line[line.find(_PAYLOAD_STARTS) + len(_PAYLOAD_STARTS) : line.rfind(_PAYLOAD_ENDS)]
        else:
            check_duplicate_keys(obj, line, path=path, line=position + 1)
        upgraded = to_v1(obj)
        event = validate_event(upgraded)
        if upgraded is not obj:
            return replace(event, raw=obj), None
        return event, payload_json
    except JournalError:
        located = journal.try_event(position)  # the same error, with its shard and line number
        if isinstance(located, JournalError):
            raise located from None
        return located, None


def diff_journals(
    a: Journal,
    b: Journal,
    cancelled: CancelCheck | None = None,
    *,
    workers: int | None = None,
    chunk_events: int = CHUNK_EVENTS,
) -> StreamedAlignment:
    """The alignment of two indexed journals (see the module docstring); only differing pairs are kept.
    ``workers``: processes for the walk in step of two big v1 journals (default: one a CPU; 1: none)."""
    workers = workers or os.cpu_count() or 1
    state = _Walk()
    start = 0
    if (
        cancelled is None
        and workers > 1
        and a.dialect == V1 == b.dialect
        and min(len(a), len(b)) >= min(PARALLEL_MIN_EVENTS, 2 * chunk_events)
    ):
        start = _in_parallel(a, b, state, workers, chunk_events)
    return _walk(a, b, cancelled, state, start)


@dataclass
class _Walk:
    """What the walk in step has found so far: the id maps of the pairs seen, the pairs kept, the first events."""

    partner_id: dict[str, str] = field(default_factory=dict)
    partner_seq: dict[int, int] = field(default_factory=dict)
    kept: list[AlignedPair] = field(default_factory=list)
    agreeing: int = 0
    firsts: list[list[Event]] = field(default_factory=lambda: [[], []])


def _walk(a: Journal, b: Journal, cancelled: CancelCheck | None, state: _Walk, start: int) -> StreamedAlignment:
    """The walk in step from position ``start`` (the pairs before it are in ``state``), then the full alignment
    of what is left once kind or step differ."""
    partner_id, partner_seq, kept, firsts = state.partner_id, state.partner_seq, state.kept, state.firsts
    agreeing = state.agreeing
    a_count = b_count = start
    a_rest: list[Event] = []
    b_rest: list[Event] = []
    pairs = _pairs(a, b, cancelled, start)
    for a_read, b_read in pairs:
        (a_event, a_json), (b_event, b_json) = a_read or (None, None), b_read or (None, None)
        if a_event is not None and not firsts[0]:
            firsts[0].append(a_event)
        if b_event is not None and not firsts[1]:
            firsts[1].append(b_event)
        if a_event is None or b_event is None or a_event.kind != b_event.kind or a_event.step_id != b_event.step_id:
            a_rest = [a_event] if a_event is not None else []
            b_rest = [b_event] if b_event is not None else []
            break
        a_count, b_count = a_count + 1, b_count + 1
        differs = _differences(a_event, b_event, partner_id, partner_seq, a_json is not None and a_json == b_json)
        partner_id[a_event.event_id] = b_event.event_id
        partner_seq[a_event.seq] = b_event.seq
        if differs:
            kept.append(AlignedPair(a_event, b_event, "changed", differs))
        else:
            agreeing += 1
    if a_rest or b_rest:
        with collector_paused():  # the differing tail in memory, as align_journals holds whole journals
            after = a_count + 1  # the position after the pair that broke the step: all of A's rest, then B's
            a_rest.extend(event for event, _ in _events(a, cancelled, after))
            b_rest.extend(event for event, _ in _events(b, cancelled, after))
            a_count, b_count = a_count + len(a_rest), b_count + len(b_rest)
            tail = _judge(align_rows(a_rest, b_rest), partner_id, partner_seq)
        agreeing += sum(1 for pair in tail if pair.status == "same")
        kept.extend(pair for pair in tail if pair.status != "same")
    alignment = StreamedAlignment(
        kept,
        a_count,
        b_count,
        str(a.path),
        str(b.path),
        setup=setup_differences(firsts[0], firsts[1]),
        agreeing=agreeing,
    )
    return alignment


# -- the walk in step, by worker processes ------------------------------------------------------------------

#: The two journals a forked worker walks (set in the parent before the pool forks: inherited, never pickled).
_FORKED: tuple[Journal, Journal] | None = None
_UNSEEN = object()


@dataclass
class _Run:
    """What a worker found in positions ``start`` up to ``stop`` (where it stopped: a kind or step that differs,
    a line that cannot be read or the end of a journal stop it before ``end``)."""

    start: int
    stop: int
    a_ids: list[str]
    b_ids: list[str]
    a_seqs: list[int]
    b_seqs: list[int]
    # (position, differences found, the pair) of the pairs that differ without the open questions below
    kept: list[tuple[int, tuple[str, ...], Event, Event]]
    # (position, A's parent id, B's parent id): the pair A's parent names came before this run
    open_parents: list[tuple[int, str, str | None]]
    # (position, A's cause seq, B's payload as JSON holds it: a transition whose cause came before this run,
    # the rest of its payload alike or not)
    open_causes: list[tuple[int, Any, Any, bool]]
    firsts: tuple[Event | None, Event | None] = (None, None)


def _walk_run(start: int, end: int) -> _Run:
    """The walk in step over positions ``start`` to ``end`` of the forked journals (``_differences`` with the
    questions about pairs before ``start`` left open)."""
    assert _FORKED is not None
    a, b = _FORKED
    partner_id: dict[str, str] = {}
    partner_seq: dict[int, int] = {}
    run = _Run(start, start, [], [], [], [], [], [], [])
    first_a = first_b = None
    try:
        for a_read, b_read in _pairs(a, b, None, start, end):
            assert a_read is not None and b_read is not None  # (``end`` is within both journals)
            (a_event, a_json), (b_event, b_json) = a_read, b_read
            if first_a is None:
                first_a, first_b = a_event, b_event
            if a_event.kind != b_event.kind or a_event.step_id != b_event.step_id:
                break
            alike = a_json is not None and a_json == b_json
            found = _local_differences(a_event, b_event, partner_id, partner_seq, run, alike)
            partner_id[a_event.event_id] = b_event.event_id
            partner_seq[a_event.seq] = b_event.seq
            run.a_ids.append(a_event.event_id)
            run.b_ids.append(b_event.event_id)
            run.a_seqs.append(a_event.seq)
            run.b_seqs.append(b_event.seq)
            if found:
                run.kept.append((run.stop, found, a_event, b_event))
            run.stop += 1
    except JournalError:
        pass  # the parent's own walk reads that line again and raises its error, in the walk's order
    if start == 0:
        run.firsts = (first_a, first_b)
    return run


def _local_differences(
    a: Event, b: Event, partner_id: dict[str, str], partner_seq: dict[int, int], run: _Run, alike: bool
) -> tuple[str, ...]:
    """``_differences`` for a pair of one run: a parent or a transition's cause named by a pair of an earlier run
    is left open (``run.open_parents`` / ``run.open_causes``) and settled by the parent process. ``alike``: the
    two payloads are the same bytes."""
    found = []
    position = run.stop
    parent = a.parent_event_id
    if parent and parent not in partner_id:
        run.open_parents.append((position, parent, b.parent_event_id))
    elif (partner_id.get(parent) if parent else None) != b.parent_event_id:
        found.append("parent")
    if a.kind != "run.started" and key_of(a.kind, a.payload) != key_of(b.kind, b.payload):
        found.append("key")
    a_payload, b_payload = (a.payload, b.payload) if alike else _payload_parts(a, b)
    if a.kind == STATE_TRANSITION and b.kind == STATE_TRANSITION:
        cause = a_payload.get("cause_seq")
        if cause not in partner_seq:
            rest_same = alike or _same_json(_without_cause(a_payload), _without_cause(b_payload))
            run.open_causes.append((position, cause, b_payload.get("cause_seq", _MISSING), rest_same))
            return tuple(found)
        if alike:
            return tuple(found) if _same_json(partner_seq.get(cause), cause) else (*found, "payload")
        a_payload = dict(a_payload, cause_seq=partner_seq.get(cause))
    if not alike and not _same_json(a_payload, b_payload):
        found.append("payload")
    return tuple(found)


def _without_cause(payload: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key != "cause_seq"}


class _Missing:
    """A payload member that is not there (picklable, unlike a bare object())."""

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


def _in_parallel(a: Journal, b: Journal, state: _Walk, workers: int, chunk_events: int) -> int:
    """Walk both journals in step in worker processes (see the module docstring); the position the parent's own
    walk goes on from, with ``state`` holding every pair before it."""
    global _FORKED
    import multiprocessing  # here: most diffs are small, and the app's comparison never comes this way
    from concurrent.futures import ProcessPoolExecutor

    total = min(len(a), len(b))
    starts = list(range(0, total, chunk_events))
    _FORKED = (a, b)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(workers, len(starts)), mp_context=context) as pool:
            runs = pool.map(_walk_run, starts, [min(total, start + chunk_events) for start in starts])
            for run in runs:
                _settle(a, b, run, state)
                if run.stop < min(total, run.start + chunk_events):
                    return run.stop  # the later runs walked on as if this one had not stopped: not theirs to say
    finally:
        _FORKED = None
    return total


def _settle(a: Journal, b: Journal, run: _Run, state: _Walk) -> None:
    """Answer the run's open questions with the pairs of the runs before it, then take its pairs into ``state``."""
    first_a, first_b = run.firsts
    if first_a is not None and first_b is not None:
        state.firsts = [[first_a], [first_b]]
    extra: dict[int, list[str]] = {}
    for position, parent, b_parent in run.open_parents:
        if state.partner_id.get(parent) != b_parent:
            extra.setdefault(position, []).append("parent")
    for position, cause, b_cause, rest_same in run.open_causes:
        mapped = state.partner_seq.get(cause)
        if not (rest_same and b_cause is not _MISSING and _same_json(mapped, b_cause)):
            extra.setdefault(position, []).append("payload")
    kept = {position: (found, a_event, b_event) for position, found, a_event, b_event in run.kept}
    for position in sorted(set(kept) | set(extra)):
        found, a_event, b_event = kept.get(position) or ((), a.event(position), b.event(position))
        differs = tuple(
            name for name in ("parent", "key", "payload") if name in found or name in extra.get(position, ())
        )
        state.kept.append(AlignedPair(a_event, b_event, "changed", differs))
    state.agreeing += len(run.a_ids) - len(set(kept) | set(extra))
    state.partner_id.update(zip(run.a_ids, run.b_ids))
    state.partner_seq.update(zip(run.a_seqs, run.b_seqs))
