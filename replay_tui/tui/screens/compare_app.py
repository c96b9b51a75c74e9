"""`replay-tui compare A B`: the comparison screen as an app of its own."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from ..themes import DEFAULT_THEME, bundled_themes, stylesheet_paths
from .compare import CompareScreen


class CompareApp(App[None]):
    TITLE = "replay-tui compare"
    CSS_PATH = stylesheet_paths()  # type: ignore[assignment]
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", show=False)]

    def __init__(self, path_a: Path, path_b: Path, *, theme: str = DEFAULT_THEME) -> None:
        super().__init__()
        self.path_a = path_a
        self.path_b = path_b
        for bundled in bundled_themes().values():
            self.register_theme(bundled.theme)
        self.theme = theme
        for name in bundled_themes():
            self.set_class(name == theme, f"-theme-{name}")

    def get_default_screen(self) -> Screen[None]:
        return CompareScreen(self.path_a, self.path_b)
