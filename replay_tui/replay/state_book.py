"""The parent's own copy of the agent's state, rebuilt from the patches the child produced.

A ``state.transition`` says "the state went from ``before_hash`` to ``after_hash`` through
``patch``"; the child computes those hashes. The parent does not take them on trust: it
applies each patch to its own copy (starting from ``run.started``'s ``initial_state``, or
the snapshot a resumed run starts after) and hashes the result, and a ``state.snapshot``
must hash to the state it built. A child that reports the recorded hashes for a state its
patches do not build is caught at that transition. Harness-free, so the app can run it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..journal import Event, json_patch
from ..journal.canonical import CanonicalizationError
from ..journal.hashing import state_hash
from ..journal.model import RUN_STARTED, STATE_SNAPSHOT, STATE_TRANSITION

#: What hashing a state the agent's patches built can raise (a value JSON cannot hold, nesting too deep).
_UNHASHABLE = (CanonicalizationError, TypeError, ValueError, RecursionError)


class StateBook:
    """One state, advanced by patches; each method returns why a claim is false, or None."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.hash: str | None = None  # computed when first needed: most runs check it at the first transition
        self.size: int | None = None  # bytes of JSON, known after the first patch (then carried, not measured)

    def current_hash(self) -> str:
        if self.hash is None:
            self.hash = state_hash(self.state)
        return self.hash

    def transition(self, payload: dict[str, Any]) -> str | None:
        """Apply the produced patch; the state it builds must hash to the transition's after_hash."""
        try:
            before = self.current_hash()
        except _UNHASHABLE as error:
            return f"the state before this transition cannot be hashed ({error})"
        if payload.get("before_hash") != before:
            return (
                f"before_hash differs from the state the parent rebuilt from the agent's patches ({before}): "
                "a state hash reported earlier was not the state's"
            )
        patch = payload.get("patch")
        if not isinstance(patch, list):
            return "the transition carries no patch (a JSON Patch list) for the parent to apply"
        try:  # bounded as it is applied: a copy bomb is refused at the operation that would pass the limit
            after, size = json_patch.apply_patch(self.state, patch, size=self.size)
            after_hash = state_hash(after)
        except json_patch.PatchLimitError as error:
            self.state, self.hash, self.size = None, None, None
            return f"the agent's patch builds a state larger than a state may be ({error})"
        except Exception as error:  # hostile patches: any failure to apply is the child's, never a traceback
            self.state, self.hash, self.size = None, None, None
            return f"the agent's patch does not apply to the state the parent rebuilt ({type(error).__name__}: {error})"
        self.state, self.hash, self.size = after, after_hash, size
        if payload.get("after_hash") != after_hash:
            return (
                f"after_hash differs from the hash of the state the agent's patch builds ({after_hash}): "
                "the reported state hash is not the state's"
            )
        return None

    def snapshot(self, payload: dict[str, Any]) -> str | None:
        """A snapshot must be the state the patches built, by hash."""
        try:
            current = self.current_hash()
        except _UNHASHABLE as error:
            return f"the state cannot be hashed ({error})"
        if payload.get("state_hash") != current:
            return f"state_hash differs from the hash of the state the agent's patches built ({current})"
        try:
            if state_hash(payload.get("state")) != current:
                return "the snapshot's state is not the state its state_hash names"
        except _UNHASHABLE as error:
            return f"the snapshot's state cannot be hashed ({error})"
        return None


def apply_patch(state: Any, patch: list[Any]) -> Any:
    """RFC 6902 through the one bounded applier (journal/json_patch.py); ``state`` is left as it was."""
    return json_patch.apply_patch(state, patch).state


def check_event(book: StateBook | None, kind: str, payload: dict[str, Any]) -> tuple[StateBook | None, str | None]:
    """Advance ``book`` by one event: (the book to use next, why the event's state claim is false or None)."""
    if kind == RUN_STARTED:
        return StateBook(_copy(payload.get("initial_state"))), None
    if kind not in (STATE_TRANSITION, STATE_SNAPSHOT):
        return book, None
    if book is None:
        return None, f"a {kind} before run.started: there is no state to check it against"
    return book, (book.transition(payload) if kind == STATE_TRANSITION else book.snapshot(payload))


def first_false_state(events: Iterable[Event]) -> tuple[int, str] | None:
    """The first event of a journal whose state claim its patches do not bear out: (seq, reason)."""
    book: StateBook | None = None
    for event in events:
        book, reason = check_event(book, event.kind, event.payload)
        if reason is not None:
            return event.seq, reason
    return None


def _copy(value: Any) -> Any:
    """A copy the book may patch in place (the value may be a cached journal event's)."""
    import orjson

    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):  # deeper than orjson goes: the stdlib's copy
        import copy

        return copy.deepcopy(value)
