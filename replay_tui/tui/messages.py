"""Messages that flow up from widgets and workers to the screen. Small records with their own
``__init__``, as Textual's messages are written: as dataclasses they compiled their methods when the
app was imported (nearly all of this module's import, before the first frame). Workers only ever post
these (post_message is thread-safe).

A ``ControllerMessage`` is posted by a controller's worker for that controller: the main screen
hands it to the handler the controller registered (``handlers()``), so no screen method forwards it.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # these load with the first state, tree page, filter or replay, not the first frame
    from ..analysis.causal import ChildrenPage
    from ..analysis.search import Query
    from ..analysis.state import StateAt
    from ..replay.parent.runner import Progress
    from .controllers.replay import ReplayResult


class ControllerMessage(Message):
    """A message for one of the main screen's controllers (see ``controllers/``)."""


class ReplacedByNext(Message):
    """A progress report: a newer one of its kind (the next message) makes this one, still in the
    queue, pointless."""

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


class FirstFrameDrawn(Message):
    """The main screen's first frame is on the terminal: what start-up held back may run now."""


class IndexProgress(ReplacedByNext):
    """More of the journal is indexed; ``events`` are readable now."""

    def __init__(self, events: int, done_bytes: int, total_bytes: int) -> None:
        super().__init__()
        self.events = events
        self.done_bytes = done_bytes
        self.total_bytes = total_bytes


class IndexFinished(Message):
    def __init__(self, events: int, seconds: float, error: str | None = None) -> None:
        super().__init__()
        self.events = events
        self.seconds = seconds
        self.error = error


class ChainChecked(Message):
    """Result of verify_journal: ``status`` is verified, absent, broken or error."""

    def __init__(self, status: str, summary: str, fault_seq: int | None = None) -> None:
        super().__init__()
        self.status = status
        self.summary = summary
        self.fault_seq = fault_seq


class CursorMoved(Message):
    """The timeline cursor is on a new position."""

    def __init__(self, position: int) -> None:
        super().__init__()
        self.position = position


class StateComputed(Message):
    def __init__(self, position: int, state: StateAt) -> None:
        super().__init__()
        self.position = position
        self.state = state


class ChildrenLoaded(Message):
    def __init__(self, node_id: int, page: ChildrenPage, generation: int) -> None:
        super().__init__()
        self.node_id = node_id
        self.page = page
        self.generation = generation


class ChainLoaded(Message):
    def __init__(self, position: int, chain: list[int], generation: int) -> None:
        super().__init__()
        self.position = position
        self.chain = chain
        self.generation = generation


class JumpTo(ControllerMessage):
    """Move the timeline cursor to ``position`` (from a worker, the tree or a pane)."""

    def __init__(self, position: int, reason: str = "") -> None:
        super().__init__()
        self.position = position
        self.reason = reason


class SearchFinished(ControllerMessage):
    """A search worker ended: the hit's position (None: no match), and what to tell the user."""

    def __init__(self, position: int | None, reason: str) -> None:
        super().__init__()
        self.position = position
        self.reason = reason


class JobProgress(Message):
    """How far a job is, for the status line; ``text`` is already worded (``done`` of ``total``).
    Throttled by the jobs runner, and a pending one is replaced by the next of the same job."""

    def __init__(self, job: str, text: str, done: int = 0, total: int = 0) -> None:
        super().__init__()
        self.job = job
        self.text = text
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgress) and message.job == self.job


class Notice(Message):
    """Something to tell the user in the status bar."""

    def __init__(self, text: str, severity: str = "information") -> None:
        super().__init__()
        self.text = text
        self.severity = severity


class FilterProgress(ControllerMessage):
    """The filter worker found more matches; ``rows`` is the (growing) list of positions."""

    def __init__(self, query: Query, rows: array[int], scanned: int, complete: bool) -> None:
        super().__init__()
        self.query = query
        self.rows = rows
        self.scanned = scanned
        self.complete = complete

    def can_replace(self, message: Message) -> bool:
        """Textual asks a message still in the queue whether the next one supersedes it: a later
        report of the same filter does, unless this one is the complete result."""
        return isinstance(message, FilterProgress) and message.query == self.query and not self.complete


class JournalGrew(ControllerMessage):
    """Follow mode saw the journal change; ``message`` says so when it rotated or was reset."""

    def __init__(
        self,
        new_events: int,
        message: str | None = None,
        flagged_seqs: list[int] | None = None,
        reset: bool = False,
    ) -> None:
        super().__init__()
        self.new_events = new_events
        self.message = message
        self.flagged_seqs = flagged_seqs if flagged_seqs is not None else []  # new events with a possible secret
        self.reset = reset  # truncated or replaced: everything was reloaded


class SecretsScanned(Message):
    """The secret scan at open finished: these seqs get the secret mark."""

    def __init__(self, seqs: list[int]) -> None:
        super().__init__()
        self.seqs = seqs


# -- the replay controller's worker ------------------------------------------------------------


class ReplayProgressed(ControllerMessage, ReplacedByNext):
    """The replay child's latest step (the jobs runner throttles them)."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress


class ReplayChildSpawned(ControllerMessage):
    """The job spawned the sandboxed child: its pid leads the child's process group."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid


class ReplayChildStarted(ControllerMessage):
    """The child said hello: it is isolated and about to load the journal."""

    def __init__(self, isolation: str) -> None:
        super().__init__()
        self.isolation = isolation


class ReplayFinished(ControllerMessage):
    """The run ended (matched, diverged, failed or cancelled): its outcome, marks and environment."""

    def __init__(self, result: ReplayResult) -> None:
        super().__init__()
        self.result = result
