"""ReplayApp: themes, the command palette, and the hook for replay results."""

from __future__ import annotations

from typing import Iterable

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme

from ..analysis.search import ReplayMarks
from ..journal import Journal
from .screens.help import HelpScreen
from .input_clock import UserInputClock
from .screens.main import MainScreen
from .themes import DEFAULT_THEME, bundled_themes, stylesheet_paths, theme_variable_defaults

THEME_CYCLE = ("dark", "light", "high-contrast")


class ReplayApp(App[None]):
    """The replay debugger for one journal."""

    TITLE = "replay-tui"
    CSS_PATH = stylesheet_paths()  # type: ignore[assignment]
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("t", "next_theme", "Next theme"),
    ]

    def __init__(
        self,
        journal: Journal,
        *,
        start_seq: int | None = None,
        theme: str = DEFAULT_THEME,
        follow: bool = False,
        replay_agent: str | None = None,
    ) -> None:
        super().__init__()
        self.journal = journal
        self.replay_agent = replay_agent  # entry point `r` replays with (None: as recorded)
        self.start_seq = start_seq
        self.follow = follow
        self.input_clock = UserInputClock()
        for bundled in bundled_themes().values():
            self.register_theme(bundled.theme)
        self.theme = theme
        self._theme_changed(self.current_theme)

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)):
            self.input_clock.touch()  # long scans pause while keys arrive
        await super().on_event(event)

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.journal, start_seq=self.start_seq, follow=self.follow, input_clock=self.input_clock)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    # -- the hook for replay results -----------------------------------------
    def set_replay_marks(self, marks: ReplayMarks | None) -> None:
        """Show what a replay found: divergent, consumed and unused seqs (None clears).

        The replay view (or anything holding replay results) calls this on the UI
        thread; from a worker thread post ``messages.ReplayMarksChanged`` to the
        main screen instead.
        """
        self.main.set_replay_marks(marks)

    # -- themes -----------------------------------------------------------
    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Textual's own themes lack our custom variables: derive them from the theme's colors."""
        return theme_variable_defaults(self.current_theme.to_color_system().generate())

    def _theme_changed(self, theme: Theme) -> None:
        for name in bundled_themes():
            self.set_class(name == theme.name, f"-theme-{name}")

    def action_next_theme(self) -> None:
        current = self.theme if self.theme in THEME_CYCLE else THEME_CYCLE[-1]
        self.theme = THEME_CYCLE[(THEME_CYCLE.index(current) + 1) % len(THEME_CYCLE)]
        self.notify(f"theme: {self.theme}", timeout=2)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, MainScreen):
            return
        main = screen
        entries = (
            ("Go to seq", "Jump to an event by its seq (:)", main.action_goto),
            ("Search", "Find events by words and field filters (/)", main.action_search),
            ("Filter the timeline", "Show only events matching words and filters (&)", main.action_filter),
            ("Clear filter or highlight", "Show every event again (escape)", main.action_cancel_search),
            ("Next search hit", "Repeat the last search forwards (n)", main.action_search_next),
            ("Previous search hit", "Repeat the last search backwards (N)", main.action_search_previous),
            ("Next error", "Jump to the next error or timeout (e)", main.action_next_error),
            ("Previous error", "Jump to the previous error (E)", main.action_previous_error),
            ("Replay", "Strict replay of this journal in a network-isolated child (r; R to choose the agent)", main.action_replay),
            ("Experiment", "model-live or tools-live with a chosen plugin config, then compare (x)", main.action_experiments),
            ("Replay report", "Isolation, environment differences and child output of the last replay (v)", main.action_replay_report),
            ("First divergence", "Jump to where the last replay diverged and explain it (d)", main.action_divergence),
            ("Watch path: next change", "Watch the state path under the cursor; next change (w)", main.action_watch_next),
            ("Watch path: previous change", "Previous change of the watched path (W)", main.action_watch_previous),
            ("First event", "Go to the first event (g)", main.timeline.action_first),
            ("Last event", "Go to the last event (G)", main.timeline.action_last),
            ("Unfold the event", "Show every folded value of the event (F)", main.action_unfold_all),
            ("Follow the journal", "Show new events as the file grows; toggle (f)", main.action_toggle_follow),
            ("Bookmark", "Bookmark the event under the cursor, or remove its bookmark (m)", main.action_toggle_bookmark),
            ("Note", "Add or edit the note on the event under the cursor (a)", main.action_edit_note),
            ("Next bookmark", "Go to the next bookmark (')", main.action_next_bookmark),
            ("Presenter mode", "Step through the bookmarks with their notes and causal chains (p)", main.action_presenter),
            ("Stats", "Events by kind, model usage, tool latency, errors, longest steps (s)", main.action_stats),
            ("Export incident report", "Write the HTML or Markdown incident report next to the journal or to a chosen path", main.action_export_report),
            ("Next theme", "Cycle dark, light and high-contrast (t)", self.action_next_theme),
            ("Help", "Show all keys (?)", self.action_help),
        )
        for title, help_text, callback in entries:
            yield SystemCommand(title, help_text, callback)
