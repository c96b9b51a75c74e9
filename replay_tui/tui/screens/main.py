"""The debugger screen: timeline and causal tree on top, state and event below.

Attributes flow down (the screen tells widgets what to show); messages flow up
(widgets and workers post the dataclasses in ``messages.py``). Everything that
may read many events runs in a thread worker and reports back by message.
"""

from __future__ import annotations

import time
from array import array

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Tree
from textual.widgets.tree import TreeNode, UnknownNodeID
from textual.worker import get_current_worker

from ...analysis.annotations import AnnotationStore
from ...analysis.causal import CausalIndex
from ...analysis.search import FIELD_HELP, Query, QueryError, ReplayMarks, parse_query
from ...analysis.state import StateAt, StateHistory, find_change
from ...jobs import JobCancelled, JobRun, throttled
from ...journal import Event, Journal, JournalError
from ..actions import bindings_for
from ..chain_check import ChainCheck
from ..controllers import ScreenParts
from ..controllers.bookmarks import BookmarksController
from ..controllers.export import ExportController
from ..controllers.follow import FollowController
from ..controllers.replay import ReplayController
from ..input_clock import UserInputClock
from ..live_analysis import LiveAnalysis
from ..messages import (
    ChainChecked,
    ChainLoaded,
    ChildrenLoaded,
    CursorMoved,
    FilterProgress,
    IndexFinished,
    IndexProgress,
    JobProgress,
    JournalGrew,
    JumpTo,
    Notice,
    ReplayMarksChanged,
    SearchFinished,
    SecretsScanned,
    StateComputed,
)
from ..widgets.annotation_marks import GLYPHS, SECRET, WalkthroughMarks
from ..widgets.bars import RunHeader, StatusBar
from ..widgets.causal_tree import CausalTree, NodeData
from ..widgets.json_view import JsonView
from ..widgets.panes import EventDetail, StatePane
from ..widgets.replay_panel import ReplayFinished, ReplayPanel, ReplayRequest
from ..widgets.timeline import Timeline
from .prompt import PromptScreen

FIRST_SCREEN_BYTES = 64 * 1024  # read on the UI thread before the first frame: more rows than a screen holds
FIRST_BATCH_BYTES = 256 * 1024
BATCH_BYTES = 8 * 1024 * 1024
PROGRESS_EVERY_S = 0.1
FILTER_PROGRESS_S = 0.2
SEARCH_PROGRESS_S = 0.25
SETTLE_S = 0.06  # state and tree follow the cursor once it rests this long
ERROR_QUERY = parse_query("is:error")


def stacked_query(stack: list[Query]) -> Query:
    """The filters of a stack as one query: an event is shown when it matches every one."""
    return Query(
        source=" & ".join(query.source for query in stack),
        words=tuple(word for query in stack for word in query.words),
        filters=tuple(f for query in stack for f in query.filters),
    )


class MainScreen(Screen[None]):
    """The debugger; follow, bookmarks, export and replay are its controllers (see ``controllers/``)."""

    BINDINGS = bindings_for("screen")  # the keys live in tui/actions.py

    # Twin of tui/app.py:ReplayApp.__init__ and analysis/causal.py:CausalIndex.children in shape only
    # (keyword parameter lists; the app hands its options down to this screen)
    def __init__(
        self,
        journal: Journal,
        *,
        start_seq: int | None = None,
        follow: bool = False,
        input_clock: UserInputClock | None = None,
        replay_agent: str | None = None,
    ) -> None:
        super().__init__()
        self.journal = journal
        self.input_clock = input_clock or UserInputClock()
        self.history = StateHistory(journal)
        self.causal = CausalIndex(journal)
        self.start_seq = start_seq
        self.follow_at_start = follow
        # --follow without --seq opens at the end and sticks to it
        self._open_at_end = follow and start_seq is None
        self.replay_agent = replay_agent
        self.replay_marks: ReplayMarks | None = None
        self.query_: Query | None = None
        self.filter_query: Query | None = None  # every stacked filter at once
        self.filter_stack: list[Query] = []  # & pushes, escape pops
        self._queued_repeats = 0  # n/N pressed while a search was running
        self.watched: str | None = None
        self.last_state: StateAt | None = None
        self.indexing = True
        self.index_seconds: float | None = None
        self._settle: Timer | None = None
        self._have_first = False
        self._chain_check = ChainCheck(journal.path)
        self.live = LiveAnalysis(journal)

    # -- layout -----------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        with Horizontal(id="top"):
            timeline = Timeline(self.journal, id="timeline", classes="pane")  # (add_class would restyle it once more)
            timeline.border_title = "Timeline"
            yield timeline
            tree = CausalTree(self.journal, id="tree")
            tree.add_class("pane")
            tree.border_title = "Causes → effects"
            yield tree
        with Horizontal(id="bottom"):
            yield StatePane("before", id="state-before")
            yield StatePane("after", id="state-after")
            yield EventDetail(id="detail")
        yield ReplayPanel(id="replay-panel")
        yield StatusBar(id="status")

    # Twins: timeline, causal_tree, status, header and replay_panel are one query_one each (shape only)
    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def causal_tree(self) -> CausalTree:
        return self.query_one(CausalTree)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def header(self) -> RunHeader:
        return self.query_one(RunHeader)

    @property
    def replay_panel(self) -> ReplayPanel:
        return self.query_one(ReplayPanel)

    def on_mount(self) -> None:
        parts = ScreenParts(
            self.app,
            self.journal,
            self.timeline,
            self.status,
            self.header,
            self._goto_seq,
            self.post_message,
            self.run_worker,
        )
        self.follower = FollowController(
            parts, self.live, check_chain=self.check_chain, journal_reset=self._journal_reset
        )
        self.bookmarks = BookmarksController(parts)
        self.exporter = ExportController(parts)
        self.replays = ReplayController(
            parts, self.replay_panel, replay_agent=self.replay_agent, set_replay_marks=self.set_replay_marks
        )
        self.marks = WalkthroughMarks(self.bookmarks.annotations, self.live.secret_seqs)
        self.timeline.mark_source = self.marks.of
        self.header.set_first_event(None, self.journal.path.name)
        self.header.set_chain("checking", "checked after indexing…")
        self.timeline.focus()
        self._index_first_screen()
        # The first frame is drawn before the index worker starts: it would hold the GIL meanwhile.
        self.call_after_refresh(self.index_journal)

    @property
    def annotations(self) -> AnnotationStore:
        return self.bookmarks.annotations

    @property
    def follow(self) -> bool:
        return self.follower.following

    # -- indexing ---------------------------------------------------------
    def _index_first_screen(self) -> None:
        """One bounded read (at most FIRST_SCREEN_BYTES, a single pass) on the UI thread, so the
        first frame already shows rows; the index worker reads the rest and reports any fault."""
        passes = iter((False,))
        try:
            self.journal.index(cancelled=lambda: next(passes, True), batch_bytes=FIRST_SCREEN_BYTES)
        except (JournalError, OSError):
            return
        if len(self.journal):
            self._index_progress(IndexProgress(len(self.journal), self.journal.line_count, self.journal.known_bytes()))

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def index_journal(self) -> None:
        worker = get_current_worker()
        started = time.perf_counter()

        def report(done: int, total: int) -> None:
            self.post_message(IndexProgress(len(self.journal), done, total))

        progress = throttled(report, PROGRESS_EVERY_S)
        try:
            # One small batch first so the first screen does not wait for a big one.
            self.journal.index(
                cancelled=lambda: worker.is_cancelled or len(self.journal) > 0, batch_bytes=FIRST_BATCH_BYTES
            )
            self.post_message(IndexProgress(len(self.journal), self.journal.line_count, self.journal.known_bytes()))
            self.journal.index(progress=progress, cancelled=lambda: worker.is_cancelled, batch_bytes=BATCH_BYTES)
        except JournalError as error:
            self.post_message(IndexFinished(len(self.journal), time.perf_counter() - started, str(error)))
            return
        self.post_message(IndexFinished(len(self.journal), time.perf_counter() - started))

    @on(IndexProgress)
    def _index_progress(self, message: IndexProgress) -> None:
        self.timeline.set_count(message.events, indexing=True)
        share = f" {100 * message.done_bytes / message.total_bytes:.0f}%" if message.total_bytes else ""
        self.query_one(RunHeader).set_events(f"indexing{share} · {message.events:,} events so far")
        self._on_events_available()

    @on(IndexFinished)
    def _index_finished(self, message: IndexFinished) -> None:
        self.indexing = False
        self.index_seconds = message.seconds
        self.timeline.set_count(message.events, indexing=False)
        text = f"{message.events:,} events"
        if self.journal.pending_tail_bytes():
            text += f" · last line incomplete ({self.journal.pending_tail_bytes()} bytes held back)"
        self.query_one(RunHeader).set_events(text + (" · following" if self.follow_at_start else ""))
        if message.error:
            self.notify(message.error, title="journal", severity="error", timeout=10)
            self.status.say(message.error)
        self._on_events_available()
        self.query_one(RunHeader).set_chain("checking", "checking the hash chain…")
        self.check_chain()  # after indexing, so the two never fight over the disk and CPU
        if self.start_seq is not None:
            self._goto_seq(self.start_seq)
            self.start_seq = None
        self.scan_secrets()
        self.bookmarks.check_stale()
        if self.follow_at_start:
            self.follower.start()
            if self._open_at_end:
                self.timeline.action_last()

    def _on_events_available(self) -> None:
        if self._have_first or len(self.journal) == 0:
            return
        self._have_first = True
        first = self.journal.try_event(0)
        self.query_one(RunHeader).set_first_event(first if isinstance(first, Event) else None, self.journal.path.name)
        if self.start_seq is not None:
            position = self._quick_position(self.start_seq)
            if position is not None:
                self.timeline.move_to(position, center=True)
                self.start_seq = None
        self.post_message(CursorMoved(self.timeline.cursor))

    # -- chain check ------------------------------------------------------
    @work(thread=True, exclusive=True, group="verify", exit_on_error=False)
    def check_chain(self) -> None:
        result = self._chain_check.run()
        if result.status != "cancelled":
            self.post_message(ChainChecked(result.status, result.summary, result.fault_seq))

    def on_unmount(self) -> None:
        self._chain_check.cancel()
        self.follower.stop()
        self.live.cancel()

    @on(ChainChecked)
    def _chain_checked(self, message: ChainChecked) -> None:
        self.query_one(RunHeader).set_chain(message.status, message.summary)

    # -- following the cursor ----------------------------------------------
    @on(CursorMoved)
    def _cursor_moved(self, message: CursorMoved) -> None:
        # Only the timeline answers a key at once; the panes follow when the cursor
        # rests, so holding j never queues up detail, state and tree work.
        if self._settle is not None:
            self._settle.stop()
        self._settle = self.set_timer(SETTLE_S, lambda: self._cursor_settled(message.position))

    @on(CursorMoved)
    def _cursor_moved_for_walkthrough(self, message: CursorMoved) -> None:
        self.follower.cursor_moved()
        self.bookmarks.say_annotation(message.position)

    def _cursor_settled(self, position: int) -> None:
        if position != self.timeline.cursor or position >= len(self.journal):
            return
        event = self.journal.try_event(position)
        self.query_one(EventDetail).show_event(self.journal, position, event, self.replay_marks)
        seq = event.seq if isinstance(event, Event) else None
        for pane in self.query(StatePane):
            pane.show_loading(seq)
        self.load_state(position)
        self.load_chain(position, self.causal_tree.generation)

    @work(thread=True, exclusive=True, group="state", exit_on_error=False)
    def load_state(self, position: int) -> None:
        worker = get_current_worker()
        state = self.history.at(position, cancelled=lambda: worker.is_cancelled)
        if state is not None and not worker.is_cancelled:
            self.post_message(StateComputed(position, state))

    @on(StateComputed)
    def _state_computed(self, message: StateComputed) -> None:
        if message.position != self.timeline.cursor:
            return
        self.last_state = message.state
        for pane in self.query(StatePane):
            pane.show_state(message.state)
            pane.view.set_watched(self.watched)

    @work(thread=True, exclusive=True, group="chain", exit_on_error=False)
    def load_chain(self, position: int, generation: int) -> None:
        chain = self.causal.chain_to_root(position)
        if not get_current_worker().is_cancelled:
            self.post_message(ChainLoaded(position, chain, generation))

    @on(ChainLoaded)
    def _chain_loaded(self, message: ChainLoaded) -> None:
        if message.position != self.timeline.cursor:
            return
        # A new chain makes every pending children scan stale: stop them now, so
        # holding a key does not leave a pile of scans competing with the UI.
        self.workers.cancel_group(self, "children")
        selected = self.causal_tree.show_chain(message.chain)
        if selected is not None:
            self._load_children_of(selected)
            selected.expand()

    def _load_children_of(self, node: TreeNode[NodeData], start: int | None = None) -> None:
        data = node.data
        if data is None or data.position is None or data.loading or (data.loaded and start is None):
            return
        data.loading = True
        self.load_children(node.id, data.position, start, self.causal_tree.generation)

    @work(thread=True, group="children", exit_on_error=False)
    def load_children(self, node_id: int, position: int, start: int | None, generation: int) -> None:
        worker = get_current_worker()

        def stale() -> bool:
            return worker.is_cancelled or generation != self.causal_tree.generation

        # Scans for children pause while keys arrive, like search does.
        page = self.causal.children(position, start=start, cancelled=self.input_clock.politely(stale))
        if not stale():
            self.post_message(ChildrenLoaded(node_id, page, generation))

    @on(ChildrenLoaded)
    def _children_loaded(self, message: ChildrenLoaded) -> None:
        if message.generation != self.causal_tree.generation:
            return
        try:
            node = self.causal_tree.get_node_by_id(message.node_id)  # type: ignore[arg-type]
        except UnknownNodeID:  # the node was removed meanwhile (tree rebuilt)
            return
        self.causal_tree.apply_children(node, message.page)

    @on(Tree.NodeExpanded)
    def _node_expanded(self, message: Tree.NodeExpanded[NodeData]) -> None:
        self._load_children_of(message.node)

    @on(Tree.NodeSelected)
    def _node_selected(self, message: Tree.NodeSelected[NodeData]) -> None:
        data = message.node.data
        if data is None:
            return
        if data.shows_elided_chain:
            selected = self.causal_tree.show_chain(self.causal_tree.chain, elide=False)
            if selected is not None:
                self._load_children_of(selected)
                selected.expand()
        elif data.next_start is not None and message.node.parent is not None:
            parent = message.node.parent
            if parent.data is not None:
                parent.data.loaded = False
                self._load_children_of(parent, start=data.next_start)
        elif data.position is not None and data.position != self.timeline.cursor:
            self.timeline.move_to(data.position, center=True)

    @on(JumpTo)
    def _jump_to(self, message: JumpTo) -> None:
        self.timeline.move_to(message.position, center=True)
        reason = message.reason
        if self.timeline.cursor != message.position and self.timeline.rows is not None:
            reason += " — hidden by the filter, showing the next shown event (escape clears the filter)"
        if reason:
            self.status.say(reason)

    @on(JobProgress)
    def _job_progress(self, message: JobProgress) -> None:
        self.status.say(message.text)

    @on(Notice)
    def _notice(self, message: Notice) -> None:
        self.status.say(message.text)
        if message.severity != "information":
            self.notify(message.text, severity=message.severity)  # type: ignore[arg-type]

    # -- goto ---------------------------------------------------------------
    def action_goto(self) -> None:
        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            value = text.strip().lstrip("#")
            if not value.isdigit() or int(value) < 1:
                self.status.say(f"'{text}' is not a seq: type a whole number like 12")
                return
            self._goto_seq(int(value))

        last = self.journal.try_event(len(self.journal) - 1) if len(self.journal) else None
        span = f"seq 1 to {last.seq}" if isinstance(last, Event) else "no events yet"
        self.app.push_screen(
            PromptScreen(
                "Go to seq",
                f"{span}{' (still indexing)' if self.indexing else ''}; enter to go, escape to cancel",
                placeholder="seq",
            ),
            chosen,
        )

    def _quick_position(self, seq: int) -> int | None:
        """O(1) lookup for a healthy journal; None means ask the worker."""
        count = len(self.journal)
        if count == 0:
            return None
        first = self.journal.try_event(0)
        guess = seq - first.seq if isinstance(first, Event) else seq - 1
        if 0 <= guess < count:
            event = self.journal.try_event(guess)
            if isinstance(event, Event) and event.seq == seq:
                return guess
        return None

    def _goto_seq(self, seq: int) -> None:
        position = self._quick_position(seq)
        if position is not None:
            self._jump_to(JumpTo(position, f"seq {seq}"))
            return
        self.find_seq(seq)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def find_seq(self, seq: int) -> None:
        position = self.journal.position_of_seq(seq)
        if position is None:
            more = " yet (indexing is still running)" if self.indexing else ""
            self.post_message(Notice(f"no event with seq {seq}{more}", "warning"))
        else:
            self.post_message(JumpTo(position, f"seq {seq}"))

    # -- search -------------------------------------------------------------
    def _parse_or_warn(self, text: str) -> Query | None:
        """The query typed, or None after telling the user which term is wrong."""
        try:
            return parse_query(text)
        except QueryError as error:
            self.status.say(str(error))
            self.notify(str(error), severity="warning")
            return None

    def action_search(self) -> None:
        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            query = self._parse_or_warn(text)
            if query is None:
                return
            self.query_ = query
            self.timeline.set_query(query)
            self.run_search(query, self.timeline.cursor, 1, f"/{text}")

        hint = (
            "words and filters, all must match: "
            + ", ".join(f"{name}:" for name in FIELD_HELP)
            + " — e.g. kind:tool.result tool:customer_query"
        )
        previous = self.query_.source if self.query_ else ""
        self.app.push_screen(
            PromptScreen("Search", hint, value=previous, placeholder="kind:tool.result timeout"), chosen
        )

    def action_search_next(self) -> None:
        self._repeat_search(1)

    def action_search_previous(self) -> None:
        self._repeat_search(-1)

    def _repeat_search(self, direction: int) -> None:
        if self.query_ is None:
            self.status.say("no search yet: press / to search")
            return
        if any(w.group == "search" and w.is_running for w in self.workers):
            # n n n while a search runs: each press counts, the hits are visited in turn.
            self._queued_repeats += direction
            return
        self.run_search(self.query_, self.timeline.cursor, direction, f"/{self.query_.source}")

    @on(SearchFinished)
    def _search_finished(self, message: SearchFinished) -> None:
        if message.position is None:
            self._queued_repeats = 0
            self.status.say(message.reason)
            return
        self._jump_to(JumpTo(message.position, message.reason))
        if self._queued_repeats and self.query_ is not None:
            direction = 1 if self._queued_repeats > 0 else -1
            self._queued_repeats -= direction
            self.run_search(self.query_, self.timeline.cursor, direction, f"/{self.query_.source}")

    def action_next_error(self) -> None:
        self.run_search(ERROR_QUERY, self.timeline.cursor, 1, "next error")

    def action_previous_error(self) -> None:
        self.run_search(ERROR_QUERY, self.timeline.cursor, -1, "previous error")

    def action_cancel_search(self) -> None:
        """Escape: cancel a running replay, else stop a running search or filter, else clear the filter, else the highlight."""
        if self.replays.cancel():
            return
        running = [w for w in self.workers if w.group in ("search", "filter") and w.is_running]
        if running:
            self._queued_repeats = 0
            for worker in running:
                worker.cancel()
            self.status.say(
                "search cancelled"
                if running[0].group == "search"
                else "filter stopped (showing the matches found so far)"
            )
        elif self.filter_stack and self.timeline.rows is not None:
            removed = self.filter_stack.pop()
            if self.filter_stack:  # one filter at a time comes off the stack
                self.filter_query = stacked_query(self.filter_stack)
                self.run_filter(self.filter_query)
                self.status.say(
                    f"filter {removed.source} removed; {len(self.filter_stack)} left (escape removes the next)"
                )
            else:
                self.filter_query = None
                self.timeline.set_rows(None)
                self.timeline.border_title = "Timeline"
                self.status.say(f"filter {removed.source} removed: every event is shown")
        elif self.timeline.rows is not None:
            self.timeline.set_rows(None)
            self.timeline.border_title = "Timeline"
            self.status.say("every event is shown")
        elif self.timeline.search_query is not None:
            self.timeline.set_query(None)
            self.status.say("search highlight cleared (n/N still repeat the last search)")

    # -- filter -------------------------------------------------------------
    def action_filter(self) -> None:
        def chosen(text: str | None) -> None:
            if text is None:
                return
            if not text.strip():
                self.action_cancel_search()
                return
            query = self._parse_or_warn(text)
            if query is None:
                return
            if self.timeline.rows is None:
                self.filter_stack.clear()  # the rows were cleared another way (z, a reset): start a new stack
            self.filter_stack.append(query)
            self.filter_query = stacked_query(self.filter_stack)
            self.run_filter(self.filter_query)

        on = " & ".join(q.source for q in self.filter_stack) if self.timeline.rows is not None else ""
        hint = (
            "adds a filter on top of: " + on if on else "show only matching events (same words and filters as /)"
        ) + "; escape in the timeline removes the last filter"
        self.app.push_screen(PromptScreen("Filter the timeline", hint, placeholder="kind:tool is:error"), chosen)

    @work(thread=True, exclusive=True, group="filter", exit_on_error=False)
    def run_filter(self, query: Query) -> None:
        from ...jobs.search import FilterJob, FilterRequest  # loaded with the first filter, not for the first frame

        worker = get_current_worker()
        rows: array[int] = array("Q")
        self.post_message(FilterProgress(query, rows, 0, complete=False))

        def show(found: array[int], scanned: int) -> None:
            self.post_message(FilterProgress(query, found, scanned, complete=False))

        request = FilterRequest(self.journal, query, self.replay_marks, on_rows=show, rows=rows)
        run = JobRun(
            FilterJob(),
            request,
            progress=lambda done, _total: show(rows, done),
            every_s=FILTER_PROGRESS_S,
            cancelled=self.input_clock.politely(lambda: worker.is_cancelled),
        )
        try:
            run.result()
        except JobCancelled:
            pass  # escape stops a filter: the rows found so far stay shown
        self.post_message(FilterProgress(query, rows, len(self.journal), complete=True))

    @on(FilterProgress)
    def _filter_progress(self, message: FilterProgress) -> None:
        if message.query != self.filter_query:
            return
        self.timeline.set_rows(message.rows, complete=message.complete)
        total = len(self.journal)
        if message.complete:
            # the counts first: a narrow pane cuts the end of its title, and a stack of filters is long
            self.timeline.border_title = (
                f"Timeline · {len(message.rows):,} of {total:,} · filter {message.query.source}"
            )
            self.status.say(
                f"filter: {len(message.rows):,} matching event{'' if len(message.rows) == 1 else 's'} (escape shows all again)"
            )
        else:
            self.timeline.border_title = f"Timeline · {len(message.rows):,} so far · filtering {message.query.source}…"
            self.status.say(f"filtering… {message.scanned:,} of {total:,} events scanned (escape stops)")

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: Query, start: int, direction: int, label: str) -> None:
        from ...jobs.search import SearchJob, SearchRequest  # loaded with the first search

        worker = get_current_worker()
        self.post_message(JobProgress("search", f"{label}: searching… (escape cancels)"))

        def progress(done: int, total: int) -> None:
            text = f"{label}: searching… {min(done, total):,} of {total:,} events (escape cancels)"
            self.post_message(JobProgress("search", text, done, total))

        request = SearchRequest(self.journal, query, start, direction, self.replay_marks)
        run = JobRun(
            SearchJob(),
            request,
            progress=progress,
            every_s=SEARCH_PROGRESS_S,
            cancelled=self.input_clock.politely(lambda: worker.is_cancelled),
        )
        try:
            position = run.result()
        except JobCancelled:
            return
        scope = " (index still building: searched the events indexed so far)" if self.indexing else ""
        if position is None:
            self.post_message(SearchFinished(None, f"{label}: no match{scope}"))
            return
        wrapped = (position <= start) if direction > 0 else (position >= start)
        event = self.journal.try_event(position)
        where = f"seq {event.seq}" if isinstance(event, Event) else f"position {position + 1}"
        note = (
            " (wrapped around)" if wrapped and position != start else " (the only match)" if position == start else ""
        )
        self.post_message(SearchFinished(position, f"{label}: {where}{note}{scope}"))

    # -- divergence (fed by replay results) ------------------------------------
    def set_replay_marks(self, marks: ReplayMarks | None) -> None:
        self.replay_marks = marks
        self.timeline.set_replay_marks(marks)
        if marks is not None:
            first = marks.first_divergence
            self.status.say(f"{marks.label}: " + (f"first divergence at seq {first}" if first else "no divergence"))

    @on(ReplayMarksChanged)
    def _replay_marks_changed(self, message: ReplayMarksChanged) -> None:
        self.set_replay_marks(message.marks)

    def action_divergence(self) -> None:
        if self.replays.open_divergence_view():
            return
        if self.replay_marks is None:
            self.status.say("no replay results yet: run a replay of this journal to find its first divergence")
            return
        first = self.replay_marks.first_divergence
        if first is None:
            self.status.say(f"{self.replay_marks.label}: no divergence — replay matched the recording")
            return
        self._goto_seq(first)
        self.status.say(f"first divergence: seq {first}")

    # -- watch ------------------------------------------------------------
    def action_watch_next(self) -> None:
        self._watch(1)

    def action_watch_previous(self) -> None:
        self._watch(-1)

    def _watch(self, direction: int) -> None:
        focused = self.focused
        pane = next(
            (p for p in self.query(StatePane) if focused is not None and p in focused.ancestors_with_self), None
        )
        if pane is not None:
            pointer = pane.view.cursor_pointer
            if pointer is None:
                self.status.say("move the cursor onto a value in the state pane, then press w")
                return
            self.watched = pointer
        elif self.watched is None:
            changed = [path for path in self.last_state.diff.paths if path] if self.last_state is not None else []
            if not changed:
                self.status.say("nothing watched: tab to a state pane, put the cursor on a path and press w")
                return
            self.watched = changed[0]
        for state_pane in self.query(StatePane):
            state_pane.view.set_watched(self.watched)
        self.find_watched_change(self.watched, self.timeline.cursor, direction)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def find_watched_change(self, pointer: str, start: int, direction: int) -> None:
        worker = get_current_worker()
        label = f"watching {pointer or '/ (whole state)'}"
        self.post_message(Notice(f"{label}: looking for the {'next' if direction > 0 else 'previous'} change…"))
        position = find_change(
            self.journal, pointer, start, direction, cancelled=self.input_clock.politely(lambda: worker.is_cancelled)
        )
        if worker.is_cancelled:
            return
        if position is None:
            self.post_message(
                Notice(f"{label}: no {'later' if direction > 0 else 'earlier'} change (W/w go the other way)")
            )
            return
        event = self.journal.try_event(position)
        seq = event.seq if isinstance(event, Event) else position + 1
        self.post_message(JumpTo(position, f"{label}: changed at seq {seq} (w next, W previous)"))

    def action_unfold_all(self) -> None:
        self.query_one(EventDetail).view.unfold_all()

    # -- secret marks -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="secrets", exit_on_error=False)
    def scan_secrets(self) -> None:
        worker = get_current_worker()
        generation, end = self.live.begin_opening_scan()
        try:
            # The scan steps aside while keys arrive.
            cancelled = self.input_clock.politely(lambda: worker.is_cancelled)
            seqs = self.live.scan_opening(generation, end, cancelled=cancelled)
        except (JournalError, OSError):
            return  # the journal was reset under the scan; follow mode starts a new one
        if seqs is not None:
            self.post_message(SecretsScanned(seqs))

    @on(SecretsScanned)
    def _secrets_scanned(self, message: SecretsScanned) -> None:
        if message.seqs:
            self.timeline.invalidate()
            self.status.say(
                f"secret scan: {len(message.seqs):,} events may hold a secret redaction missed "
                f"(marked {GLYPHS[SECRET]}; replay-tui scan lists them)"
            )

    @on(JsonView.SecretsShown)
    def _secrets_shown(self, message: JsonView.SecretsShown) -> None:
        """u unmasked (or masked again) a flagged value: the header says whether any is shown."""
        self.header.set_secrets_shown(any(view.secrets_shown for view in self.query(JsonView)))

    # -- follow ---------------------------------------------------------------------
    def _journal_reset(self) -> None:
        """The journal was truncated or replaced: what was derived from it starts over."""
        self.history = StateHistory(self.journal)
        self.causal = CausalIndex(self.journal)
        self.scan_secrets()

    @on(JournalGrew)
    def _journal_grew(self, message: JournalGrew) -> None:
        self.follower.journal_grew(message)

    def action_toggle_follow(self) -> None:
        self.follower.toggle(indexing=self.indexing)

    # -- bookmarks, presenter, stats, export --------------------------------------------
    def action_toggle_bookmark(self) -> None:
        self.bookmarks.toggle_bookmark()

    def action_edit_note(self) -> None:
        self.bookmarks.edit_note()

    def action_next_bookmark(self) -> None:
        self.bookmarks.next_bookmark()

    def action_presenter(self) -> None:
        self.bookmarks.present(self.causal)

    def action_stats(self) -> None:
        if self.indexing:
            self.status.say("still indexing: stats need the whole journal read (try again in a moment)")
            return
        from .stats_screen import StatsScreen  # stats load when first shown, not for the first frame

        self.app.push_screen(StatsScreen(self.live, self.journal))

    def action_export_report(self) -> None:
        """Ask where, then write the incident report (HTML, or Markdown for a .md path)."""
        self.exporter.ask(indexing=self.indexing)

    # -- replay -----------------------------------------------------------------------
    def start_replay(self, request: ReplayRequest) -> None:
        self.replays.start(request)

    def action_replay(self) -> None:
        self.replays.replay()

    def action_replay_dialog(self) -> None:
        self.replays.replay_dialog()

    def action_experiments(self) -> None:
        self.replays.experiments()

    def action_replay_report(self) -> None:
        self.replays.report()

    def action_compare_last(self) -> None:
        self.replays.compare_last()

    @on(ReplayFinished)
    def _replay_finished(self, message: ReplayFinished) -> None:
        self.replays.finished(message)
