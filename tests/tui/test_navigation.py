"""Every navigation path of the app, driven through the keyboard with Pilot."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from textual import events
from tui_helpers import SIZE, make_app, run_from_palette, seq_at_cursor, settle

from replay_tui.tui.screens.help import HelpScreen
from replay_tui.tui.screens.prompt import PromptScreen
from replay_tui.tui.widgets.json_view import JsonView
from replay_tui.tui.widgets.panes import EventDetail, StatePane

pytestmark = pytest.mark.asyncio


async def test_cursor_keys_move_through_the_timeline(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert seq_at_cursor(screen) == 1
        await pilot.press("j", "j", "down")
        assert seq_at_cursor(screen) == 4
        await pilot.press("k", "up")
        assert seq_at_cursor(screen) == 2
        await pilot.press("G")
        assert seq_at_cursor(screen) == len(screen.journal)
        await pilot.press("g")
        assert seq_at_cursor(screen) == 1
        await pilot.press("end")
        assert seq_at_cursor(screen) == len(screen.journal)
        await pilot.press("home", "up")
        assert seq_at_cursor(screen) == 1


async def test_page_keys_move_a_screenful(bulk_path: Path) -> None:
    app = make_app(bulk_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        page = screen.timeline.page
        await pilot.press("pagedown")
        assert screen.timeline.cursor == page
        assert screen.timeline.scroll_offset.y > 0
        await pilot.press("space")
        assert screen.timeline.cursor == 2 * page
        await pilot.press("pageup")
        assert screen.timeline.cursor == page


async def test_detail_and_state_follow_the_cursor(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        transition = next(p for p in range(len(screen.journal)) if screen.journal.event(p).kind == "state.transition")
        for _ in range(transition):
            await pilot.press("j")
        await settle(pilot)
        detail = screen.query_one(EventDetail)
        assert f"seq {transition + 1}" in str(detail.border_title)
        assert screen.last_state is not None and screen.last_state.diff.changed == ("/customer",)
        after = screen.query_one("#state-after", StatePane).view
        changed = [line for line in after.lines if line.change == "changed"]
        assert changed and changed[0].pointer == "/customer"
        status = str(screen.query_one("#state-after .state-status").render())
        assert "hashes ok" in status and "changed 1" in status


async def test_goto_seq(bulk_path: Path) -> None:
    app = make_app(bulk_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("colon")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"2500", "enter")
        await settle(pilot)
        assert seq_at_cursor(screen) == 2500
        top = screen.timeline.scroll_offset.y
        assert top <= 2499 < top + screen.timeline.scrollable_content_region.height
        await pilot.press("colon", *"abc", "enter")
        assert "not a seq" in str(screen.status.render())
        await pilot.press("colon", *"999999", "enter")
        await settle(pilot)
        assert "no event with seq 999999" in str(screen.status.render())
        assert seq_at_cursor(screen) == 2500
        await pilot.press("colon", "escape")
        assert app.screen is screen


async def test_search_with_filters_and_n_N(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("slash")
        await pilot.press(*"kind:tool.call", "enter")
        await settle(pilot)
        calls = [e.seq for e in (screen.journal.event(p) for p in range(len(screen.journal))) if e.kind == "tool.call"]
        assert seq_at_cursor(screen) == calls[0]
        await pilot.press("n")
        await settle(pilot)
        assert seq_at_cursor(screen) == calls[1]
        await pilot.press("N", "N")
        await settle(pilot)
        assert seq_at_cursor(screen) == calls[-1]  # wrapped around backwards
        assert "wrapped" in str(screen.status.render())
        await pilot.press("slash", "ctrl+u", *"kind:tool.result tool:customer_query", "enter")
        await settle(pilot)
        event = screen.journal.event(screen.timeline.cursor)
        assert event.kind == "tool.result" and event.payload["tool"] == "customer_query"
        await pilot.press("slash", "ctrl+u", *"nosuchfield:1", "enter")
        assert "unknown filter" in str(screen.status.render())


async def test_n_without_a_search_explains(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("n")
        assert "press /" in str(screen.status.render())


async def test_next_and_previous_error(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        first = screen.journal.event(screen.timeline.cursor)
        assert first.kind == "tool.result" and first.payload["error"]["timeout"] is True
        await pilot.press("e")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).kind == "run.ended"
        await pilot.press("E")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).seq == first.seq


async def test_divergence_needs_replay_results(incident_path: Path) -> None:
    """d before any replay says how to get results (test_replay.py drives d after a real one)."""
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("d")
        assert "no replay results yet" in str(screen.status.render())


async def test_clicking_a_row_selects_it(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.click("#timeline", offset=(10, 4))  # row 4 of the widget = 3rd event row under the border
        await settle(pilot)
        assert seq_at_cursor(screen) == 4


async def test_watch_a_state_path_and_jump_between_its_changes(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("G")
        await settle(pilot)
        view = screen.query_one("#state-after", StatePane).view
        view.focus()
        await pilot.pause()
        tier = next(number for number, line in enumerate(view.lines) if line.pointer == "/customer/tier")
        for _ in range(tier):
            await pilot.press("j")
        assert view.cursor_pointer == "/customer/tier"
        await pilot.press("W")  # previous change of /customer/tier: the refund step made it silver
        await settle(pilot)
        changed = screen.journal.event(screen.timeline.cursor)
        assert changed.kind == "state.transition" and any(
            op["path"] == "/customer/tier" for op in changed.payload["patch"]
        )
        assert screen.finder.watched == "/customer/tier"
        screen.timeline.focus()
        await pilot.press("W")  # from the timeline, W/w keep following the watched path
        await settle(pilot)
        earlier = screen.journal.event(screen.timeline.cursor)
        assert earlier.seq < changed.seq and earlier.payload["patch"][0]["path"] == "/customer"
        await pilot.press("w")
        await settle(pilot)
        assert seq_at_cursor(screen) == changed.seq
        await pilot.press("w")
        await settle(pilot)
        assert "no later change" in str(screen.status.render())


async def test_watch_without_a_path_explains(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("w")
        assert "nothing watched" in str(screen.status.render())


async def test_tree_enter_selects_an_event_and_expands_lazily(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        result = next(p for p in range(len(screen.journal)) if screen.journal.event(p).kind == "tool.result")
        screen.timeline.move_to(result)
        await settle(pilot)
        tree = screen.causal_tree
        labels = [str(node.label) for node in tree.root.children]
        assert labels and "input.received" in labels[0]
        tree.focus()
        tree.move_cursor(tree.root.children[0])
        await pilot.press("enter")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).kind == "input.received"
        root = tree.root.children[0]
        assert any("model.request" in str(child.label) for child in root.children)  # effects loaded


async def test_tab_cycles_panes_and_folding(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    path = tmp_path / "big.jsonl"
    with JournalWriter(path, run_id="big", fsync="never") as writer:
        writer.append("input.received", {"role": "user", "content": "x" * 5000, "context": {"rows": list(range(200))}})
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        detail = screen.query_one(EventDetail).view
        assert any("enter to unfold" in line.parts[-1][0] for line in detail.lines)
        folded_lines = len(detail.lines)
        focused = []
        for _ in range(5):
            await pilot.press("tab")
            focused.append(app.focused)
        assert detail in focused and screen.causal_tree in focused
        detail.focus()
        await pilot.press("F")
        assert len(detail.lines) > folded_lines + 150
        assert not any("enter to unfold" in line.parts[-1][0] for line in detail.lines)


async def test_help_theme_palette_and_quit(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert app.screen is screen
        assert app.theme == "dark"
        await pilot.press("t")
        assert app.theme == "light" and app.has_class("-theme-light")
        await pilot.press("t")
        assert app.theme == "high-contrast" and app.has_class("-theme-high-contrast")
        titles = {command.title for command in app.get_system_commands(screen)}
        for title in (
            "Go to seq",
            "Search",
            "Next search hit",
            "Next error",
            "First divergence",
            "Watch path: next change",
            "Help",
        ):
            assert title in titles
        await run_from_palette(pilot, "next error")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).kind == "tool.result"
        await pilot.press("q")
    assert app.return_code == 0


async def test_start_seq_and_theme_options(bulk_path: Path) -> None:
    app = make_app(bulk_path, start_seq=1234, theme="light")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert seq_at_cursor(screen) == 1234
        assert app.theme == "light"


async def test_unreadable_line_is_shown_and_the_rest_stays_viewable(incident_path: Path) -> None:
    lines = incident_path.read_bytes().splitlines()
    lines[4] = b'{"broken": '
    incident_path.write_bytes(b"\n".join(lines) + b"\n")
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("j", "j", "j", "j")
        await settle(pilot)
        detail = screen.query_one(EventDetail)
        assert "unreadable" in str(detail.border_title)
        header = detail.view.lines[0].parts[0][0]
        assert "line 5" in header and "not valid JSON" in header
        await pilot.press("j")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).seq == 6
        for _ in range(200):  # the chain check runs in a child process after indexing
            if screen.query_one("RunHeader").chain[0] != "checking":
                break
            await pilot.pause(0.05)
        status, summary = screen.query_one("RunHeader").chain
        assert status == "broken" and "malformed line at line 5" in summary


async def test_follow_picks_up_appended_events(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    path = tmp_path / "live.jsonl"
    writer = JournalWriter(path, run_id="live", fsync="never")
    writer.append("input.received", {"role": "user", "content": "first"})
    app = make_app(path, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert screen.timeline.count == 1
        for number in range(3):
            writer.append("clock.read", {"source": "time.time", "value": number})
        for _ in range(60):
            await pilot.pause(0.05)
            if screen.timeline.count == 4:
                break
        assert screen.timeline.count == 4
        assert seq_at_cursor(screen) == 4  # the cursor was at the end, so it follows
    writer.close()


async def test_json_view_cursor_and_fold_keys(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        view = screen.query_one(EventDetail).query_one(JsonView)
        view.focus()
        await pilot.press("G")
        assert view.cursor == len(view.lines) - 1
        await pilot.press("g", "j")
        assert view.cursor == 1


async def test_search_hits_are_highlighted_and_escape_clears_them(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("slash", *"kind:tool.call", "enter")
        await settle(pilot)
        assert screen.timeline.search_query is not None and screen.timeline.search_query.source == "kind:tool.call"
        await pilot.press("escape")
        assert screen.timeline.search_query is None
        assert "highlight cleared" in str(screen.status.render())


async def until(condition: Any, what: str, timeout_s: float = 60) -> None:
    """Poll without waiting for the app to be idle (a running search keeps it busy)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_a_long_search_can_be_cancelled(tmp_path: Path) -> None:
    from tui_helpers import write_bulk

    path = write_bulk(tmp_path / "long.jsonl", 60_000)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("slash", *"is:unused")  # no replay results: every line is parsed, none matches
        # Pilot.press waits until the process is idle, i.e. until a search would end,
        # so enter and escape are sent the way a terminal sends them: without waiting.
        app.post_message(events.Key("enter", None))
        await until(lambda: any(w.group == "search" and w.is_running for w in app.workers), "the search to start")
        app.post_message(events.Key("escape", None))
        await until(lambda: not any(w.group == "search" and w.is_running for w in app.workers), "the search to stop")
        assert "search cancelled" in str(screen.status.render())
        assert screen.timeline.cursor == 0


async def test_a_type_data_journal_opens_without_a_hash_chain(tmp_path: Path) -> None:
    import orjson

    lines = [
        {
            "type": "session_started",
            "event_id": "e1",
            "session_id": "s-1",
            "seq": 1,
            "ts": "2026-01-01T00:00:00Z",
            "data": {"agent": "other:agent"},
        },
        {
            "type": "user_message",
            "event_id": "e2",
            "session_id": "s-1",
            "seq": 2,
            "ts": "2026-01-01T00:00:01Z",
            "data": {"content": "hi"},
        },
        {
            "type": "tool_invocation",
            "event_id": "e3",
            "session_id": "s-1",
            "seq": 3,
            "ts": "2026-01-01T00:00:02Z",
            "data": {
                "tool": "lookup",
                "input": {"q": 1},
                "error": {"type": "TimeoutError", "message": "slow", "timeout": True},
            },
        },
        {
            "type": "session_ended",
            "event_id": "e4",
            "session_id": "s-1",
            "seq": 4,
            "ts": "2026-01-01T00:00:03Z",
            "data": {"status": "ok"},
        },
    ]
    path = tmp_path / "other.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert screen.timeline.count == 5  # the tool invocation is a call and a result
        await pilot.press("e")
        await settle(pilot)
        event = screen.journal.event(screen.timeline.cursor)
        assert event.kind == "tool.result" and event.payload["error"]["timeout"] is True
        detail = screen.query_one(EventDetail).view
        assert any("no hash chain" in line.parts[0][0] for line in detail.lines[:4])
        for _ in range(200):
            if screen.query_one("RunHeader").chain[0] != "checking":
                break
            await pilot.pause(0.05)
        assert screen.query_one("RunHeader").chain[0] == "absent"


async def test_a_directory_of_rotated_shards_is_one_journal(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    directory = tmp_path / "shards"
    with JournalWriter(directory, run_id="rot", fsync="never", rotate_bytes=4096) as writer:
        for number in range(120):
            writer.append("clock.read", {"source": "time.time", "value": number})
    assert len(list(directory.glob("*.jsonl.gz"))) >= 2
    app = make_app(directory)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert screen.timeline.count == 120
        await pilot.press("colon", *"117", "enter")
        await settle(pilot)
        assert seq_at_cursor(screen) == 117


async def test_filter_shows_only_matches_and_escape_restores(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("ampersand", *"kind:tool.call", "enter")
        await settle(pilot)
        journal = screen.journal
        calls = [p for p in range(len(journal)) if journal.event(p).kind == "tool.call"]
        assert list(screen.timeline.rows) == calls and screen.timeline.shown == len(calls)
        assert screen.timeline.cursor == calls[0]  # the cursor moved onto the first shown event
        await pilot.press("j")
        assert screen.timeline.cursor == calls[1]
        await pilot.press("G")
        assert screen.timeline.cursor == calls[-1]
        assert f"{len(calls)} of {len(journal)}" in str(screen.timeline.border_title)
        await pilot.press("colon", *"1", "enter")
        await settle(pilot)
        assert screen.timeline.cursor == calls[0] and "hidden by the filter" in str(screen.status.render())
        await pilot.press("escape")
        assert screen.timeline.rows is None and screen.timeline.shown == len(journal)
        await pilot.press("j")
        assert screen.timeline.cursor == calls[0] + 1


async def test_filter_with_no_match_says_so(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("ampersand", *"no-such-words", "enter")
        await settle(pilot)
        assert screen.timeline.shown == 0
        assert "no event matches the filter" in screen.timeline.render_line(0).text
        await pilot.press("j", "G")  # nothing to move to, nothing breaks
        await pilot.press("escape")
        assert screen.timeline.shown == len(screen.journal)
