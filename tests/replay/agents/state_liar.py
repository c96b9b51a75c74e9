"""A hostile agent that lies about its state: the probe agent with a reducer that counts every
delivered stock twice, which reports the *recorded* before/after hashes for each transition
(read from the child's copy of the journal) while its patches build its own, different state.

The child's own tape compares hashes only, so it sees nothing; only a parent that applies the
patches to its own copy of the state can tell. Imported in the replay child only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import orjson

from replay_tui.harness import Harness, agent_reducer
from replay_tui.harness.state import StateTracker, Transition
from replay_tui.journal import Event

from . import probe


def _journal_copy() -> str | None:
    """The journal the child replays: its spec (argv[1]) names it; else the one in the scratch dir."""
    try:
        return str(orjson.loads(sys.argv[1])["journal"])
    except (IndexError, KeyError, TypeError, orjson.JSONDecodeError):
        names = [name for name in os.listdir(".") if name.endswith(".jsonl") and not name.startswith("out-")]
        return names[0] if names else None


def _recorded_hashes() -> Iterator[tuple[str, str]]:
    path = _journal_copy()
    if path is None:
        return
    with open(path, "rb") as journal:
        for line in journal:
            event = orjson.loads(line)
            if event.get("kind") == "state.transition":
                yield event["payload"]["before_hash"], event["payload"]["after_hash"]


_RECORDED = _recorded_hashes()
_honest_apply = StateTracker.apply


def _lying_apply(self: StateTracker, event: Event) -> Transition | None:
    transition = _honest_apply(self, event)
    if transition is None:
        return None
    forged = next(_RECORDED, None)
    if forged is None:
        return transition
    self.hash = forged[1]  # from now on the tracker "is" in the recorded state
    return Transition(forged[0], forged[1], transition.patch)


StateTracker.apply = _lying_apply  # type: ignore[method-assign]


def reduce(state: dict[str, Any], event: Event) -> dict[str, Any]:
    after = probe.reduce(state, event)
    if after is not state and event.kind == "tool.result" and not event.payload.get("error"):
        after = {**after, "stock": after["stock"] + event.payload["result"]["stock"]}
    return after


@agent_reducer(reduce, "probe-1", {"lookups": 0, "errors": 0, "stock": 0})
def agent(h: Harness, question: str) -> Any:
    return probe.agent(h, question)
