"""A one-line modal prompt (goto seq, search); dismisses with the text or None."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    PromptScreen #prompt-box {
        width: 70; height: auto; max-width: 100%; max-height: 100%;
        border: round $accent; background: $panel; padding: 0 1;
    }
    PromptScreen #prompt-hint { color: $foreground-muted; }
    """

    def __init__(self, title: str, hint: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.hint = hint
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box") as box:
            box.border_title = self.title_text
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static(self.hint, id="prompt-hint", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
