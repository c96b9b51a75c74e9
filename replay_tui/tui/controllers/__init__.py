"""Controllers of the main screen: follow, bookmarks, export, replay and finding.

Each gets what it works on explicitly (``ScreenParts`` plus its own collaborators) instead of
reaching into a base class. Keys reach a controller through the action table (an entry whose
``target`` is ``"controller.method"``, see ``tui/actions.py``) and its workers' messages through
``handlers()`` (the ``messages.ControllerMessage`` types it answers): the screen forwards neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from ...journal import Journal
    from ..widgets.bars import RunHeader, StatusBar
    from ..widgets.timeline import Timeline

# A controller's answer to its messages: message type -> the method that handles it.
Handlers = Mapping[type["Message"], Callable[[Any], None]]


class Routed(Protocol):
    def handlers(self) -> Handlers: ...


def routes(*controllers: Routed) -> dict[type[Message], Callable[[Any], None]]:
    """Each message type to the one controller that handles it (two that claim one are a bug)."""
    table: dict[type[Message], Callable[[Any], None]] = {}
    for controller in controllers:
        for kind, handle in controller.handlers().items():
            if kind in table:
                raise ValueError(f"{kind.__name__} is handled by two controllers")
            table[kind] = handle
    return table


class ScreenParts(NamedTuple):
    """The main screen's pieces a controller may use (the widgets exist once it is mounted). A NamedTuple,
    not a frozen dataclass: that compiled six methods when the app was imported, before its first frame."""

    app: App[Any]
    journal: Journal
    timeline: Timeline
    status: StatusBar
    header: RunHeader
    goto_seq: Callable[[int], None]
    indexing: Callable[[], bool]  # the index worker is still reading the journal
    post_message: Callable[[Message], bool]
    run_worker: Callable[..., Worker[Any]]  # the screen's run_worker: workers end with the screen

    def run_thread(self, work: Callable[[], object], *, group: str, exclusive: bool = True) -> Worker[Any]:
        """``work`` in a thread worker of the screen; it reports by message, and its failure never ends the app."""
        return self.run_worker(work, thread=True, exclusive=exclusive, group=group, exit_on_error=False)
