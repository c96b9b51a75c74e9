"""Open a journal (file, .gz, or directory of shards) and read events by position.

The reader keeps only byte offsets for the whole journal and parses the lines
that are asked for, with an LRU cache, so a million-event journal costs a few
megabytes. It never writes to the journal.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import stat
import threading
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import orjson

from . import dialects
from .duplicate_keys import find_duplicate_key
from .errors import DuplicateKeyError, JournalError, JournalOpenError, MalformedLineError
from .files import not_regular
from .model import Event, validate_event
from .progress import CancelCheck, ProgressCallback
from .segments import DEFAULT_MAX_LINE_BYTES, Segment

INDEX_BATCH_BYTES = 16 * 1024 * 1024
SHARD_SUFFIXES = (".jsonl", ".jsonl.gz")


class RefreshResult(NamedTuple):
    """What changed on disk since the last refresh. A NamedTuple, not a frozen dataclass (3 M instructions
    at import, on the path of every journal opened)."""

    new_events: int = 0
    new_shards: int = 0
    reset: str | None = None  # "truncated" or "replaced": the journal was reopened

    @property
    def message(self) -> str | None:
        if self.reset:
            return f"journal was {self.reset}; reloaded from the start"
        if self.new_shards:
            return f"journal rotated into {self.new_shards} new shard(s)"
        return None


def _too_long(size: int, limit: int) -> str:
    return f"line is {size / 2**20:.1f} MiB; lines over {limit / 2**20:.0f} MiB are refused"


def parse_line(data: bytes, *, path: str, line: int, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Any:
    """``orjson.loads`` with errors that say where and what was expected, duplicate keys included."""
    if len(data) > max_line_bytes:
        raise MalformedLineError(_too_long(len(data), max_line_bytes), path=path, line=line)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        text = str(error)
        if not data.strip():
            raise MalformedLineError("line is empty, expected a JSON object", path=path, line=line) from None
        if "UTF-8" in text or "utf-8" in text or "surrogate" in text:
            raise MalformedLineError(f"line is not valid UTF-8 ({text})", path=path, line=line) from None
        if "depth limit" in text or "recursion" in text:
            raise MalformedLineError("line nests deeper than 1024 levels", path=path, line=line) from None
        raise MalformedLineError(f"line is not valid JSON ({text})", path=path, line=line) from None
    if type(obj) is not dict:
        kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
            type(obj), "null"
        )
        raise MalformedLineError(f"line is {kind}, expected a JSON object (one event per line)", path=path, line=line)
    check_duplicate_keys(obj, data, path=path, line=line)
    return obj


def check_duplicate_keys(obj: dict[str, Any], data: bytes, *, path: str | None, line: int | None) -> None:
    """Raise DuplicateKeyError if ``data`` repeats a key; costs one dump when the line is its own serialisation."""
    try:
        if orjson.dumps(obj) == data.strip(b" \t\r\n"):
            return  # the line is exactly what it parses to: it hides nothing
    except (TypeError, orjson.JSONEncodeError):
        pass  # nested deeper than orjson writes (it reads 1,024 levels, writes 255): scan it
    key = find_duplicate_key(data)
    if key is not None:
        seq = obj.get("seq")
        raise DuplicateKeyError(key, path=path, line=line, seq=seq if type(seq) is int else None)


def list_shards(directory: Path) -> list[Path]:
    """Shard files of a directory journal; a shard caught mid-gzip is taken once. A shard that is no
    regular file (a FIFO, a symlink to a device) is refused, naming it, rather than left out unsaid."""
    names = {p.name for p in directory.iterdir() if p.name.endswith(SHARD_SUFFIXES) and _is_shard_file(p)}
    chosen = [n for n in names if not (n.endswith(".gz") and n[:-3] in names)]
    return [directory / n for n in sorted(chosen)]


def _is_shard_file(path: Path) -> bool:
    """A regular file (through symlinks); False for a directory or what vanished; anything else raises."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        raise not_regular(path, mode)
    return True


class Journal:
    """Random access to the events of one journal."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        allow_empty: bool = False,
        cache_size: int = 4096,
    ) -> None:
        self.path = Path(path)
        self.max_line_bytes = max_line_bytes
        self.allow_empty = allow_empty
        self._lock = threading.RLock()
        self._cache_size = cache_size
        self._open()

    # -- opening ----------------------------------------------------------
    def _open(self) -> None:
        self.segments: list[Segment] = []
        self._starts: list[int] = []  # first global line index of each segment
        self.is_directory = self.path.is_dir()
        if self.is_directory:
            shards = list_shards(self.path)
            if not shards and not self.allow_empty:
                raise JournalOpenError("directory holds no journal shards (*.jsonl or *.jsonl.gz)", path=str(self.path))
            segments: list[Segment] = []
            try:
                for shard in shards:
                    segments.append(Segment(shard, self.max_line_bytes))
            except JournalError:
                for segment in segments:  # the shards opened before the one refused
                    segment.close()
                raise
            segments.sort(key=self._first_seq_of)
            self.segments = segments
        else:
            if not self.path.exists():
                raise JournalOpenError("no such file", path=str(self.path))
            self.segments = [Segment(self.path, self.max_line_bytes)]
        first = self.segments[0].first_line() if self.segments else b""
        if not first.strip() and not self.allow_empty:
            self.close()
            raise JournalOpenError("is empty: a journal starts with a run.started line", path=str(self.path))
        try:
            self.dialect = dialects.detect(orjson.loads(first)) if first.strip() else dialects.V1
        except orjson.JSONDecodeError:
            self.dialect = dialects.V1
        self.has_hash_chain = self.dialect == dialects.V1
        # type/data lines may expand to two events: position -> (line << 1 | part)
        self._expansion: array[int] | None = array("Q") if self.dialect == dialects.TYPE_DATA else None
        self._expanded_lines = 0
        self._event_cache = lru_cache(maxsize=self._cache_size)(self._load_event)

    def _reopen(self) -> None:
        """Open the path again (it was replaced or truncated). If what is there now cannot be opened (a FIFO
        put in its place, a file gone), the journal stays as it was, its shards still open and readable, and
        the JournalError says why: follow mode shows it, the view keeps what it showed."""
        before = dict(self.__dict__)
        try:
            self._open()
        except JournalError:
            self.__dict__.update(before)
            raise
        for segment in before["segments"]:
            segment.close()
        self.index()

    def _first_seq_of(self, segment: Segment) -> int:
        try:
            obj = orjson.loads(segment.first_line())
            seq = obj.get("seq") if isinstance(obj, dict) else None
            return seq if isinstance(seq, int) else 1 << 62
        except orjson.JSONDecodeError:
            return 1 << 62

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing ---------------------------------------------------------
    def index(
        self,
        progress: ProgressCallback | None = None,
        cancelled: CancelCheck | None = None,
        batch_bytes: int = INDEX_BATCH_BYTES,
    ) -> bool:
        """Index everything on disk now, in batches; False if cancelled first."""
        total = self.known_bytes()
        done = sum(segment.scanned for segment in self.segments)
        for position, segment in enumerate(self.segments):
            while not segment.is_fully_indexed():
                if cancelled is not None and cancelled():
                    return False
                with self._lock:
                    looked = segment.index_more(batch_bytes)
                    self._rebuild_starts()
                if looked == 0:
                    break
                done += looked
                if progress is not None:
                    progress(done, max(total, done))
        with self._lock:
            self._rebuild_starts()
            self._expand_type_data()
        if self.line_count == 0 and not self.allow_empty:
            skipped = self.skipped_lines()[1]
            if skipped:  # nothing but empty or too-short lines: say what the first one is
                raise skipped[0]
        return True

    def known_bytes(self) -> int:
        # From the open descriptors: a shard gzipped away since it was opened has no path any more.
        return sum(s.size() for s in self.segments)

    def _rebuild_starts(self) -> None:
        starts, total = [], 0
        for segment in self.segments:
            starts.append(total)
            total += len(segment.ends)
        self._starts = starts
        self._line_count = total

    def _expand_type_data(self) -> None:
        if self._expansion is None:
            return
        while self._expanded_lines < self._line_count:
            line = self._expanded_lines
            try:
                count = dialects.type_data_event_count(self._parse_line(line))
            except JournalError:
                count = 1
            for part in range(count):
                self._expansion.append(line << 1 | part)
            self._expanded_lines += 1

    def refresh(self) -> RefreshResult:
        """Pick up what was appended, rotated, truncated or replaced since last time."""
        with self._lock:
            before = len(self)
            for segment in self.segments:
                change = segment.replaced_or_truncated()
                if change:
                    self._reopen()
                    return RefreshResult(new_events=len(self), reset=change)
            new_shards = 0
            if self.is_directory:
                known = {s.path.name for s in self.segments}
                known |= {name + ".gz" for name in known}
                for shard in list_shards(self.path):
                    if shard.name not in known and shard.name[:-3] not in known:
                        self.segments.append(Segment(shard, self.max_line_bytes))
                        new_shards += 1
            self.index()
            return RefreshResult(new_events=len(self) - before, new_shards=new_shards)

    # -- positions --------------------------------------------------------
    @property
    def line_count(self) -> int:
        return getattr(self, "_line_count", 0)

    def __len__(self) -> int:
        """Number of events indexed so far (lines, for v1)."""
        if self._expansion is not None:
            return len(self._expansion)
        return self.line_count

    def _locate(self, line: int) -> tuple[Segment, int]:
        if not 0 <= line < self.line_count:
            raise IndexError(f"line {line + 1} is beyond the {self.line_count} indexed lines")
        which = bisect.bisect_right(self._starts, line) - 1
        return self.segments[which], line - self._starts[which]

    def line_bytes(self, line: int) -> bytes:
        segment, local = self._locate(line)
        start, end = segment.line_span(local)
        if end - start > self.max_line_bytes:
            return b""  # parse_line reports the size; never pull a huge line into memory
        return segment.read(start, end - start)

    def line_run(self, line: int, budget: int = 1 << 20) -> list[bytes]:
        """``line`` and the lines after it in its shard, without their newlines (about ``budget`` bytes,
        at least one line), from one read: a reader going forward (search, diff, the replay's tape and
        referee) pays one system call a block instead of one a line. A line over the size limit comes
        alone, as b"": it is never pulled into memory."""
        segment, local = self._locate(line)
        ends = segment.ends
        stop = min(len(ends), local + self.line_count - line)
        first = ends[local - 1] if local else 0
        if ends[local] - first > self.max_line_bytes:
            return [b""]
        budget = min(budget, self.max_line_bytes)  # so a line over the limit is never inside a block
        last = max(local + 1, bisect.bisect_right(ends, first + budget, local, stop))
        if ends[last - 1] - first > budget:
            last = local + 1
        lines = segment.read(first, ends[last - 1] - first).split(b"\n")
        if len(lines) != last - local + 1:  # lines the index skipped (empty ones) lie between: one by one
            return [
                segment.read(start, end - start).rstrip(b"\n")
                for start, end in map(segment.line_span, range(local, last))
            ]
        del lines[-1]  # after the last newline
        return lines

    def line_origin(self, line: int) -> tuple[str, int]:
        """(shard path, 1-based line number in that shard), for messages."""
        segment, local = self._locate(line)
        return str(segment.path), segment.line_number(local)

    def _parse_line(self, line: int) -> Any:
        segment, local = self._locate(line)
        start, end = segment.line_span(local)
        line_no = segment.line_number(local)
        if end - start > self.max_line_bytes:
            raise MalformedLineError(
                _too_long(segment.line_size(local), self.max_line_bytes),
                path=str(segment.path),
                line=line_no,
            )
        return parse_line(segment.read(start, end - start), path=str(segment.path), line=line_no)

    def skipped_lines(self) -> tuple[int, list[MalformedLineError]]:
        """Lines the index left out (empty, too short to be an event) and shards it stopped reading:
        how many, and the first of them as located errors."""
        count, stops, errors = 0, [], []
        for segment in self.segments:
            count += segment.skipped_count
            for line_no, why in segment.skipped:
                errors.append(MalformedLineError(why, path=str(segment.path), line=line_no))
            if segment.stopped:
                stops.append(MalformedLineError(segment.stopped, path=str(segment.path)))
        return count, stops + errors  # a shard that was given up on matters most: first

    # -- events -----------------------------------------------------------
    def _load_event(self, position: int) -> Event | JournalError:
        if self._expansion is not None:
            packed = self._expansion[position]
            line, part = packed >> 1, packed & 1
        else:
            line, part = position, 0
        path, line_no = self.line_origin(line)
        try:
            obj = self._parse_line(line)
            if self.dialect == dialects.TYPE_DATA:
                first_seq = position + 1 - part
                return validate_event(dialects.type_data_to_v1(obj, first_seq)[part])
            upgraded = dialects.to_v1(obj)
            event = validate_event(upgraded)
            return event if upgraded is obj else dataclasses.replace(event, raw=obj)
        except JournalError as error:
            return error.located(path=path, line=line_no)

    def event(self, position: int) -> Event:
        """The event at a 0-based position; raises JournalError naming file and line."""
        result = self._event_cache(position)
        if isinstance(result, JournalError):
            raise result
        return result

    def try_event(self, position: int) -> Event | JournalError:
        return self._event_cache(position)

    def events(self, start: int = 0, stop: int | None = None) -> Iterator[Event | JournalError]:
        """Events in order; a bad line yields its error and the walk goes on."""
        stop = len(self) if stop is None else min(stop, len(self))
        for position in range(start, stop):
            yield self._load_event(position)

    def position_of_seq(self, seq: int) -> int | None:
        """Where the event with ``seq`` is, or None; O(1) for a healthy journal."""
        count = len(self)
        if count == 0:
            return None
        first = self._seq_at(0)
        guess = seq - first if first is not None else seq - 1
        if 0 <= guess < count and self._seq_at(guess) == seq:
            return guess
        low, high = 0, count - 1
        while low <= high:
            middle = (low + high) // 2
            found = self._seq_at(middle)
            if found is None:
                break
            if found == seq:
                return middle
            if found < seq:
                low = middle + 1
            else:
                high = middle - 1
        for position in range(count):  # a damaged journal: fall back to a scan
            if self._seq_at(position) == seq:
                return position
        return None

    def _seq_at(self, position: int) -> int | None:
        result = self._event_cache(position)
        return result.seq if isinstance(result, Event) else None

    def pending_tail_bytes(self) -> int:
        """Bytes of an incomplete last line, held back until its newline arrives."""
        return self.segments[-1].pending_tail() if self.segments else 0


def open_journal(path: str | os.PathLike[str], **options: Any) -> Journal:
    """Open and fully index a journal (the simple path for CLI commands)."""
    journal = Journal(path, **options)
    journal.index()
    return journal
