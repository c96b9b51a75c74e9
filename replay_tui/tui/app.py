"""ReplayApp: themes, copying, help and the command palette around the main screen."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme

from ..journal import Journal
from ..journal.safe_text import safe, safe_line
from . import clipboard
from .actions import action_callback, bindings_for, palette_actions, palette_help, palette_title
from .input_clock import UserInputClock
from .messages import FirstFrameDrawn
from .screens.main import MainScreen, OpenOptions
from .stylesheet_cache import CachedStylesheet
from .themes import (
    CUSTOM_VARIABLE_FALLBACKS,
    DEFAULT_THEME,
    bundled_themes,
    stylesheet_paths,
    theme_variable_defaults,
)

THEME_CYCLE = ("dark", "light", "high-contrast")


class ReplayApp(App[None]):
    """The replay debugger for one journal."""

    TITLE = "replay-tui"
    CSS_PATH = stylesheet_paths()  # type: ignore[assignment]
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = bindings_for("app")  # the keys live in tui/actions.py

    def __init__(
        self,
        journal: Journal,
        *,
        start_seq: int | None = None,
        theme: str = DEFAULT_THEME,
        follow: bool = False,
        replay_agent: str | None = None,
        keymap: Mapping[str, str] | None = None,
    ) -> None:
        self._theme_defaults: dict[tuple[str, int], dict[str, str]] = {}  # before super(): it asks for them
        self._theme_chosen = False  # App.__init__ asks for the variables of Textual's default theme: see below
        super().__init__()
        self.stylesheet = CachedStylesheet(variables=self.get_css_variables())  # parses kept between starts
        self.user_keymap = dict(keymap or {})  # action id -> keys, from the user's keymap file
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
        self.journal = journal
        self.options = OpenOptions(start_seq=start_seq, follow=follow, replay_agent=replay_agent)
        self.input_clock = UserInputClock()
        #: Called once the main screen's first frame is drawn (the launcher ends its start-up pause then).
        self.after_first_frame: Callable[[], None] | None = None
        for bundled in bundled_themes().values():
            self.register_theme(bundled.theme)
        self._start_with_theme(theme)
        self._theme_changed(self.current_theme)

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def on_first_frame_drawn(self, _: FirstFrameDrawn) -> None:
        if self.after_first_frame is not None:
            self.after_first_frame()
        self.keep_stylesheets()

    def keep_stylesheets(self, *, now: bool = False) -> None:
        """Save the stylesheets parsed so far for the next start: a file write, in a thread off the UI unless
        ``now`` (the app has ended)."""
        if not isinstance(self.stylesheet, CachedStylesheet):
            return  # Textual's CSS watcher (``textual run --dev``) swapped in a stylesheet of its own
        if now:
            self.stylesheet.keep()
        else:
            self.run_worker(self.stylesheet.keep, thread=True, name="keep stylesheets", exit_on_error=False)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)):
            self.input_clock.touch()  # long scans pause while keys arrive
        await super().on_event(event)

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.journal, self.options, input_clock=self.input_clock)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # -- themes -----------------------------------------------------------
    def get_css_variables(self) -> dict[str, str]:
        """Nothing while Textual's constructor runs: it asks for its default theme's, which ``_start_with_theme``
        replaces before anything is parsed (each asking generates a color system, about 1 ms)."""
        return super().get_css_variables() if self._theme_chosen else {}

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Textual's own themes lack our custom variables: derive them from the theme's colors
        (once per theme: generating a color system is about 1 ms, and every CSS refresh asks). A theme that
        sets them all (the bundled ones) needs none."""
        theme = self.current_theme
        if CUSTOM_VARIABLE_FALLBACKS.keys() <= theme.variables.keys():
            return {}
        key = (theme.name, id(theme))
        defaults = self._theme_defaults.get(key)
        if defaults is None:
            defaults = self._theme_defaults[key] = theme_variable_defaults(theme.to_color_system().generate())
        return defaults

    def _start_with_theme(self, name: str) -> None:
        """The theme the app starts with, set as Textual's theme watcher would set it but without the
        refresh of all CSS it queues: that reparsed every stylesheet and restyled every widget once more
        (about 10 ms before the first frame), for a stylesheet not yet parsed. Its variables are set here,
        before the first parse. (Textual is pinned: ``_refresh_truecolor_filter`` is what the watcher calls.)"""
        if name not in self.available_themes:
            raise ValueError(f"unknown theme {name!r}")
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        self.update_classes({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark}, update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self._theme_chosen = True
        self.stylesheet.set_variables(self.get_css_variables())

    def _theme_changed(self, theme: Theme) -> None:
        for name in bundled_themes():
            self.set_class(name == theme.name, f"-theme-{name}")

    def action_next_theme(self) -> None:
        current = self.theme if self.theme in THEME_CYCLE else THEME_CYCLE[-1]
        self.theme = THEME_CYCLE[(THEME_CYCLE.index(current) + 1) % len(THEME_CYCLE)]
        self.notify(f"theme: {self.theme}", timeout=2)

    # -- copying (y, Y, ctrl+y) -------------------------------------------------
    def _copy(self, found: tuple[str | None, str]) -> None:
        text, what = found
        if text is None:
            self.notify(f"nothing copied: {what}", severity="warning", timeout=4)
            return
        self.copy_to_clipboard(text)
        self.notify(f"copied the {what} ({len(text):,} characters)", timeout=3)

    def action_copy_value(self) -> None:
        self._copy(clipboard.copy_value(self.focused, self.main.timeline))

    def action_copy_path(self) -> None:
        self._copy(clipboard.copy_path(self.focused))

    def action_copy_line(self) -> None:
        self._copy(clipboard.copy_line(self.main.timeline))

    def action_help(self) -> None:
        from .screens.help import HelpScreen  # loaded when first shown, not for the first frame

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.user_keymap))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast of the app (screens and controllers call this one) may quote journal text:
        it is shown escaped and as plain text, never as markup."""
        super().notify(
            safe(str(message), multiline=True),
            title=safe_line(str(title)),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, MainScreen):
            return
        targets = {"app": self, "screen": screen, "timeline": screen.timeline, **screen.controllers}
        for action in palette_actions():
            callback = action_callback(action, targets)
            yield SystemCommand(palette_title(action), palette_help(action, self.user_keymap), callback)
