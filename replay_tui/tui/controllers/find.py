"""Finding: search (/ n N e E), the filter stack (&, escape), goto (:) and watch (w W).

The rules are plain Python at the top (``FilterStack``, ``parse_seq``, ``quick_position``,
``search_result_text``): what is shown, what a typed seq means, how a hit is worded. The
``FindController`` below them asks for the input, runs the scans in thread workers (they step
aside while keys arrive) and moves the timeline when their messages come back.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from textual.worker import Worker, get_current_worker

from ...jobs import JobCancelled, JobRun
from ...journal import Event, Journal
from ..input_clock import UserInputClock
from ..messages import FilterProgress, JobProgress, JumpTo, Notice, SearchFinished
from . import Handlers, ScreenParts

if TYPE_CHECKING:  # the search and the state rebuilder load when first used, not for the first frame
    from ...analysis.marks import ReplayMarks
    from ...analysis.search import Query
    from ...analysis.state import StateAt
    from ..widgets.panes import StatePane

FILTER_PROGRESS_S = 0.2
SEARCH_PROGRESS_S = 0.25
SCAN_GROUPS = ("search", "filter")  # the workers escape stops


# -- the rules (no Textual) --------------------------------------------------------------------


@cache
def error_query() -> Query:
    """``is:error``: what e and E look for."""
    from ...analysis.search import parse_query  # loaded with the first search, not the first frame

    return parse_query("is:error")


def stacked_query(stack: Sequence[Query]) -> Query:
    """The filters of a stack as one query: an event is shown when it matches every one."""
    from ...analysis.search import Query  # loaded with the first search, not the first frame

    return Query(
        source=" & ".join(query.source for query in stack),
        words=tuple(word for query in stack for word in query.words),
        filters=tuple(f for query in stack for f in query.filters),
    )


class FilterStack:
    """The filters on the timeline: & pushes one, escape pops the last."""

    def __init__(self) -> None:
        self.queries: list[Query] = []
        self.query: Query | None = None  # every stacked filter at once (None: no filter)

    def __len__(self) -> int:
        return len(self.queries)

    def push(self, query: Query, *, fresh: bool) -> Query:
        """Add ``query`` on top (``fresh``: the rows were cleared another way, start a new stack);
        the stack as one query."""
        if fresh:
            self.queries.clear()
        self.queries.append(query)
        self.query = stacked_query(self.queries)
        return self.query

    def pop(self) -> Query:
        """Take the last filter off; the one removed."""
        removed = self.queries.pop()
        self.query = stacked_query(self.queries) if self.queries else None
        return removed


def parse_seq(text: str) -> int | str | None:
    """What `:` was given: a seq, an explanation of why it is not one, or None (nothing typed)."""
    if not text.strip():
        return None
    value = text.strip().lstrip("#")
    if not value.isdigit() or int(value) < 1:
        return f"'{text}' is not a seq: type a whole number like 12"
    return int(value)


def quick_position(journal: Journal, seq: int) -> int | None:
    """O(1) lookup for a healthy journal (seqs 1, 2, 3 … in order); None means ask a worker."""
    count = len(journal)
    if count == 0:
        return None
    first = journal.try_event(0)
    guess = seq - first.seq if isinstance(first, Event) else seq - 1
    if 0 <= guess < count:
        event = journal.try_event(guess)
        if isinstance(event, Event) and event.seq == seq:
            return guess
    return None


def search_result_text(journal: Journal, label: str, position: int, start: int, direction: int) -> str:
    """Where a search landed, and whether it wrapped around or only found where it started."""
    wrapped = (position <= start) if direction > 0 else (position >= start)
    event = journal.try_event(position)
    where = f"seq {event.seq}" if isinstance(event, Event) else f"position {position + 1}"
    note = " (wrapped around)" if wrapped and position != start else " (the only match)" if position == start else ""
    return f"{label}: {where}{note}"


# -- the controller ------------------------------------------------------------------------------


class FindController:
    """The last search, the filter stack and the watched path, and the workers that scan for them."""

    def __init__(
        self,
        parts: ScreenParts,
        input_clock: UserInputClock,
        *,
        state_panes: Sequence[StatePane],
        last_state: Callable[[], StateAt | None],
        replay_marks: Callable[[], ReplayMarks | None],
        cancel_replay: Callable[[], bool],
    ) -> None:
        self.parts = parts
        self.input_clock = input_clock
        self.state_panes = state_panes
        self.last_state = last_state  # the state the panes show: w without a path watches its first change
        self.replay_marks = replay_marks  # is:divergent and friends match the last replay's marks
        self.cancel_replay = cancel_replay  # escape cancels a running replay before anything else
        self.query: Query | None = None  # the last search: n / N repeat it
        self.filters = FilterStack()
        self.watched: str | None = None  # the state path w / W follow
        self._queued_repeats = 0  # n/N pressed while a search was running

    def handlers(self) -> Handlers:
        return {SearchFinished: self.search_finished, FilterProgress: self.filter_progress, JumpTo: self.jump_to}

    def _cancelled(self) -> Callable[[], bool]:
        """For a scan in a worker: stop when cancelled, pause while keys arrive."""
        worker = get_current_worker()
        return self.input_clock.politely(lambda: worker.is_cancelled)

    def _parse_or_warn(self, text: str) -> Query | None:
        """The query typed, or None after telling the user which term is wrong."""
        from ...analysis.search import QueryError, parse_query  # loaded with the first search, not the first frame

        try:
            return parse_query(text)
        except QueryError as error:
            self.parts.status.say(str(error))
            self.parts.app.notify(str(error), severity="warning")
            return None

    # -- jumping ----------------------------------------------------------------
    def jump_to(self, message: JumpTo) -> None:
        timeline = self.parts.timeline
        timeline.move_to(message.position, center=True)
        reason = message.reason
        if timeline.cursor != message.position and timeline.rows is not None:
            reason += " — hidden by the filter, showing the next shown event (escape clears the filter)"
        if reason:
            self.parts.status.say(reason)

    # -- goto ---------------------------------------------------------------
    def goto(self) -> None:
        from ..screens.prompt import PromptScreen  # a dialog: loaded when first opened, not for the first frame

        def chosen(text: str | None) -> None:
            seq = parse_seq(text or "")
            if isinstance(seq, str):
                self.parts.status.say(seq)
            elif seq is not None:
                self.goto_seq(seq)

        journal = self.parts.journal
        last = journal.try_event(len(journal) - 1) if len(journal) else None
        span = f"seq 1 to {last.seq}" if isinstance(last, Event) else "no events yet"
        still = " (still indexing)" if self.parts.indexing() else ""
        self.parts.app.push_screen(
            PromptScreen("Go to seq", f"{span}{still}; enter to go, escape to cancel", placeholder="seq"), chosen
        )

    def goto_seq(self, seq: int) -> None:
        position = quick_position(self.parts.journal, seq)
        if position is not None:
            self.jump_to(JumpTo(position, f"seq {seq}"))
            return
        self.parts.run_thread(partial(self._find_seq, seq), group="search")

    def _find_seq(self, seq: int) -> None:
        position = self.parts.journal.position_of_seq(seq)
        if position is None:
            more = " yet (indexing is still running)" if self.parts.indexing() else ""
            self.parts.post_message(Notice(f"no event with seq {seq}{more}", "warning"))
        else:
            self.parts.post_message(JumpTo(position, f"seq {seq}"))

    # -- search -------------------------------------------------------------
    def search(self) -> None:
        from ...analysis.search import FIELD_HELP  # loaded with the first search, not the first frame
        from ..screens.prompt import PromptScreen  # a dialog: loaded when first opened, not for the first frame

        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            query = self._parse_or_warn(text)
            if query is None:
                return
            self.query = query
            self.parts.timeline.set_query(query)
            self.run_search(query, self.parts.timeline.cursor, 1, f"/{text}")

        hint = (
            "words and filters, all must match: "
            + ", ".join(f"{name}:" for name in FIELD_HELP)
            + " — e.g. kind:tool.result tool:customer_query"
        )
        previous = self.query.source if self.query else ""
        self.parts.app.push_screen(
            PromptScreen("Search", hint, value=previous, placeholder="kind:tool.result timeout"), chosen
        )

    def search_next(self) -> None:
        self._repeat_search(1)

    def search_previous(self) -> None:
        self._repeat_search(-1)

    def next_error(self) -> None:
        self.run_search(error_query(), self.parts.timeline.cursor, 1, "next error")

    def previous_error(self) -> None:
        self.run_search(error_query(), self.parts.timeline.cursor, -1, "previous error")

    def _repeat_search(self, direction: int) -> None:
        if self.query is None:
            self.parts.status.say("no search yet: press / to search")
            return
        if self._running("search"):
            # n n n while a search runs: each press counts, the hits are visited in turn.
            self._queued_repeats += direction
            return
        self.run_search(self.query, self.parts.timeline.cursor, direction, f"/{self.query.source}")

    def _running(self, *groups: str) -> list[Worker[Any]]:
        return [w for w in self.parts.app.workers if w.group in groups and w.is_running]

    def run_search(self, query: Query, start: int, direction: int, label: str) -> None:
        self.parts.run_thread(partial(self._search, query, start, direction, label), group="search")

    def _search(self, query: Query, start: int, direction: int, label: str) -> None:
        from ...jobs.search import SearchJob, SearchRequest  # loaded with the first search

        post = self.parts.post_message
        post(JobProgress("search", f"{label}: searching… (escape cancels)"))

        def progress(done: int, total: int) -> None:
            text = f"{label}: searching… {min(done, total):,} of {total:,} events (escape cancels)"
            post(JobProgress("search", text, done, total))

        journal = self.parts.journal
        request = SearchRequest(journal, query, start, direction, self.replay_marks())
        run = JobRun(SearchJob(), request, progress=progress, every_s=SEARCH_PROGRESS_S, cancelled=self._cancelled())
        try:
            position = run.result()
        except JobCancelled:
            return
        scope = " (index still building: searched the events indexed so far)" if self.parts.indexing() else ""
        if position is None:
            post(SearchFinished(None, f"{label}: no match{scope}"))
        else:
            post(SearchFinished(position, search_result_text(journal, label, position, start, direction) + scope))

    def search_finished(self, message: SearchFinished) -> None:
        if message.position is None:
            self._queued_repeats = 0
            self.parts.status.say(message.reason)
            return
        self.jump_to(JumpTo(message.position, message.reason))
        if self._queued_repeats and self.query is not None:
            direction = 1 if self._queued_repeats > 0 else -1
            self._queued_repeats -= direction
            self.run_search(self.query, self.parts.timeline.cursor, direction, f"/{self.query.source}")

    # -- escape ---------------------------------------------------------------
    def escape(self) -> None:
        """Cancel a running replay, else stop a running search or filter, else clear the filter, else the highlight."""
        if self.cancel_replay():
            return
        timeline, status = self.parts.timeline, self.parts.status
        running = self._running(*SCAN_GROUPS)
        if running:
            self._queued_repeats = 0
            for worker in running:
                worker.cancel()
            status.say(
                "search cancelled"
                if running[0].group == "search"
                else "filter stopped (showing the matches found so far)"
            )
        elif len(self.filters) and timeline.rows is not None:
            removed = self.filters.pop()
            if self.filters.query is not None:  # one filter at a time comes off the stack
                self.run_filter(self.filters.query)
                status.say(f"filter {removed.source} removed; {len(self.filters)} left (escape removes the next)")
            else:
                timeline.set_rows(None)
                timeline.border_title = "Timeline"
                status.say(f"filter {removed.source} removed: every event is shown")
        elif timeline.rows is not None:
            timeline.set_rows(None)
            timeline.border_title = "Timeline"
            status.say("every event is shown")
        elif timeline.search_query is not None:
            timeline.set_query(None)
            status.say("search highlight cleared (n/N still repeat the last search)")

    # -- filter -------------------------------------------------------------
    def filter(self) -> None:
        from ..screens.prompt import PromptScreen  # a dialog: loaded when first opened, not for the first frame

        timeline = self.parts.timeline

        def chosen(text: str | None) -> None:
            if text is None:
                return
            if not text.strip():
                self.escape()
                return
            query = self._parse_or_warn(text)
            if query is None:
                return
            # rows cleared another way (z, a reset) start a new stack
            self.run_filter(self.filters.push(query, fresh=timeline.rows is None))

        on = " & ".join(q.source for q in self.filters.queries) if timeline.rows is not None else ""
        hint = (
            "adds a filter on top of: " + on if on else "show only matching events (same words and filters as /)"
        ) + "; escape in the timeline removes the last filter"
        self.parts.app.push_screen(PromptScreen("Filter the timeline", hint, placeholder="kind:tool is:error"), chosen)

    def run_filter(self, query: Query) -> None:
        self.parts.run_thread(partial(self._filter, query), group="filter")

    def _filter(self, query: Query) -> None:
        from ...jobs.search import FilterJob, FilterRequest  # loaded with the first filter, not for the first frame

        post = self.parts.post_message
        rows: array[int] = array("Q")
        post(FilterProgress(query, rows, 0, complete=False))

        def show(found: array[int], scanned: int) -> None:
            post(FilterProgress(query, found, scanned, complete=False))

        journal = self.parts.journal
        request = FilterRequest(journal, query, self.replay_marks(), on_rows=show, rows=rows)
        run = JobRun(
            FilterJob(),
            request,
            progress=lambda done, _total: show(rows, done),
            every_s=FILTER_PROGRESS_S,
            cancelled=self._cancelled(),
        )
        try:
            run.result()
        except JobCancelled:
            pass  # escape stops a filter: the rows found so far stay shown
        post(FilterProgress(query, rows, len(journal), complete=True))

    def filter_progress(self, message: FilterProgress) -> None:
        if message.query != self.filters.query:
            return
        timeline, status = self.parts.timeline, self.parts.status
        timeline.set_rows(message.rows, complete=message.complete)
        total = len(self.parts.journal)
        found = len(message.rows)
        if message.complete:
            # the counts first: a narrow pane cuts the end of its title, and a stack of filters is long
            timeline.border_title = f"Timeline · {found:,} of {total:,} · filter {message.query.source}"
            status.say(f"filter: {found:,} matching event{'' if found == 1 else 's'} (escape shows all again)")
        else:
            timeline.border_title = f"Timeline · {found:,} so far · filtering {message.query.source}…"
            status.say(f"filtering… {message.scanned:,} of {total:,} events scanned (escape stops)")

    # -- watch ------------------------------------------------------------
    def watch_next(self) -> None:
        self._watch(1)

    def watch_previous(self) -> None:
        self._watch(-1)

    def _watch(self, direction: int) -> None:
        focused = self.parts.app.focused
        pane = next((p for p in self.state_panes if focused is not None and p in focused.ancestors_with_self), None)
        if pane is not None:
            pointer = pane.view.cursor_pointer
            if pointer is None:
                self.parts.status.say("move the cursor onto a value in the state pane, then press w")
                return
            self.watched = pointer
        elif self.watched is None:
            state = self.last_state()
            changed = [path for path in state.diff.paths if path] if state is not None else []
            if not changed:
                self.parts.status.say("nothing watched: tab to a state pane, put the cursor on a path and press w")
                return
            self.watched = changed[0]
        for state_pane in self.state_panes:
            state_pane.view.set_watched(self.watched)
        watched, start = self.watched, self.parts.timeline.cursor
        self.parts.run_thread(partial(self._find_watched_change, watched, start, direction), group="search")

    def _find_watched_change(self, pointer: str, start: int, direction: int) -> None:
        from ...analysis.state import find_change  # the state rebuilder loads when first used, not for the first frame

        worker = get_current_worker()
        post, journal = self.parts.post_message, self.parts.journal
        label = f"watching {pointer or '/ (whole state)'}"
        post(Notice(f"{label}: looking for the {'next' if direction > 0 else 'previous'} change…"))
        position = find_change(journal, pointer, start, direction, cancelled=self._cancelled())
        if worker.is_cancelled:
            return
        if position is None:
            post(Notice(f"{label}: no {'later' if direction > 0 else 'earlier'} change (W/w go the other way)"))
            return
        event = journal.try_event(position)
        seq = event.seq if isinstance(event, Event) else position + 1
        post(JumpTo(position, f"{label}: changed at seq {seq} (w next, W previous)"))
