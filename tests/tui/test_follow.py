"""Follow mode against a real writer process: growth, sticking to the end, partial lines,
rotation, truncation and replacement, and the secret marks of followed events."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from tui_helpers import SIZE, make_app, settle

from replay_tui.journal import JournalWriter
from replay_tui.tui.widgets.annotation_marks import SECRET
from tests.journal_factory import run_started

pytestmark = pytest.mark.asyncio
WRITER = Path(__file__).with_name("follow_writer.py")


def start_writer(path: Path, go: Path, events: int, rate: float = 500, **options: Any) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(WRITER), str(path), "--events", str(events), "--rate", str(rate), "--go", str(go)]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    process = subprocess.Popen(argv)
    deadline = time.monotonic() + 60  # an interpreter start on a loaded machine; returns as soon as it wrote
    while time.monotonic() < deadline:  # run.started is on disk: the app can open it
        if process.poll() is not None:
            raise AssertionError(f"the writer exited ({process.returncode}) before writing run.started")
        # a shard exists as soon as it is created, before its first line: wait for a byte in it
        if (
            path.is_file()
            and path.stat().st_size > 0
            or path.is_dir()
            and any(shard.stat().st_size > 0 for shard in path.glob("*.jsonl"))
        ):
            return process
        time.sleep(0.02)
    process.kill()
    raise AssertionError("the writer did not start")


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await pilot.pause(0.05)


def status_text(screen: Any) -> str:
    return str(screen.status.render())


def header_text(screen: Any) -> str:
    return str(screen.query_one("RunHeader").render())


async def test_follow_shows_what_a_writer_process_appends_and_sticks_to_the_end(tmp_path: Path) -> None:
    path, go = tmp_path / "live.jsonl", tmp_path / "go"
    writer = start_writer(path, go, events=400, rate=800, secret_every=100)
    try:
        app = make_app(path, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            assert "following" in header_text(screen)
            go.touch()
            await wait_for(pilot, lambda: screen.timeline.count == 401)
            assert writer.wait(60) == 0
            await wait_for(pilot, lambda: screen.timeline.cursor == 400)  # the view sticks to the end
            # index % 100 == 0 carries a key redaction missed; seq = index + 2
            await wait_for(pilot, lambda: screen.live.secret_seqs == {2, 102, 202, 302})
            assert screen.marks.of(screen.journal.event(101))[0][1] == SECRET
            assert "401 events" in header_text(screen)
    finally:
        writer.kill()


async def test_scrolling_away_stops_sticking_and_G_sticks_again(tmp_path: Path) -> None:
    path, go, resume = tmp_path / "live.jsonl", tmp_path / "go", tmp_path / "resume"
    # the writer holds after 80 events until the user has gone back to the start, so the rest arrive after
    # that (at its own pace a loaded app could see all 200 before the key, and then nothing newer below)
    writer = start_writer(path, go, events=200, rate=100, hold_at=80, resume=resume)
    try:
        app = make_app(path, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            go.touch()
            await wait_for(pilot, lambda: screen.timeline.count > 60)
            await pilot.press("g")  # the user goes back to the start
            resume.touch()
            await wait_for(pilot, lambda: screen.timeline.count > 100)
            assert screen.timeline.cursor == 0
            await wait_for(pilot, lambda: "newer events below" in status_text(screen))
            await pilot.press("G")
            await wait_for(pilot, lambda: screen.timeline.count == 201)
            await wait_for(pilot, lambda: screen.timeline.cursor == 200)  # stuck to the end again
    finally:
        writer.kill()


async def test_a_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = JournalWriter(path, run_id="run-partial", fsync="never")
    writer.append("run.started", run_started(snapshot_every=10))
    writer.append("input.received", {"role": "user", "content": "hello"})
    writer.close()
    line = tmp_path / "next.jsonl"
    extra = JournalWriter(line, run_id="run-partial", fsync="never", start_after=(2, _last_hash(path)))
    extra.append("input.received", {"role": "user", "content": "a second message"})
    extra.close()
    complete = line.read_bytes()
    app = make_app(path, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        with open(path, "ab") as handle:
            handle.write(complete[:40])
        await wait_for(pilot, lambda: "waiting for the end of a line" in header_text(screen))
        assert screen.timeline.count == 2
        with open(path, "ab") as handle:
            handle.write(complete[40:])
        await wait_for(pilot, lambda: screen.timeline.count == 3)
        assert screen.journal.event(2).payload["content"] == "a second message"
        assert "waiting" not in header_text(screen)


def _last_hash(path: Path) -> str:
    import orjson

    return orjson.loads(path.read_bytes().splitlines()[-1])["event_hash"]


async def test_truncation_and_replacement_reload_with_a_message(tmp_path: Path) -> None:
    path, go = tmp_path / "live.jsonl", tmp_path / "go"
    go.touch()
    writer = start_writer(path, go, events=50, rate=1000)
    assert writer.wait(60) == 0
    app = make_app(path, follow=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert screen.timeline.count == 51
        first_line = path.read_bytes().split(b"\n")[0] + b"\n"
        os.truncate(path, len(first_line))
        await wait_for(pilot, lambda: "truncated" in status_text(screen))
        assert screen.timeline.count == 1
        # another run written elsewhere and moved over the path: a new file under the same name
        other = tmp_path / "other.jsonl"
        assert start_writer(other, go, events=20, rate=1000).wait(60) == 0
        os.replace(other, path)
        await wait_for(pilot, lambda: "replaced" in status_text(screen))
        assert screen.timeline.count == 21
        assert screen.timeline.cursor == 20


async def test_rotation_into_new_shards_is_followed_with_a_message(tmp_path: Path) -> None:
    directory, go = tmp_path / "run", tmp_path / "go"
    writer = start_writer(directory, go, events=300, rate=600, rotate_bytes=16_000)
    try:
        app = make_app(directory, follow=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            go.touch()
            await wait_for(pilot, lambda: "rotated" in status_text(screen) or screen.timeline.count == 301)
            await wait_for(pilot, lambda: screen.timeline.count == 301)
            assert writer.wait(60) == 0
            seqs = [event.seq for event in screen.journal.events()]
            assert seqs == list(range(1, 302)), "every event once, in order, across the shards"
            assert len(list(directory.glob("*.gz"))) >= 2
    finally:
        writer.kill()


async def test_f_turns_following_on_and_off(tmp_path: Path) -> None:
    path, go = tmp_path / "live.jsonl", tmp_path / "go"
    writer = start_writer(path, go, events=300, rate=100)
    try:
        app = make_app(path)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            assert "following" not in header_text(screen)
            await pilot.press("f")
            assert "following" in header_text(screen)
            go.touch()
            await wait_for(pilot, lambda: screen.timeline.count > 20)
            await pilot.press("f")
            assert "following" not in header_text(screen)
            assert not [w for w in app.workers if w.group == "follow" and w.is_running]
            stopped_at = screen.timeline.count
            await pilot.pause(0.6)
            assert len(path.read_bytes().splitlines()) > stopped_at, "the writer went on"
            assert screen.timeline.count == stopped_at, "but the view did not"
            await pilot.press("f")
            await wait_for(pilot, lambda: screen.timeline.count == 301)
            assert writer.wait(60) == 0
    finally:
        writer.kill()
