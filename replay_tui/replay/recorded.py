"""What the recording ran with, read from its journal: the harness config of run.started and the inputs.

Both sides of a replay that runs the agent need it: the child's session (``engine.py``) and re-record's
in-process run (``rerecord.py``). The harness config is imported only when one is built.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..journal import Event, Journal
from ..journal.model import INPUT_RECEIVED

if TYPE_CHECKING:
    from ..harness import HarnessConfig


def recorded_config(first: Event, journal: str, plugins_from: "HarnessConfig | None" = None) -> "HarnessConfig":
    """The harness config the recording ran with (its [harness] and [redaction] tables,
    from run.started), with the plugins of ``plugins_from`` (experiments) or none.

    A live run (``plugins_from``: experiments, re-record) writes what live plugins return: its
    redaction rules are the user's config's alone (a journal's ``{"enabled": false}`` would have
    a live token written raw)."""
    from ..harness.config import HarnessConfig, config_from_mapping

    recorded = first.payload.get("harness") or {}
    redaction = plugins_from.redaction if plugins_from is not None else recorded.get("redaction") or {}
    raw = {"harness": dict(recorded.get("options") or {}), "redaction": dict(redaction)}
    base = config_from_mapping(raw, source=f"{journal} (run.started)")
    if plugins_from is None:
        return base
    return HarnessConfig(
        plugins_from.source, plugins_from.base_dir, base.harness, base.redaction, plugins_from.plugins, plugins_from.raw
    )


def recorded_inputs(journal: Journal) -> list[dict[str, Any]]:
    """Every input.received of the run, in order, as run_agent takes them."""
    inputs = []
    for position in lines_holding(journal, b'"input.received"'):
        event = journal.event(position)
        if event.kind == INPUT_RECEIVED:
            item = {"role": event.payload["role"], "content": event.payload["content"]}
            if "context" in event.payload:
                item["context"] = event.payload["context"]
            inputs.append(item)
    return inputs


INPUT_SCAN_BLOCK = 1 << 20


def lines_holding(journal: Journal, needle: bytes) -> Iterator[int]:
    """Positions of the lines whose bytes hold ``needle``, in order: the file is searched a block of whole lines
    at a time (a read per line cost 1.4 ms per thousand lines, all of it before the agent's first event)."""
    base = 0
    for segment in list(journal.segments):
        ends = segment.ends
        local = 0
        while local < len(ends):
            first = ends[local - 1] if local else 0
            last = max(local + 1, bisect.bisect_right(ends, first + INPUT_SCAN_BLOCK, local))
            if ends[last - 1] - first > max(INPUT_SCAN_BLOCK, journal.max_line_bytes):
                local += 1  # a line the reader refuses: never read whole (journal.event says what is wrong)
                continue
            block = segment.read(first, ends[last - 1] - first)
            found = block.find(needle)
            while found >= 0:
                line = bisect.bisect_right(ends, first + found, local, last)
                yield base + line
                found = block.find(needle, ends[line] - first)  # the next line: each line once
            local = last
        base += len(ends)
