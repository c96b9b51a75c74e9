"""The reducer state: ``next = reduce(state, event)``, its hashes, patches and snapshots.

State lives in memory exactly as it is recorded (a JSON round trip of what the
reducer returned), so the state an agent reads in record and in replay is equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import orjson

from ..journal import Event, json_patch
from ..journal.hashing import state_hash
from .patch import diff

Reducer = Callable[[Any, Event], Any]


def as_json(value: Any) -> Any:
    """A JSON round trip: the value exactly as the journal will hold it."""
    return orjson.loads(orjson.dumps(value))


def identity_reducer(state: Any, event: Event) -> Any:
    return state


@dataclass(frozen=True)
class Transition:
    before_hash: str
    after_hash: str
    patch: list[dict[str, Any]]


class StateTracker:
    """Applies the reducer to each event; a reducer returns the same object when
    nothing changed (then no transition is written) and a new one otherwise (it
    must not mutate its input)."""

    def __init__(self, reducer: Reducer, reducer_version: str, initial_state: Any) -> None:
        self.reducer = reducer
        self.reducer_version = reducer_version
        self.state = as_json(initial_state)
        self.hash = state_hash(self.state)

    def reset(self, state: Any) -> None:
        self.state = as_json(state)
        self.hash = state_hash(self.state)

    def apply(self, event: Event) -> Transition | None:
        before = self.state
        after = self.reducer(before, event)
        if after is before:
            return None
        after = as_json(after)
        after_hash = state_hash(after)
        if after_hash == self.hash:
            self.state = after
            return None
        patch = diff(before, after)
        transition = Transition(self.hash, after_hash, patch)
        self.state, self.hash = after, after_hash
        return transition


def apply_patch(state: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902 apply, returning a new state (the input is not modified), bounded like every other
    application (journal/json_patch.py: a PatchLimitError past the largest state a journal holds)."""
    return json_patch.apply_patch(state, patch).state
