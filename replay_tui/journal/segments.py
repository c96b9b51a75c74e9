"""One shard of a journal: a byte-offset index of its complete lines.

Lines are read with ``os.pread`` from a file descriptor, so the index is the only
per-line memory (8 bytes a line). A gzipped shard is inflated, batch by batch,
into an anonymous temporary file while it is indexed; the journal itself is only
ever opened read-only.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from array import array
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import JournalOpenError

CHUNK_BYTES = 4 * 1024 * 1024
# Inflated in smaller steps: when a gzip shard is cut off, what came before is kept.
GZIP_CHUNK_BYTES = 256 * 1024


def _read_shard(stream: BinaryIO, size: int, path: Path) -> bytes:
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

    def __init__(self, path: Path) -> None:
        self.path = path
        self.compressed = path.name.endswith(".gz")
        self.ends = array("Q")
        self.scanned = 0  # bytes of (inflated) data looked at so far
        self.finished = False  # a gzip shard fully inflated; plain files never finish
        self._gzip: gzip.GzipFile | None = None
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise JournalOpenError("no such file", path=str(path)) from None
        except IsADirectoryError:
            raise JournalOpenError("is a directory, expected a journal file", path=str(path)) from None
        except OSError as error:
            raise JournalOpenError(f"cannot be read: {error.strerror}", path=str(path)) from None
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
        return self.ends[-1] if self.ends else 0

    def size(self) -> int:
        """Bytes of line data available now (inflated so far, for gzip)."""
        if self.compressed:
            return self.scanned
        return os.fstat(self._fd).st_size

    def index_more(self, max_bytes: int) -> int:
        """Index up to ``max_bytes`` more; returns how many bytes were looked at."""
        if self.compressed:
            return self._inflate_more(max_bytes)
        size = os.fstat(self._fd).st_size
        looked = 0
        while looked < max_bytes and self.scanned < size:
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
            self._inflated.seek(self.scanned)
            self._inflated.write(chunk)
            self._inflated.flush()
            self._add_chunk(chunk)
            looked += len(chunk)
        return looked

    def _add_chunk(self, chunk: bytes) -> None:
        parts = chunk.split(b"\n")
        if len(parts) > 1:
            # Each complete part ends one line; the first may have begun in an
            # earlier chunk, which does not matter for its end offset.
            ends = accumulate((len(part) + 1 for part in parts[:-1]), initial=self.scanned)
            next(ends)
            self.ends.extend(ends)
        self.scanned += len(chunk)

    def is_fully_indexed(self) -> bool:
        return self.finished if self.compressed else self.scanned >= self.size()

    # -- reading ----------------------------------------------------------
    def line_span(self, local_index: int) -> tuple[int, int]:
        start = self.ends[local_index - 1] if local_index else 0
        return start, self.ends[local_index]

    def read(self, start: int, length: int) -> bytes:
        return os.pread(self._read_fd, length, start)

    def pending_tail(self) -> int:
        """Bytes after the last complete line: a line still being written, or cut off."""
        return self.size() - self.indexed_end

    def read_tail(self, limit: int) -> bytes:
        return self.read(self.indexed_end, min(limit, self.pending_tail()))

    def first_line(self, limit: int = 1 << 20) -> bytes:
        """The first line (or its first ``limit`` bytes) without building the index."""
        if self.compressed:
            with gzip.open(self.path, "rb") as stream:
                try:
                    return stream.readline(limit)
                except (OSError, EOFError, zlib.error) as error:
                    raise JournalOpenError(f"is not a valid gzip file ({error})", path=str(self.path)) from None
        data = os.pread(self._fd, limit, 0)
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


def line_batches(segment: Segment, start: int = 0, end: int | None = None) -> Iterator[tuple[int, list[bytes], bytes]]:
    """(first line number, complete lines, incomplete tail) for a shard or a byte range of it.

    A sequential pass that builds no index: what ``verify`` and benchmarks use.
    Lines come a chunk at a time so the caller's per-line loop stays a plain
    ``for`` over a list. The tail is non-empty only in the last batch, when the
    data ends without a newline. A line longer than a chunk is still whole.
    """
    if segment.compressed:
        stream = gzip.open(segment.path, "rb")
    else:
        stream = open(segment.path, "rb", buffering=0)
        stream.seek(start)
    remaining = None if end is None else end - start
    line_no = 1
    carry = b""
    with stream:
        while remaining is None or remaining > 0:
            size = GZIP_CHUNK_BYTES if segment.compressed else CHUNK_BYTES
            chunk = _read_shard(stream, size if remaining is None else min(size, remaining), segment.path)
            if not chunk:
                break
            if remaining is not None:
                remaining -= len(chunk)
            lines = chunk.split(b"\n")
            if carry:
                lines[0] = carry + lines[0]
            carry = lines.pop()
            if lines:
                yield line_no, lines, b""
                line_no += len(lines)
    yield line_no, [], carry


def stream_lines(segment: Segment) -> Iterator[tuple[int, bytes, bool]]:
    """(1-based line number, bytes without newline, complete) for a whole shard."""
    for first, lines, tail in line_batches(segment):
        for offset, line in enumerate(lines):
            yield first + offset, line, True
        if tail:
            yield first, tail, False
