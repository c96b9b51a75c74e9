"""Concurrent agents for the replay scheduler: three searches in flight together, each answered after its
own delay, so they finish in another order than they were made (beta, then gamma, then alpha).

``first_wins`` has the bug an order-dependent agent has: it keeps whichever result arrives first. A replay
that handed results back in call order (alpha first) would give another answer than production's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any

from replay_tui.harness import ToolSpec

DELAYS = {"alpha": 0.24, "beta": 0.02, "gamma": 0.12}
ENGINES = ("alpha", "beta", "gamma")


async def search(engine: str, query: str) -> dict[str, Any]:
    await asyncio.sleep(DELAYS[engine])
    return {"engine": engine, "hit": f"{engine}: {query}"}


def search_sync(engine: str, query: str) -> dict[str, Any]:
    time.sleep(DELAYS[engine])
    return {"engine": engine, "hit": f"{engine}: {query}"}


def tools(options: dict[str, Any]) -> list[ToolSpec]:
    return [ToolSpec("search", search), ToolSpec("search_sync", search_sync)]


def _calls(h: Any, query: str, engines: tuple[str, ...]) -> list[asyncio.Task[Any]]:
    return [asyncio.ensure_future(h.atool("search", {"engine": e, "query": query}, call_id=e)) for e in engines]


async def _first_of(h: Any, query: str, engines: tuple[str, ...]) -> str:
    calls = _calls(h, query, engines)
    first = None
    for finished in asyncio.as_completed(calls):
        first = await finished
        break
    for call in calls:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
    assert first is not None
    started = h.clock.now()
    return f"{first['hit']} (at {started:.0f})"


async def first_wins(h: Any, query: str) -> str:
    return await _first_of(h, query, ENGINES)


async def first_wins_reversed(h: Any, query: str) -> str:
    """The same calls, made in the other order."""
    return await _first_of(h, query, tuple(reversed(ENGINES)))


async def first_wins_extra(h: Any, query: str) -> str:
    """One call more than production made."""
    return await _first_of(h, query, (*ENGINES, "delta"))


async def first_wins_missing(h: Any, query: str) -> str:
    """One call fewer than production made."""
    return await _first_of(h, query, ("alpha", "beta"))


async def first_wins_wait(h: Any, query: str) -> str:
    calls = _calls(h, query, ENGINES)
    done, pending = await asyncio.wait(calls, return_when=asyncio.FIRST_COMPLETED)
    winner = next(iter(done)).result()
    for call in pending:
        call.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return str(winner["hit"])


def first_wins_threads(h: Any, query: str) -> str:
    """Threads that act on whichever search finishes first (the others run on to their end)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(h.tool, "search_sync", {"engine": e, "query": query}, call_id=e) for e in ENGINES]
        first = next(concurrent.futures.as_completed(futures)).result()
        with h.step("after-first"):
            h.random.random()  # something the run does while the other searches still run
    return str(first["hit"])


async def gather_all(h: Any, query: str) -> str:
    """Order-independent: every result, sorted, whatever order they arrive in."""
    results = await asyncio.gather(*_calls(h, query, ENGINES))
    return "; ".join(sorted(result["hit"] for result in results))


async def keeps_first(h: Any, query: str) -> str:
    """The order-dependent bug shuffle mode finds: it keeps whichever search result arrives first (it waits for
    all of them), then looks that one up in detail."""
    first = None
    for finished in asyncio.as_completed(_calls(h, query, ENGINES)):
        result = await finished
        first = first or result
    assert first is not None
    details = await h.atool("search", {"engine": first["engine"], "query": f"details of {first['hit']}"})
    return str(details["hit"])


def _two_threads(h: Any, query: str, *, gamma_first: bool) -> str:
    results: dict[str, Any] = {}

    def search_in_thread(engine: str) -> None:
        results[engine] = h.tool("search_sync", {"engine": engine, "query": query}, call_id=engine)

    beta, gamma = (threading.Thread(target=search_in_thread, args=(engine,)) for engine in ("beta", "gamma"))
    if gamma_first:
        gamma.start()
        time.sleep(0.1)  # gamma's thread waits for its turn, which comes after beta's result
        beta.start()
    else:
        beta.start()
        beta.join()
        gamma.start()
    beta.join()
    gamma.join()
    return "; ".join(results[engine]["hit"] for engine in ("beta", "gamma"))


def thread_after_a_result(h: Any, query: str) -> str:
    """Gamma's thread starts once beta's result is in: its call hangs from that result."""
    return _two_threads(h, query, gamma_first=False)


def thread_after_a_result_started_early(h: Any, query: str) -> str:
    """The same calls, gamma's thread started first: its call still hangs from beta's result, which its flow
    has received by the call's turn (where a thread starts is read at its first write, not when it asks)."""
    return _two_threads(h, query, gamma_first=True)
