"""Long scans step aside while the user is pressing keys."""

from __future__ import annotations

import threading
import time

from replay_tui.tui.input_clock import UserInputClock


def test_a_scan_waits_while_keys_arrive_then_carries_on() -> None:
    clock = UserInputClock(grace_s=0.2)
    check = clock.politely(lambda: False)
    started = time.monotonic()
    assert check() is False and time.monotonic() - started < 0.05  # nobody typing: no wait
    clock.touch()
    started = time.monotonic()
    assert check() is False
    assert 0.15 <= time.monotonic() - started < 1.0  # waited out the grace period


def test_cancelling_ends_the_wait_at_once() -> None:
    clock = UserInputClock(grace_s=5.0)
    cancelled = threading.Event()
    clock.touch()
    threading.Timer(0.1, cancelled.set).start()
    started = time.monotonic()
    assert clock.politely(cancelled.is_set)() is True
    assert time.monotonic() - started < 1.0


def test_keys_reach_the_clock(incident_path) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from tui_helpers import SIZE, make_app, settle

    async def run() -> None:
        app = make_app(incident_path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            before = time.monotonic()
            await pilot.press("j")
            assert app.input_clock.quiet_from > before  # the key was noted

    asyncio.run(run())
