"""Probe-compatible agents that misbehave half-way through a replay."""

from __future__ import annotations

import sys

from replay_tui.harness import Harness, agent_reducer

from .probe import reduce


@agent_reducer(reduce, "probe-1", {"lookups": 0, "errors": 0, "stock": 0})
def exits(h: Harness, question: str) -> None:
    h.clock.now()
    sys.exit(3)


@agent_reducer(reduce, "probe-1", {"lookups": 0, "errors": 0, "stock": 0})
def raises(h: Harness, question: str) -> None:
    h.clock.now()
    raise RuntimeError("the agent broke after its first clock read")
