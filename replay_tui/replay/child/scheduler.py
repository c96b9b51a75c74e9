"""The strict replay's scheduler: the journal's order is the order of writes, whatever order the agent's
concurrent flows run in this time.

While recording, each event was written the moment it happened, from whichever task or thread, so
the journal is the interleaving: three calls made, the second answered first, a request that acted
on it, then the others. ``TapeTurns`` makes a replay repeat it (the harness's ``Turns``):

* every event the agent is about to write is *placed*: matched by kind and key (call key, request
  hash, state hash, clock or random source) to a recorded event not yet taken, from the tape's
  cursor on (``Cursor.place``), so concurrent calls find their own events in any order;
* it is written when the cursor reaches it: a flow whose event comes later waits (a thread blocks,
  a coroutine awaits), and whoever writes the event before it writes it on its behalf, at once, so
  nothing can run in between;
* an observation (a tool result, a model answer, a clock read) is placed by the event it answers,
  and written, with its recorded payload, at its recorded turn: recorded answers reach the agent in
  the recorded completion order, so an agent that acts on whichever call finishes first sees what
  production saw;
* sync code on a running event loop (a clock read in a coroutine, a framework's sync hook) cannot
  wait without stopping the flows that must go first: it is written where it is recorded, ahead
  of the cursor, and the cursor steps over it when it gets there (the parent accepts the same);
* a flow that waits while the event before it never comes (a call the agent no longer makes) ends
  the replay with a divergence naming that event and what waits, after ``stall_s`` without
  progress, or at once when no other thread could write it.

An event that matches nothing in the window is written at the cursor, where it is the divergence.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ...harness.seam import StopRun, is_cancellation
from ...harness.turns import Pending, Reserved, Served, can_block, given_parent
from ...journal.model import OBSERVATION_KINDS
from ..referee import OBSERVATION_KEY, Mismatch, produced_event

if TYPE_CHECKING:
    import asyncio

    from ...journal import Event
    from .tape import Tape

#: Seconds without any write while a flow waits for its turn before the replay calls it stuck.
DEFAULT_STALL_S = 5.0
#: An event loop found with nothing to run this many times in a row, this far apart, is stuck at once.
IDLE_CHECK_S, IDLE_ROUNDS = 0.05, 3


def _loop_idle(loop: asyncio.AbstractEventLoop) -> bool:
    """Nothing ready to run and no timer set on ``loop`` (CPython's own loop; any other is never called idle)."""
    ready, scheduled = getattr(loop, "_ready", None), getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:
        return False
    return not ready and all(handle.cancelled() for handle in scheduled)


class _Turn:
    """A flow waiting for its turn: what to write then, and how to hand the event (or the stop) back."""

    __slots__ = (
        "position",
        "write",
        "pending",
        "event",
        "error",
        "done",
        "future",
        "loop",
        "detached",
        "awaits_cancel",
    )

    def __init__(
        self, position: int, write: Callable[[], Event], pending: Pending | None, awaits_cancel: bool = False
    ) -> None:
        self.position = position
        self.write = write
        self.pending = pending  # what the agent produced (None: an observation it waits for)
        # the recorded observation says the agent cancelled the call: written when this replay's agent cancels
        # it (it is what the agent did, not an answer to hand back), so the tape waits for that here
        self.awaits_cancel = awaits_cancel
        self.event: Event | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.future: asyncio.Future[Event] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.detached = False  # its coroutine was cancelled: the event is still written, to nobody

    def deliver(self, event: Event | None, error: BaseException | None) -> None:
        self.event, self.error = event, error
        self.done.set()
        if self.future is not None and self.loop is not None and not self.detached:
            self.loop.call_soon_threadsafe(_settle, self.future, event, error)


def _settle(future: asyncio.Future[Any], event: Event | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(event)


class TapeTurns:
    """``Turns`` over the tape of a strict replay (see the module docstring)."""

    def __init__(
        self,
        tape: Tape,
        *,
        on_request: Callable[[str, Any], None] | None = None,
        stall_s: float = DEFAULT_STALL_S,
    ) -> None:
        self.tape = tape
        self.on_request = on_request
        self.stall_s = stall_s
        # Guards the tape's cursor and the turns. Taken inside the harness's bus lock (the sink's writes),
        # never the other way round: nothing here writes while holding it.
        self.lock = threading.RLock()
        self._waiting: dict[int, _Turn] = {}
        self._taken: set[int] = set()  # placed and not yet written: two events never take one position
        self._progress = time.monotonic()
        self._watchdog: threading.Thread | None = None
        self._watched_loops: set[asyncio.AbstractEventLoop] = set()

    # -- the harness's side (harness.turns.Turns) ------------------------------------------------

    def write(self, pending: Pending, write: Callable[[Pending], Event], *, nested: bool = False) -> Event:
        position = self._place(pending)
        return self._take_turn(position, lambda: write(pending._replace(position=position)), pending, nested)

    async def awrite(self, pending: Pending, write: Callable[[Pending], Event]) -> Event:
        position = self._place(pending)
        return await self._await_turn(position, lambda: write(pending._replace(position=position)), pending)

    def reserve(self, kind: str, key: str, request: dict[str, Any], answers: Event | None) -> Reserved:
        position = self._place_observation(kind, key, answers)
        recorded = self.tape.event_at(position)
        return Reserved(recorded.payload, recorded.seq, position)

    def observe_reserved(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> Event:
        position = reserved.token
        return self._take_turn(position, self._serving(position, served, write), None, False)

    async def aobserve_reserved(self, reserved: Reserved, served: Served, write: Callable[[Pending], Event]) -> Event:
        position = reserved.token
        cancelled = is_cancellation(reserved.payload)
        return await self._await_turn(position, self._serving(position, served, write), None, awaits_cancel=cancelled)

    # -- placing ------------------------------------------------------------------------------------

    def _place(self, pending: Pending) -> int:
        with self.lock:
            self._check_running()
            parent = pending.parent_hint or given_parent(pending)
            position = self.tape.place(
                pending.kind, pending.payload, taken=self._taken, step_id=pending.step_id, parent=parent
            )
            if position is None:  # nothing of the kind in the window: at the cursor, it is the divergence
                self.tape.peek()
                position = self.tape.position
            self._taken.add(position)
            return position

    def _place_observation(self, kind: str, key: str, answers: Event | None) -> int:
        if self.on_request is not None:
            self.on_request(kind, key)
        field = OBSERVATION_KEY[kind]
        with self.lock:
            self._check_running()
            answered = answers.event_id if answers is not None and kind not in _UNANSWERED else None
            position = self.tape.place(kind, {field: key}, answers=answered, taken=self._taken)
            if position is not None:
                self.tape.reserved.add(position)
                self._taken.add(position)
                return position
            found = self.tape.observe(kind, key)  # says why the journal has nothing to serve here
            stop = self.tape.stop(_divergence(found if isinstance(found, Mismatch) else None, kind, key))
        self._release_all()  # the flows already waiting will never get their turn either
        raise stop

    def _serving(self, position: int, served: Served, write: Callable[[Pending], Event]) -> Callable[[], Event]:
        def serve() -> Event:
            recorded = self.tape.event_at(position)
            return write(served(recorded.payload)._replace(position=position))

        return serve

    def _check_running(self) -> None:
        if self.tape.stopped is not None:
            from .tape import ReplayStopped

            raise ReplayStopped("the replay stopped")

    def _cursor(self) -> int:
        self.tape.peek()  # steps over a checkpoint
        return self.tape.position

    # -- taking turns -------------------------------------------------------------------------------

    def _take_turn(self, position: int, write: Callable[[], Event], pending: Pending | None, nested: bool) -> Event:
        """Write now (its turn; nested in another write; or a thread that must not block), else block until
        whoever writes the event before it has written it too."""
        with self.lock:
            self._check_running()
            now = nested or position == self._cursor() or not can_block()
            if not now:
                turn = self._wait_for(position, write, pending)
        if now:
            return self._write_now(position, write, drain=not nested)
        if self._nobody_else_could_write():
            self._stall(immediately=True)
        turn.done.wait()
        if turn.error is not None:
            raise turn.error
        assert turn.event is not None
        return turn.event

    async def _await_turn(
        self, position: int, write: Callable[[], Event], pending: Pending | None, *, awaits_cancel: bool = False
    ) -> Event:
        import asyncio

        with self.lock:
            self._check_running()
            now = position == self._cursor() and not awaits_cancel
            if not now:
                turn = self._wait_for(position, write, pending, awaits_cancel)
                turn.loop = asyncio.get_running_loop()
                turn.future = turn.loop.create_future()
                self._watch_loop(turn.loop)
        if now:
            return self._write_now(position, write, drain=True)
        assert turn.future is not None
        try:
            return await turn.future
        except asyncio.CancelledError:
            # The recorded event is still written at its turn (it was, in the recording), to nobody; a recorded
            # cancellation waited for this very moment.
            with self.lock:
                turn.detached, turn.awaits_cancel = True, False
                ready = self._waiting.get(self._cursor()) is turn
            if ready:
                self._drain()
            raise

    def _wait_for(
        self, position: int, write: Callable[[], Event], pending: Pending | None, awaits_cancel: bool = False
    ) -> _Turn:
        turn = _Turn(position, write, pending, awaits_cancel)
        self._waiting[position] = turn
        self._progress = time.monotonic()
        self._start_watchdog()
        return turn

    def _write_now(self, position: int, write: Callable[[], Event], *, drain: bool) -> Event:
        try:
            event = write()
        except BaseException as error:
            self._written(position)
            self._stop(error)
            raise
        self._written(position)
        if drain:
            self._drain()
        return event

    def _written(self, position: int) -> None:
        with self.lock:
            self._taken.discard(position)
            self._progress = time.monotonic()

    def _drain(self) -> None:
        """Write every waiting event whose turn has come, in order, on behalf of its flow."""
        while True:
            with self.lock:
                if self.tape.stopped is not None:
                    break
                cursor = self._cursor()
                turn = self._waiting.get(cursor)
                if turn is None or turn.awaits_cancel:  # (a recorded cancellation waits for the agent's)
                    return
                del self._waiting[cursor]
            try:
                event = turn.write()
            except BaseException as error:
                self._written(turn.position)
                turn.deliver(None, error)
                self._stop(error)
                return
            self._written(turn.position)
            turn.deliver(event, None)
        self._release_all()

    def _stop(self, error: BaseException) -> None:
        """A write failed (a divergence, an unusable journal, an error of the agent's hook): no later turn can
        come, so the replay stops there and every waiting flow is released."""
        with self.lock:
            self.tape.stop(error)
        self._release_all()

    def _release_all(self) -> None:
        """The replay stopped: every waiting flow gets the reason (or, after the first, that it stopped)."""
        from .tape import ReplayStopped

        with self.lock:
            stopped = self.tape.stopped
            waiting = list(self._waiting.values())
            self._waiting.clear()
        if stopped is None:
            return
        for turn in waiting:
            turn.deliver(None, ReplayStopped(f"the replay stopped: {stopped}"))

    # -- stalls -------------------------------------------------------------------------------------

    def _watch_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look now and then whether the event loop the waiting coroutines run on has nothing left to run: then
        nothing can ever write the event at the cursor, and the replay need not wait ``stall_s`` to say so."""
        if loop not in self._watched_loops:
            self._watched_loops.add(loop)
            loop.call_later(IDLE_CHECK_S, self._idle_check, loop, 0)

    def _idle_check(self, loop: asyncio.AbstractEventLoop, idle_rounds: int) -> None:
        with self.lock:
            waiting = bool(self._waiting) and self.tape.stopped is None
        if not waiting:
            self._watched_loops.discard(loop)
            return
        idle_rounds = idle_rounds + 1 if _loop_idle(loop) and self._nobody_else_could_write() else 0
        if idle_rounds >= IDLE_ROUNDS:
            self._watched_loops.discard(loop)
            self._stall(immediately=True)
            return
        loop.call_later(IDLE_CHECK_S, self._idle_check, loop, idle_rounds)

    def _nobody_else_could_write(self) -> bool:
        """A sync agent's only thread is about to wait: nothing could ever write the event before it."""
        watchdog = 1 if self._watchdog is not None and self._watchdog.is_alive() else 0
        return threading.active_count() - watchdog <= 1

    def _start_watchdog(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="replay-tui-turns", daemon=True)
            self._watchdog.start()

    def _watch(self) -> None:
        while self.tape.stopped is None:
            time.sleep(min(0.05, self.stall_s / 4))
            with self.lock:
                stuck = bool(self._waiting) and time.monotonic() - self._progress > self.stall_s
            if stuck:
                self._stall(immediately=False)

    def _stall(self, *, immediately: bool) -> None:
        """End the replay: the event at the cursor never came, while flows wait for their turns after it."""
        with self.lock:
            if self.tape.stopped is not None:
                return
            waiting = sorted(self._waiting.values(), key=lambda turn: turn.position)
            if not waiting:
                return
            cursor = self._cursor()
            expected = self.tape.event_at(cursor) if cursor < self.tape.total else None
            reason = _stall_reason(self.tape, expected, waiting, None if immediately else self.stall_s)
            first = waiting[0].pending
            produced = None
            if first is not None:  # (a parent the harness reads only when writing is none yet)
                produced = produced_event(first.kind, first.payload, first.step_id, given_parent(first))
            seq = expected.seq if expected is not None else self.tape.next_seq
            from .tape import Divergence

            self.tape.stop(Divergence(seq, reason, produced, expected))
        self._release_all()


#: Observations that answer no event of the agent's (placed by their source alone).
_UNANSWERED = frozenset({"clock.read", "random.draw"})


def _divergence(found: Mismatch | None, kind: str, key: str) -> StopRun:
    from .tape import Divergence

    if found is not None:
        return Divergence.of(found)
    return Divergence(0, f"the agent asked for a {kind} for {key}, which the journal does not record here", None, None)


def _stall_reason(tape: Tape, expected: Event | None, waiting: list[_Turn], stall_s: float | None) -> str:
    what = "the journal ends" if expected is None else f"the journal has {_describe(expected)}"
    held = ", ".join(
        f"seq {tape.event_at(turn.position).seq} ({'an answer' if turn.pending is None else turn.pending.kind})"
        for turn in waiting[:8]
    )
    more = f" and {len(waiting) - 8} more" if len(waiting) > 8 else ""
    after = "nothing else in the agent can run" if stall_s is None else f"nothing was written for {stall_s:g} s"
    return (
        f"the agent never produced the event recorded here ({what}; {after}) while it waits "
        f"for its turns at {held}{more}: a call the recording made is missing, or came in another order than "
        "the flows that waited for it allow"
    )


def _describe(event: Event) -> str:
    field = OBSERVATION_KEY.get(event.kind)
    if event.kind in OBSERVATION_KINDS and field is not None:
        return f"{event.kind} {field}={event.payload.get(field)}"
    for name in ("call_key", "request_hash", "after_hash", "state_hash"):
        if name in event.payload:
            return f"{event.kind} {name}={event.payload[name]}"
    return event.kind
