"""The Rich styles of a widget's component classes, looked up once per theme.

The widgets that paint their own lines (the timeline, the JSON view) ask for a style on every row;
``get_component_rich_style`` walks the stylesheet each time, so the answer is kept until the styles change.
"""

from __future__ import annotations

from rich.style import Style
from textual.widget import Widget


class ComponentStyles:
    """``styles("timeline--seq")`` is that component's style; ``clear()`` when the theme or CSS changed."""

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        self._known: dict[str, Style] = {}

    def __call__(self, name: str) -> Style:
        style = self._known.get(name)
        if style is None:
            style = self._known[name] = self._widget.get_component_rich_style(name, partial=True)
        return style

    def clear(self) -> None:
        self._known.clear()
