"""The debugger screen: timeline and causal tree on top, state and event below.

Attributes flow down (the screen tells widgets what to show); messages flow up
(widgets and workers post the messages in ``messages.py``). Everything that
may read many events runs in a thread worker and reports back by message.

The screen itself indexes the journal, checks its chain, and makes the panes follow the cursor.
Replay, finding (search, filter, goto, watch), follow, bookmarks and export are its controllers
(``controllers/``): the action table sends their keys to them and the screen hands each the
messages it registered, so no screen method forwards either.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode, UnknownNodeID
from textual.worker import get_current_worker

from ...analysis.annotations import AnnotationStore
from ...jobs import throttled
from ...journal import Event, Journal, JournalError
from ..actions import action_target, bindings_for
from ..chain_check import ChainCheck
from ..controllers import ScreenParts, routes
from ..controllers.bookmarks import BookmarksController
from ..controllers.export import ExportController
from ..controllers.find import FindController, quick_position
from ..controllers.follow import FollowController
from ..controllers.replay import ReplayController
from ..input_clock import UserInputClock
from ..live_analysis import LiveAnalysis
from ..messages import (
    ChainChecked,
    ChainLoaded,
    ChildrenLoaded,
    ControllerMessage,
    CursorMoved,
    FirstFrameDrawn,
    IndexFinished,
    IndexProgress,
    JobProgress,
    Notice,
    SecretsScanned,
    StateComputed,
)
from ..widgets.annotation_marks import GLYPHS, SECRET, WalkthroughMarks
from ..widgets.assembled_later import AssembledLater
from ..widgets.bars import RunHeader, StatusBar
from ..widgets.causal_tree_frame import CausalTreeFrame
from ..widgets.panes import EventDetail, StatePane
from ..widgets.replay_panel import ReplayPanel
from ..widgets.timeline import Timeline

if TYPE_CHECKING:  # the state rebuilder, the causal index and tree, and the JSON views load after the first frame
    from ...analysis.causal import CausalIndex
    from ...analysis.state import StateAt, StateHistory
    from ..widgets.causal_tree import CausalTree, NodeData
    from ..widgets.json_view import JsonView

FIRST_SCREEN_BYTES = 64 * 1024  # read on the UI thread before the first frame: more rows than a screen holds
FIRST_BATCH_BYTES = 256 * 1024
BATCH_BYTES = 8 * 1024 * 1024
PROGRESS_EVERY_S = 0.1
SETTLE_S = 0.06  # state and tree follow the cursor once it rests this long
CAUSAL_TREE_TITLE = "Causes → effects"


class OpenOptions(NamedTuple):
    """How the app was asked to open a journal (the command line's options the screen acts on). A NamedTuple,
    as ``controllers.ScreenParts`` is."""

    start_seq: int | None = None
    follow: bool = False
    replay_agent: str | None = None  # the entry point `r` replays with (None: as recorded)


class MainScreen(Screen[None]):
    """The debugger; replay, finding, follow, bookmarks and export are its controllers (see ``controllers/``)."""

    BINDINGS = bindings_for("screen")  # the keys live in tui/actions.py
    #: Textual's auto focus restyles the widget it focuses twice; ``_auto_focus`` does the same with one restyle.
    AUTO_FOCUS = ""

    def __init__(self, journal: Journal, options: OpenOptions, *, input_clock: UserInputClock | None = None) -> None:
        super().__init__()
        self.journal = journal
        self.input_clock = input_clock or UserInputClock()
        self._history: StateHistory | None = None  # made by ``history`` for the first state shown
        self._causal: CausalIndex | None = None  # made by ``causal`` for the first chain shown
        self._tree_in_place = False  # the causal tree has taken its frame's place (``causal_tree``)
        self.start_seq = options.start_seq
        self.follow_at_start = options.follow
        # --follow without --seq opens at the end and sticks to it
        self._open_at_end = options.follow and options.start_seq is None
        self.replay_agent = options.replay_agent
        self.last_state: StateAt | None = None
        self.indexing = True
        self.index_seconds: float | None = None
        self._settle: Timer | None = None
        self._have_first = False
        self._resumed = False
        self._chain_check = ChainCheck(journal.path)
        self.live = LiveAnalysis(journal)

    @property
    def history(self) -> StateHistory:
        """The state before and after the selected event is rebuilt by this (the first frame shows none)."""
        if self._history is None:
            from ...analysis.state import StateHistory  # with the first state shown, not for the first frame

            self._history = StateHistory(self.journal)
        return self._history

    @property
    def causal(self) -> CausalIndex:
        """Causes and effects of an event: the causal tree's source (the first frame shows no chain)."""
        if self._causal is None:
            from ...analysis.causal import CausalIndex  # with the first chain shown, not for the first frame

            self._causal = CausalIndex(self.journal)
        return self._causal

    # -- layout -----------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        with Horizontal(id="top"):
            timeline = Timeline(self.journal, id="timeline", classes="pane")  # (add_class would restyle it once more)
            timeline.border_title = "Timeline"
            yield timeline
            frame = CausalTreeFrame(classes="pane")  # the causal tree takes its place after the first frame
            frame.border_title = CAUSAL_TREE_TITLE
            yield frame
        with Horizontal(id="bottom"):
            yield StatePane("before", id="state-before")
            yield StatePane("after", id="state-after")
            yield EventDetail(id="detail")
        yield ReplayPanel(id="replay-panel")
        yield StatusBar(id="status")

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def causal_tree(self) -> CausalTree:
        self._put_the_tree_in_place()
        from ..widgets.causal_tree import CausalTree  # loaded by _put_the_tree_in_place

        return self.query_one(CausalTree)

    def _put_the_tree_in_place(self) -> None:
        """The causal tree where its frame was drawn in the first frame (once; ``widgets/causal_tree_frame.py``)."""
        if self._tree_in_place:
            return
        self._tree_in_place = True
        from ..widgets.causal_tree import CausalTree  # mounted after the first frame, loaded then

        frame = self.query_one(CausalTreeFrame)
        tree = CausalTree(self.journal, id="tree")
        tree.add_class("pane")
        tree.border_title = CAUSAL_TREE_TITLE
        frame.display = False  # out of the layout at once: the frame and the tree are never drawn side by side
        self.query_one("#top").mount(tree, before=frame)
        frame.remove()

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
            app=self.app,
            journal=self.journal,
            timeline=self.timeline,
            status=self.status,
            header=self.header,
            goto_seq=lambda seq: self.finder.goto_seq(seq),
            indexing=lambda: self.indexing,
            post_message=self.post_message,
            run_worker=self.run_worker,
        )
        self.follower = FollowController(
            parts, self.live, check_chain=self.check_chain, journal_reset=self._journal_reset
        )
        self.bookmarks = BookmarksController(parts, causal=lambda: self.causal)
        self.exporter = ExportController(parts)
        self.replays = ReplayController(parts, self.replay_panel, replay_agent=self.replay_agent)
        self.finder = FindController(
            parts,
            self.input_clock,
            state_panes=list(self.query(StatePane)),
            last_state=lambda: self.last_state,
            replay_marks=lambda: self.replays.marks,
            cancel_replay=self.replays.cancel,
        )
        self._routes = routes(self.replays, self.finder, self.follower)
        self.marks = WalkthroughMarks(self.bookmarks.annotations, self.live.secret_seqs)
        self.timeline.mark_source = self.marks.of
        self.header.set_first_event(None, self.journal.path.name)
        self.header.set_chain("checking", "checked after indexing…")
        self._focus(self.timeline)
        self._index_first_screen()
        # The first frame is drawn before the index worker starts: it would hold the GIL meanwhile.
        self.call_after_refresh(self.post_message, FirstFrameDrawn())
        self.call_after_refresh(self.index_journal)

    def _focus(self, widget: Widget) -> None:
        """Focus ``widget``, restyling it once: Textual's auto focus sets ``has_focus``, whose watcher restyles
        the widget, and then ``set_focus`` restyles it again (the timeline's 15 component classes each time).
        With ``has_focus`` set without its watcher, the one restyle of ``set_focus`` sees the focus."""
        if widget.focusable:
            widget.set_reactive(Widget.has_focus, True)
        self.set_focus(widget)

    def _auto_focus(self) -> None:
        """What Textual's auto focus does on a resume (``AUTO_FOCUS`` is off here): when nothing has the focus,
        the first focusable widget the app's selector matches takes it."""
        if self.focused is not None or not self.app.app_focus or not self.app.AUTO_FOCUS:
            return
        for widget in self.query(self.app.AUTO_FOCUS):
            if widget.focusable:
                self._focus(widget)
                return

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """The first resume comes right after the mount, which styled every node: Textual's restyle of the whole
        screen then changes nothing (it was a tenth of the first frame). Every later resume restyles."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False
        else:
            self._auto_focus()

    @on(FirstFrameDrawn)
    def _assemble_the_rest(self) -> None:
        """The causal tree and the panes' parts, left out of the first frame (``widgets/causal_tree_frame.py``,
        ``widgets/assembled_later.py``)."""
        self._put_the_tree_in_place()
        for container in self.query(AssembledLater):
            container.assemble()

    @property
    def controllers(self) -> dict[str, object]:
        """The controllers by the names the action table's targets use (``"replays.replay"``)."""
        return {
            "replays": self.replays,
            "finder": self.finder,
            "follower": self.follower,
            "bookmarks": self.bookmarks,
            "exporter": self.exporter,
        }

    def action_controller(self, target: str) -> None:
        """Every key the action table gives to a controller: ``target`` is ``"controller.method"``."""
        action_target(target, self.controllers)()

    @on(ControllerMessage)
    def _to_controller(self, message: ControllerMessage) -> None:
        """A controller's worker reported: the controller that registered the message handles it."""
        self._routes[type(message)](message)

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
            self.finder.goto_seq(self.start_seq)
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
            position = quick_position(self.journal, self.start_seq)
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
        self.replays.stop()
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
        self.query_one(EventDetail).show_event(self.journal, position, event, self.replays.marks)
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
            pane.view.set_watched(self.finder.watched)

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

    @on(JobProgress)
    def _job_progress(self, message: JobProgress) -> None:
        self.status.say(message.text)

    @on(Notice)
    def _notice(self, message: Notice) -> None:
        self.status.say(message.text)
        if message.severity != "information":
            self.notify(message.text, severity=message.severity)  # type: ignore[arg-type]

    # -- the event pane -------------------------------------------------------
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

    def on_json_view_secrets_shown(self, message: JsonView.SecretsShown) -> None:
        """u unmasked (or masked again) a flagged value: the header says whether any is shown. (Named, not
        ``@on(JsonView.SecretsShown)``: the JSON views load after the first frame.)"""
        from ..widgets.json_view import JsonView  # loaded by the view that posted this

        self.header.set_secrets_shown(any(view.secrets_shown for view in self.query(JsonView)))

    # -- follow ---------------------------------------------------------------------
    def _journal_reset(self) -> None:
        """The journal was truncated or replaced: what was derived from it starts over."""
        self._history = None
        self._causal = None
        self.scan_secrets()

    # -- stats ---------------------------------------------------------------------------
    def action_stats(self) -> None:
        if self.indexing:
            self.status.say("still indexing: stats need the whole journal read (try again in a moment)")
            return
        from .stats_screen import StatsScreen  # stats load when first shown, not for the first frame

        self.app.push_screen(StatsScreen(self.live, self.journal))
