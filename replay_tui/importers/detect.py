"""Which format a file is, from its content (never from its name alone)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import orjson

from ..journal.files import open_regular_binary

JOURNAL = "journal"
OTLP = "otlp"
OPENAI_AGENTS = "openai-agents"
INSPECT = "inspect"
VCR = "vcr"
FORMATS = (OTLP, OPENAI_AGENTS, INSPECT, VCR)
SNIFF_BYTES = 64 * 1024
_FIRST_KEY = re.compile(rb'\{\s*"([A-Za-z_]+)"\s*:')
_TOP_LEVEL_EVAL = re.compile(rb'\n  "eval": \{')  # Inspect writes its JSON logs indented by two


def detect_format(path: str | Path) -> str | None:
    """``journal``, one of ``FORMATS``, or None when the content is none of them."""
    path = Path(path)
    if path.is_dir():
        return JOURNAL  # shard directories and corpora are journals' business
    with open_regular_binary(path, "trace") as handle:  # a FIFO or a device: refused, never waited on
        head = handle.read(SNIFF_BYTES)
    if head.startswith(b"\x1f\x8b"):
        return JOURNAL  # gzip: a journal shard
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, RuntimeError):
            return None  # a damaged or hostile zip is no format (OSError: the caller's to report)
        if "header.json" in names or any(name.startswith(("_journal/", "samples/")) for name in names):
            return INSPECT
        return None
    text = head.lstrip()
    if text.startswith((b"{", b"[")):
        return _json_format(text)
    if text.startswith(b"interactions:") or b"\ninteractions:" in head:
        return VCR
    return None


def _json_format(text: bytes) -> str:
    """Decided by the first record's top-level keys, never by words inside values (a journal
    whose model output mentions "resourceSpans" is still a journal)."""
    first_line = text.split(b"\n", 1)[0]
    try:
        first = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        first = None
    if isinstance(first, list):  # an Agents SDK batch written as one JSON array
        first = first[0] if first else None
    if isinstance(first, dict):
        if "resourceSpans" in first or "resourceLogs" in first:
            return OTLP
        if first.get("object") in ("trace", "trace.span") or (
            isinstance(first.get("data"), list) and "type" not in first
        ):
            return OPENAI_AGENTS
        if isinstance(first.get("eval"), dict):
            return INSPECT
        if isinstance(first.get("interactions"), list) and "version" in first:
            return VCR  # vcrpy's JSON serializer
        return JOURNAL
    # one document over many lines (pretty-printed), or a first line longer than the sniff
    match = _FIRST_KEY.match(text)
    key = match.group(1) if match else b""
    if key in (b"resourceSpans", b"resourceLogs"):
        return OTLP
    if key == b"version" and _TOP_LEVEL_EVAL.search(text):
        return INSPECT
    if key == b"interactions":
        return VCR  # vcrpy's JSON serializer, indented
    return JOURNAL
