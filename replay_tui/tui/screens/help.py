"""The key reference (`?`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...analysis.search import FIELD_HELP

KEYS = (
    ("Moving", ""),
    ("j / k / ↓ / ↑", "next / previous event"),
    ("g / G / home / end", "first / last event"),
    ("page down / space / page up", "a page down / up"),
    (":", "go to a seq"),
    ("tab / shift+tab", "next / previous pane (timeline, tree, state before, state after, event)"),
    ("Finding", ""),
    ("/", "search: words and field filters (below); all must match"),
    ("n / N", "next / previous search hit (wraps)"),
    ("&", "filter: show only the events that match (escape shows all again)"),
    ("e / E", "next / previous error (tool error, model error, failed run, unreadable line)"),
    ("d", "first divergence of the last replay: jump there and open the divergence view"),
    ("w / W", "watch the state path under the cursor in a state pane; jump to its next / previous change"),
    ("escape", "stop a search or filter; else clear the filter; else the search highlight"),
    ("Replay (the agent runs in a network-isolated child process, never in the app)", ""),
    ("r", "strict replay of this journal: progress, elapsed time; escape cancels"),
    ("R", "replay with a chosen agent entry point, import path and timeout"),
    ("x", "experiment: model-live or tools-live with a chosen harness config, then compare"),
    ("v", "report of the last run: isolation, environment differences, child stderr"),
    ("c", "compare the recorded and the experiment's trajectories"),
    ("Panes", ""),
    ("enter / f", "fold or unfold the value under the cursor (state panes, event)"),
    ("F", "unfold everything in the event"),
    ("enter (tree)", "select that event in the timeline; expanding a node loads its effects"),
    ("Following and walkthroughs", ""),
    ("f", "follow the journal as it grows (sticks to the end until you move up; G sticks again)"),
    ("m / a / '", "bookmark the event / add or edit its note / go to the next bookmark"),
    ("p", "presenter mode: the bookmarks in order, each note large, its causal chain (→ ← escape)"),
    ("s", "stats: kinds, model usage, tool latency, errors, longest steps"),
    ("ctrl+p → Export", "write the incident report (HTML or Markdown) next to the journal or elsewhere"),
    ("Other", ""),
    ("t", "next theme (dark, light, high-contrast); ctrl+p → theme to pick any"),
    ("ctrl+p", "command palette: every action above"),
    ("?", "this help"),
    ("q", "quit"),
)

MARKS = (
    ("✗", "error: a tool or model error, a failed run, an unreadable line"),
    ("◷", "timeout"),
    ("▒", "holds a redacted value"),
    ("≠", "divergent in the last replay"),
    ("· / ✓", "unused / consumed by the last replay"),
    ("★ / ✎", "bookmarked / has a note"),
    ("⚠", "may hold a secret that redaction missed (replay-tui scan lists them)"),
)


def help_text() -> str:
    lines: list[str] = []
    for key, what in KEYS:
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

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "replay-tui keys (escape to close)"
            yield Static(help_text(), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
