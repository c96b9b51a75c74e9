"""The causal tree's place in the first frame: the pane's border and title, empty as the tree is until an
event is picked.

Textual's Tree (its rules, seven component classes and the render of its empty lines) was about a twentieth
of what the app adds to a bare Textual app's first frame. The main screen puts the tree in this frame's
place once that frame is drawn, or as soon as something asks for the tree (``MainScreen.causal_tree``).
"""

from __future__ import annotations

from textual.strip import Strip
from textual.widget import Widget


class CausalTreeFrame(Widget):
    """Drawn as the empty, unfocused causal tree is: its size is the tree's, its border, title and background
    come from the ``pane`` class they share."""

    DEFAULT_CSS = """
    CausalTreeFrame {
        width: 1fr;
        height: 1fr;
    }
    """

    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width, self.rich_style)  # the empty tree's line, byte for byte
