"""What a job is: a named computation with a typed request, a typed result and progress.

A job either runs in the caller's thread (it needs objects that live in this process: an
indexed ``Journal``) or in a child process ``python -m replay_tui.jobs NAME`` (it reads and
hashes every line, or referees a replay line by line, which in a thread would hold the
interpreter lock the UI needs). A child job's request and result cross the pipe as JSON, so
they say how to; so do the updates its request's callbacks hear (``child_request``/``heard``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from ..journal.progress import CancelCheck, ProgressCallback

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")

#: Children run niced, so on a busy machine the UI process gets the CPU first.
CHILD_NICENESS = 10

#: What a child job says besides its progress count (``Job.child_request``), one JSON object a line.
Say = Callable[[dict[str, Any]], None]


class JobError(Exception):
    """A job could not produce its result; the message is for the user (no traceback)."""


class JobCancelled(JobError):
    """The job was cancelled before it finished. ``partial`` is what a thread job returned anyway
    (a cancelled replay's outcome, with the events it consumed), or None."""

    def __init__(self, message: str, partial: Any = None) -> None:
        super().__init__(message)
        self.partial = partial


class Aftercare:
    """What a child job leaves behind that its own process group does not hold, for the runner to clean up.

    One per run (``Job.aftercare``): it hears every update the child says; a kill of the child's group takes
    ``groups()`` too; ``ended()`` runs once the child has ended, killed or not. This one leaves nothing."""

    def heard(self, update: dict[str, Any]) -> None:
        """One update the child said (before the job's ``heard`` hands it to the request's callbacks)."""

    def groups(self) -> list[int]:
        """Process groups the child made besides its own: killed with it."""
        return []

    def ended(self) -> None:
        """The child is gone: remove what it would have removed had it not been killed."""


class Job(ABC, Generic[RequestT, ResultT]):
    """One kind of long computation. Subclasses set ``name`` and ``in_child`` and implement ``run``."""

    name: ClassVar[str]
    in_child: ClassVar[bool] = False
    #: A child job that stops itself: a cancel asks it (SIGTERM) and waits a moment for the result it has
    #: so far (``JobCancelled.partial``); any other child job's process group is killed at once.
    stops_itself: ClassVar[bool] = False

    @abstractmethod
    def run(self, request: RequestT, progress: ProgressCallback, cancelled: CancelCheck) -> ResultT:
        """Compute the result; call ``progress(done, total)`` now and then and stop when ``cancelled()``."""

    # -- the pipe, for child jobs ----------------------------------------------------------------
    def request_to_json(self, request: RequestT) -> Any:
        raise NotImplementedError(f"{self.name} runs in the caller's thread")

    def request_from_json(self, data: Any) -> RequestT:
        raise NotImplementedError(f"{self.name} runs in the caller's thread")

    def result_to_json(self, result: ResultT) -> Any:
        raise NotImplementedError(f"{self.name} runs in the caller's thread")

    def result_from_json(self, data: Any) -> ResultT:
        raise NotImplementedError(f"{self.name} runs in the caller's thread")

    def child_request(self, request: RequestT, say: Say) -> RequestT:
        """In the child: ``request`` with callbacks that ``say`` what they hear as updates (the pipe carries
        no callables); the parent hands each update to its own request's callbacks through ``heard``."""
        return request

    def heard(self, request: RequestT, update: dict[str, Any]) -> None:
        """In the parent: one update the child said, for ``request``'s callbacks (none by default)."""

    def aftercare(self, request: RequestT) -> Aftercare:
        """In the parent, for one child run of ``request``: what to clean up after it (nothing by default)."""
        return Aftercare()
