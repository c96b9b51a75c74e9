"""Which run a journal file holds, from its first line alone: how every copy of a run is recognised (a
cached download, an import, an experiment's output, a shipped shard), without indexing the file.

The first line of any shard names the run: every schema-v1 event carries ``run_id`` (the type/data
dialect: ``session_id``). The text is hostile like any journal text: it is compared, never shown raw.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import IO

import orjson

from .reader import list_shards

#: The first line is looked for in this many bytes (a run.started holds the initial state: it can be big).
HEAD_LIMIT = 1 << 20
READ_BLOCK = 64 * 1024


def run_id_in(stream: IO[bytes], *, compressed: bool) -> str | None:
    """The run id on the first non-empty line of ``stream`` (gzip when ``compressed``), or None. Read in
    blocks (an object store's file has no ``readline(limit)``), at most ``HEAD_LIMIT`` bytes."""
    source: IO[bytes] | gzip.GzipFile = gzip.GzipFile(fileobj=stream, mode="rb") if compressed else stream
    head = bytearray()
    try:
        while len(head) < HEAD_LIMIT:
            block = source.read(min(READ_BLOCK, HEAD_LIMIT - len(head)))
            if not block:
                break
            head += block
            if b"\n" in head.lstrip(b" \t\r\n"):
                break
    except (OSError, EOFError, zlib.error):
        return None
    line = bytes(head.lstrip(b" \t\r\n")).partition(b"\n")[0]
    return _run_id_of_line(line) if line else None


def _run_id_of_line(line: bytes) -> str | None:
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(first, dict):
        return None
    run_id = first.get("run_id", first.get("session_id"))
    return run_id if isinstance(run_id, str) and run_id else None


def run_id_of(path: str | os.PathLike[str]) -> str | None:
    """The run a journal file, gzip shard or shard directory holds (its first shard's first line), or None
    when it cannot be read or names none."""
    path = Path(path)
    try:
        if path.is_dir():
            shards = list_shards(path)
            if not shards:
                return None
            path = shards[0]  # SHARD_PATTERN numbers shards, so the first in name order comes first
        with open(path, "rb") as stream:
            return run_id_in(stream, compressed=path.name.endswith(".gz"))
    except OSError:
        return None
