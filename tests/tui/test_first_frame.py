"""The first frame (issue 14, start-up): rows are drawn before the index worker starts, the UI
thread's own read is bounded, and opening a journal never loads the importers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.screens.main import FIRST_SCREEN_BYTES, MainScreen
from replay_tui.tui.widgets.timeline import Timeline

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
OTLP_SAMPLE = REPO / "fixtures" / "imports" / "weather.otlp.jsonl"

RESOLVE = """
import json, sys
from replay_tui.tui.launch import resolve_journal
path = resolve_journal(sys.argv[1])
print(json.dumps({"path": str(path), "importers": "replay_tui.importers" in sys.modules}))
"""


def resolve_in_a_fresh_interpreter(argument: Path, cache: Path) -> dict[str, Any]:
    environment = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", RESOLVE, str(argument)], capture_output=True, text=True, timeout=120, env=environment
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_opening_a_journal_does_not_load_the_importers(tmp_path: Path) -> None:
    seen = resolve_in_a_fresh_interpreter(DEMO, tmp_path)
    assert seen == {"path": str(DEMO), "importers": False}


def test_a_foreign_trace_still_goes_through_the_importers(tmp_path: Path) -> None:
    """The same probe sees the importers load when they are needed: an OTLP file opens as its import."""
    seen = resolve_in_a_fresh_interpreter(OTLP_SAMPLE, tmp_path)
    assert seen["importers"] is True
    assert Path(seen["path"]).is_relative_to(tmp_path) and seen["path"].endswith(".jsonl")


class IndexStart:
    """What the screen had when its index worker was started: rows counted, rows drawn."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events_at_start: int | None = None
        self.rows_drawn_at_start: int | None = None
        self.rows_drawn = 0
        start_worker = MainScreen.index_journal
        draw_row = Timeline.render_line

        def index_journal(screen: MainScreen) -> Any:
            if self.events_at_start is None:
                self.events_at_start = screen.timeline.count
                self.rows_drawn_at_start = self.rows_drawn
            return start_worker(screen)

        def render_line(timeline: Timeline, y: int) -> Any:
            if timeline.scroll_offset.y + y < timeline.count:
                self.rows_drawn += 1
            return draw_row(timeline, y)

        monkeypatch.setattr(MainScreen, "index_journal", index_journal)
        monkeypatch.setattr(Timeline, "render_line", render_line)


@pytest.mark.asyncio
async def test_the_first_rows_are_drawn_before_the_index_worker_starts(
    bulk_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = IndexStart(monkeypatch)
    app = make_app(bulk_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert spy.events_at_start is not None and 0 < spy.events_at_start < 2000  # one bounded read, not the file
        assert spy.rows_drawn_at_start  # the first frame showed events before the big batches began
        assert screen.timeline.count == len(screen.journal) > 2000  # the worker read the rest
        assert "run.started" in screen.timeline.render_line(0).text


@pytest.mark.asyncio
async def test_the_ui_thread_reads_at_most_one_bounded_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first line longer than the first-screen read is left to the worker: the UI thread never
    waits for a long line, and the journal still opens whole."""
    path = tmp_path / "long-first-line.jsonl"
    first = {"schema_version": 1, "seq": 1, "kind": "run.started", "payload": {"note": "x" * (4 * FIRST_SCREEN_BYTES)}}
    second = {"schema_version": 1, "seq": 2, "kind": "run.ended", "payload": {"status": "ok"}}
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    spy = IndexStart(monkeypatch)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert spy.events_at_start == 0
        assert len(screen.journal) == screen.timeline.count == 2


@pytest.mark.asyncio
async def test_the_collector_stays_paused_until_the_first_frame_is_drawn() -> None:
    """The launcher pauses the collector through the app's first compose, CSS and layout; the main
    screen's first frame ends the pause (what start-up built frozen, collection on again)."""
    import gc

    from replay_tui.tui.launch import StartUpCollection

    app = make_app(DEMO)
    drawn_rows: list[int] = []
    try:
        pause = StartUpCollection()

        def first_frame_drawn() -> None:
            drawn_rows.append(app.screen.timeline.count if isinstance(app.screen, MainScreen) else -1)
            pause.end()

        app.after_first_frame = first_frame_drawn
        async with app.run_test(size=SIZE) as pilot:
            assert not gc.isenabled() or drawn_rows  # paused until the frame (the pilot may see it drawn)
            await settle(pilot)
            assert gc.isenabled() and len(drawn_rows) == 1 and drawn_rows[0] > 0
    finally:
        gc.enable()
        gc.unfreeze()


def test_start_up_runs_without_collections_and_freezes_what_it_built() -> None:
    """The launcher's imports and the app's construction run with the collector off; then what they
    built is frozen out of the collector's generations and collection is on again (for the app's run)."""
    import gc

    from replay_tui.tui.launch import start_up_collection

    assert gc.isenabled()
    try:
        with start_up_collection():
            assert not gc.isenabled()
            built = [object() for _ in range(10)]
        assert gc.isenabled() and gc.get_freeze_count() >= len(built)
        with pytest.raises(RuntimeError), start_up_collection():
            raise RuntimeError("a failed start-up")
        assert gc.isenabled()  # on again even when start-up fails
    finally:
        gc.unfreeze()


@pytest.mark.asyncio
async def test_the_panes_parts_are_mounted_after_the_first_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state panes, the event detail and the replay strip draw only their frames in the first frame;
    their parts are mounted once it is drawn, and a part asked for earlier is mounted then."""
    from replay_tui.tui.widgets.assembled_later import AssembledLater
    from replay_tui.tui.widgets.json_view import JsonView
    from replay_tui.tui.widgets.panes import StatePane

    parts_at_first_row: list[int] = []
    render_line = Timeline.render_line

    def first_row(timeline: Timeline, y: int) -> Any:
        if not parts_at_first_row:
            parts_at_first_row.extend(len(container.children) for container in timeline.screen.query(AssembledLater))
        return render_line(timeline, y)

    monkeypatch.setattr(Timeline, "render_line", first_row)
    async with make_app(DEMO).run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert parts_at_first_row == [0, 0, 0, 0]
        assert all(container.children for container in screen.query(AssembledLater))
        assert len(screen.query(JsonView)) == 3
        assert screen.query_one("#state-after", StatePane).view.lines  # the state after seq 1 is shown
        lone = StatePane("before")
        await screen.mount(lone)
        assert not lone.children
        assert lone.view is lone.query_one(JsonView)  # asked for before anything assembled it
