"""Cause and effect over ``parent_event_id``: parent, children, chain to the root.

Nothing here parses the whole journal. A parent is found from its id (a v1 id is
``f"{run_id}:{seq}"``, so its position is one lookup; other dialects fall back
to a backward byte search). Children are found by scanning forward from the
parent in bounded pages, because a child always comes after its cause.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import orjson

from ..journal import Event, Journal, JournalError
from ..journal.describe import label
from ..journal.dialects import V1
from ..journal.progress import CancelCheck

DEFAULT_PAGE = 20_000
DEFAULT_MAX_CHILDREN = 50


@dataclass(frozen=True)
class ChildrenPage:
    """Children found in ``[scanned_from, scanned_to)``; ``exhausted`` when nothing is left to scan."""

    parent: int
    children: tuple[int, ...]
    scanned_from: int
    scanned_to: int
    exhausted: bool


class CausalChain(list[int]):
    """Positions from the first cause found down to an event, and why the walk stopped above it.

    ``cut``: the length limit stopped it, so ``chain[0]`` has a cause that was not followed (it is
    not the root). ``missing_parent``: ``chain[0]`` names a parent id that is not in the journal.
    ``cycle``: a damaged journal's parents loop back into the chain.
    """

    cut: bool = False
    missing_parent: str | None = None
    cycle: bool = False

    @property
    def is_complete(self) -> bool:
        """``chain[0]`` is a real root."""
        return not (self.cut or self.missing_parent or self.cycle)


class CausalIndex:
    """Lazy parent/child lookups over one journal; safe to use from worker threads."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._positions: dict[str, int] = {}
        self._lock = threading.Lock()

    def event_id_at(self, position: int) -> str | None:
        event = self.journal.try_event(position)
        return event.event_id if isinstance(event, Event) else None

    def position_of(self, event_id: str, before: int | None = None, cancelled: CancelCheck | None = None) -> int | None:
        """Where the event with ``event_id`` is; ``before`` bounds the fallback search."""
        with self._lock:
            known = self._positions.get(event_id)
        if known is not None:
            return known
        found = self._by_seq_suffix(event_id)
        if found is None:
            found = self._scan_back(event_id, len(self.journal) if before is None else before, cancelled)
        if found is not None:
            with self._lock:
                self._positions[event_id] = found
        return found

    def parent(self, position: int) -> int | None:
        """Position of the event that caused the one at ``position``, or None for a root."""
        event = self.journal.try_event(position)
        if not isinstance(event, Event) or not event.parent_event_id:
            return None
        return self.position_of(event.parent_event_id, before=position)

    def chain_to_root(self, position: int, limit: int = 10_000) -> CausalChain:
        """Positions from the root cause down to ``position`` (inclusive).

        A parent id that cannot be found ends the chain there; a cycle (a damaged
        journal) is cut at the first repeat; at ``limit`` events the walk stops. Each
        is recorded on the chain, so nobody shows its first event as the root.
        """
        walked = [position]
        seen = {position}
        result = CausalChain()
        while True:
            event = self.journal.try_event(walked[-1])
            parent_id = event.parent_event_id if isinstance(event, Event) else None
            if not parent_id:
                break
            if len(walked) >= limit:
                result.cut = True
                break
            parent = self.position_of(parent_id, before=walked[-1])
            if parent is None:
                result.missing_parent = parent_id
                break
            if parent in seen:
                result.cycle = True
                break
            walked.append(parent)
            seen.add(parent)
        result.extend(reversed(walked))
        return result

    def children(
        self,
        position: int,
        start: int | None = None,
        page: int = DEFAULT_PAGE,
        cancelled: CancelCheck | None = None,
        max_children: int = DEFAULT_MAX_CHILDREN,
    ) -> ChildrenPage:
        """Children of ``position`` among the next ``page`` events from ``start``.

        Stops early after ``max_children`` (a root may have millions of effects;
        the next page starts at ``scanned_to``).
        """
        begin = position + 1 if start is None else max(start, position + 1)
        end = min(len(self.journal), begin + page)
        event_id = self.event_id_at(position)
        if event_id is None:
            return ChildrenPage(position, (), begin, end, True)
        needle = orjson.dumps(event_id)
        found: list[int] = []
        for candidate in range(begin, end):
            if cancelled is not None and candidate % 1024 == 0 and cancelled():
                return ChildrenPage(position, tuple(found), begin, candidate, False)
            if self.journal.dialect == V1 and needle not in self.journal.line_bytes(candidate):
                continue
            event = self.journal.try_event(candidate)
            if isinstance(event, Event) and event.parent_event_id == event_id:
                found.append(candidate)
                with self._lock:
                    self._positions.setdefault(event.event_id, candidate)
                if len(found) >= max_children:
                    end = candidate + 1
                    break
        return ChildrenPage(position, tuple(found), begin, end, end >= len(self.journal))

    # -- lookups ----------------------------------------------------------
    def _by_seq_suffix(self, event_id: str) -> int | None:
        _, _, suffix = event_id.rpartition(":")
        if not suffix.isdigit():
            return None
        position = self.journal.position_of_seq(int(suffix))
        if position is not None and self.event_id_at(position) == event_id:
            return position
        return None

    def _scan_back(self, event_id: str, before: int, cancelled: CancelCheck | None) -> int | None:
        needle = orjson.dumps(event_id)
        for candidate in range(min(before, len(self.journal)) - 1, -1, -1):
            if cancelled is not None and candidate % 1024 == 0 and cancelled():
                return None
            if self.journal.dialect == V1 and needle not in self.journal.line_bytes(candidate):
                continue
            event = self.journal.try_event(candidate)
            if isinstance(event, Event) and event.event_id == event_id:
                return candidate
        return None


def describe(event: Event | JournalError) -> str:
    """A short label for a tree node: seq, kind and the most telling payload field."""
    return label(event)
