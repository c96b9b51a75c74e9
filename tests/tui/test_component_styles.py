"""A widget's component styles are looked up once, and again after the theme changes."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget

from replay_tui.tui.widgets.component_styles import ComponentStyles


class Painted(Widget):
    COMPONENT_CLASSES = {"painted--mark"}
    DEFAULT_CSS = "Painted > .painted--mark { color: $primary; }"

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0
        self.style = ComponentStyles(self)

    def get_component_rich_style(self, *names: str, partial: bool = False):  # type: ignore[no-untyped-def]
        self.lookups += 1
        return super().get_component_rich_style(*names, partial=partial)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.style.clear()


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Painted()


@pytest.mark.asyncio
async def test_styles_are_kept_until_the_theme_changes() -> None:
    app = Host()
    async with app.run_test() as pilot:
        app.theme = "textual-dark"
        await pilot.pause()
        painted = app.query_one(Painted)
        first = painted.style("painted--mark")
        lookups = painted.lookups
        assert painted.style("painted--mark") is first and painted.lookups == lookups  # kept
        app.theme = "nord"
        await pilot.pause()
        changed = painted.style("painted--mark")
        assert painted.lookups == lookups + 1 and changed.color != first.color
