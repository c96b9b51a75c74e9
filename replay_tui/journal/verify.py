"""Verify a journal: schema on every event, the hash chain end to end, run boundaries, seals.

A sequential pass with no index that stops at the first fault (or, with
``all_faults``, lists every fault up to a cap) and says what kind of fault it is,
at which seq and line, and which hash it expected. Large plain files are cut at
line boundaries into ranges checked by worker processes (one per core); each range
checks its own links, and the parent stitches the ranges by checking each range's
first event against the previous range's last one, with the same check. The result
is identical to a single sequential pass.

Only a line that is not in canonical form can hide a duplicate key, so duplicate
keys are looked for on that slow path only. Seals (``run.sealed``,
``chain.checkpoint``) are collected in the pass and checked at the end, with the
public key when one is given.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Generator, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import dialects
from .canonical import CanonicalizationError, canonical_json_of_parsed, orjson_is_canonical
from .duplicate_keys import find_duplicate_key
from .errors import DuplicateKeyError, JournalError, UnknownKindError, UnsupportedVersionError, quoted
from .model import CHAIN_CHECKPOINT, RUN_ENDED, RUN_SEALED, RUN_STARTED, SEAL_KINDS, check_event, validate_event
from .reader import Journal, parse_line
from .segments import (
    DEFAULT_MAX_LINE_BYTES,
    MAX_CONSECUTIVE_FAULTS,
    Segment,
    TruncatedShardError,
    line_batches,
    stream_lines,
)

# Fault kinds, stable strings for --json consumers.
MODIFIED = "modified_event"
DELETED = "deleted_event"
REORDERED = "reordered_events"
DUPLICATE = "duplicate_seq"
BROKEN_LINK = "broken_link"
TRUNCATED = "truncated_last_line"
MALFORMED = "malformed_line"
SCHEMA = "schema"
UNKNOWN_KIND = "unknown_kind"
UNSUPPORTED_VERSION = "unsupported_version"
DUPLICATE_KEY = "duplicate_key"
EVENT_AFTER_END = "event_after_end"
BAD_SEAL = "bad_seal"
WRONG_KEY = "wrong_key_seal"
NOT_SEALED = "not_sealed"
UNSEALED_TAIL = "unsealed_tail"
TOO_MANY_FAULTS = "too_many_faults"
FAULT_KINDS = (
    MODIFIED,
    DELETED,
    REORDERED,
    DUPLICATE,
    BROKEN_LINK,
    TRUNCATED,
    MALFORMED,
    SCHEMA,
    UNKNOWN_KIND,
    UNSUPPORTED_VERSION,
    DUPLICATE_KEY,
    EVENT_AFTER_END,
    BAD_SEAL,
    WRONG_KEY,
    NOT_SEALED,
    UNSEALED_TAIL,
    TOO_MANY_FAULTS,
)

#: Below this many bytes a journal is checked in-process: workers cost more than they save.
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
#: ``all_faults`` lists at most this many.
MAX_FAULTS = 10_000

_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
# A canonical line is '{"event_hash":"sha256:<64 hex>",' followed by the body after its '{'.
_CANONICAL_PREFIX = b'{"event_hash":"'
_HASH_PREFIX_BYTES = len(_CANONICAL_PREFIX) + 71 + 2 - 1
#: Kinds that open or close a run's end: checked against what came before them.
_BOUNDARY_KINDS = frozenset({RUN_ENDED, RUN_SEALED, CHAIN_CHECKPOINT})


@dataclass
class Fault:
    kind: str
    message: str
    path: str | None = None
    line: int | None = None
    seq: int | None = None
    expected: str | None = None
    found: str | None = None

    @property
    def where(self) -> str:
        parts = (
            self.path,
            f"line {self.line}" if self.line is not None else "",
            f"seq {self.seq}" if self.seq is not None else "",
        )
        return ", ".join(part for part in parts if part)

    @property
    def detail(self) -> str:
        text = self.message
        if self.expected is not None or self.found is not None:
            text += f" Expected {self.expected}, found {self.found}."
        return text

    def to_text(self) -> str:
        return f"{self.where}: {self.kind.replace('_', ' ')}. {self.detail}"


@dataclass
class Seal:
    """One seal event as verify saw it; ``status`` is unchecked, verified or bad."""

    kind: str
    seq: int
    key_id: str
    line: int
    path: str
    status: str = "unchecked"


@dataclass
class VerifyReport:
    path: str
    dialect: str
    events: int = 0
    last_seq: int | None = None
    chain: str = "verified"  # verified | absent | broken
    non_canonical_lines: int = 0
    workers: int = 1
    fault: Fault | None = None  # the first fault
    notes: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)  # every fault found (one unless all_faults)
    all_faults: bool = False  # whether the check went on after the first fault
    faults_capped: bool = False  # stopped listing at MAX_FAULTS or at too many faults in a row
    closed: bool | None = True  # a run.ended was found (None: the check stopped before the end)
    ended_seq: int | None = None
    seals: list[Seal] = field(default_factory=list)
    sealed_by: list[str] = field(default_factory=list)  # key ids of the seals, in order of appearance
    key_id: str | None = None  # the key the seals were checked with (verify --key)

    @property
    def ok(self) -> bool:
        return self.fault is None

    def add_fault(self, fault: Fault) -> None:
        if self.fault is None:
            self.fault = fault
        if len(self.faults) < MAX_FAULTS:
            self.faults.append(fault)
        else:
            self.faults_capped = True

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["summary"] = self.summary()
        return data

    def summary(self) -> str:
        """One short line for a header: the verdict, then closed and sealed notes."""
        if self.fault is not None:
            where = f"seq {self.fault.seq}" if self.fault.seq is not None else f"line {self.fault.line}"
            more = f" (+{len(self.faults) - 1} more)" if len(self.faults) > 1 else ""
            text = f"✗ {self.fault.kind.replace('_', ' ')} at {where}{more}"
        elif self.chain == "absent":
            text = f"no hash chain ({self.dialect} dialect)"
        else:
            text = f"✓ verified ({self.events:,} events)"
        if self.closed is False and self.chain != "absent":
            text += " · not closed"
        if self.sealed_by:
            checked = " ✓" if self.key_id and all(seal.status == "verified" for seal in self.seals) else ""
            text += f" · sealed by key {_key_ids(self.sealed_by)}{checked}"
        return text

    def to_text(self) -> str:
        if self.fault is None:
            if self.chain == "absent":
                return (
                    f"{self.path}: {self.events} events read, schema holds. This journal is in the "
                    f"{self.dialect} dialect and has no hash chain, so its integrity cannot be verified."
                )
            text = (
                f"{self.path}: OK. {self.events} events (seq 1 to {self.last_seq}), schema v1 holds "
                f"and the hash chain verifies end to end."
            )
            if self.non_canonical_lines:
                text += (
                    f" {self.non_canonical_lines} line(s) are not in canonical byte form; hashes are over "
                    "the canonical form, so they still verify."
                )
        else:
            fault = self.fault
            text = f"{fault.where}: FAILED ({fault.kind.replace('_', ' ')}). {fault.detail}"
            text += f" {self.events} event(s) before it verified." if not self.all_faults else ""
        for note in self.notes:
            text += f" {note}"
        if self.all_faults and self.faults:
            listed = "\n".join(f"  {fault.to_text()}" for fault in self.faults)
            cap = " (the list stops here)" if self.faults_capped else ""
            text += f"\n{len(self.faults)} fault(s){cap}:\n{listed}"
        return text


_KEY_ID = re.compile(r"ed25519:[0-9a-f]{16}")


def _key_ids(key_ids: list[str]) -> str:
    """Key ids as read from seals (journal text): shown as is only when well-formed."""
    return ", ".join(key if _KEY_ID.fullmatch(key) else quoted(key) for key in key_ids)


@dataclass(frozen=True)
class _Link:
    """What the chain check needs to know of one event."""

    seq: int
    prev_hash: str | None
    event_hash: str
    run_id: str
    kind: str
    path: str
    line: int


def _link_fault(previous: _Link | None, current: _Link, next_seq: int | None) -> Fault | None:
    """The fault between two consecutive events (``previous`` None: the journal's first)."""
    prev_seq = previous.seq if previous else 0
    prev_hash = previous.event_hash if previous else None
    seq = current.seq
    where = (current.path, current.line)
    if previous and current.run_id != previous.run_id:
        return Fault(
            SCHEMA,
            "The event belongs to another run.",
            *where,
            seq,
            f"run_id {previous.run_id}",
            f"run_id {current.run_id}",
        )
    if seq == prev_seq:
        return Fault(DUPLICATE, f"Seq {seq} appears twice (again on this line).", *where, seq)
    if seq < prev_seq:
        return Fault(REORDERED, f"Seq {seq} comes after seq {prev_seq}: events are out of order.", *where, seq)
    if seq > prev_seq + 1:
        missing = prev_seq + 1
        if next_seq is not None and next_seq < seq:
            return Fault(
                REORDERED,
                f"Seq {seq} comes before seq {next_seq}: events are out of order.",
                *where,
                missing,
                f"seq {missing}",
                f"seq {seq}",
            )
        span = f" to {seq - 1} are" if seq - 1 > missing else " is"
        return Fault(
            DELETED,
            f"Seq {missing}{span} missing: the next event on this line is seq {seq}.",
            *where,
            missing,
            f"prev_event_hash {prev_hash}",
            f"prev_event_hash {current.prev_hash}",
        )
    if current.prev_hash != prev_hash:
        message = (
            f"The prev_event_hash does not match the event_hash of seq {prev_seq}."
            if previous
            else "The first event must have prev_event_hash null."
        )
        return Fault(BROKEN_LINK, message, *where, seq, str(prev_hash), str(current.prev_hash))
    if seq == 1 and current.kind != RUN_STARTED:
        return Fault(
            SCHEMA, "A journal starts with run.started.", *where, seq, "kind run.started", f"kind {current.kind}"
        )
    return None


def _fault_from_error(error: JournalError) -> Fault:
    kind = MALFORMED
    if isinstance(error, TruncatedShardError):
        kind = TRUNCATED
    elif isinstance(error, DuplicateKeyError):
        kind = DUPLICATE_KEY
    elif isinstance(error, UnknownKindError):
        kind = UNKNOWN_KIND
    elif isinstance(error, UnsupportedVersionError):
        kind = UNSUPPORTED_VERSION
    elif hasattr(error, "field"):
        kind = SCHEMA
    return Fault(kind, error.message, error.path, error.line, error.seq)


@dataclass
class _Range:
    """A run of whole lines of one shard, checked as a unit."""

    path: str
    start: int = 0
    end: int | None = None  # None: to the end of the shard


@dataclass(frozen=True)
class _SealEvent:
    """A seal as the pass found it, checked once the whole chain is known."""

    kind: str
    seq: int
    run_id: str
    prev_hash: str | None
    payload: dict[str, Any]
    path: str
    line: int


@dataclass
class _RangeResult:
    lines: int = 0
    events: int = 0
    non_canonical: int = 0
    head: list[_Link] = field(default_factory=list)  # first two events: stitched by the parent
    tail: _Link | None = None
    faults: list[Fault] = field(default_factory=list)  # line numbers are relative to the range's first line
    stopped: bool = False  # gave up: first fault (not all_faults), or a cap
    capped: bool = False
    first_unsealed: _Link | None = None  # the first event that is not a run.sealed (after_end check across ranges)
    ended_seq: int | None = None  # the first run.ended in the range
    closing: tuple[str, int] | None = None  # (run.ended or run.sealed, seq): the last that closed the run
    seals: list[_SealEvent] = field(default_factory=list)
    complete: bool = False  # every line of the range was looked at


def _after_end_fault(kind: str, seq: int, closing: tuple[str, int], path: str, line: int) -> Fault | None:
    """The fault of an event that follows run.ended (only one run.sealed may) or run.sealed (nothing may)."""
    closed_by, closed_at = closing
    if closed_by == RUN_ENDED and kind == RUN_SEALED:
        return None
    return Fault(
        EVENT_AFTER_END,
        f"A {quoted(kind)} event comes after the {closed_by} at seq {closed_at}: a run ends once, and only a "
        "run.sealed may follow its run.ended. Events were appended to a finished run.",
        path,
        line,
        seq,
        f"nothing after seq {closed_at}" if closed_by == RUN_SEALED else "end of the journal",
        f"kind {quoted(kind)}",
    )


def _check_range(part: _Range, max_line_bytes: int, all_faults: bool = False) -> _RangeResult:
    """Check every line of a range; stop at its first fault unless ``all_faults``.

    This is the hot loop of `verify`: the previous event is kept in locals, and a
    _Link is built only for the range's first events and to explain a fault.
    After a fault in a line the next event starts the chain afresh (resync), so one
    bad line is reported once, not again as a broken link.
    """
    result = _RangeResult()
    sha256 = hashlib.sha256
    loads = orjson.loads
    path = part.path
    segment = Segment(Path(path), max_line_bytes)
    batches = line_batches(segment, part.start, part.end, max_line_bytes)
    prev_seq: int | None = None
    # the previous event's hash, run and kind: read only while prev_seq is set (they are set with it)
    prev_hash: str = ""
    prev_run: str = ""
    prev_kind: str = ""
    prev_line = 0
    events = non_canonical = 0
    bad_run = 0  # faulty lines in a row
    dumps = orjson.dumps
    closing: tuple[str, int] | None = None
    after_end_reported = False
    fault: Fault | None
    faults = result.faults

    def stop_after(fault: Fault) -> bool:
        """Record a fault; True when the pass must stop."""
        faults.append(fault)
        if not all_faults:
            result.stopped = True
        elif len(faults) >= MAX_FAULTS:
            result.stopped = result.capped = True
        return result.stopped

    def line_fault(fault: Fault) -> bool:
        """A fault in one line; stops after MAX_CONSECUTIVE_FAULTS of them in a row."""
        nonlocal bad_run, prev_seq
        bad_run += 1
        if prev_seq is not None:  # the last good event stays the range's tail
            result.tail = _Link(prev_seq, None, prev_hash, prev_run, prev_kind, path, prev_line)
        prev_seq = None  # resync on the next good event
        if bad_run > MAX_CONSECUTIVE_FAULTS:
            faults.append(
                Fault(
                    TOO_MANY_FAULTS,
                    f"More than {MAX_CONSECUTIVE_FAULTS} faulty lines in a row: the check stops here "
                    "(what follows is not a journal).",
                    path,
                    fault.line,
                )
            )
            result.stopped = result.capped = True
            return True
        return stop_after(fault)

    def following_seq(lines: list[bytes], index: int) -> int | None:
        """Seq of the line after ``index``, reading into the next batch if needed."""
        data: bytes | None
        if index + 1 < len(lines):
            data = lines[index + 1]
        else:
            upcoming = next(batches, None)
            if upcoming is not None:
                peeked.append(upcoming)  # looked at, not consumed: the pass still checks it
            data = upcoming[1][0] if upcoming and upcoming[1] else None
        try:
            seq = loads(data).get("seq") if data else None
        except (ValueError, AttributeError):
            return None
        return seq if type(seq) is int else None

    peeked: list[tuple[int, list[bytes], bytes]] = []

    def all_batches() -> Iterator[tuple[int, list[bytes], bytes]]:
        while True:
            batch = peeked.pop() if peeked else next(batches, None)
            if batch is None:
                return
            yield batch

    seen_lines = 0
    try:
        for first_line, lines, tail in all_batches():
            seen_lines = first_line + len(lines) - 1
            for index, data in enumerate(lines):
                line_no = first_line + index
                try:
                    if len(data) > max_line_bytes:
                        raise ValueError
                    obj = loads(data)
                    claimed = obj.pop("event_hash", None)
                except (ValueError, AttributeError, TypeError):
                    try:
                        obj = parse_line(
                            data, path=path, line=line_no, max_line_bytes=max_line_bytes
                        )  # the clear error
                    except JournalError as error:
                        if line_fault(_fault_from_error(error)):
                            return result
                        continue
                    claimed = obj.pop("event_hash", None)
                try:
                    body = dumps(obj, option=_SORTED)
                    if not orjson_is_canonical(body):
                        body = canonical_json_of_parsed(obj)
                except (CanonicalizationError, orjson.JSONEncodeError):
                    try:
                        body = canonical_json_of_parsed(obj)
                    except CanonicalizationError as error:
                        fault = Fault(
                            MALFORMED,
                            f"The event has no canonical JSON form, so it cannot be hashed: {error}.",
                            path,
                            line_no,
                        )
                        if line_fault(fault):
                            return result
                        continue
                computed = "sha256:" + sha256(body).hexdigest()
                if claimed != computed:
                    seq = obj.get("seq") if type(obj.get("seq")) is int else None
                    fault = Fault(
                        MODIFIED,
                        "The event's content does not match its event_hash: it was changed after it was written.",
                        path,
                        line_no,
                        seq,
                        str(claimed),
                        computed,
                    )
                    if line_fault(fault):
                        return result
                    continue
                # claimed equals a well-formed computed hash, so it needs no schema check:
                # it stays out of obj, and check_event sees no event_hash.
                if len(data) != len(body) + _HASH_PREFIX_BYTES or not data.endswith(body[1:]):
                    non_canonical += 1
                    # Only a line that is not its own canonical form can hide a duplicate key.
                    key = find_duplicate_key(data)
                    if key is not None:
                        seq = obj.get("seq") if type(obj.get("seq")) is int else None
                        if line_fault(_fault_from_error(DuplicateKeyError(key, path=path, line=line_no, seq=seq))):
                            return result
                        continue
                try:
                    event = obj if obj.get("schema_version") == 1 else dialects.to_v1(obj)
                    check_event(event)
                except JournalError as error:
                    if line_fault(_fault_from_error(error.located(path=path, line=line_no))):
                        return result
                    continue
                bad_run = 0
                seq = event["seq"]
                run_id = event["run_id"]
                kind = event["kind"]
                if prev_seq is not None and not (
                    seq == prev_seq + 1 and event["prev_event_hash"] == prev_hash and run_id == prev_run
                ):
                    previous = _Link(prev_seq, None, prev_hash, prev_run, prev_kind, path, prev_line)
                    current = _Link(seq, event["prev_event_hash"], claimed, run_id, kind, path, line_no)
                    # After a gap, the events were reordered if the missing seq comes next.
                    upcoming = following_seq(lines, index) if seq > prev_seq + 1 else None
                    fault = _link_fault(previous, current, upcoming)
                    if fault and stop_after(fault):
                        return result
                if kind in _BOUNDARY_KINDS or closing is not None:
                    if closing is not None and not after_end_reported:
                        fault = _after_end_fault(kind, seq, closing, path, line_no)
                        if fault:
                            after_end_reported = True  # the first is the news; the rest follow from it
                            if stop_after(fault):
                                return result
                    if kind == RUN_ENDED:
                        result.ended_seq = result.ended_seq or seq
                        closing = (kind, seq) if closing is None else closing
                    elif kind == RUN_SEALED:
                        closing = (kind, seq)
                    if kind in SEAL_KINDS:
                        result.seals.append(
                            _SealEvent(kind, seq, run_id, event["prev_event_hash"], event["payload"], path, line_no)
                        )
                if result.first_unsealed is None and kind != RUN_SEALED:
                    result.first_unsealed = _Link(seq, event["prev_event_hash"], claimed, run_id, kind, path, line_no)
                if events < 2 and not faults:
                    result.head.append(_Link(seq, event["prev_event_hash"], claimed, run_id, kind, path, line_no))
                prev_seq, prev_hash, prev_run, prev_kind, prev_line = seq, claimed, run_id, kind, line_no
                events += 1
            if tail.strip():
                stop_after(
                    Fault(
                        TRUNCATED,
                        f"The last line has {len(tail)} bytes and no newline: the writer stopped mid-line "
                        "(a crash, or a copy still in progress). Everything before it verified.",
                        path,
                        first_line,
                        prev_seq + 1 if prev_seq is not None else None,
                    )
                )
                return result
    except JournalError as error:
        stop_after(_fault_from_error(error))
    finally:
        if isinstance(batches, Generator):  # line_batches is one: close its file now, not at collection
            batches.close()
        segment.close()
        result.events, result.lines, result.non_canonical = events, seen_lines, non_canonical
        result.closing = closing
        if prev_seq is not None:
            result.tail = _Link(prev_seq, None, prev_hash, prev_run, prev_kind, path, prev_line)
        result.complete = not result.stopped
    return result


def _plan(journal: Journal, workers: int) -> list[_Range]:
    """Ranges in journal order; big plain shards are cut after a newline."""
    ranges: list[_Range] = []
    for segment in journal.segments:
        path = str(segment.path)
        size = segment.size() if not segment.compressed else 0
        if segment.compressed or workers < 2 or size < PARALLEL_MIN_BYTES:
            ranges.append(_Range(path))
            continue
        cuts = [0]
        for index in range(1, workers):
            guess = size * index // workers
            window = segment.read(guess, 1 << 20)
            newline = window.find(b"\n")
            if newline >= 0 and guess + newline + 1 > cuts[-1]:
                cuts.append(guess + newline + 1)
        cuts.append(size)
        ranges.extend(_Range(path, start, end) for start, end in zip(cuts, cuts[1:]) if end > start)
    return ranges


def _stitch(ranges: list[_Range], results: list[_RangeResult], report: VerifyReport) -> list[_SealEvent]:
    """Join the ranges' findings into ``report``, in journal order; returns the seals."""
    previous: _Link | None = None
    line_offset: dict[str, int] = {}
    closing: tuple[str, int] | None = None
    after_end_reported = False
    seals: list[_SealEvent] = []
    for part, result in zip(ranges, results):
        offset = line_offset.get(part.path, 0)
        boundary: list[Fault] = []
        own = result.faults
        if result.head:
            first = result.head[0]
            following = result.head[1].seq if len(result.head) > 1 else None
            fault = _link_fault(previous, first, following)
            if fault:
                boundary.append(fault)
            if closing is not None and not after_end_reported:
                crossing = first if closing[0] == RUN_SEALED else result.first_unsealed
                after = crossing and _after_end_fault(
                    crossing.kind, crossing.seq, closing, crossing.path, crossing.line
                )
                if after:
                    boundary.append(after)
        if after_end_reported or any(fault.kind == EVENT_AFTER_END for fault in boundary):
            own = [fault for fault in own if fault.kind != EVENT_AFTER_END]  # reported once, at the first
        after_end_reported = after_end_reported or any(fault.kind == EVENT_AFTER_END for fault in (*boundary, *own))
        for fault in (*boundary, *own):
            if fault.line is not None:
                fault.line += offset
            report.add_fault(fault)
            if not report.all_faults:
                break
        for seal in result.seals:
            seals.append(
                _SealEvent(
                    seal.kind, seal.seq, seal.run_id, seal.prev_hash, seal.payload, seal.path, seal.line + offset
                )
            )
        if result.faults and result.faults[-1].kind == TRUNCATED and result.faults[-1].seq is None:
            tail = result.tail or previous
            result.faults[-1].seq = tail.seq + 1 if tail else None
        report.events += result.events
        report.non_canonical_lines += result.non_canonical
        report.faults_capped = report.faults_capped or result.capped
        if report.ended_seq is None:
            report.ended_seq = result.ended_seq
        closing = result.closing or closing
        line_offset[part.path] = offset + result.lines
        previous = result.tail or previous
        report.last_seq = previous.seq if previous else None
        if report.fault is not None and (not report.all_faults or result.capped):
            break
    return seals


def _check_seals(report: VerifyReport, seals: list[_SealEvent], public_key: Any) -> None:
    """Seal structure always; signatures, key and coverage of the tail when a key is given."""
    for seal in seals:
        key_id = str(seal.payload.get("key_id"))
        report.seals.append(Seal(seal.kind, seal.seq, key_id, seal.line, seal.path))
        if key_id not in report.sealed_by:
            report.sealed_by.append(key_id)
    if (report.fault is not None and not report.all_faults) or (not seals and public_key is None):
        return
    from . import seal as sealing  # cryptography is loaded only for journals that need it

    for seal, shown in zip(seals, report.seals):
        error = sealing.seal_structure_error(seal.seq, seal.prev_hash, seal.payload)
        kind = BAD_SEAL
        if error is None and public_key is not None:
            error = sealing.seal_signature_error(seal.kind, seal.run_id, seal.payload, public_key)
            if error and seal.payload.get("key_id") != report.key_id:
                kind = WRONG_KEY
        if error:
            shown.status = "bad"
            message = f"The {seal.kind} seal is not valid: {error}."
            report.add_fault(Fault(kind, message, seal.path, seal.line, seal.seq))
            if not report.all_faults:
                return
        elif public_key is not None:
            shown.status = "verified"
    if public_key is None:
        return
    last_sealed = max((seal.seq for seal in seals if seal.kind == RUN_SEALED), default=None)
    if not seals:
        report.add_fault(
            Fault(
                NOT_SEALED,
                f"A key was given ({report.key_id}) but the journal holds no seal: it was recorded without a signing "
                "key, or its seals were cut off.",
                report.path,
            )
        )
    elif last_sealed is None or last_sealed != report.last_seq:
        covered = max(seal.seq for seal in seals)
        report.add_fault(
            Fault(
                UNSEALED_TAIL,
                f"The last seal is at seq {covered}, but the journal does not end with a run.sealed "
                f"(it ends at seq {report.last_seq}): what follows the last seal is not covered by a signature, "
                "or the final seal was cut off with the tail.",
                report.path,
                None,
                covered,
                "a run.sealed as the last event",
                f"seq {report.last_seq} last",
            )
        )


def verify_journal(
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    workers: int | None = None,
    all_faults: bool = False,
    public_key: Any = None,
) -> VerifyReport:
    """Check schema, chain, run boundaries and seals; raises JournalOpenError only when nothing can be read.

    ``all_faults``: list every fault (up to MAX_FAULTS) instead of stopping at the first.
    ``public_key``: an Ed25519 public key (seal.load_public_key) to check every seal with.
    """
    journal = Journal(path, max_line_bytes=max_line_bytes)
    try:
        report = VerifyReport(path=str(path), dialect=journal.dialect, all_faults=all_faults)
        if public_key is not None:
            from .seal import key_id_of

            report.key_id = key_id_of(public_key)
        if journal.dialect == dialects.TYPE_DATA:
            report.chain = "absent"
            _check_type_data(journal, report, max_line_bytes)
            if public_key is not None:
                _check_seals(report, [], public_key)
            return report
        ranges = _plan(journal, workers or os.cpu_count() or 1)
    finally:
        journal.close()
    if len(ranges) > 1 and any(part.end is not None for part in ranges):
        import multiprocessing  # here, not at the top: every replay child imports this module (start-up)
        from concurrent.futures import ProcessPoolExecutor

        report.workers = min(len(ranges), workers or os.cpu_count() or 1)
        context = multiprocessing.get_context("fork")
        count = len(ranges)
        with ProcessPoolExecutor(max_workers=report.workers, mp_context=context) as pool:
            results = list(pool.map(_check_range, ranges, [max_line_bytes] * count, [all_faults] * count))
    else:
        results = [_check_range(part, max_line_bytes, all_faults) for part in ranges]
    seals = _stitch(ranges, results, report)
    _check_seals(report, seals, public_key)
    if report.ended_seq is None and not all(result.complete for result in results):
        report.closed = None  # the pass stopped early: whether a run.ended follows is not known
    elif report.ended_seq is None:
        report.closed = False
        cut = f"after seq {report.last_seq}" if report.last_seq is not None else "before its first event"
        report.notes.append(f"Not closed: the run is still going, or the file was cut {cut} (no run.ended).")
    if not report.sealed_by and public_key is None:
        report.notes.append("No signed seal (a recording with a signing_key ends with one).")
    elif report.sealed_by and public_key is None:
        report.notes.append(
            f"Sealed by key {_key_ids(report.sealed_by)} (signatures not checked: give --key PUB to check them)."
        )
    elif report.key_id and report.seals and all(seal.status == "verified" for seal in report.seals):
        report.notes.append(f"Sealed by key {report.key_id}: every seal's signature verifies.")
    if report.fault is not None:
        report.chain = "broken"
    return report


def _check_type_data(journal: Journal, report: VerifyReport, max_line_bytes: int) -> None:
    position = 0
    try:
        for segment in journal.segments:
            path = str(segment.path)
            for line_no, data, complete in stream_lines(segment):
                if not complete:
                    if data.strip():
                        message = f"The last line has {len(data)} bytes and no newline."
                        report.add_fault(Fault(TRUNCATED, message, path, line_no))
                    return
                obj = parse_line(data, path=path, line=line_no, max_line_bytes=max_line_bytes)
                try:
                    for event_obj in dialects.type_data_to_v1(obj, position + 1):
                        validate_event(event_obj)
                        position += 1
                except JournalError as error:
                    report.add_fault(_fault_from_error(error.located(path=path, line=line_no)))
                    return
                report.events = position
                report.last_seq = position
    except JournalError as error:
        report.add_fault(_fault_from_error(error))
