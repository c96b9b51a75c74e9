"""`d`: the first divergence of a replay, explained on one screen.

Expected (the journal) and actual (what the agent produced) side by side with
the differing paths highlighted, the structural diff as text, the recorded state
just before the divergent event, and the causal chain from the root to it in the
tree. Enter on a tree node (or `g`) closes the view on that event in the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static, Tree

from ...analysis.causal import CausalIndex
from ...analysis.diff import ValueDiff, diff_values
from ...analysis.state import StateAt, StateHistory
from ...journal import Journal
from ...journal.safe_text import safe_line
from ...replay.report import DivergenceReport, EventRef, short
from ..widgets.causal_tree import CausalTree, NodeData
from ..widgets.json_view import JsonDocument, JsonView
from ..widgets.panes import StatePane


@dataclass
class DivergenceLoaded(Message):
    position: int | None
    chain: list[int]
    state: StateAt | None


def sorted_keys(value: Any) -> Any:
    """Objects with their keys in order, as the journal (canonical JSON) stores them,
    so expected and actual line up key by key. Iterative: a payload may nest 1,024 levels."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        holder, slot, item = stack.pop()
        if isinstance(item, dict):
            ordered = {key: item[key] for key in sorted(item)}
            holder[slot] = ordered
            stack.extend((ordered, key, child) for key, child in ordered.items())
        elif isinstance(item, list):
            copied = list(item)
            holder[slot] = copied
            stack.extend((copied, index, child) for index, child in enumerate(copied))
    return root[0]


def ref_text(ref: EventRef | None, missing: str) -> str:
    if ref is None:
        return missing
    step = safe_line(ref.step_id, 80) if ref.step_id else "run level"
    return f"seq {ref.seq} {safe_line(ref.kind)} · {step} · {ref.key_name}={short(ref.key)}"


def header_lines(report: DivergenceReport, label: str) -> list[str]:
    return [
        f"{safe_line(label)} diverged at seq={report.seq} · step {safe_line(report.step, 80) if report.step else '(run level)'}"
        f" · differs in: {', '.join(report.mismatched) or 'payload'}",
        f"why: {safe_line(report.reason, 400)}",
        f"state before: {safe_line(report.state_before or 'unknown')}",
    ]


class DivergenceScreen(Screen[int | None]):
    """Dismisses with the timeline position to show (or None)."""

    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("g", "show_in_timeline", "Show in timeline"),
        Binding("tab", "focus_next", "Next pane", show=False),
    ]
    DEFAULT_CSS = """
    DivergenceScreen { layout: vertical; }
    DivergenceScreen #divergence-header { height: auto; background: $panel; color: $error; padding: 0 1; }
    DivergenceScreen #divergence-sides { height: 1fr; }
    DivergenceScreen #divergence-lower { height: 1fr; }
    DivergenceScreen .side { width: 1fr; border: round $border-blurred; border-title-color: $foreground-muted; background: $surface; }
    DivergenceScreen .side:focus-within { border: round $border; }
    DivergenceScreen .side-title { height: auto; color: $foreground-muted; padding: 0 1; }
    DivergenceScreen #divergence-diff { width: 1fr; border: round $border-blurred; border-title-color: $foreground-muted; background: $surface; padding: 0 1; }
    DivergenceScreen #divergence-diff-text { color: $warning; }
    DivergenceScreen #divergence-state { width: 1fr; }
    DivergenceScreen #divergence-tree { width: 1fr; border: round $border-blurred; border-title-color: $foreground-muted; background: $surface; }
    DivergenceScreen #divergence-tree:focus { border: round $border; }
    """

    def __init__(self, journal: Journal, report: DivergenceReport, label: str = "replay") -> None:
        super().__init__()
        self.journal = journal
        self.report = report
        self.label = label
        self.position: int | None = None
        self.payload_diff: ValueDiff = diff_values(report.expected_payload, report.actual_payload)

    def compose(self) -> ComposeResult:
        report = self.report
        yield Static(Content("\n".join(header_lines(report, self.label))), id="divergence-header")
        with Horizontal(id="divergence-sides"):
            for side, ref, missing, payload, change_side in (
                (
                    "expected",
                    report.expected,
                    f"nothing: the journal has no event at seq {report.seq}",
                    report.expected_payload,
                    "before",
                ),
                (
                    "actual",
                    report.actual,
                    "nothing: the agent produced no event here",
                    sorted_keys(report.actual_payload),
                    "after",
                ),
            ):
                with Vertical(classes="side", id=f"divergence-{side}") as box:
                    box.border_title = "Expected (journal)" if side == "expected" else "Actual (agent now)"
                    yield Static(Content(ref_text(ref, missing)), classes="side-title")
                    view = JsonView(id=f"divergence-{side}-json")
                    view.document = JsonDocument(
                        payload, diff=self.payload_diff, side=change_side, empty_text="(nothing)"
                    )
                    yield view
        with Horizontal(id="divergence-lower"):
            with VerticalScroll(id="divergence-diff") as diff_box:
                diff_box.border_title = "Structural diff (expected → actual)"
                yield Static(Content(self._diff_text()), id="divergence-diff-text")
            yield StatePane("before", id="divergence-state")
            tree = CausalTree(self.journal, id="divergence-tree")
            tree.border_title = "Causal chain: root → divergence"
            yield tree
        yield Footer()

    def _diff_text(self) -> str:
        lines = list(self.report.diff_lines)
        if not lines:
            lines = [
                "(the logical payloads are equal: the events differ in "
                + (", ".join(self.report.mismatched) or "their envelope")
                + ")"
            ]
        if self.report.agent_traceback:
            lines += ["", "the agent raised:", *self.report.agent_traceback]
        return "\n".join(safe_line(line, 2_000) for line in lines)

    def on_mount(self) -> None:
        for side in ("expected", "actual"):
            view = self.query_one(f"#divergence-{side}-json", JsonView)
            view.show(view.document)
        self.query_one("#divergence-state", StatePane).show_loading(self.report.seq)
        self.query_one("#divergence-expected-json", JsonView).focus()
        self.load()

    @work(thread=True, exclusive=True, group="divergence", exit_on_error=False)
    def load(self) -> None:
        position = self.journal.position_of_seq(self.report.seq)
        chain: list[int] = []
        state = None
        if position is not None:
            chain = CausalIndex(self.journal).chain_to_root(position)
            state = StateHistory(self.journal).at(position)
        else:  # the journal ended before this seq: the chain the report carries
            chain = [
                p
                for p in (self.journal.position_of_seq(ref.seq) for ref in self.report.causal_chain if ref.seq)
                if p is not None
            ]
        self.post_message(DivergenceLoaded(position, chain, state))

    @on(DivergenceLoaded)
    def _loaded(self, message: DivergenceLoaded) -> None:
        self.position = message.position
        pane = self.query_one("#divergence-state", StatePane)
        if message.state is not None:
            pane.show_state(message.state)
        else:
            before = safe_line(self.report.state_before or "unknown")
            pane.status.update(Content(f"state before: {before} (no recorded event at this seq)"))
        tree = self.query_one(CausalTree)
        if message.chain:
            selected = tree.show_chain(message.chain)
            if selected is not None:  # once the new nodes have lines, so the cursor lands on the divergent event
                self.call_after_refresh(tree.move_cursor, selected)

    @on(Tree.NodeSelected)
    def _node_selected(self, message: Tree.NodeSelected[NodeData]) -> None:
        message.stop()
        data = message.node.data
        if data is not None and data.shows_elided_chain:
            tree = self.query_one(CausalTree)
            tree.show_chain(tree.chain, elide=False)
        elif data is not None and data.position is not None:
            self.dismiss(data.position)

    def action_show_in_timeline(self) -> None:
        self.dismiss(self.position)

    def action_close(self) -> None:
        self.dismiss(None)
