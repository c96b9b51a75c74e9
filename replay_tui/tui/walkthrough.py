"""The keys for following a run and walking teammates through an incident.

``WalkthroughScreen`` is the base of the main screen: follow mode (``f``),
bookmarks (``m``, ``'``) and notes (``a``), presenter mode (``p``), the stats
screen (``s``), the secret marks, and exporting the incident report. It uses what
the main screen provides (journal, timeline, status bar, run header, goto) and
keeps its own state: the annotation store, the live analysis and the follower.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker

from ..analysis.annotations import Annotation, AnnotationError, AnnotationStore, annotation_key
from ..analysis.causal import CausalIndex
from ..analysis.state import StateHistory
from ..journal import Event, JournalError
from .follow import Follower
from .input_clock import UserInputClock
from .live_analysis import LiveAnalysis
from .messages import CursorMoved, IndexFinished, JournalGrew, Notice, SecretsScanned
from .screens.presenter import PresenterScreen
from .screens.prompt import PromptScreen
from .screens.stats_screen import StatsScreen
from .widgets.annotation_marks import GLYPHS, SECRET, WalkthroughMarks
from .widgets.bars import RunHeader

if TYPE_CHECKING:
    from ..journal import Journal
    from .widgets.bars import StatusBar
    from .widgets.timeline import Timeline


UNCHECKED = "; later events not checked yet"
# The export child runs niced, like the chain check, so the UI gets the CPU first.
_EXPORT_CHILD = "import os, sys\nos.nice(10)\nfrom replay_tui.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def default_report_path(journal_path: Path) -> Path:
    """``session.jsonl`` → ``session.report.html`` beside it; a shard directory ``run/`` → ``run.report.html``."""
    name = journal_path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return journal_path.with_name(f"{name}.report.html")


class WalkthroughScreen(Screen[None]):
    """Follow, bookmarks, notes, presenter, stats, secret marks, export (see the module doc)."""

    BINDINGS = [
        Binding("f", "toggle_follow", "Follow"),
        Binding("m", "toggle_bookmark", "Bookmark"),
        Binding("a", "edit_note", "Note"),
        Binding("apostrophe", "next_bookmark", "Next bookmark"),
        Binding("p", "presenter", "Present"),
        Binding("s", "stats", "Stats"),
    ]

    # Provided by the main screen.
    journal: Journal
    follow: bool
    indexing: bool
    history: StateHistory
    causal: CausalIndex
    timeline: Timeline
    status: StatusBar
    input_clock: UserInputClock

    def _goto_seq(self, seq: int) -> None:
        raise NotImplementedError

    # -- setup --------------------------------------------------------------
    def on_mount(self) -> None:
        self.live = LiveAnalysis(self.journal)
        self.follower: Follower | None = None
        self._unstuck = False  # the user moved away from the end while following
        # --follow without --seq opens at the end and sticks to it (read before the main screen uses start_seq)
        self._open_at_end = self.follow and getattr(self, "start_seq", None) is None
        self._header_stale = False  # reset: the header shows a run that may be gone
        self.annotations, problem = AnnotationStore.open_lenient(self.journal.path)
        self.marks = WalkthroughMarks(self.annotations, self.live.secret_seqs)
        self.timeline.mark_source = self.marks.of
        if problem is not None:
            self.notify(f"{problem} — starting with no bookmarks; the file is moved aside on the next save", title="bookmarks", severity="warning", timeout=10)

    def on_unmount(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        self.live.cancel()

    @on(IndexFinished)
    def _walkthrough_index_finished(self, message: IndexFinished) -> None:
        self.scan_secrets()
        self.check_annotations()
        if self.follow:
            self.start_following()
            if self._open_at_end:
                self.timeline.action_last()

    # -- secret marks ---------------------------------------------------------
    @work(thread=True, exclusive=True, group="secrets", exit_on_error=False)
    def scan_secrets(self) -> None:
        worker = get_current_worker()
        generation, end = self.live.begin_opening_scan()
        try:
            # The scan steps aside while keys arrive (input_clock is the main screen's).
            seqs = self.live.scan_opening(generation, end, cancelled=self.input_clock.politely(lambda: worker.is_cancelled))
        except (JournalError, OSError):
            return  # the journal was reset under the scan; follow mode starts a new one
        if seqs is not None:
            self.post_message(SecretsScanned(seqs))

    @on(SecretsScanned)
    def _secrets_scanned(self, message: SecretsScanned) -> None:
        if message.seqs:
            self.timeline.invalidate()
            self.status.say(f"secret scan: {len(message.seqs):,} events may hold a secret redaction missed (marked {GLYPHS[SECRET]}; replay-tui scan lists them)")

    @work(thread=True, exclusive=True, group="annotations", exit_on_error=False)
    def check_annotations(self) -> None:
        stale = self.annotations.stale(self.journal) if len(self.annotations) else []
        if stale:
            seqs = ", ".join(str(a.seq) for a in stale[:5]) + (" …" if len(stale) > 5 else "")
            self.post_message(Notice(f"{len(stale)} bookmark(s)/note(s) were made on another journal at this path (seq {seqs}); they are kept but not shown", "warning"))

    # -- follow mode ----------------------------------------------------------
    def start_following(self) -> None:
        self.follower = Follower(self.journal, self.live, self.post_message)
        self.run_worker(self.follower.run(), name="follow", group="follow", exclusive=True, exit_on_error=False)
        self.follow = True
        self._show_event_count()

    def stop_following(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        self.workers.cancel_group(self, "follow")
        self.follow = False
        self._show_event_count()

    def action_toggle_follow(self) -> None:
        if self.indexing:
            self.status.say("still indexing: f starts following once the journal is read")
            return
        if self.follow:
            self.stop_following()
            self.status.say("follow mode off: the view stays put (f follows again)")
        else:
            self.start_following()
            self.timeline.action_last()
            self.status.say("following: new events appear at the end; move up to stop sticking to it, G to stick again (f stops)")

    def _show_event_count(self) -> None:
        text = f"{len(self.journal):,} events"
        if self.journal.pending_tail_bytes():
            text += f" · waiting for the end of a line ({self.journal.pending_tail_bytes()} bytes)"
        self.query_one(RunHeader).set_events(text + (" · following" if self.follow else ""))

    def _at_end(self) -> bool:
        """The cursor is on the last row: the view sticks to the end (moving up unsticks it)."""
        timeline = self.timeline
        return timeline.shown == 0 or timeline.row_of(timeline.cursor) >= timeline.shown - 1

    @on(JournalGrew)
    def _journal_grew(self, message: JournalGrew) -> None:
        timeline = self.timeline
        stick = self._at_end()
        if message.reset:
            self.history = StateHistory(self.journal)
            self.causal = CausalIndex(self.journal)
            if timeline.rows is not None:
                timeline.set_rows(None)
                timeline.border_title = "Timeline"
            self.scan_secrets()
            stick = True
        if message.reset or message.flagged_seqs or message.message:
            timeline.invalidate()
        timeline.set_count(len(self.journal), indexing=False)
        self._show_event_count()
        self._update_header(message)
        said = None
        if stick:
            if self._unstuck:
                self._unstuck = False
                said = "following: back at the end, new events appear as they come"
            timeline.move_to(len(self.journal) - 1)
            # the new virtual height is laid out on the next refresh; scroll once it is
            timeline.call_after_refresh(timeline.scroll_end, animate=False, immediate=True)
        elif message.new_events:
            below = len(self.journal) - 1 - timeline.cursor
            said = f"following: {below:,} newer events below (G goes to the end and sticks to it again)"
            self._unstuck = True
        if message.message:  # rotation, truncation, replacement: said last, so it is what stays
            said = f"follow: {message.message}"
            self.notify(message.message, title="follow", severity="warning" if message.reset else "information", timeout=6)
        if said:
            self.status.say(said)
        if isinstance(self.app.screen, StatsScreen):
            self.app.screen.journal_grew()

    def _update_header(self, message: JournalGrew) -> None:
        """After a reset the run may be another one: its header and chain check start over;
        events appended after a chain check are said to be unchecked."""
        header = self.query_one(RunHeader)
        if message.reset:
            self._header_stale = True
        if self._header_stale and len(self.journal):
            self._header_stale = False
            first = self.journal.try_event(0)
            header.set_first_event(first if isinstance(first, Event) else None, self.journal.path.name)
            header.set_chain("checking", "checking the hash chain…")
            self.check_chain()  # type: ignore[attr-defined]  (the main screen's worker)
        elif self._header_stale:
            header.set_chain("checking", "the journal is empty: waiting for its first event")
        elif message.new_events and header.chain[0] == "verified" and UNCHECKED not in header.chain[1]:
            header.set_chain("verified", f"{header.chain[1]}{UNCHECKED}")

    # -- bookmarks and notes --------------------------------------------------
    def _event_under_cursor(self, action: str) -> Event | None:
        event = self.timeline.cursor_event()
        if isinstance(event, Event):
            return event
        self.status.say(f"nothing to {action}: " + ("no events yet" if event is None else "the line under the cursor is unreadable"))
        return None

    def _saved(self, change: str) -> bool:
        self.timeline.invalidate()
        self.status.say(change)
        return True

    def action_toggle_bookmark(self) -> None:
        event = self._event_under_cursor("bookmark")
        if event is None:
            return
        try:
            on_now = self.annotations.toggle_bookmark(event)
        except AnnotationError as error:
            self.notify(str(error), title="bookmark not saved", severity="error", timeout=10)
            return
        count = len(self.annotations.bookmarks())
        if on_now:
            self._saved(f"{GLYPHS['bookmark']} seq {event.seq} bookmarked ({count} in all: ' cycles, a adds a note, p presents)")
        else:
            self._saved(f"seq {event.seq}: bookmark removed ({count} left)")

    def action_edit_note(self) -> None:
        event = self._event_under_cursor("annotate")
        if event is None:
            return
        current = self.annotations.get(event)

        def chosen(text: str | None) -> None:
            if text is None:
                return
            try:
                self.annotations.set_note(event, text)
            except AnnotationError as error:
                self.notify(str(error), title="note not saved", severity="error", timeout=10)
                return
            self._saved(f"seq {event.seq}: note saved" if text.strip() else f"seq {event.seq}: note removed")

        hint = "enter saves · empty text removes the note · escape cancels · m bookmarks the event for presenter mode"
        self.app.push_screen(PromptScreen(f"Note on seq {event.seq} ({event.kind})", hint, value=current.note if current else "", placeholder="what happened here, for the team"), chosen)

    def _in_this_journal(self, annotation: Annotation) -> bool:
        """The annotated event is at its seq here (not one made on another journal at this path)."""
        position = self.journal.position_of_seq(annotation.seq)
        event = self.journal.try_event(position) if position is not None else None
        return isinstance(event, Event) and annotation_key(event) == annotation.key

    def action_next_bookmark(self) -> None:
        self.annotations.refresh()
        event = self.timeline.cursor_event()
        current = event.seq if isinstance(event, Event) else None
        mark = self.annotations.next_bookmark(current)
        for _ in range(len(self.annotations)):  # skip bookmarks of another journal at this path
            if mark is None or self._in_this_journal(mark):
                break
            mark = self.annotations.next_bookmark(mark.seq)
        if mark is None or not self._in_this_journal(mark):
            self.status.say("no bookmarks yet: m bookmarks the event under the cursor")
            return
        if mark.seq == current:
            self.status.say(f"{GLYPHS['bookmark']} seq {mark.seq} is the only bookmark")
            return
        self._goto_seq(mark.seq)

    @on(CursorMoved)
    def _back_at_the_end(self, message: CursorMoved) -> None:
        """G (or moving down) while following and unstuck: say so now, not at the next append."""
        if self.follow and self._unstuck and self._at_end():
            self._unstuck = False
            self.status.say("following: back at the end, new events appear as they come")

    @on(CursorMoved)
    def _say_annotation(self, message: CursorMoved) -> None:
        event = self.journal.try_event(message.position) if message.position < len(self.journal) else None
        annotation = self.annotations.get(event) if isinstance(event, Event) else None
        if annotation is None:
            return
        text = ""
        if annotation.bookmarked:
            marks = self.annotations.bookmarks()
            index = next((i for i, a in enumerate(marks, 1) if a.key == annotation.key), 0)
            text = f"{GLYPHS['bookmark']} bookmark {index} of {len(marks)}"
        if annotation.note:
            text += (" · " if text else "") + f"{GLYPHS['note']} {annotation.note}"
        self.status.say(text)

    # -- presenter, stats -------------------------------------------------------
    def action_presenter(self) -> None:
        self.annotations.refresh()
        marks = [a for a in self.annotations.bookmarks() if self._in_this_journal(a)]
        if not marks:
            self.status.say("nothing to present: m bookmarks the event under the cursor, a adds a note to it")
            return
        event = self.timeline.cursor_event()
        cursor_seq = event.seq if isinstance(event, Event) else None
        start = next((i for i, a in enumerate(marks) if a.seq == cursor_seq), 0)

        def closed(seq: int | None) -> None:
            if seq is not None:
                self._goto_seq(seq)

        self.app.push_screen(PresenterScreen(self.journal, self.causal, marks, start), closed)

    def action_stats(self) -> None:
        if self.indexing:
            self.status.say("still indexing: stats need the whole journal read (try again in a moment)")
            return
        self.app.push_screen(StatsScreen(self.live, self.journal))

    # -- export -------------------------------------------------------------------
    def action_export_report(self) -> None:
        """Ask where, then write the incident report (HTML, or Markdown for a .md path) in a worker."""
        if self.indexing:
            self.status.say("still indexing: export once the journal is read")
            return

        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            target = Path(text.strip()).expanduser()
            self.export_report(target, "md" if target.suffix.lower() in (".md", ".markdown") else "html")

        default = default_report_path(self.journal.path)
        hint = "where to write it: .html (self-contained, loads nothing) or .md · enter writes · escape cancels"
        self.app.push_screen(PromptScreen("Export the incident report", hint, value=str(default), placeholder=str(default)), chosen)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def export_report(self, target: Path, fmt: str) -> None:
        """`replay-tui export` in a niced child: a big journal's report reads and hashes every
        line, which in a thread would take the interpreter lock from the UI for the duration."""
        worker = get_current_worker()
        started = time.perf_counter()
        self.post_message(Notice(f"export: writing {target}… (the app stays usable)"))
        argv = [sys.executable, "-c", _EXPORT_CHILD, "export", str(self.journal.path), "--format", fmt, "-o", str(target)]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while True:
            try:
                out, err = process.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if worker.is_cancelled:
                    process.kill()
                    process.communicate()
                    return
        if process.returncode != 0:
            why = (err.decode(errors="replace").strip().splitlines() or [f"exit status {process.returncode}"])[-1]
            reason = why.removeprefix("replay-tui export: ").removeprefix("replay-tui: ")
            self.post_message(Notice(f"export failed: {reason}", "error"))
            return
        summary = out.decode(errors="replace").strip().splitlines()[-1] if out.strip() else f"wrote {target}"
        self.post_message(Notice(f"incident report: {summary} in {time.perf_counter() - started:.1f} s", "information"))
        self.app.call_from_thread(self.notify, str(target), title="incident report written", timeout=8)
