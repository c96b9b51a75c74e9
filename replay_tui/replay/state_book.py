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

from ..journal import Event
from ..journal.canonical import CanonicalizationError, canonical_json_of_parsed
from ..journal.hashing import sha256_hex
from ..journal.model import RUN_STARTED, STATE_SNAPSHOT, STATE_TRANSITION

#: What hashing a state the agent's patches built can raise (a value JSON cannot hold, nesting too deep).
_UNHASHABLE = (CanonicalizationError, TypeError, ValueError, RecursionError)


def state_hash(state: Any) -> str:
    """sha256 of JCS(state): the journal contract's state hash, for a parsed JSON value."""
    return sha256_hex(canonical_json_of_parsed(state))


class StateBook:
    """One state, advanced by patches; each method returns why a claim is false, or None."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.hash: str | None = None  # computed when first needed: most runs check it at the first transition

    def current_hash(self) -> str:
        if self.hash is None:
            self.hash = state_hash(self.state)
        return self.hash

    def transition(self, payload: dict[str, Any]) -> str | None:
        """Apply the produced patch; the state it builds must hash to the transition's after_hash."""
        # Twin of replay/state_book.py:StateBook.snapshot in shape (two claims, each checked by hash)
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
        try:  # the patch is copied: its values become part of the state, which later patches change in place
            after = apply_patch(self.state, _copy(patch))
            after_hash = state_hash(after)
        except Exception as error:  # hostile patches: any failure to apply is the child's, never a traceback
            self.state, self.hash = None, None
            return f"the agent's patch does not apply to the state the parent rebuilt ({type(error).__name__}: {error})"
        self.state, self.hash = after, after_hash
        if payload.get("after_hash") != after_hash:
            return (
                f"after_hash differs from the hash of the state the agent's patch builds ({after_hash}): "
                "the reported state hash is not the state's"
            )
        return None

    def snapshot(self, payload: dict[str, Any]) -> str | None:
        """A snapshot must be the state the patches built, by hash."""
        # Twin of replay/state_book.py:StateBook.transition in shape (two claims, each checked by hash)
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


_SIMPLE_OPS = frozenset({"add", "replace", "remove"})


def apply_patch(state: Any, patch: list[Any]) -> Any:
    """RFC 6902, in place. The common ops (add, replace, remove below the root) are applied here, as
    ``jsonpatch`` applies them, at a fraction of its cost per transition; any other patch goes to jsonpatch."""
    if not all(
        type(op) is dict and op.get("op") in _SIMPLE_OPS and type(op.get("path")) is str and op["path"][:1] == "/"
        for op in patch
    ):
        import jsonpatch  # move, copy, test, the root: the library

        return jsonpatch.apply_patch(state, patch, in_place=True)
    for op in patch:
        *parents, last = [token.replace("~1", "/").replace("~0", "~") for token in op["path"][1:].split("/")]
        container = state
        for token in parents:
            container = container[token] if type(container) is dict else container[_index(container, token)]
        kind = op["op"]
        if type(container) is dict:
            if kind == "add":
                container[last] = op["value"]
            elif last not in container:
                raise KeyError(f"{op['path']}: no such member to {kind}")
            elif kind == "replace":
                container[last] = op["value"]
            else:
                del container[last]
        elif type(container) is list:
            if kind == "add":
                position = len(container) if last == "-" else _index(container, last, end_ok=True)
                container.insert(position, op["value"])
            elif kind == "replace":
                container[_index(container, last)] = op["value"]
            else:
                del container[_index(container, last)]
        else:
            raise TypeError(f"{op['path']}: not inside an object or an array")
    return state


def _index(container: Any, token: str, *, end_ok: bool = False) -> int:
    """An array index token (RFC 6901: 0, or digits without a leading zero) within bounds."""
    if type(container) is not list:
        raise TypeError(f"{token!r}: not an array index into an array")
    if not token.isdecimal() or not token.isascii() or (token[0] == "0" and token != "0"):
        raise ValueError(f"{token!r} is not an array index")
    position = int(token)
    if position > len(container) or (position == len(container) and not end_ok):
        raise IndexError(f"array index {position} is out of range")
    return position


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
