"""Causal lanes: what each task or thread of an agent hangs its next events from, and the step it is in.

A model request hangs from the last observation the agent received, and a tool call from the
model response that asked for it. With one flow of control that is the harness's last
observation; with several (``asyncio.gather`` of sub-agents, a LangGraph superstep in threads,
20 sessions of a service), the last observation written is often another flow's, and which one
depends on timing. So each flow keeps its own cursor, its *lane*:

* a lane belongs to one asyncio task or one thread (its *owner*) and is found through a context
  variable, so a task or thread inherits the lane of the code that started it;
* the first event written from another owner forks a child lane. It starts from its parent's cursor
  as it stands when the child writes its first event (a tool call in a task of ``gather`` hangs
  from the response that asked for it; a request made after a hook the parent awaited hangs from
  what the hook recorded);
* what a lane receives is gathered up into its ancestors, and a flow takes in what its
  descendants received when it writes again (after ``await gather(...)`` the next request hangs
  from the last result). Once started, siblings never see each other's: a parallel sub-agent's
  request does not hang from the other sub-agent's answer;
* the step a flow names is passed up too: frameworks name the step in hooks that run as tasks of
  their own.

Everything a parent is made from is read when the event is written, under the bus lock, and a
strict replay writes events in the recorded order: the parents a replay writes do not depend on
when its threads happened to start, only on what each flow received.
"""

from __future__ import annotations

import sys
import threading
from contextvars import ContextVar
from typing import Any, Callable

__all__ = ["Cursor", "Lane", "LaneKeeper", "current_owner"]


def current_owner() -> Any:
    """The asyncio task running in this thread, else the thread's ident."""
    asyncio = sys.modules.get("asyncio")  # never imported for a sync agent: its replay starts faster
    if asyncio is not None and asyncio._get_running_loop() is not None:
        task = asyncio.current_task()
        if task is not None:
            return task
    return threading.get_ident()


class Cursor:
    """The last observation and the last model response (with the ids of the tool calls it asked for) of a
    flow, each with the seq that orders it."""

    __slots__ = ("observation", "observation_seq", "response", "response_seq", "response_calls")

    def __init__(self) -> None:
        self.observation: str | None = None
        self.observation_seq = 0
        self.response: str | None = None
        self.response_seq = 0
        self.response_calls: frozenset[str] = frozenset()

    def take(self, other: Cursor) -> None:
        """The later of each of this cursor's and ``other``'s."""
        if other.observation_seq > self.observation_seq:
            self.observation, self.observation_seq = other.observation, other.observation_seq
        if other.response_seq > self.response_seq:
            self.response, self.response_seq, self.response_calls = (
                other.response,
                other.response_seq,
                other.response_calls,
            )


class Lane:
    """One flow: its own cursor, what it and its descendants received (``gathered``), and its step."""

    __slots__ = ("owner", "parent", "step", "own", "gathered", "started")

    def __init__(self, owner: Any, parent: Lane | None) -> None:
        self.owner = owner
        self.parent = parent
        self.step: str | None = parent.step if parent is not None else None
        self.own = Cursor()
        self.gathered = Cursor()
        self.started = parent is None  # a child starts from its parent's own cursor at its first write

    def cursor(self) -> Cursor:
        """The cursor the flow's next event hangs from (call when writing it, under the bus lock). A child's
        first one is its parent's as it stands then: what the parent received, and what the parent's other
        children had received by then (a hook the parent awaited ran a handoff: the next agent's request
        hangs from it)."""
        if not self.started:
            assert self.parent is not None
            self.own.take(self.parent.cursor())
            self.started = True
        self.own.take(self.gathered)  # the flow goes on after what its descendants received
        return self.own

    def settled(self) -> Cursor | None:
        """What ``cursor()`` would give now, changing nothing; None for a child that has not written yet: where
        it starts is read at its first write (a replay's guess made before the event's turn must not fix it)."""
        if not self.started:
            return None
        cursor = Cursor()
        cursor.take(self.own)
        cursor.take(self.gathered)
        return cursor

    def set_step(self, step: str | None) -> None:
        """Name the step this flow is in; its ancestors take it too (a framework names the step in a hook that
        runs as a task of its own, and the flow that awaited the hook makes the call), its siblings never."""
        lane: Lane | None = self
        while lane is not None:
            lane.step = step
            lane = lane.parent

    def saw_observation(self, event_id: str, seq: int) -> None:
        own = self.cursor()
        own.observation, own.observation_seq = event_id, seq
        lane = self.parent
        while lane is not None and seq > lane.gathered.observation_seq:
            lane.gathered.observation, lane.gathered.observation_seq = event_id, seq
            lane = lane.parent

    def saw_response(self, event_id: str, seq: int, calls: frozenset[str]) -> None:
        own = self.cursor()
        own.response, own.response_seq, own.response_calls = event_id, seq, calls
        lane = self.parent
        while lane is not None and seq > lane.gathered.response_seq:
            lane.gathered.response, lane.gathered.response_seq, lane.gathered.response_calls = event_id, seq, calls
            lane = lane.parent


class LaneKeeper:
    """The lanes of one harness. ``lane()`` is the calling flow's lane (forked on its first use)."""

    def __init__(self, owner: Callable[[], Any] = current_owner) -> None:
        self._owner = owner
        # one variable per harness: two sessions in one task (a service that nests them) keep apart
        self._current: ContextVar[Lane | None] = ContextVar(f"replay_tui_lane_{id(self):x}", default=None)
        self.root = Lane(None, None)  # the run's own flow: inputs, and a sync agent's every event

    def lane(self) -> Lane:
        lane = self._current.get()
        owner = self._owner()
        if lane is None:
            if self.root.owner is None:
                self.root.owner = owner  # the flow that writes first is the run's
            if self.root.owner == owner:
                return self.root
            lane = self.root
        if lane.owner == owner:
            return lane
        forked = Lane(owner, lane)
        self._current.set(forked)
        return forked

    def run_cursor(self) -> Cursor:
        """Everything the run received, the last of it (the root gathers every flow's): what a snapshot holds."""
        cursor = Cursor()
        cursor.take(self.root.own)
        cursor.take(self.root.gathered)
        return cursor
