"""Foreign traces -> schema-v1 journals: OTLP (OTel GenAI), OpenAI Agents SDK, Inspect AI, vcrpy.

``import_trace(src, out)`` detects the format by content (or takes it), converts, and
writes one journal (``out``) or, for a log with several samples and epochs, a directory
``out`` of journals. Importers never import Textual or the harness; they sit above
``journal`` and write through its ``JournalWriter``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .builder import IMPORTER_VERSION, SourceInfo, rfc3339_of_nanos, write_run
from .detect import FORMATS, JOURNAL, OTLP, detect_format
from .errors import TraceImportError
from .records import Fidelity, with_leading_input

__all__ = ["FORMATS", "IMPORTER_VERSION", "ImportedJournal", "TraceImportError", "detect_format", "file_sha256", "import_trace"]


@dataclass(frozen=True)
class ImportedJournal:
    path: Path
    events: int
    fidelity: dict[str, Any]
    detail: dict[str, Any]


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_trace(src: str | os.PathLike[str], out: str | os.PathLike[str], *, format: str = "auto",
                 sha256: str | None = None) -> list[ImportedJournal]:
    """Convert ``src`` into ``out``; raises TraceImportError on bad input (nothing is left behind)."""
    path = Path(src)
    if not path.is_file():
        raise TraceImportError(str(path), None, "a trace file (no such file)")
    chosen = detect_format(path) if format == "auto" else format
    if chosen == JOURNAL:
        raise TraceImportError(str(path), None, "a foreign trace; this is a replay-tui journal already (open it directly)")
    if chosen not in IMPORTERS:
        raise TraceImportError(str(path), None, f"one of the formats {', '.join(FORMATS)} (detected none; pass --format)")
    digest = sha256 or file_sha256(path)
    return IMPORTERS[chosen](path, Path(out), digest)


def _source(path: Path, fmt: str, digest: str, detail: dict[str, Any] | None = None) -> SourceInfo:
    return SourceInfo(fmt, path.name, "sha256:" + digest, path.stat().st_size, detail or {})


def _import_otlp(path: Path, out: Path, digest: str) -> list[ImportedJournal]:
    from .otlp import OtlpTrace

    trace = OtlpTrace(path)
    try:
        fidelity = Fidelity()
        detail = {"spans": trace.spans, "traces": len(trace.trace_ids)}
        # fidelity goes in run.started, so the records are counted in a first walk over the spool
        for _ in with_leading_input(trace.records(), fidelity):
            pass
        counted = Fidelity(fidelity.model_calls, fidelity.tool_calls, fidelity.incomplete)
        started = rfc3339_of_nanos(min(trace.starts)) if any(trace.starts) else None
        events = write_run(out, with_leading_input(trace.records(), Fidelity()), run_id=f"otlp-{digest[:12]}",
                           source=_source(path, OTLP, digest, detail), fidelity=counted, started_at=started)
    finally:
        trace.close()
    return [ImportedJournal(out, events, counted.label(), detail)]


IMPORTERS: dict[str, Callable[[Path, Path, str], list[ImportedJournal]]] = {OTLP: _import_otlp}
