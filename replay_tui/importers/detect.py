"""Which format a file is, from its content (never from its name alone)."""

from __future__ import annotations

import zipfile
from pathlib import Path

JOURNAL = "journal"
OTLP = "otlp"
OPENAI_AGENTS = "openai-agents"
INSPECT = "inspect"
VCR = "vcr"
FORMATS = (OTLP, OPENAI_AGENTS, INSPECT, VCR)
SNIFF_BYTES = 64 * 1024


def detect_format(path: str | Path) -> str | None:
    """``journal``, one of ``FORMATS``, or None when the content is none of them."""
    path = Path(path)
    if path.is_dir():
        return JOURNAL  # shard directories and corpora are journals' business
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if head.startswith(b"\x1f\x8b"):
        return JOURNAL  # gzip: a journal shard
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
        except zipfile.BadZipFile:
            return None
        if "header.json" in names or any(name.startswith(("_journal/", "samples/")) for name in names):
            return INSPECT
        return None
    text = head.lstrip()
    if text.startswith(b"{"):
        first = text.split(b"\n", 1)[0]
        if b'"resourceSpans"' in head or b'"resourceLogs"' in head:
            return OTLP
        if b'"object":' in first and (b'"trace.span"' in first or b'"trace"' in first):
            return OPENAI_AGENTS
        if b'"eval"' in head and (b'"samples"' in head or b'"status"' in head) and b'"version"' in head:
            return INSPECT
        if b'"schema_version"' in first or (b'"type"' in first and b'"data"' in first):
            return JOURNAL
        return JOURNAL
    if text.startswith(b"interactions:") or b"\ninteractions:" in head:
        return VCR
    return None
