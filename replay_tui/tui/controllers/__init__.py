"""Controllers of the main screen: follow, bookmarks, export and replay.

Each gets what it works on explicitly (``ScreenParts`` plus its own collaborators) instead of
reaching into a base class; the screen keeps the bindings and forwards actions and messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from ...journal import Journal
    from ..widgets.bars import RunHeader, StatusBar
    from ..widgets.timeline import Timeline


@dataclass(frozen=True)
class ScreenParts:
    """The main screen's pieces a controller may use (the widgets exist once it is mounted)."""

    app: App[Any]
    journal: Journal
    timeline: Timeline
    status: StatusBar
    header: RunHeader
    goto_seq: Callable[[int], None]
    post_message: Callable[[Message], bool]
    run_worker: Callable[..., Worker[Any]]  # the screen's run_worker: workers end with the screen
