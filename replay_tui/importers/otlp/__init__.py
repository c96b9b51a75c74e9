"""OTLP/JSON traces (and the logs that carry GenAI content) -> a journal: the format's face (``FORMAT``).

The work is split by job: ``decode`` (OTLP/JSON values and a request's shape), ``lines`` (the file's
requests, line by line, with ``fast_spans`` for plain lines), ``mapping`` (a span as a record, by the
OpenTelemetry GenAI conventions and OpenInference's), ``trace`` (pass one's index and spool, pass two's
order and links), ``parallel`` (pass one shared with ``worker`` processes, and when that pays) and
``writer_process`` (pass two's journal written by another process).
"""

from __future__ import annotations

from pathlib import Path

from ..builder import rfc3339_of_nanos
from ..format import Format, Head, ImportedJournal, Input
from ..runs import source_info

NAME = "otlp"
_REQUEST_KEYS = (b"resourceSpans", b"resourceLogs")


def sniff(head: Head) -> bool:
    """An OTLP/JSON request: its first record (or a document's first key) is ``resourceSpans`` or ``resourceLogs``."""
    if head.record is not None:
        return "resourceSpans" in head.record or "resourceLogs" in head.record
    return head.document_key in _REQUEST_KEYS


def import_otlp(source: Input, out: Path) -> list[ImportedJournal]:
    """Pass one while the file is hashed, then pass two into ``out`` (one journal for every trace of the file)."""
    from .trace import OtlpTrace

    trace = OtlpTrace(source.path)  # pass one, while the file is hashed
    try:
        digest = source.digest()
        detail = {"spans": trace.spans, "traces": len(trace.trace_ids)}
        counted = trace.fidelity  # counted while spooling: run.started states it before pass two
        started = rfc3339_of_nanos(min(trace.starts)) if any(trace.starts) else None
        events = trace.write(
            out,
            run_id=f"otlp-{digest[:12]}",
            source=source_info(source.path, NAME, digest, detail, source.joined),
            fidelity=counted,
            started_at=started,
        )
    finally:
        trace.close()
    return [ImportedJournal(out, events, counted.label(), detail)]


FORMAT = Format(NAME, sniff, import_otlp, joinable=True)
