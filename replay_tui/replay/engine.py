"""The replay session inside the child: open the journal, verify it, load the agent, run it.

This module runs only in the child (after isolation). It turns a ``ReplaySpec`` into
a harness run over the tape and returns the ``result`` message fields.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..journal import Journal, verify_journal
from ..journal.model import RUN_STARTED
from .entry_point import load_entry_point
from .protocol import MODES, ReplaySpec

if TYPE_CHECKING:
    from .child import Channel
    from .isolation import SocketGuard


class UsageError(Exception):
    """The spec asks for something impossible (bad mode, bad --from-seq, missing config)."""


class ReplaySession:
    """One replay or experiment, from the child's point of view."""

    def __init__(self, spec: ReplaySpec, channel: "Channel", guard: "SocketGuard") -> None:
        if spec.mode not in MODES:
            raise UsageError(f"unknown mode {spec.mode!r}; expected one of {', '.join(MODES)}")
        if spec.from_seq is not None and spec.from_seq < 1:
            raise UsageError(f"--from-seq must be a positive seq, not {spec.from_seq}")
        self.spec = spec
        self.channel = channel
        self.guard = guard
        self.started = time.perf_counter()

    def run(self) -> dict[str, Any]:
        journal = Journal(self.spec.journal)
        total_bytes = max(journal.known_bytes(), 1)
        journal.index(progress=lambda done, _: self.channel.progress("load", 0, total_bytes, None))
        total = len(journal)
        if self.spec.verify_hash_chain:
            self.channel.progress("verify", 0, total, None, force=True)
            verification = verify_journal(self.spec.journal)
            if not verification.ok:
                return self.result("verification_failed", 0, total, verification=verification.to_json())
        first = journal.event(0)
        if first.kind != RUN_STARTED:
            raise UsageError(f"{self.spec.journal}: seq {first.seq} is {first.kind}; a replayable journal starts with run.started")
        agent_name = self.spec.agent or first.payload["agent"]
        entry = load_entry_point(agent_name)
        from .tape import replay_journal  # imports the harness; only once the agent loaded

        return replay_journal(self, journal, first, entry, agent_name)

    def result(self, status: str, consumed: int, total: int, **fields: Any) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        fields.setdefault("unused", None)
        fields.setdefault("verification", None)
        fields.setdefault("out", self.spec.out)
        fields.setdefault("experiment", None)
        fields.setdefault("live_calls", [])
        fields.setdefault("first_seq", self.spec.from_seq or 1)
        return {
            "status": status,
            "consumed": consumed,
            "total": total,
            "refusals": [refusal.to_json() for refusal in self.guard.refusals],
            "elapsed_s": round(elapsed, 4),
            "events_per_s": round(consumed / elapsed, 1) if elapsed > 0 else None,
            **fields,
        }

