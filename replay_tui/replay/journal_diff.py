"""`replay-tui diff` over journals of any size: walk both in step, hold only what differs.

Two runs of one agent mostly agree, event for event. While the next events of A and B have the
same kind and step they are paired as they come and judged at once (``compare._differences``, so
the verdicts are those of ``align_journals``): a pair that agrees is counted and dropped, one that
differs is kept. Only the first pair whose kind or step differs (an inserted or removed event, steps
in another order) hands the rest of both journals to the full step alignment of ``compare``, which
holds them in memory. Memory is then the differing tail, and for the usual case (the same run, or
the same run with edited values) the id maps of the pairs seen, a few dozen bytes per event.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any

from ..analysis.search import iter_lines
from ..journal import Event, Journal, JournalError
from ..journal.collector import collector_paused
from ..journal.dialects import V1, to_v1
from ..journal.model import validate_event
from ..journal.progress import CancelCheck
from ..journal.reader import parse_line
from .compare import AlignedPair, Alignment, _differences, _judge, align_rows, setup_differences


@dataclass
class StreamedAlignment(Alignment):
    """An Alignment that keeps only the pairs that differ (``pairs``) and counts the rest."""

    agreeing: int = 0  # pairs that agreed and were not kept

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        summary["aligned"] += self.agreeing
        return summary


def _events(journal: Journal, cancelled: CancelCheck | None) -> Iterator[Event]:
    """Every event in order; the first unreadable line raises, naming file and line like verify.

    A v1 journal is read in big blocks (``iter_lines``) rather than one read per event, which is
    most of the time of a diff; anything else goes through ``Journal.events``.
    """
    if journal.dialect != V1:
        for position, item in enumerate(journal.events()):
            if isinstance(item, JournalError):
                raise item
            if cancelled is not None and position % 4096 == 0 and cancelled():
                raise InterruptedError("comparison cancelled")
            yield item
        return
    path = str(journal.path)
    for position, line in iter_lines(journal, 0, len(journal)):
        if cancelled is not None and position % 4096 == 0 and cancelled():
            raise InterruptedError("comparison cancelled")
        try:
            obj = parse_line(line, path=path, line=position + 1, max_line_bytes=journal.max_line_bytes)
            upgraded = to_v1(obj)
            event = validate_event(upgraded)
            yield event if upgraded is obj else replace(event, raw=obj)
        except JournalError:
            located = journal.try_event(position)  # the same error, with its shard and line number
            if isinstance(located, JournalError):
                raise located from None
            yield located


def diff_journals(a: Journal, b: Journal, cancelled: CancelCheck | None = None) -> StreamedAlignment:
    """The alignment of two indexed journals (see the module docstring); only differing pairs are kept."""
    partner_id: dict[str, str] = {}
    partner_seq: dict[int, int] = {}
    kept: list[AlignedPair] = []
    agreeing = 0
    a_count = b_count = 0
    firsts: list[list[Event]] = [[], []]
    a_rest: list[Event] = []
    b_rest: list[Event] = []
    a_events, b_events = _events(a, cancelled), _events(b, cancelled)
    for a_event, b_event in zip_longest(a_events, b_events):
        if a_event is not None and not firsts[0]:
            firsts[0].append(a_event)
        if b_event is not None and not firsts[1]:
            firsts[1].append(b_event)
        if a_event is None or b_event is None or a_event.kind != b_event.kind or a_event.step_id != b_event.step_id:
            a_rest = [a_event] if a_event is not None else []
            b_rest = [b_event] if b_event is not None else []
            break
        a_count, b_count = a_count + 1, b_count + 1
        differs = _differences(a_event, b_event, partner_id, partner_seq)
        partner_id[a_event.event_id] = b_event.event_id
        partner_seq[a_event.seq] = b_event.seq
        if differs:
            kept.append(AlignedPair(a_event, b_event, "changed", differs))
        else:
            agreeing += 1
    if a_rest or b_rest:
        with collector_paused():  # the differing tail in memory, as align_journals holds whole journals
            a_rest.extend(a_events)
            b_rest.extend(b_events)
            a_count, b_count = a_count + len(a_rest), b_count + len(b_rest)
            tail = _judge(align_rows(a_rest, b_rest), partner_id, partner_seq)
        agreeing += sum(1 for pair in tail if pair.status == "same")
        kept.extend(pair for pair in tail if pair.status != "same")
    alignment = StreamedAlignment(
        kept,
        a_count,
        b_count,
        str(a.path),
        str(b.path),
        setup=setup_differences(firsts[0], firsts[1]),
        agreeing=agreeing,
    )
    return alignment
