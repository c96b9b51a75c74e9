"""One-line summaries of events for the timeline and the tree: the ``short`` style of the one
describer (``journal/describe.py``)."""

from __future__ import annotations

from dataclasses import replace

from ..analysis.secrets import mask_secrets
from ..journal import Event, JournalError
from ..journal.describe import SUMMARY_LIMIT, compact, describe_event, short_hash

short = compact  # the timeline's name for it

__all__ = ["SUMMARY_LIMIT", "short", "short_hash", "summary_of"]


def summary_of(event: Event | JournalError) -> str:
    """What happened, in a few words: tool and arguments, model answer, patch paths; one escaped line.
    A value the secret scan flags reads as its masked preview, as in the panes."""
    if not isinstance(event, Event):
        return describe_event(event, "short")
    cached = _MASKED_SUMMARIES.get(event.event_hash) if event.event_hash else None
    if cached is None:
        masked, count = mask_secrets(event.payload)
        cached = describe_event(replace(event, payload=masked) if count else event, "short")
        if event.event_hash:
            if len(_MASKED_SUMMARIES) >= 8192:
                _MASKED_SUMMARIES.clear()
            _MASKED_SUMMARIES[event.event_hash] = cached
    return cached


_MASKED_SUMMARIES: dict[str, str] = {}  # by event hash: a row is drawn many times, masked once
