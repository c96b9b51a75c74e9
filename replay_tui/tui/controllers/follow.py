"""Follow mode (``f``): the follower worker, sticking to the end, and the run header while the
journal grows, is rotated, truncated or replaced."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...journal import Event
from ..live_analysis import LiveAnalysis
from ..messages import JournalGrew
from . import Handlers, ScreenParts

if TYPE_CHECKING:
    from ..follow import Follower

UNCHECKED = "; later events not checked yet"


class FollowController:
    """Whether the screen follows its journal, and what a growing journal does to the view."""

    def __init__(
        self,
        parts: ScreenParts,
        live: LiveAnalysis,
        *,
        check_chain: Callable[[], object],
        journal_reset: Callable[[], None],
    ) -> None:
        self.parts = parts
        self.live = live
        self.check_chain = check_chain  # starts the chain check over (a reset may be another run)
        self.journal_reset = journal_reset  # the screen drops what it derived from the old journal
        self.follower: Follower | None = None
        self.following = False
        self.unstuck = False  # the user moved away from the end while following
        self._header_stale = False  # after a reset the header shows a run that may be gone

    def handlers(self) -> Handlers:
        return {JournalGrew: self.journal_grew}

    def start(self) -> None:
        from ..follow import Follower  # watchfiles only once following starts

        self.follower = Follower(self.parts.journal, self.live, self.parts.post_message)
        self.parts.run_worker(self.follower.run(), name="follow", group="follow", exclusive=True, exit_on_error=False)
        self.following = True
        self.show_event_count()

    def stop(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        for worker in self.parts.app.workers:
            if worker.group == "follow":
                worker.cancel()
        self.following = False
        self.show_event_count()

    def toggle(self) -> None:
        status = self.parts.status
        if self.parts.indexing():
            status.say("still indexing: f starts following once the journal is read")
        elif self.following:
            self.stop()
            status.say("follow mode off: the view stays put (f follows again)")
        else:
            self.start()
            self.parts.timeline.action_last()
            status.say(
                "following: new events appear at the end; move up to stop sticking to it, G to stick again (f stops)"
            )

    def show_event_count(self) -> None:
        journal = self.parts.journal
        text = f"{len(journal):,} events"
        if journal.pending_tail_bytes():
            text += f" · waiting for the end of a line ({journal.pending_tail_bytes()} bytes)"
        self.parts.header.set_events(text + (" · following" if self.following else ""))

    def at_end(self) -> bool:
        """The cursor is on the last row: the view sticks to the end (moving up unsticks it)."""
        timeline = self.parts.timeline
        return timeline.shown == 0 or timeline.row_of(timeline.cursor) >= timeline.shown - 1

    def cursor_moved(self) -> None:
        """G (or moving down) while following and unstuck: say so now, not at the next append."""
        if self.following and self.unstuck and self.at_end():
            self.unstuck = False
            self.parts.status.say("following: back at the end, new events appear as they come")

    def journal_grew(self, message: JournalGrew) -> None:
        timeline, journal = self.parts.timeline, self.parts.journal
        stick = self.at_end()
        if message.reset:
            self.journal_reset()
            if timeline.rows is not None:
                timeline.set_rows(None)
                timeline.border_title = "Timeline"
            stick = True
        if message.reset or message.flagged_seqs or message.message:
            timeline.invalidate()
        timeline.set_count(len(journal), indexing=False)
        self.show_event_count()
        self._update_header(message)
        said = None
        if stick:
            if self.unstuck:
                self.unstuck = False
                said = "following: back at the end, new events appear as they come"
            timeline.move_to(len(journal) - 1)
            # the new virtual height is laid out on the next refresh; scroll once it is
            timeline.call_after_refresh(timeline.scroll_end, animate=False, immediate=True)
        elif message.new_events:
            below = len(journal) - 1 - timeline.cursor
            said = f"following: {below:,} newer events below (G goes to the end and sticks to it again)"
            self.unstuck = True
        if message.message:  # rotation, truncation, replacement: said last, so it is what stays
            said = f"follow: {message.message}"
            self.parts.app.notify(
                message.message, title="follow", severity="warning" if message.reset else "information", timeout=6
            )
        if said:
            self.parts.status.say(said)
        journal_grew = getattr(self.parts.app.screen, "journal_grew", None)  # the stats screen, when open
        if callable(journal_grew):
            journal_grew()

    def _update_header(self, message: JournalGrew) -> None:
        """After a reset the run may be another one: its header and chain check start over;
        events appended after a chain check are said to be unchecked."""
        header, journal = self.parts.header, self.parts.journal
        if message.reset:
            self._header_stale = True
        if self._header_stale and len(journal):
            self._header_stale = False
            first = journal.try_event(0)
            header.set_first_event(first if isinstance(first, Event) else None, journal.path.name)
            header.set_chain("checking", "checking the hash chain…")
            self.check_chain()
        elif self._header_stale:
            header.set_chain("checking", "the journal is empty: waiting for its first event")
        elif message.new_events and header.chain[0] == "verified" and UNCHECKED not in header.chain[1]:
            header.set_chain("verified", f"{header.chain[1]}{UNCHECKED}")
