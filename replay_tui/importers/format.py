"""The protocol every foreign format meets: a ``Format`` is its name, how its files are recognised (``sniff``,
given the ``Head`` of a file) and how one is imported (``run``, given an ``Input``); ``registry.py`` lists them.

A sniff reads only what ``Head`` gives it (the first ``SNIFF_BYTES``, parsed once for all of them), so
detection costs one read however many formats there are; it answers whether the file is its format, and
the registry's order settles a file two formats would both claim.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import orjson

#: How much of a file the sniffs see.
SNIFF_BYTES = 64 * 1024
_FIRST_KEY = re.compile(rb'\{\s*"([A-Za-z_]+)"\s*:')

#: The sources of a joined input, as the run's ``imported.detail.joined`` lists them (``Joined.describe``).
Joins = Sequence[dict[str, Any]]


class ImportedJournal(NamedTuple):
    """One journal an import wrote: where, how many events, how faithful (``Fidelity.label``), the run's detail."""

    path: Path
    events: int
    fidelity: dict[str, Any]
    detail: dict[str, Any]


class Head:
    """The start of a file, as every sniff reads it: the bytes, and what they are (a zip archive's member
    names; JSON's first record, or for one document over many lines its first key)."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self.data = data
        self.text = data.lstrip()
        self.is_zip = data.startswith(b"PK\x03\x04")
        self.is_json = not self.is_zip and self.text.startswith((b"{", b"["))

    @cached_property
    def zip_names(self) -> frozenset[str]:
        """A zip archive's member names (none for a damaged or hostile zip, or a file that is not one)."""
        if not self.is_zip:
            return frozenset()
        try:
            with zipfile.ZipFile(self.path) as archive:
                return frozenset(archive.namelist())
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, RuntimeError):
            return frozenset()  # a damaged or hostile zip is no format (OSError: the caller's to report)

    @cached_property
    def record(self) -> dict[str, Any] | None:
        """JSON's first record, when the first line is one (an array's first item: a batch written as one array).
        Decided by its top-level keys, never by words inside values (a journal whose model output mentions
        "resourceSpans" is still a journal)."""
        if not self.is_json:
            return None
        try:
            first = orjson.loads(self.text.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            first = None
        if isinstance(first, list):
            first = first[0] if first else None
        return first if isinstance(first, dict) else None

    @cached_property
    def document_key(self) -> bytes:
        """For JSON whose first line is not a record (one document over many lines, pretty-printed, or a first
        line longer than the sniff): its first key (empty when there is none)."""
        if not self.is_json or self.record is not None:
            return b""
        match = _FIRST_KEY.match(self.text)
        return match.group(1) if match else b""


@dataclass(frozen=True)
class Input:
    """What an import reads: the file, its sha256 (``digest()``: it may be hashed still, in a thread) and, for a
    joined input, the sources it came from (``join.py``)."""

    path: Path
    digest: Callable[[], str]
    joined: Joins = ()


@dataclass(frozen=True)
class Format:
    """A foreign trace format: ``sniff(head)`` says whether a file is one; ``run(source, out)`` writes its journal
    (or, for a file of several runs, a directory ``out`` of journals) and raises ``TraceImportError`` on bad input.
    ``joinable``: its files are one record per line, so that files of one trace join by their lines."""

    name: str
    sniff: Callable[[Head], bool]
    run: Callable[[Input, Path], list[ImportedJournal]]
    joinable: bool = False
