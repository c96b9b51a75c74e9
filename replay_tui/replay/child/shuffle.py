"""Shuffle mode's scheduler: every observation served from the journal, the answers of calls that were in
flight together released in a permuted order.

A strict replay hands recorded answers back in the order production saw. An agent whose behaviour
depends on that order (it keeps the first search result that arrives) passes it every time and fails
the day the network is slower. ``replay --shuffle-completions`` runs the agent again with, for each
group of calls in flight together (``concurrency.py``), the answers released in another order, the
same for a given seed; nothing else changes and nothing is live. The agent's events are written to a
journal of their own, which the parent compares with the recording (``shuffle_verdict.py``).

``ShuffleTurns`` is the harness's ``Turns`` for it: events the agent produces are written at once (there
is no recorded order to keep), observations are looked up by kind and key in recorded order (as an
experiment's), and the answer of a call in a group waits until the answers before it in the group's
permuted order are out. An answer production never gave (a call the agent cancelled) is not permuted:
it is written when the agent cancels, as recorded. When the calls a permuted order waits for are never
made (the agent changed course), the order skips them once the agent has nothing else to do.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ...harness.seam import is_cancellation
from ...harness.turns import Pending, Reserved, Served, can_block
from ...journal import Event
from ...journal.model import OBSERVATION_KINDS
from ..concurrency import concurrency_groups
from ..referee import OBSERVATION_KEY
from .scheduler import IDLE_CHECK_S, IDLE_ROUNDS, _loop_idle, _settle

if TYPE_CHECKING:
    import asyncio

#: Seconds without progress, with answers held back, before the permuted order skips a call never made.
DEFAULT_SKIP_S = 1.0


@dataclass
class _Held:
    """An answer held back for its place in the permuted order."""

    recorded: Event
    write: Callable[[], Event]
    done: threading.Event = field(default_factory=threading.Event)
    event: Event | None = None
    error: BaseException | None = None
    future: asyncio.Future[Event] | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def deliver(self, event: Event | None, error: BaseException | None) -> None:
        self.event, self.error = event, error
        self.done.set()
        if self.future is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(_settle, self.future, event, error)


class ShuffleTurns:
    """``Turns`` of shuffle mode (see the module docstring)."""

    def __init__(self, recorded: Sequence[Event], seed: int, *, skip_s: float = DEFAULT_SKIP_S) -> None:
        self.seed = seed
        self.skip_s = skip_s
        self.lock = threading.RLock()
        self._queues: dict[tuple[str, Any], deque[Event]] = {}
        for event in recorded:
            if event.kind in OBSERVATION_KINDS:
                key = event.payload.get(OBSERVATION_KEY[event.kind])
                self._queues.setdefault((event.kind, key), deque()).append(event)
        cancelled = {
            event.seq for event in recorded if event.kind in OBSERVATION_KINDS and is_cancellation(event.payload)
        }
        self._order: dict[int, tuple[int, ...]] = {}  # group -> the answers' seqs in the order they go out
        self._group_of: dict[int, int] = {}
        for number, group in enumerate(concurrency_groups(recorded)):
            self._order[number] = group.permuted(seed, [seq for seq in group.answers if seq not in cancelled])
            for seq in self._order[number]:
                self._group_of[seq] = number
        self.groups = len(self._order)
        self._out: set[int] = set()  # answers released (or skipped)
        self._held: dict[int, _Held] = {}
        self._progress = time.monotonic()
        self._watchdog: threading.Thread | None = None
        self._watched_loops: set[Any] = set()
        self.skipped: list[int] = []  # answers of calls the permuted order waited for, never made

    # -- the harness's side -------------------------------------------------------------------------

    def write(self, pending: Pending, write: Callable[[Pending], Event], *, nested: bool = False) -> Event:
        return self._wrote(write(pending))

    async def awrite(self, pending: Pending, write: Callable[[Pending], Event]) -> Event:
        return self._wrote(write(pending))

    def reserve(self, kind: str, key: str, request: dict[str, Any], answers: Event | None) -> Reserved:
        from .tape import UnrecordedCall

        with self.lock:
            queue = self._queues.get((kind, key))
            if not queue:
                raise UnrecordedCall(kind, key, dict(request))
            recorded = queue.popleft()
        return Reserved(recorded.payload, recorded.seq, recorded)

    def observe_reserved(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> Event:
        held = self._hold(reserved, served, write)
        if held is None:
            return self._wrote(write(served(reserved.payload)))
        if not can_block():  # sync code on a running loop cannot wait: it goes now, out of the order
            self._release(held)
        else:
            self._start_watchdog()
            self._advance()
        held.done.wait()
        if held.error is not None:
            raise held.error
        assert held.event is not None
        return held.event

    async def aobserve_reserved(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> Event:
        import asyncio

        if is_cancellation(reserved.payload):  # production's agent cancelled this call: wait until this one does
            waiting = asyncio.get_running_loop().create_future()
            try:
                await waiting
            except asyncio.CancelledError:
                self._wrote(write(served(reserved.payload)))
                raise
        held = self._hold(reserved, served, write)
        if held is None:
            return self._wrote(write(served(reserved.payload)))
        loop = asyncio.get_running_loop()
        with self.lock:
            held.loop, held.future = loop, loop.create_future()
            if held.done.is_set():
                _settle(held.future, held.event, held.error)
        self._start_watchdog()
        self._watch_loop(loop)
        self._advance()
        return await held.future

    # -- the permuted order -------------------------------------------------------------------------

    def _hold(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> _Held | None:
        """The answer, held for its place; None: it is in no group (or production never gave it): at once."""
        recorded: Event = reserved.token
        if recorded.seq not in self._group_of:
            return None
        held = _Held(recorded, lambda: write(served(recorded.payload)))
        with self.lock:
            self._held[recorded.seq] = held
            self._progress = time.monotonic()
        return held

    def _advance(self) -> None:
        """Release every held answer whose turn has come, group by group."""
        while True:
            ready = None
            with self.lock:
                for order in self._order.values():
                    nxt = next((seq for seq in order if seq not in self._out), None)
                    if nxt is not None and nxt in self._held:
                        ready = self._held.pop(nxt)
                        self._out.add(nxt)
                        break
            if ready is None:
                return
            self._release(ready, popped=True)

    def _release(self, held: _Held, *, popped: bool = False) -> None:
        if not popped:
            with self.lock:
                self._held.pop(held.recorded.seq, None)
                self._out.add(held.recorded.seq)
        try:
            event = held.write()
        except BaseException as error:
            held.deliver(None, error)
            return
        self._wrote(event)
        held.deliver(event, None)

    def _wrote(self, event: Event) -> Event:
        with self.lock:
            self._progress = time.monotonic()
        return event

    def _skip(self) -> bool:
        """The agent waits while the next answer of a group is one it never asked for: skip that one."""
        with self.lock:
            for order in self._order.values():
                waiting = [seq for seq in order if seq in self._held]
                if not waiting:
                    continue
                nxt = next(seq for seq in order if seq not in self._out)
                if nxt not in self._held:
                    self._out.add(nxt)
                    self.skipped.append(nxt)
                    self._progress = time.monotonic()
                    return True
        return False

    # -- when the order waits for a call that never comes ----------------------------------------------

    def _start_watchdog(self) -> None:
        with self.lock:
            if self._watchdog is not None:
                return
            self._watchdog = threading.Thread(target=self._watch, name="replay-tui-shuffle", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while True:
            time.sleep(min(0.05, self.skip_s / 4))
            with self.lock:
                stuck = bool(self._held) and time.monotonic() - self._progress > self.skip_s
            if stuck and self._skip():
                self._advance()

    def _watch_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop not in self._watched_loops:
            self._watched_loops.add(loop)
            loop.call_later(IDLE_CHECK_S, self._idle_check, loop, 0)

    def _idle_check(self, loop: asyncio.AbstractEventLoop, idle_rounds: int) -> None:
        with self.lock:
            holding = bool(self._held)
        if not holding:
            self._watched_loops.discard(loop)
            return
        idle_rounds = idle_rounds + 1 if _loop_idle(loop) else 0
        if idle_rounds >= IDLE_ROUNDS and self._skip():
            self._advance()
            idle_rounds = 0
        loop.call_later(IDLE_CHECK_S, self._idle_check, loop, idle_rounds)
