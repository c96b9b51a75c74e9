"""`R`: choose how to replay (agent entry point, extra import path, timeout), then run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from ...jobs.replay import ReplayRequest


def parse_timeout(text: str) -> float | None:
    """Seconds as a positive number, or None when the text is not one."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


class ReplayDialog(ModalScreen[ReplayRequest | None]):
    """Dismisses with the request, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ReplayDialog { align: center middle; background: $background 60%; }
    ReplayDialog #replay-dialog {
        width: 90; height: auto; max-width: 100%; max-height: 100%;
        border: round $accent; background: $panel; padding: 0 1;
    }
    ReplayDialog Label { margin-top: 1; color: $foreground-muted; }
    ReplayDialog #replay-dialog Label { width: 100%; }
    ReplayDialog Input { background: $surface; }
    ReplayDialog #replay-dialog-error { color: $error; height: auto; }
    """

    def __init__(self, request: ReplayRequest, recorded_agent: str | None) -> None:
        super().__init__()
        self.request = request
        self.recorded_agent = recorded_agent

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-dialog") as box:
            box.border_title = "Strict replay in a network-isolated child"
            yield Label("Agent entry point, module:attr (empty: the one the journal recorded)")
            yield Input(
                value=self.request.agent or "",
                placeholder=self.recorded_agent or "package.module:agent",
                id="replay-agent",
                compact=True,
            )
            yield Label("Extra import path for the agent (optional; the current directory is always on it)")
            yield Input(
                value=" ".join(self.request.agent_path), placeholder="src", id="replay-agent-path", compact=True
            )
            yield Label("Timeout in seconds")
            yield Input(value=f"{self.request.timeout_s:g}", id="replay-timeout", compact=True)
            yield Static("", id="replay-dialog-error", markup=False)
            yield Static("enter runs the replay · tab moves between fields · escape cancels", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        agent = self.query_one("#replay-agent", Input).value.strip()
        timeout = parse_timeout(self.query_one("#replay-timeout", Input).value)
        error = self.query_one("#replay-dialog-error", Static)
        if agent and (":" not in agent or agent.startswith(":") or agent.endswith(":")):
            error.update(f"'{agent}' is not an entry point: write module:attr, e.g. fixtures.agents.crm:agent")
            return
        if timeout is None:
            error.update("the timeout is a number of seconds above 0, e.g. 600")
            return
        paths = self.query_one("#replay-agent-path", Input).value.split()
        self.dismiss(ReplayRequest(agent=agent or None, agent_path=paths, timeout_s=timeout))

    def action_cancel(self) -> None:
        self.dismiss(None)
