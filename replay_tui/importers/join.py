"""Several sources of one trace, joined into one input: ``replay-tui import SPANS LOGS``.

The OpenTelemetry SDK exports each signal on its own: spans to one file, the log records that carry their
GenAI content to another. Both are OTLP/JSON, one request per line, so the one trace is their lines in
sequence: the importer reads the joined file exactly as it reads one file holding both. The joined file is
written beside the output (each source streamed through, its sha256 taken on the way) and removed after;
``parts`` says which lines came from which source (the run's ``imported.detail.joined``), and an error the
importer raises about a line of the joined file is told of that source's own line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..journal.files import open_regular_binary
from .detect import OPENAI_AGENTS, OTLP
from .errors import TraceImportError

#: Formats whose files are one record per line, so that files of one trace join by their lines.
JOINABLE = (OTLP, OPENAI_AGENTS)
_BLOCK = 1 << 20
_LINE = re.compile(r"line (\d+)")


@dataclass(frozen=True)
class Part:
    """One source of a joined input: its lines there are ``first_line`` to ``first_line + lines - 1``."""

    file: str
    sha256: str
    first_line: int
    lines: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": "sha256:" + self.sha256, "lines": [self.first_line, self.lines]}


class Joined:
    """The sources' lines in one file in ``folder``, its sha256 (``digest``) and where each line came from."""

    def __init__(self, sources: list[Path], folder: Path) -> None:
        self.sources = sources
        name = "+".join(source.name for source in sources)
        self.path = folder / (name if len(name.encode()) <= 200 else f"joined-{len(sources)}-sources.jsonl")
        whole = hashlib.sha256()
        parts: list[Part] = []
        line = 1
        with open(self.path, "xb") as out:
            for source in sources:
                own = hashlib.sha256()
                lines, last = 0, b"\n"
                with open_regular_binary(source, "trace") as handle:
                    while block := handle.read(_BLOCK):
                        out.write(block)
                        own.update(block)
                        whole.update(block)
                        lines += block.count(b"\n")
                        last = block[-1:]
                if last != b"\n":  # the last line had no newline: the next source starts on a line of its own
                    out.write(b"\n")
                    whole.update(b"\n")
                    lines += 1
                parts.append(Part(source.name, own.hexdigest(), line, lines))
                line += lines
        self.digest = whole.hexdigest()
        self.parts = tuple(parts)

    def describe(self) -> list[dict[str, Any]]:
        return [part.to_json() for part in self.parts]

    def located(self, error: TraceImportError) -> TraceImportError:
        """``error`` about a line of the joined file, about that line of its own source instead."""
        if error.path != str(self.path):
            return error
        record = error.record or ""
        found = _LINE.match(record)
        if found is None:
            return TraceImportError(" + ".join(map(str, self.sources)), error.record, error.expected)
        number = int(found.group(1))
        for source, part in zip(self.sources, self.parts):
            if part.first_line <= number < part.first_line + part.lines:
                inside = f"line {number - part.first_line + 1}{record[found.end() :]}"
                return TraceImportError(str(source), inside, error.expected)
        return TraceImportError(str(self.sources[-1]), error.record, error.expected)


def refuse_unjoinable(sources: list[Path], formats: list[str | None]) -> None:
    """Raise TraceImportError unless every source is of one joinable format, one record per line."""
    if len(set(formats)) != 1 or formats[0] not in JOINABLE:
        found = ", ".join(f"{source.name}: {fmt or 'no known format'}" for source, fmt in zip(sources, formats))
        raise TraceImportError(
            " + ".join(map(str, sources)),
            None,
            f"sources of one format to join, OTLP/JSON or Agents SDK JSONL (found {found}); import the others one "
            "by one",
        )
    for source in sources:
        with open_regular_binary(source, "trace") as handle:
            first = handle.readline(1 << 20).strip()
        if not (first.startswith(b"{") and first.endswith(b"}")):
            raise TraceImportError(
                str(source),
                "line 1",
                "one record per line (as an exporter writes them), so its lines can follow another file's; this file "
                "is one JSON document over several lines: import it alone",
            )
