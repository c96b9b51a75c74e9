"""Which recorded calls were in flight together, and the order their answers arrived in (harness-free).

A call (``tool.call``, ``model.request``) is in flight from its seq to the seq of the answer that names
it as parent (``tool.result``, ``model.response``). Calls whose intervals overlap form a *group*; within
a group the journal's order of the answers is the completion order production saw. The shuffle mode
(``shuffle.py``) permutes that order; the CLI says how many groups a journal has.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from ..journal import Event
from ..journal.model import MODEL_REQUEST, MODEL_RESPONSE, TOOL_CALL, TOOL_RESULT

CALL_KINDS = frozenset({TOOL_CALL, MODEL_REQUEST})
ANSWER_KINDS = frozenset({TOOL_RESULT, MODEL_RESPONSE})


@dataclass(frozen=True)
class Group:
    """Calls that were in flight together: the seqs of their answers, in the order they arrived."""

    answers: tuple[int, ...]
    first_seq: int  # the first call's
    last_seq: int  # the last answer's

    def permuted(self, seed: int, eligible: Iterable[int]) -> tuple[int, ...]:
        """A completion order for seed ``seed``: the ``eligible`` answers (answers the world gave, not a
        cancellation the agent made) shuffled; the same seed gives the same order on every machine."""
        order = [seq for seq in self.answers if seq in set(eligible)]
        random.Random(f"{seed}:{self.first_seq}").shuffle(order)
        return tuple(order)


def concurrency_groups(events: Iterable[Event]) -> list[Group]:
    """Every group of two or more calls whose answers' order production chose, in journal order."""
    started: dict[str, int] = {}
    intervals: list[tuple[int, int]] = []  # (call seq, answer seq)
    for event in events:
        if event.kind in CALL_KINDS:
            started[event.event_id] = event.seq
        elif event.kind in ANSWER_KINDS and event.parent_event_id in started:
            intervals.append((started.pop(event.parent_event_id), event.seq))
    intervals.sort()
    groups: list[Group] = []
    members: list[tuple[int, int]] = []
    reach = 0
    for interval in intervals:
        if members and interval[0] > reach:
            groups.extend(_group(members))
            members = []
        members.append(interval)
        reach = max(reach, interval[1]) if len(members) > 1 else interval[1]
    groups.extend(_group(members))
    return groups


def _group(members: list[tuple[int, int]]) -> list[Group]:
    if len(members) < 2:
        return []
    answers = tuple(sorted(answer for _, answer in members))
    return [Group(answers, members[0][0], max(answer for _, answer in members))]
