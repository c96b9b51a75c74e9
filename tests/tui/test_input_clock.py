"""Long scans step aside while the user is pressing keys."""

from __future__ import annotations

import threading
import time

from replay_tui.tui.input_clock import UserInputClock


def test_a_scan_waits_while_keys_arrive_then_carries_on() -> None:
    """Bounds are far from the grace periods, so a loaded machine (a thread descheduled for a while) cannot
    turn "did not wait" into "waited", or "waited the grace out" into "hung"."""
    idle = UserInputClock(grace_s=60.0)
    started = time.monotonic()
    assert idle.politely(lambda: False)() is False
    assert time.monotonic() - started < 30  # nobody typing: no wait
    clock = UserInputClock(grace_s=0.2)
    clock.touch()
    quiet_from = clock.quiet_from
    assert clock.politely(lambda: False)() is False
    assert time.monotonic() >= quiet_from  # waited out the grace period, then carried on


def test_cancelling_ends_the_wait_at_once() -> None:
    clock = UserInputClock(grace_s=60.0)
    cancelled = threading.Event()
    clock.touch()
    threading.Timer(0.1, cancelled.set).start()
    assert clock.politely(cancelled.is_set)() is True
    assert clock.busy, "the wait ended on the cancel, long before the grace period"


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
