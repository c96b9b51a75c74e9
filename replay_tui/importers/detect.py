"""Which format a file is, from its content (never from its name alone): the registry's formats are asked in
turn; what none of them claims is a replay-tui journal when it is JSON, and no format otherwise."""

from __future__ import annotations

from pathlib import Path

from ..journal.files import open_regular_binary
from . import registry
from .format import SNIFF_BYTES, Head
from .registry import FORMATS

__all__ = ["FORMATS", "JOURNAL", "SNIFF_BYTES", "detect_format"]

JOURNAL = "journal"


def detect_format(path: str | Path) -> str | None:
    """``journal``, one of ``FORMATS``, or None when the content is none of them."""
    path = Path(path)
    if path.is_dir():
        return JOURNAL  # shard directories and corpora are journals' business
    with open_regular_binary(path, "trace") as handle:  # a FIFO or a device: refused, never waited on
        data = handle.read(SNIFF_BYTES)
    if data.startswith(b"\x1f\x8b"):
        return JOURNAL  # gzip: a journal shard
    head = Head(path, data)
    for known in registry.REGISTRY:  # looked up here: a test may register a format of its own
        if known.sniff(head):
            return known.name
    return JOURNAL if head.is_json else None
