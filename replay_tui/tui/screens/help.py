"""The key reference (`?`), built from the action registry in ``tui/actions.py``."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...analysis.search import FIELD_HELP
from ..actions import help_rows

MARKS = (
    ("✗", "error: a tool or model error, a failed run, an unreadable line"),
    ("◷", "timeout"),
    ("▒", "holds a redacted value"),
    ("≠", "divergent in the last replay"),
    ("· / ✓", "unused / consumed by the last replay"),
    ("★ / ✎", "bookmarked / has a note"),
    ("⚠", "may hold a secret that redaction missed (replay-tui scan lists them)"),
)


def help_text(keymap: Mapping[str, str] | None = None) -> str:
    """The keys (as the user's keymap binds them), the search filters and the timeline marks."""
    lines: list[str] = []
    for key, what in help_rows(keymap or {}):
        lines.append(f"\n{key}" if not what else f"  {key:<30} {what}")
    lines.append("\nSearch filters")
    for name, what in FIELD_HELP.items():
        lines.append(f"  {name + ':':<30} {what}")
    lines.append(f"  {'a.dotted.path:value':<30} any field of the event, e.g. payload.arguments.customer_id:42")
    lines.append('  example: kind:tool.result tool:customer_query   is:error "timed out"')
    lines.append("\nTimeline marks")
    for glyph, what in MARKS:
        lines.append(f"  {glyph:<30} {what}")
    return "\n".join(lines).lstrip("\n")


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen #help-box {
        width: 120; height: 80%; max-width: 100%; max-height: 100%;
        border: round $accent; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, keymap: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.keymap = dict(keymap or {})

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "replay-tui keys (escape to close)"
            yield Static(help_text(self.keymap), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
