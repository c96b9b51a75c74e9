"""Verify a journal: schema on every event and the hash chain end to end.

One sequential pass with no index; it stops at the first fault and says what
kind of fault it is, at which seq and line, and which hash it expected.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from . import dialects
from .canonical import canonical_json_of_parsed
from .errors import JournalError, UnknownKindError, UnsupportedVersionError
from .model import RUN_STARTED, validate_event
from .reader import DEFAULT_MAX_LINE_BYTES, Journal, parse_line
from .segments import stream_lines

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


# A canonical line is '{"event_hash":"sha256:<64 hex>",' followed by the body after its '{'.
_HASH_PREFIX_BYTES = len('{"event_hash":"",') + 71 - 1


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
                text = (
                    f"{self.path}: {self.events} events read, schema holds. This journal is in the "
                    f"{self.dialect} dialect and has no hash chain, so its integrity cannot be verified."
                )
            else:
                text = (
                    f"{self.path}: OK. {self.events} events (seq 1 to {self.last_seq}), schema v1 holds "
                    f"and the hash chain verifies end to end."
                )
                if self.non_canonical_lines:
                    text += f" {self.non_canonical_lines} line(s) are not in canonical byte form; hashes are over the canonical form, so they still verify."
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
        text += f" {self.events} event(s) before it verified."
        return text


def verify_journal(path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> VerifyReport:
    """Check schema and chain; raises JournalOpenError only when nothing can be read."""
    journal = Journal(path, max_line_bytes=max_line_bytes)
    try:
        report = VerifyReport(path=str(path), dialect=journal.dialect)
        if journal.dialect == dialects.TYPE_DATA:
            report.chain = "absent"
            _check_type_data(journal, report, max_line_bytes)
        else:
            _check_chain(journal, report, max_line_bytes)
        if report.fault is not None and report.chain == "verified":
            report.chain = "broken"
        return report
    finally:
        journal.close()


def _lines(journal: Journal) -> Iterator[tuple[str, int, bytes, bool, bool]]:
    """(shard, line number, bytes, complete, is last line of the journal)."""
    last_segment = len(journal.segments) - 1
    for position, segment in enumerate(journal.segments):
        previous = None
        for item in stream_lines(segment):
            if previous is not None:
                yield str(segment.path), *previous, False
            previous = item
        if previous is not None:
            yield str(segment.path), *previous, position == last_segment


def _fault_from_error(error: JournalError) -> Fault:
    kind = MALFORMED
    if isinstance(error, UnknownKindError):
        kind = UNKNOWN_KIND
    elif isinstance(error, UnsupportedVersionError):
        kind = UNSUPPORTED_VERSION
    elif hasattr(error, "field"):
        kind = SCHEMA
    return Fault(kind, error.message, error.path, error.line, error.seq)


def _check_chain(journal: Journal, report: VerifyReport, max_line_bytes: int) -> None:
    sha256 = hashlib.sha256
    prev_seq = 0
    prev_hash: str | None = None
    run_id: str | None = None
    lines = _lines(journal)
    lookahead: list[tuple[str, int, bytes, bool, bool]] = []

    def next_line() -> tuple[str, int, bytes, bool, bool] | None:
        if lookahead:
            return lookahead.pop()
        return next(lines, None)

    def peek_seq() -> int | None:
        item = next(lines, None)
        if item is None:
            return None
        lookahead.append(item)
        try:
            seq = parse_line(item[2], path=item[0], line=item[1]).get("seq")
        except JournalError:
            return None
        return seq if type(seq) is int else None

    try:
        while (item := next_line()) is not None:
            path, line_no, data, complete, is_last = item
            if not complete:
                if data.strip():
                    report.fault = Fault(
                        TRUNCATED,
                        f"The last line has {len(data)} bytes and no newline: the writer stopped mid-line "
                        f"(a crash or a copy still in progress). Everything before it verified.",
                        path,
                        line_no,
                        prev_seq + 1,
                    )
                return
            obj = parse_line(data, path=path, line=line_no, max_line_bytes=max_line_bytes)
            raw_seq = obj.get("seq") if type(obj.get("seq")) is int else None
            claimed = obj.pop("event_hash", None)
            body = canonical_json_of_parsed(obj)
            computed = "sha256:" + sha256(body).hexdigest()
            if claimed != computed:
                report.fault = Fault(
                    MODIFIED,
                    "The event's content does not match its event_hash: it was changed after it was written.",
                    path,
                    line_no,
                    raw_seq,
                    expected=str(claimed),
                    found=computed,
                )
                return
            obj["event_hash"] = claimed
            if len(data) != len(body) + _HASH_PREFIX_BYTES or not data.endswith(body[1:]):
                report.non_canonical_lines += 1
            try:
                event = validate_event(dialects.to_v1(obj))
            except JournalError as error:
                report.fault = _fault_from_error(error.located(path=path, line=line_no))
                return
            seq = event.seq
            if run_id is None:
                run_id = event.run_id
            elif event.run_id != run_id:
                report.fault = Fault(
                    SCHEMA, "The event belongs to another run.", path, line_no, seq, expected=f"run_id {run_id}", found=f"run_id {event.run_id}"
                )
                return
            if seq == prev_seq:
                report.fault = Fault(DUPLICATE, f"Seq {seq} appears twice (again on this line).", path, line_no, seq)
                return
            if seq < prev_seq:
                report.fault = Fault(
                    REORDERED, f"Seq {seq} comes after seq {prev_seq}: events are out of order.", path, line_no, seq
                )
                return
            if seq > prev_seq + 1:
                missing = prev_seq + 1
                upcoming = peek_seq()
                if upcoming is not None and upcoming < seq:
                    report.fault = Fault(
                        REORDERED,
                        f"Seq {seq} comes before seq {upcoming}: events are out of order.",
                        path,
                        line_no,
                        missing,
                        expected=f"Seq {missing}",
                        found=f"seq {seq}",
                    )
                else:
                    report.fault = Fault(
                        DELETED,
                        f"Seq {missing}" + (f" to {seq - 1} are" if seq - 1 > missing else " is")
                        + f" missing: the next event on this line is seq {seq}.",
                        path,
                        line_no,
                        missing,
                        expected=f"prev_event_hash {prev_hash}",
                        found=f"prev_event_hash {event.prev_event_hash}",
                    )
                return
            if event.prev_event_hash != prev_hash:
                report.fault = Fault(
                    BROKEN_LINK,
                    f"The prev_event_hash does not match the event_hash of seq {prev_seq}"
                    if prev_seq
                    else "The first event must have prev_event_hash null",
                    path,
                    line_no,
                    seq,
                    expected=str(prev_hash),
                    found=str(event.prev_event_hash),
                )
                return
            if seq == 1 and event.kind != RUN_STARTED:
                report.fault = Fault(SCHEMA, "A journal starts with run.started.", path, line_no, seq, expected="kind run.started", found=f"kind {event.kind}")
                return
            prev_seq, prev_hash = seq, claimed
            report.events += 1
            report.last_seq = seq
    except JournalError as error:
        report.fault = _fault_from_error(error)


def _check_type_data(journal: Journal, report: VerifyReport, max_line_bytes: int) -> None:
    position = 0
    try:
        for path, line_no, data, complete, _ in _lines(journal):
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
