"""The seam through which a replay orders the harness's writes (``Turns``).

While recording, an event is written the moment it happens, from whichever task or thread it
happens in, under one lock: the journal's seq order *is* the interleaving (a request sent, an
answer arrived, a tool started or finished). A strict replay must reproduce that order, whatever
order the agent's tasks and threads happen to run in this time, and must hand out recorded
answers in the order they arrived. The harness does not know how; it hands each event it is about
to write to a ``Turns`` object, which writes it (through the function it is given) when its turn
comes, and asks it for each observation (``reserve``, then ``observe_reserved``), which writes the
recorded answer at its turn and gives it back. The replay side implements it (``replay_tui.replay.child.scheduler``); while recording
there is none.

A flow that cannot wait (sync code on a running event loop: a clock read inside a coroutine, a
sync framework hook) is written at once; the ``Turns`` decides whether it may stand where it is
recorded ahead of the others, or is a divergence.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..journal import Event
    from .lanes import Lane

__all__ = ["Pending", "Reserved", "Served", "Turns", "can_block"]


class Pending(NamedTuple):
    """An event the harness is about to write (payload redacted).

    ``finalize``, when given, makes the payload at the moment the event is written (a snapshot's state, a
    framework state's transition from the state before it): a replay may write it later than it was asked
    for, and ``payload`` then holds only what places it (``after_hash``). ``lane``: the flow it came from
    (what its own consequences hang from). ``position``: where a replay placed it on the tape
    (``pending._replace(position=...)``). ``parent_hint``: the parent it will be written with, where
    ``parent`` is a marker the harness resolves only then (what the flow received so far): a replay places it
    among events alike in kind and key by it. A tuple: every recorded event makes one, and a frozen
    dataclass's ``__init__`` cost three times as much."""

    kind: str
    payload: dict[str, Any]
    step_id: str | None
    parent: str | None
    finalize: Callable[[], dict[str, Any]] | None = None
    lane: Lane | None = None
    position: int | None = None
    parent_hint: str | None = None


def given_parent(pending: Pending) -> str | None:
    """``pending``'s parent as given, or None where it is a marker the harness resolves only when it writes
    the event (``\x00lane-cursor``, ``\x00last-event``: they start with a NUL, which no event id holds)."""
    parent = pending.parent
    return None if parent is not None and parent.startswith("\x00") else parent


#: The event to write for a recorded observation's payload.
Served = Callable[[dict[str, Any]], Pending]


@dataclass(frozen=True)
class Reserved:
    """A recorded observation taken for one call and not written yet: its payload, its seq, and where it is."""

    payload: dict[str, Any]
    seq: int | None
    token: Any


@runtime_checkable
class Turns(Protocol):
    def write(self, pending: Pending, write: Callable[[Pending], Event], *, nested: bool = False) -> Event:
        """Write ``pending`` (calling ``write``) at its turn; blocks the calling thread until then when it may.
        ``nested``: asked from inside another event's write (the reducer's transition): never waits."""
        ...

    def awrite(self, pending: Pending, write: Callable[[Pending], Event]) -> Awaitable[Event]:
        """``write`` for a coroutine: awaits the turn instead of blocking the loop."""
        ...

    def reserve(self, kind: str, key: str, request: dict[str, Any], answers: Event | None) -> Reserved:
        """The recorded observation of ``kind`` answering ``answers`` (the call event, or None for a clock read
        or a random draw), taken for this call and not written yet (a streamed answer is handed over first and
        written when its stream ends)."""
        ...

    def observe_reserved(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> Event:
        """Write a reserved observation at its turn: ``served(recorded payload)`` is written by ``write``;
        blocks until then when it may."""
        ...

    def aobserve_reserved(
        self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]
    ) -> Awaitable[Event]:
        """``observe_reserved`` for a coroutine."""
        ...


def can_block() -> bool:
    """Whether the calling thread may wait for a turn: not when it runs an event loop (the flows that must go
    first may be coroutines on that very loop)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is None or asyncio._get_running_loop() is None
