"""Verify a journal: schema on every event and the hash chain end to end.

A sequential pass with no index that stops at the first fault and says what kind
of fault it is, at which seq and line, and which hash it expected. Large plain
files are cut at line boundaries into ranges checked by worker processes (one per
core); each range checks its own links, and the parent stitches the ranges by
checking each range's first event against the previous range's last one, with
the same check. The result is identical to a single sequential pass.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import dialects
from .canonical import CanonicalizationError, canonical_json_of_parsed, orjson_is_canonical
from .errors import JournalError, UnknownKindError, UnsupportedVersionError
from .model import RUN_STARTED, check_event, validate_event
from .reader import DEFAULT_MAX_LINE_BYTES, Journal, parse_line
from .segments import Segment, TruncatedShardError, line_batches, stream_lines

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

#: Below this many bytes a journal is checked in-process: workers cost more than they save.
PARALLEL_MIN_BYTES = 32 * 1024 * 1024

_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
# A canonical line is '{"event_hash":"sha256:<64 hex>",' followed by the body after its '{'.
_CANONICAL_PREFIX = b'{"event_hash":"'
_HASH_PREFIX_BYTES = len(_CANONICAL_PREFIX) + 71 + 2 - 1


@dataclass
class Fault:
    kind: str
    message: str
    path: str | None = None
    line: int | None = None
    seq: int | None = None
    expected: str | None = None
    found: str | None = None


@dataclass
class VerifyReport:
    path: str
    dialect: str
    events: int = 0
    last_seq: int | None = None
    chain: str = "verified"  # verified | absent | broken
    non_canonical_lines: int = 0
    workers: int = 1
    fault: Fault | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fault is None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data

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
            return text
        fault = self.fault
        where = ", ".join(
            part
            for part in (
                fault.path,
                f"line {fault.line}" if fault.line is not None else "",
                f"seq {fault.seq}" if fault.seq is not None else "",
            )
            if part
        )
        text = f"{where}: FAILED ({fault.kind.replace('_', ' ')}). {fault.message}"
        if fault.expected is not None or fault.found is not None:
            text += f" Expected {fault.expected}, found {fault.found}."
        return text + f" {self.events} event(s) before it verified."


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
        return Fault(SCHEMA, "The event belongs to another run.", *where, seq, f"run_id {previous.run_id}", f"run_id {current.run_id}")
    if seq == prev_seq:
        return Fault(DUPLICATE, f"Seq {seq} appears twice (again on this line).", *where, seq)
    if seq < prev_seq:
        return Fault(REORDERED, f"Seq {seq} comes after seq {prev_seq}: events are out of order.", *where, seq)
    if seq > prev_seq + 1:
        missing = prev_seq + 1
        if next_seq is not None and next_seq < seq:
            return Fault(
                REORDERED, f"Seq {seq} comes before seq {next_seq}: events are out of order.", *where, missing,
                f"seq {missing}", f"seq {seq}",
            )
        span = f" to {seq - 1} are" if seq - 1 > missing else " is"
        return Fault(
            DELETED, f"Seq {missing}{span} missing: the next event on this line is seq {seq}.", *where, missing,
            f"prev_event_hash {prev_hash}", f"prev_event_hash {current.prev_hash}",
        )
    if current.prev_hash != prev_hash:
        message = (
            f"The prev_event_hash does not match the event_hash of seq {prev_seq}."
            if previous
            else "The first event must have prev_event_hash null."
        )
        return Fault(BROKEN_LINK, message, *where, seq, str(prev_hash), str(current.prev_hash))
    if seq == 1 and current.kind != RUN_STARTED:
        return Fault(SCHEMA, "A journal starts with run.started.", *where, seq, "kind run.started", f"kind {current.kind}")
    return None


def _fault_from_error(error: JournalError) -> Fault:
    kind = MALFORMED
    if isinstance(error, TruncatedShardError):
        kind = TRUNCATED
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


@dataclass
class _RangeResult:
    lines: int = 0
    events: int = 0
    non_canonical: int = 0
    head: list[_Link] = field(default_factory=list)  # first two events: stitched by the parent
    tail: _Link | None = None
    fault: Fault | None = None  # line numbers are relative to the range's first line


def _check_range(part: _Range, max_line_bytes: int) -> _RangeResult:
    """Check every line of a range; stop at its first fault.

    This is the hot loop of `verify`: the previous event is kept in locals, and a
    _Link is built only for the range's first events and to explain a fault.
    """
    result = _RangeResult()
    sha256 = hashlib.sha256
    loads = orjson.loads
    path = part.path
    segment = Segment(Path(path))
    batches = line_batches(segment, part.start, part.end)
    prev_seq: int | None = None
    prev_hash = prev_run = prev_kind = None
    prev_line = 0
    events = non_canonical = 0
    dumps = orjson.dumps

    def following_seq(lines: list[bytes], index: int) -> int | None:
        """Seq of the line after ``index``, reading into the next batch if needed."""
        if index + 1 < len(lines):
            data = lines[index + 1]
        else:
            upcoming = next(batches, None)
            data = upcoming[1][0] if upcoming and upcoming[1] else None
        try:
            seq = loads(data).get("seq") if data else None
        except (ValueError, AttributeError):
            return None
        return seq if type(seq) is int else None

    try:
        for first_line, lines, tail in batches:
            for index, data in enumerate(lines):
                line_no = first_line + index
                try:
                    if len(data) > max_line_bytes:
                        raise ValueError
                    obj = loads(data)
                    claimed = obj.pop("event_hash", None)
                except (ValueError, AttributeError, TypeError):
                    obj = parse_line(data, path=path, line=line_no, max_line_bytes=max_line_bytes)  # the clear error
                    claimed = obj.pop("event_hash", None)
                try:
                    body = dumps(obj, option=_SORTED)
                    if not orjson_is_canonical(body):
                        body = canonical_json_of_parsed(obj)
                except (CanonicalizationError, orjson.JSONEncodeError):
                    try:
                        body = canonical_json_of_parsed(obj)
                    except CanonicalizationError as error:
                        result.fault = Fault(
                            MALFORMED, f"The event has no canonical JSON form, so it cannot be hashed: {error}.", path, line_no
                        )
                        return result
                computed = "sha256:" + sha256(body).hexdigest()
                if claimed != computed:
                    seq = obj.get("seq") if type(obj.get("seq")) is int else None
                    result.fault = Fault(
                        MODIFIED,
                        "The event's content does not match its event_hash: it was changed after it was written.",
                        path, line_no, seq, str(claimed), computed,
                    )
                    return result
                # claimed equals a well-formed computed hash, so it needs no schema check:
                # it stays out of obj, and check_event sees no event_hash.
                if len(data) != len(body) + _HASH_PREFIX_BYTES or not data.endswith(body[1:]):
                    non_canonical += 1
                try:
                    event = obj if obj.get("schema_version") == 1 else dialects.to_v1(obj)
                    check_event(event)
                except JournalError as error:
                    result.fault = _fault_from_error(error.located(path=path, line=line_no))
                    return result
                seq = event["seq"]
                run_id = event["run_id"]
                if prev_seq is not None and not (
                    seq == prev_seq + 1 and event["prev_event_hash"] == prev_hash and run_id == prev_run
                ):
                    previous = _Link(prev_seq, None, prev_hash, prev_run, prev_kind, path, prev_line)
                    current = _Link(seq, event["prev_event_hash"], claimed, run_id, event["kind"], path, line_no)
                    # After a gap, the events were reordered if the missing seq comes next.
                    upcoming = following_seq(lines, index) if seq > prev_seq + 1 else None
                    result.fault = _link_fault(previous, current, upcoming)
                    if result.fault:
                        return result
                if events < 2:
                    result.head.append(_Link(seq, event["prev_event_hash"], claimed, run_id, event["kind"], path, line_no))
                prev_seq, prev_hash, prev_run, prev_kind, prev_line = seq, claimed, run_id, event["kind"], line_no
                events += 1
            if tail.strip():
                result.fault = Fault(
                    TRUNCATED,
                    f"The last line has {len(tail)} bytes and no newline: the writer stopped mid-line "
                    "(a crash, or a copy still in progress). Everything before it verified.",
                    path,
                    first_line,
                    prev_seq + 1 if prev_seq is not None else None,
                )
                return result
    except JournalError as error:
        result.fault = _fault_from_error(error)
    finally:
        batches.close()
        segment.close()
        result.events, result.lines, result.non_canonical = events, prev_line, non_canonical
        if prev_seq is not None:
            result.tail = _Link(prev_seq, None, prev_hash, prev_run, prev_kind, path, prev_line)
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


def _stitch(ranges: list[_Range], results: list[_RangeResult], report: VerifyReport) -> None:
    previous: _Link | None = None
    line_offset = {}
    for part, result in zip(ranges, results):
        offset = line_offset.get(part.path, 0)
        if result.head:
            first = result.head[0]
            following = result.head[1].seq if len(result.head) > 1 else None
            fault = _link_fault(previous, first, following)
            if fault:
                fault.line = (fault.line or 0) + offset
                report.fault = fault
                return
        if result.fault:
            if result.fault.line is not None:
                result.fault.line += offset
            if result.fault.seq is None and result.fault.kind == TRUNCATED:
                tail = result.tail or previous
                result.fault.seq = tail.seq + 1 if tail else None
            report.fault = result.fault
            report.events += result.events
            return
        report.events += result.events
        report.non_canonical_lines += result.non_canonical
        line_offset[part.path] = offset + result.lines
        previous = result.tail or previous
        report.last_seq = previous.seq if previous else None


def verify_journal(
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    workers: int | None = None,
) -> VerifyReport:
    """Check schema and chain; raises JournalOpenError only when nothing can be read."""
    journal = Journal(path, max_line_bytes=max_line_bytes)
    try:
        report = VerifyReport(path=str(path), dialect=journal.dialect)
        if journal.dialect == dialects.TYPE_DATA:
            report.chain = "absent"
            _check_type_data(journal, report, max_line_bytes)
            return report
        ranges = _plan(journal, workers or os.cpu_count() or 1)
    finally:
        journal.close()
    if len(ranges) > 1 and any(part.end is not None for part in ranges):
        report.workers = min(len(ranges), workers or os.cpu_count() or 1)
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=report.workers, mp_context=context) as pool:
            results = list(pool.map(_check_range, ranges, [max_line_bytes] * len(ranges)))
    else:
        results = [_check_range(part, max_line_bytes) for part in ranges]
    _stitch(ranges, results, report)
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
                        report.fault = Fault(TRUNCATED, f"The last line has {len(data)} bytes and no newline.", path, line_no)
                    return
                obj = parse_line(data, path=path, line=line_no, max_line_bytes=max_line_bytes)
                try:
                    for event_obj in dialects.type_data_to_v1(obj, position + 1):
                        validate_event(event_obj)
                        position += 1
                except JournalError as error:
                    report.fault = _fault_from_error(error.located(path=path, line=line_no))
                    return
                report.events = position
                report.last_seq = position
    except JournalError as error:
        report.fault = _fault_from_error(error)
