"""What a session whose journal cannot be written goes on with, when the config says it may
(``[harness] on_journal_error = "continue"``): a sink that numbers events and writes nothing.

The harness keeps working exactly as it did (ids, parents, state, the agent's values), only nothing
reaches a journal; the recording logger says so once, naming the journal and the error, so a
service's log shows which sessions are not recorded. ``"fail"`` (the default) fails the session
with ``RecordingFailed`` instead.
"""

from __future__ import annotations

import logging
from typing import Any

from ..journal import Event
from ..journal.model import event_id_for

__all__ = ["JOURNAL_ERROR_POLICIES", "LOG", "RecordingFailed", "UnrecordedSink"]

#: The logger a service sees recording trouble in.
LOG = logging.getLogger("replay_tui.recording")
#: ``[harness] on_journal_error``: fail the session, or let it go on unrecorded.
JOURNAL_ERROR_POLICIES = ("fail", "continue")


class RecordingFailed(RuntimeError):
    """The journal of a run cannot be written (a full disk, permissions, a directory removed): the run is
    stopped here (``on_journal_error = "fail"``). Every later call of the harness raises it again."""


class UnrecordedSink:
    """An EventSink that writes nothing: events get the seqs, ids and parents they would have had."""

    def __init__(self, run_id: str, last_seq: int = 0) -> None:
        self.run_id = run_id
        self.last_seq = last_seq
        self.reason: BaseException | None = None  # why nothing is written

    def emit(self, kind: str, payload: dict[str, Any], *, step_id: str | None, parent_event_id: str | None) -> Event:
        self.last_seq += 1
        event_id = event_id_for(self.run_id, self.last_seq)
        return Event(self.last_seq, kind, self.run_id, event_id, step_id, parent_event_id, "", payload, None, None, {})

    def close(self) -> None:
        pass
