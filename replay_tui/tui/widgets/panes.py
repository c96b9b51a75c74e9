"""State panes (before/after) and the event detail, both built on JsonView."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.marks import ReplayMarks, event_marks, line_of
from ...journal import Event, Journal, JournalError
from ...journal.safe_text import safe, safe_line
from .assembled_later import AssembledLater

if TYPE_CHECKING:  # the JSON views are mounted after the first frame, and load then (the state rebuilder too)
    from ...analysis.state import StateAt
    from .json_view import JsonView


class StatePane(AssembledLater):
    """The state on one side of the selected event, changes highlighted."""

    def __init__(self, side: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane")
        self.side = side
        self.border_title = f"State {side}"

    def parts(self) -> Iterable[Widget]:
        from .json_view import JsonView  # mounted after the first frame (AssembledLater), loaded then

        return (Static("", classes="state-status"), JsonView(id=f"{self.side}-json"))

    @property
    def view(self) -> JsonView:
        from .json_view import JsonView  # see parts()

        return self.part(JsonView)

    @property
    def status(self) -> Static:
        return self.part(Static, ".state-status")

    def show_loading(self, seq: int | None) -> None:
        self.border_title = f"State {self.side}" + (f" seq {seq}" if seq is not None else "")
        self.status.update("rebuilding state…")

    def show_state(self, state: StateAt) -> None:
        from .json_view import JsonDocument  # see parts()

        value = state.before if self.side == "before" else state.after
        self.border_title = f"State {self.side} seq {state.seq}"
        status = self.status
        bad = bool(state.mismatches or state.problems)
        status.set_class(bad, "-bad")
        counts = state.diff
        changes = (
            f"changed {len(counts.changed)} · added {len(counts.added)} · removed {len(counts.removed)}"
            if not counts.empty
            else "no change"
        )
        if bad:
            verdict = "✗ " + state.status
        elif state.verified:
            verdict = f"✓ {len(state.checks)} hashes ok"
        else:
            verdict = "no hash to check"
        status.update(Text(safe_line(f"{verdict} · {changes}")))  # the status quotes journal text: never markup
        status.tooltip = Text(safe(state.status, multiline=True))
        self.view.show(
            JsonDocument(value, diff=state.diff, side=self.side, empty_text="(no state recorded yet)"),
            keep_folds=True,
        )


def hash_status(journal: Journal, position: int, event: Event) -> tuple[str, bool]:
    """This event's own hash and its link to the previous event, checked now."""
    from ...journal.hashing import event_hash_of  # with hashlib (11 M instructions): the first frame shows no event

    if not journal.has_hash_chain or event.event_hash is None:
        return "no hash chain (this journal's dialect does not record one)", True
    own = event_hash_of(event.raw, parsed=True) == event.event_hash
    if position == 0:
        linked = event.prev_event_hash is None
    else:
        previous = journal.try_event(position - 1)
        linked = isinstance(previous, Event) and previous.event_hash == event.prev_event_hash
    parts = ["hash matches content" if own else "event_hash does NOT match the content (edited?)"]
    parts.append("linked to previous" if linked else "prev_event_hash does NOT link to the previous event")
    return " · ".join(parts), own and linked


class EventDetail(AssembledLater):
    """The selected event: envelope, hash status, payload as foldable JSON."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane")
        self.border_title = "Event"

    def parts(self) -> Iterable[Widget]:
        from .json_view import JsonView  # mounted after the first frame (AssembledLater), loaded then

        return (JsonView(id="detail-json"),)

    @property
    def view(self) -> JsonView:
        from .json_view import JsonView  # see parts()

        return self.part(JsonView)

    def show_event(
        self, journal: Journal, position: int, event: Event | JournalError, replay: ReplayMarks | None = None
    ) -> None:
        from .json_view import JsonDocument  # see parts()

        if isinstance(event, JournalError):
            self.border_title = "Event (unreadable)"
            self.view.show(
                JsonDocument(
                    None,
                    header=[(str(event), "json--status-bad"), ("The rest of the journal stays readable.", "")],
                    empty_text="",
                )
            )
            return
        self.border_title = f"Event seq {event.seq} · {event.kind}"
        status, ok = hash_status(journal, position, event)
        marks = sorted(event_marks(event, line_of(journal, position, event), replay))
        header = [
            (f"step {event.step_id or '–'} · parent {event.parent_event_id or '– (root)'}", ""),
            (f"id {event.event_id} · {event.recorded_at}", "json--punct"),
            (("✓ " if ok else "✗ ") + status, "json--status-ok" if ok else "json--status-bad"),
            ("payload:", "json--key"),
        ]
        if marks:
            header.insert(
                3,
                ("marks: " + ", ".join(marks), "json--status-bad" if "error" in marks or "divergent" in marks else ""),
            )
        self.view.show(JsonDocument(event.payload, header=header, empty_text="{}"))
