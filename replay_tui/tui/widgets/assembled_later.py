"""A container whose parts are mounted after the first frame, or as soon as something asks for them.

The state panes, the event detail and the replay strip show nothing until an event is picked or a replay
starts, so the first frame only needs their borders and titles. Their parts (three JSON views with eleven
component classes each, the replay strip's lines) were a sixth of the first frame's styling and layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from textual.containers import Vertical
from textual.widget import Widget

PartType = TypeVar("PartType", bound=Widget)


class AssembledLater(Vertical):
    """``parts()`` are mounted by ``assemble()``: the screen calls it once the first frame is drawn, and the
    accessors find a part through ``part()``, which assembles first, so a part is there whenever it is used."""

    _assembled = False

    def parts(self) -> Iterable[Widget]:
        """The children, made when they are mounted."""
        return ()

    def assemble(self) -> None:
        """Mount the parts (once; they are in the DOM when this returns, so a query finds them)."""
        if not self._assembled:
            self._assembled = True
            self.mount_all(self.parts())

    def part(self, expect_type: type[PartType], selector: str | None = None) -> PartType:
        """The part of ``expect_type`` (matching ``selector`` too, when given), mounted first if need be."""
        self.assemble()
        return self.query_one(expect_type) if selector is None else self.query_one(selector, expect_type)
