"""One shard of a journal: a byte-offset index of its complete lines.

Lines are read with ``os.pread`` from a file descriptor, so the index is the only
per-line memory (8 bytes a line). A gzipped shard is inflated, batch by batch,
into an anonymous temporary file while it is indexed; the journal itself is only
ever opened read-only.

Memory stays bounded for any input, a gzip bomb included: an empty line gets no index
entry, only a fault; lines too short to hold an event are indexed (and shown as the
errors they are) up to a cap per shard; too many faulty lines in a row stop the shard;
and of a line over the size limit a gzipped shard keeps only the first
``max_line_bytes + 1`` bytes (enough to refuse it) and its length.
"""

from __future__ import annotations

import bisect
import gzip
import os
import tempfile
import zlib
from array import array
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import JournalOpenError
from .files import open_regular, open_regular_binary

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: A line shorter than this cannot be an event of any dialect (the smallest is ~150 bytes).
MIN_EVENT_BYTES = 32
#: Reading stops after this many faulty lines in a row (a bomb of empty lines, say).
MAX_CONSECUTIVE_FAULTS = 1000
#: Lines too short to be an event that are still indexed (shown as errors) per shard; more are only counted.
MAX_SHORT_LINES = 10_000
#: Skipped lines remembered per shard, for messages; the rest are only counted.
KEPT_SKIP_MESSAGES = 100
_JSON_SPACE = b" \t\r"
CHUNK_BYTES = 4 * 1024 * 1024
# Inflated in smaller steps: when a gzip shard is cut off, what came before is kept.
GZIP_CHUNK_BYTES = 256 * 1024


def _read_shard(stream: BinaryIO | gzip.GzipFile, size: int, path: Path) -> bytes:
    """``stream.read(size)``, with a damaged gzip shard reported as a JournalOpenError."""
    try:
        return stream.read(size)
    except EOFError:
        raise TruncatedShardError(
            "gzip stream ends early: the shard was cut off while being written.", path=str(path)
        ) from None
    except (OSError, zlib.error) as error:
        raise JournalOpenError(f"is not a valid gzip file ({error}).", path=str(path)) from None


class TruncatedShardError(JournalOpenError):
    """A gzipped shard whose compressed stream was cut off."""


class Segment:
    """A plain or gzipped shard and the end offsets of its complete lines."""

    def __init__(self, path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.compressed = path.name.endswith(".gz")
        self.ends = array("Q")  # end offsets (after the newline) of the indexed lines
        self.scanned = 0  # bytes of (inflated) data looked at so far
        self.finished = False  # a gzip shard fully inflated; plain files never finish
        self.stopped: str | None = None  # why indexing gave up on this shard (too many faults in a row)
        self.skipped: list[tuple[int, str]] = []  # (line number, why) of the first skipped lines
        self.skipped_count = 0
        self.short_lines = 0  # indexed lines too short to be an event
        self.oversized: dict[int, int] = {}  # gzip: local index -> real length of a line kept cut short
        self._stored = 0  # gzip: bytes written to the inflated copy
        self._complete_end = 0  # stored offset after the last complete line, indexed or skipped
        self._line_len = 0  # source bytes of the current, incomplete line
        self._line_head = b""  # its first MIN_EVENT_BYTES bytes
        self._lines_seen = 0  # complete lines so far, indexed or skipped
        self._bad_run = 0
        self._line_marks: list[tuple[int, int]] = []  # (local index, lines skipped before it)
        self._line_end_source = 0  # plain: file offset after the newline of the line being ended
        self._starts: dict[int, int] = {}  # plain: start of a line that follows skipped lines
        self._gzip: gzip.GzipFile | None = None
        self._fd = open_regular(path)  # a FIFO, a device or a socket is refused, never waited on
        stat = os.fstat(self._fd)
        self.identity = (stat.st_dev, stat.st_ino)
        if self.compressed:
            self._gzip = gzip.GzipFile(fileobj=os.fdopen(os.dup(self._fd), "rb"))
            self._inflated = tempfile.TemporaryFile(prefix="replay-tui-shard-")
            self._read_fd = self._inflated.fileno()
        else:
            self._read_fd = self._fd

    # -- indexing ---------------------------------------------------------
    @property
    def indexed_end(self) -> int:
        return self._complete_end

    def size(self) -> int:
        """Bytes of line data available now (kept of the inflated data so far, for gzip)."""
        if self.compressed:
            return self._stored
        return os.fstat(self._fd).st_size

    def index_more(self, max_bytes: int) -> int:
        """Index up to ``max_bytes`` more; returns how many bytes were looked at."""
        if self.compressed:
            return self._inflate_more(max_bytes)
        size = os.fstat(self._fd).st_size
        looked = 0
        while looked < max_bytes and self.scanned < size and self.stopped is None:
            chunk = os.pread(self._fd, min(CHUNK_BYTES, max_bytes - looked, size - self.scanned), self.scanned)
            if not chunk:
                break
            self._add_chunk(chunk)
            looked += len(chunk)
        return looked

    def _inflate_more(self, max_bytes: int) -> int:
        looked = 0
        assert self._gzip is not None
        while looked < max_bytes and not self.finished:
            chunk = _read_shard(self._gzip, min(CHUNK_BYTES, max_bytes - looked), self.path)
            if not chunk:
                self.finished = True
                break
            self._add_chunk(chunk)
            looked += len(chunk)
            if self.stopped is not None:
                self.finished = True
        self._inflated.flush()
        return looked

    def _store(self, data: bytes) -> None:
        """Write inflated bytes at the end of the kept data (gzip only)."""
        self._inflated.seek(self._stored)
        self._inflated.write(data)
        self._stored += len(data)

    def _add_chunk(self, chunk: bytes) -> None:
        newlines = chunk.count(b"\n")
        if newlines * MIN_EVENT_BYTES > len(chunk) + MIN_EVENT_BYTES:
            # Lines shorter than any event on average (a bomb of empty lines, say): walk them
            # one by one rather than split the chunk into millions of objects.
            self._add_short_lines(chunk)
            return
        parts = chunk.split(b"\n")
        tail = parts.pop()
        limit = self.max_line_bytes
        if parts:
            lengths = list(map(len, parts))
            first_length = self._line_len + lengths[0]
            if (
                first_length >= MIN_EVENT_BYTES
                and min(lengths[1:], default=MIN_EVENT_BYTES) >= MIN_EVENT_BYTES
                and (not self.compressed or (first_length <= limit and max(lengths) <= limit and len(tail) <= limit))
            ):
                # The common case: every line can be an event and fits; one C-speed pass.
                base = self._stored if self.compressed else self.scanned
                ends = accumulate((length + 1 for length in lengths), initial=base)
                next(ends)
                self._mark_line(len(self.ends))
                self.ends.extend(ends)
                self._lines_seen += len(parts)
                self._bad_run = 0
                self._complete_end = self.ends[-1]
                if self.compressed:
                    self._store(chunk)
                self._line_len, self._line_head = len(tail), tail[:MIN_EVENT_BYTES]
                self.scanned += len(chunk)
                return
            position = self.scanned
            for part in parts:
                position += len(part) + 1
                self._line_end_source = position
                self._end_line(part)
                if self.stopped is not None:
                    self.scanned += len(chunk)
                    return
        self._continue_line(tail)
        self.scanned += len(chunk)

    def _add_short_lines(self, chunk: bytes) -> None:
        start, position = 0, self.scanned
        find = chunk.find
        while self.stopped is None:
            end = find(b"\n", start)
            if end < 0:
                break
            position += end - start + 1
            self._line_end_source = position
            self._end_line(chunk[start:end])
            start = end + 1
        if self.stopped is None:
            self._continue_line(chunk[start:])
        self.scanned += len(chunk)

    def _continue_line(self, piece: bytes) -> None:
        """Bytes of the current line that have no newline yet."""
        if self.compressed:
            room = self.max_line_bytes + 1 - self._line_len
            if room > 0:
                self._store(piece[:room])
        if self._line_len < MIN_EVENT_BYTES:
            self._line_head = (self._line_head + piece[:MIN_EVENT_BYTES])[:MIN_EVENT_BYTES]
        self._line_len += len(piece)

    def _end_line(self, piece: bytes) -> None:
        """The last bytes of the current line, up to its newline: index it or skip it."""
        self._continue_line(piece)
        length = self._line_len
        self._line_len, head, self._line_head = 0, self._line_head, b""
        short = length < MIN_EVENT_BYTES
        if short:
            # An empty line is a fault, never an index entry. A short one is shown (as the
            # error it is) up to a cap, so a bomb of them costs no more than that.
            if not head.strip(_JSON_SPACE):
                self._skip("line is empty, expected a JSON object")
                self._lines_seen += 1
                return
            if self.short_lines >= MAX_SHORT_LINES:
                self._skip(
                    f"line is {length} bytes, too short to hold an event (not shown: over {MAX_SHORT_LINES:,} such lines)"
                )
                self._lines_seen += 1
                return
            self.short_lines += 1
        if self.compressed:
            if length > self.max_line_bytes:
                self.oversized[len(self.ends)] = length
            self._store(b"\n")
            end = self._stored
        else:
            end = self._line_end_source
        self._mark_line(len(self.ends))
        self._lines_seen += 1
        self.ends.append(end)
        self._complete_end = end
        if short:
            self._count_fault(self._lines_seen)
        else:
            self._bad_run = 0

    def _skip(self, why: str) -> None:
        line_no = self._lines_seen + 1
        self.skipped_count += 1
        if len(self.skipped) < KEPT_SKIP_MESSAGES:
            self.skipped.append((line_no, why))
        if self.compressed:
            self._stored = self._complete_end  # drop what was kept of it
        else:
            self._complete_end = self._line_end_source
        self._count_fault(line_no)

    def _count_fault(self, line_no: int) -> None:
        """One more empty or too-short line in a row; stop reading the shard after too many."""
        self._bad_run += 1
        if self._bad_run >= MAX_CONSECUTIVE_FAULTS:
            first = line_no - self._bad_run + 1
            self.stopped = (
                f"stopped reading at line {line_no}: lines {first} to {line_no} are all empty or too short "
                f"to hold an event ({MAX_CONSECUTIVE_FAULTS} faults in a row)"
            )

    def _mark_line(self, local: int) -> None:
        """Remember how many lines were skipped before ``local`` (its line number), and where it
        starts if skipped bytes lie between it and the line before."""
        if self._complete_end != (self.ends[-1] if self.ends else 0):
            self._starts[local] = self._complete_end
        skipped = self._lines_seen - local
        if skipped != (self._line_marks[-1][1] if self._line_marks else 0):
            self._line_marks.append((local, skipped))

    def line_number(self, local_index: int) -> int:
        """1-based line number in the shard of the indexed line ``local_index``."""
        at = bisect.bisect_right(self._line_marks, (local_index, 1 << 62)) - 1
        return local_index + 1 + (self._line_marks[at][1] if at >= 0 else 0)

    def line_size(self, local_index: int) -> int:
        """Real length of an indexed line (a refused giant line of a gzip shard was kept cut short)."""
        if local_index in self.oversized:
            return self.oversized[local_index]
        start, end = self.line_span(local_index)
        return end - start

    def is_fully_indexed(self) -> bool:
        if self.stopped is not None:
            return True
        return self.finished if self.compressed else self.scanned >= self.size()

    # -- reading ----------------------------------------------------------
    def line_span(self, local_index: int) -> tuple[int, int]:
        start = self._starts.get(local_index)
        if start is None:
            start = self.ends[local_index - 1] if local_index else 0
        return start, self.ends[local_index]

    def read(self, start: int, length: int) -> bytes:
        return os.pread(self._read_fd, length, start)

    def pending_tail(self) -> int:
        """Bytes after the last complete line: a line still being written, or cut off."""
        return self.size() - self.indexed_end

    def first_line(self, limit: int = 1 << 20) -> bytes:
        """The first line that is not empty (or its first ``limit`` bytes), without building the index.

        Only the first ``limit`` bytes are looked at: past them, b"" (an empty journal, for the caller).
        """
        if self.compressed:
            with open_regular_binary(self.path) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                try:
                    data, looked, lines = b"", 0, 0
                    while looked < limit and lines < MAX_CONSECUTIVE_FAULTS and not data.strip(b" \t\r\n"):
                        data = stream.readline(limit - looked)
                        looked, lines = looked + len(data), lines + 1
                        if not data:
                            break
                except (OSError, EOFError, zlib.error) as error:
                    raise JournalOpenError(f"is not a valid gzip file ({error})", path=str(self.path)) from None
        else:
            data = os.pread(self._fd, limit, 0)
        data = data.lstrip(b" \t\r\n")
        cut = data.find(b"\n")
        return data if cut < 0 else data[: cut + 1]

    # -- lifecycle --------------------------------------------------------
    def replaced_or_truncated(self) -> str | None:
        """'replaced' if the path is now another file, 'truncated' if it shrank."""
        if self.compressed:
            return None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None  # rotated away (gzipped); our descriptor still reads it
        if (stat.st_dev, stat.st_ino) != self.identity:
            return "replaced"
        if os.fstat(self._fd).st_size < self.scanned:
            return "truncated"
        return None

    def close(self) -> None:
        if self._gzip is not None:
            self._gzip.close()
            self._inflated.close()
            self._gzip = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OversizedLine(bytes):
    """A line over the size limit, never held whole: its first bytes, and its real length as ``len()``."""

    size: int

    def __new__(cls, head: bytes, size: int) -> "OversizedLine":
        line = super().__new__(cls, head[:64])
        line.size = size
        return line

    def __len__(self) -> int:
        return self.size


def line_batches(
    segment: Segment,
    start: int = 0,
    end: int | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[tuple[int, list[bytes], bytes]]:
    """(first line number, complete lines, incomplete tail) for a shard or a byte range of it.

    A sequential pass that builds no index: what ``verify`` and benchmarks use.
    Lines come a chunk at a time so the caller's per-line loop stays a plain
    ``for`` over a list. The tail is non-empty only in the last batch, when the
    data ends without a newline. A line longer than a chunk is still whole, up to
    ``max_line_bytes``; a longer one comes as an ``OversizedLine`` and is never held.
    """
    stream: gzip.GzipFile | BinaryIO
    raw = open_regular_binary(segment.path, buffering=0)  # opened again by name: refused unless a regular file
    if segment.compressed:
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        stream = raw
        stream.seek(start)
    remaining = None if end is None else end - start
    line_no = 1
    carry: list[bytes] = []  # pieces of the current line (joined once, so a long line costs no copies)
    carry_len = 0
    carry_head = b""
    oversized = False  # the current line passed the limit: only its length is counted
    with raw, stream:
        while remaining is None or remaining > 0:
            size = GZIP_CHUNK_BYTES if segment.compressed else CHUNK_BYTES
            chunk = _read_shard(stream, size if remaining is None else min(size, remaining), segment.path)
            if not chunk:
                break
            if remaining is not None:
                remaining -= len(chunk)
            lines = chunk.split(b"\n")
            piece = lines.pop()
            if lines:
                first = lines[0]
                length = carry_len + len(first)
                if oversized or length > max_line_bytes:
                    lines[0] = OversizedLine(carry_head or first, length)
                elif carry:
                    carry.append(first)
                    lines[0] = b"".join(carry)
                carry, carry_len, carry_head, oversized = [], 0, b"", False
            carry_len += len(piece)
            if not carry_head:
                carry_head = piece[:64]
            if oversized or carry_len > max_line_bytes:
                oversized, carry = True, []
            elif piece:
                carry.append(piece)
            if lines:
                yield line_no, lines, b""
                line_no += len(lines)
    if oversized:
        yield line_no, [], OversizedLine(carry_head, carry_len)
    else:
        yield line_no, [], b"".join(carry)


def stream_lines(segment: Segment) -> Iterator[tuple[int, bytes, bool]]:
    """(1-based line number, bytes without newline, complete) for a whole shard."""
    for first, lines, tail in line_batches(segment):
        for offset, line in enumerate(lines):
            yield first + offset, line, True
        if tail:
            yield first, tail, False
