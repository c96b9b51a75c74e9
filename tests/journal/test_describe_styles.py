"""The two wordings of an event (``short`` for the timeline, ``report`` for the incident report) cover the
same kinds: a kind added to the journal is worded by both, never by one and shown raw by the other."""

from __future__ import annotations

import pytest

from replay_tui.journal.describe import SUMMARY_LIMIT, compact, describe
from replay_tui.journal.model import KINDS, SEAL_KINDS

# Seals are chain records (checked by verify, never shown as a step): neither style words them.
WORDED = sorted(KINDS - SEAL_KINDS)
PAYLOAD = {"agent": "a:b", "role": "user", "content": "hi", "tool": "t", "source": "s", "value": 1, "text": "x"}


@pytest.mark.parametrize("kind", WORDED)
def test_both_styles_word_every_kind(kind: str) -> None:
    raw = {"short": compact(PAYLOAD, SUMMARY_LIMIT), "report": kind}
    for style in ("short", "report"):
        assert describe(kind, PAYLOAD, style) != raw[style], f"{style} has no wording for {kind}"  # type: ignore[arg-type]
