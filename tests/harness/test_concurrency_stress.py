"""The journal is the interleaving: 50 concurrent calls from tasks and threads, 100 runs, and every time the
chain is whole and every seq is there once."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from pathlib import Path

from replay_tui.harness import Harness, JsonlSink, ToolSpec
from replay_tui.journal import verify_journal

from .helpers import events_of

RUNS = 100
TASKS, THREADS = 30, 20  # 50 calls in flight together


def _run_once(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    delays = [rng.uniform(0, 0.004) for _ in range(TASKS + THREADS)]

    async def slow(index: int) -> int:
        await asyncio.sleep(delays[index])
        return index

    def slow_sync(index: int) -> int:
        time.sleep(delays[index])
        return index

    harness = Harness(
        sink=JsonlSink(path, run_id=f"stress-{seed}"),
        run_id=f"stress-{seed}",
        tools={"slow": ToolSpec("slow", slow), "slow_sync": ToolSpec("slow_sync", slow_sync)},
    )
    harness.start_run("stress")
    harness.receive_input("go")

    def in_thread(index: int) -> None:  # a framework's own threads, writing through the harness
        harness.record_tool_call("threaded", {"index": index}, lambda copy: slow_sync(copy["index"]))
        harness.clock.now()

    async def agent() -> None:
        threads = [threading.Thread(target=in_thread, args=(TASKS + n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        results = await asyncio.gather(
            *(harness.atool("slow" if n % 2 else "slow_sync", {"index": n}) for n in range(TASKS))
        )
        assert results == list(range(TASKS))
        for thread in threads:
            thread.join()

    asyncio.run(agent())
    harness.end_run("ok")


def test_fifty_concurrent_calls_from_tasks_and_threads_keep_the_chain_whole(tmp_path: Path) -> None:
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the interpreter between threads often
    try:
        for seed in range(RUNS):
            path = tmp_path / f"run-{seed}.jsonl"
            _run_once(path, seed)
            report = verify_journal(path)
            assert report.ok, (seed, report.to_json())
            events = events_of(path)
            assert [event.seq for event in events] == list(range(1, len(events) + 1)), seed
            calls = {e.event_id: e for e in events if e.kind == "tool.call"}
            results = [e for e in events if e.kind == "tool.result"]
            assert len(calls) == len(results) == TASKS + THREADS, seed
            assert {result.parent_event_id for result in results} == set(calls), seed  # each answers its own call
            ids = [call.payload["call_id"] for call in calls.values()]
            assert len(set(ids)) == len(ids), seed  # default call ids come from the seq: never shared
            for result in results:
                assert result.seq > calls[result.parent_event_id].seq
    finally:
        sys.setswitchinterval(switch_interval)
