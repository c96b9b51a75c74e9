"""Sessions in a service: 20 concurrent chat sessions on a real ASGI server, each recorded into its own
journal, each journal verifying and replaying to a match; a journal that stops being writable mid-run
fails only the sessions it holds (or lets them go on unrecorded), and never the server."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay_tui.journal import verify_journal

from .conftest import chat_service, replay_corpus

SESSIONS = 20


async def _chat_all(base: str, count: int = SESSIONS, prefix: str = "s") -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        return await asyncio.gather(
            *(
                client.post("/chat", json={"session_id": f"{prefix}{n:02d}", "message": f"where is A-{n}?"})
                for n in range(count)
            )
        )


def test_twenty_concurrent_sessions_are_each_recorded_and_replay_to_a_match(tmp_path: Path, model_server: Any) -> None:
    journals = tmp_path / "journals"
    with chat_service(journals, model_server.url + "/v1") as (base, _):
        responses = asyncio.run(_chat_all(base))
    assert [response.status_code for response in responses] == [200] * SESSIONS, [r.text for r in responses]
    replies = [response.json() for response in responses]
    assert all(reply["recorded"] and "shipped" in reply["reply"] for reply in replies)
    sessions = sorted(journals.iterdir())
    assert [path.name for path in sessions] == [f"s{n:02d}" for n in range(SESSIONS)]
    for path in sessions:
        assert verify_journal(path).ok, path
    # every session saw only its own model calls and its own random ticket
    tickets = {reply["reply"].rsplit("ticket ", 1)[1] for reply in replies}
    assert len(tickets) > 1
    corpus = replay_corpus(journals)
    assert (corpus["journals"], corpus["matched"]) == (SESSIONS, SESSIONS), corpus["groups"]


def _immutable(path: Path, on: bool) -> bool:
    done = subprocess.run(["chattr", "-R", "+i" if on else "-i", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.parametrize("policy", ["fail", "continue"])
@pytest.mark.parametrize("breakage", ["read-only", "disk-full"])
def test_a_journal_that_stops_being_writable_mid_run_touches_no_other_session(
    tmp_path: Path, model_server: Any, policy: str, breakage: str
) -> None:
    journals = tmp_path / "journals"
    journals.mkdir()
    if breakage == "read-only" and not _immutable(journals, False):
        pytest.skip("chattr cannot make files immutable on this filesystem (the disk-full case still runs)")
    with chat_service(journals, model_server.url + "/v1", CHAT_ON_JOURNAL_ERROR=policy) as (base, process):
        asyncio.run(_chat_all(base, 2, prefix="before"))  # the server works (and has imported what it needs)

        async def break_then_chat() -> list[httpx.Response]:
            chats = asyncio.ensure_future(_chat_all(base))
            await asyncio.sleep(0.08)  # the sessions are running: each has written its first events
            if breakage == "read-only":
                assert _immutable(journals, True)
            else:
                _, hard = resource.prlimit(process.pid, resource.RLIMIT_FSIZE)
                resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (1, hard))  # no file can grow
            return await chats

        try:
            started = time.monotonic()
            responses = asyncio.run(break_then_chat())
            took = time.monotonic() - started
        finally:
            _immutable(journals, False)
        assert took < 30  # never a hang
        codes = [response.status_code for response in responses]
        if policy == "fail":
            failed = [response.json()["error"] for response in responses if response.status_code == 500]
            assert failed, codes
            assert all("RecordingFailed" in error and "cannot be" in error for error in failed), failed
        else:
            assert codes == [200] * SESSIONS, [r.text for r in responses]
            assert any(not response.json()["recorded"] for response in responses)
        if breakage == "disk-full":
            _, hard = resource.prlimit(process.pid, resource.RLIMIT_FSIZE)
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (hard, hard))
        after = asyncio.run(_chat_all(base, 2, prefix="after"))  # the server goes on serving
        assert [response.status_code for response in after] == [200, 200], [r.text for r in after]
        process.terminate()
        _, log = process.communicate(timeout=10)
    if policy == "continue":
        assert b"UNRECORDED" in log, log[-2000:]
    for name in ("before00", "before01", "after00", "after01"):
        assert verify_journal(journals / name).ok
