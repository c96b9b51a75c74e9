"""The lines of an OTLP/JSON file: one request per line (the OTLP file exporter's form), or one document over
many lines; each parsed and checked to be a request, or (``reduced``) a line of plain spans taken by the fast
path (``fast_spans``). Bad input is named by its line (a document's, by its character)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..errors import TraceImportError
from . import fast_spans

#: A request line: parsed JSON, or (from ``fast_spans``) its spans reduced already.
Request = dict[str, Any] | list[dict[str, Any]]


def iter_requests(path: Path, *, reduced: bool = False) -> Iterator[tuple[int, Request]]:
    """(line number, request) for each OTLP/JSON request in the file: one per line, or one
    document spread over many lines. ``reduced``: a line of plain spans may come as its reduced spans."""
    with open(path, "rb") as handle:
        first = handle.readline()
        if not first.strip():
            raise TraceImportError(
                str(path), "line 1", "an OTLP/JSON request (resourceSpans or resourceLogs); the line is empty"
            )
        try:
            yield 1, _request(orjson.loads(first), path, 1)
            one_per_line = True
        except orjson.JSONDecodeError:
            one_per_line = False
        if not one_per_line:
            rest = first + handle.read()
            try:
                yield 1, _request(orjson.loads(rest), path, 1)
            except orjson.JSONDecodeError as error:
                raise _cut_short(path, f"character {error.pos}", "complete OTLP/JSON", "file", error) from None
            return
        yield from line_requests(handle, path, 2, reduced=reduced)


def line_requests(
    lines: Iterable[bytes], path: Path, first: int, *, reduced: bool = False
) -> Iterator[tuple[int, Request]]:
    """(line number, request) of one request per line, numbered from ``first``; blank lines are skipped.
    ``reduced``: a line of plain spans comes as its reduced spans (``fast_spans``), any other the checked way."""
    fast = FAST_SPANS if reduced else None
    for number, line in enumerate(lines, start=first):
        if not line or line.isspace():  # not strip(): that copies each line (a megabyte) to test it
            continue
        if fast is not None and (spans := fast(line, number)) is not None:
            yield number, spans
            continue
        try:
            yield number, _request(orjson.loads(line), path, number)
        except orjson.JSONDecodeError as error:
            raise _cut_short(path, f"line {number}", "a complete OTLP/JSON request", "line", error) from None


class Counted(Iterator[bytes]):
    """The lines of an iterator, counted as they are taken."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self.lines, self.count = lines, 0

    def __next__(self) -> bytes:
        line = next(self.lines)
        self.count += 1
        return line


def lines_between(handle: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    """The lines from byte ``start`` (a line start) up to byte ``end`` (a line start or the end)."""
    handle.seek(start)
    at = start
    while at < end:
        line = handle.readline()
        if not line:
            return
        at += len(line)
        yield line


def _cut_short(path: Path, where: str, expected: str, part: str, error: orjson.JSONDecodeError) -> TraceImportError:
    """JSON that does not parse: a line, named by its number, or a whole document, by its character."""
    return TraceImportError(str(path), where, f"{expected} (the {part} is cut short or not JSON: {error.msg})")


def _request(value: Any, path: Path, line: int) -> dict[str, Any]:
    if not isinstance(value, dict) or (value and not ("resourceSpans" in value or "resourceLogs" in value)):
        raise TraceImportError(str(path), f"line {line}", "an OTLP/JSON request with resourceSpans or resourceLogs")
    return value


def one_request_per_line(path: Path) -> bool:
    """Whether the file is the OTLP file exporter's form (the first line a whole request): only that
    form can be cut into runs of lines."""
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


def newlines(handle: BinaryIO, start: int, end: int) -> int:
    """How many lines end between byte ``start`` and byte ``end``."""
    handle.seek(start)
    count, left = 0, end - start
    while left > 0:
        block = handle.read(min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


#: Pass one's fast path over a line of plain spans (None without msgspec: every line the checked way).
FAST_SPANS = fast_spans.reader()
