"""Messages that flow up from widgets and workers to the screen. Small dataclasses;
workers only ever post these (post_message is thread-safe).

A ``ControllerMessage`` is posted by a controller's worker for that controller: the main screen
hands it to the handler the controller registered (``handlers()``), so no screen method forwards it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from ..analysis.causal import ChildrenPage
from ..analysis.search import Query
from ..analysis.state import StateAt

if TYPE_CHECKING:  # the runner loads with the first replay, not the first frame
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


@dataclass
class IndexProgress(ReplacedByNext):
    """More of the journal is indexed; ``events`` are readable now."""

    events: int
    done_bytes: int
    total_bytes: int


@dataclass
class IndexFinished(Message):
    events: int
    seconds: float
    error: str | None = None


@dataclass
class ChainChecked(Message):
    """Result of verify_journal: ``status`` is verified, absent, broken or error."""

    status: str
    summary: str
    fault_seq: int | None = None


@dataclass
class CursorMoved(Message):
    """The timeline cursor is on a new position."""

    position: int


@dataclass
class StateComputed(Message):
    position: int
    state: StateAt


@dataclass
class ChildrenLoaded(Message):
    node_id: int
    page: ChildrenPage
    generation: int


@dataclass
class ChainLoaded(Message):
    position: int
    chain: list[int]
    generation: int


@dataclass
class JumpTo(ControllerMessage):
    """Move the timeline cursor to ``position`` (from a worker, the tree or a pane)."""

    position: int
    reason: str = ""


@dataclass
class SearchFinished(ControllerMessage):
    """A search worker ended: the hit's position (None: no match), and what to tell the user."""

    position: int | None
    reason: str


@dataclass
class JobProgress(Message):
    """How far a job is, for the status line; ``text`` is already worded (``done`` of ``total``).
    Throttled by the jobs runner, and a pending one is replaced by the next of the same job."""

    job: str
    text: str
    done: int = 0
    total: int = 0

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobProgress) and message.job == self.job


@dataclass
class Notice(Message):
    """Something to tell the user in the status bar."""

    text: str
    severity: str = "information"


@dataclass
class FilterProgress(ControllerMessage):
    """The filter worker found more matches; ``rows`` is the (growing) list of positions."""

    query: Query
    rows: array[int]
    scanned: int
    complete: bool

    def can_replace(self, message: Message) -> bool:
        """Textual asks a message still in the queue whether the next one supersedes it: a later
        report of the same filter does, unless this one is the complete result."""
        return isinstance(message, FilterProgress) and message.query == self.query and not self.complete


@dataclass
class JournalGrew(ControllerMessage):
    """Follow mode saw the journal change; ``message`` says so when it rotated or was reset."""

    new_events: int
    message: str | None = None
    flagged_seqs: list[int] = field(default_factory=list)  # new events with a possible secret
    reset: bool = False  # truncated or replaced: everything was reloaded


@dataclass
class SecretsScanned(Message):
    """The secret scan at open finished: these seqs get the secret mark."""

    seqs: list[int]


# -- the replay controller's worker ------------------------------------------------------------


@dataclass
class ReplayProgressed(ControllerMessage, ReplacedByNext):
    """The replay child's latest step (the jobs runner throttles them)."""

    progress: Progress


@dataclass
class ReplayChildSpawned(ControllerMessage):
    """The job spawned the sandboxed child: its pid leads the child's process group."""

    pid: int


@dataclass
class ReplayChildStarted(ControllerMessage):
    """The child said hello: it is isolated and about to load the journal."""

    isolation: str


@dataclass
class ReplayFinished(ControllerMessage):
    """The run ended (matched, diverged, failed or cancelled): its outcome, marks and environment."""

    result: ReplayResult
