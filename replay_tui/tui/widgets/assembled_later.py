"""A container whose parts are mounted after the first frame, or as soon as something asks for them.

The state panes, the event detail and the replay strip show nothing until an event is picked or a replay
starts, so the first frame only needs their borders and titles. Their parts (three JSON views with eleven
component classes each, the replay strip's lines) were a sixth of the first frame's styling and layout.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.containers import Vertical
from textual.widget import Widget


class AssembledLater(Vertical):
    """``parts()`` are mounted by ``assemble()``: the screen calls it once the first frame is drawn, and every
    accessor of a part calls it first, so a part is there whenever it is used."""

    _assembled = False

    def parts(self) -> Iterable[Widget]:
        """The children, made when they are mounted."""
        return ()

    def assemble(self) -> None:
        """Mount the parts (once; they are in the DOM when this returns, so a query finds them)."""
        if not self._assembled:
            self._assembled = True
            self.mount_all(self.parts())
