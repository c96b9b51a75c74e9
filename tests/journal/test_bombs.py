"""Bounded resources for any input: real gzip bombs through verify, stats, scan and the app.

Each command runs in its own child process; its peak RSS comes from ``os.wait4`` (the
kernel's figure for that child), and its wall time is bounded. The bombs are ~420 KB
of gzip: 400 concatenated members of 1 MiB each, so they are built in milliseconds.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from .sample import write_sample_journal

REPO = Path(__file__).resolve().parents[2]
RSS_LIMIT_MB = 300
TIME_LIMIT_S = 30  # generous on a shared, loaded machine; alone each takes 0.2 to 2 seconds


def _member(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    first = write_sample_journal(folder / "head.jsonl", steps=1).read_bytes().splitlines(keepends=True)[0]
    huge = folder / "huge-line.jsonl.gz"  # one 400 MiB line after a valid run.started
    huge.write_bytes(_member(first) + _member(b'{"x":"') + _member(b"a" * (1 << 20)) * 400 + _member(b'"}\n'))
    newlines = folder / "newlines.jsonl.gz"  # 400 MiB of empty lines after it
    newlines.write_bytes(_member(first) + _member(b"\n" * (1 << 20)) * 400)
    plain = folder / "plain-huge.jsonl"  # a 200 MiB line in a plain file
    with open(plain, "wb") as out:
        out.write(first + b'{"x":"')
        for _ in range(200):
            out.write(b"a" * (1 << 20))
        out.write(b'"}\n')
    for path in (huge, newlines):
        assert path.stat().st_size < 500_000
    return {"huge-line": huge, "newlines": newlines, "plain-huge": plain}


# Peak RSS as the child itself sees it at exit: VmHWM of its own address space (the kernel's
# ru_maxrss of a forked child would start at the RSS of this pytest process) and the
# largest of its own child processes (verify's workers, the app's checks).
_PEAK_AT_EXIT = textwrap.dedent(
    """
    import atexit, resource, sys

    def _peak():
        hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        sys.stdout.flush()
        sys.stderr.write(f"\\nPEAK_KB {max(hwm, children)}\\n")

    atexit.register(_peak)
    """
)


def _run_measured(code: str, *args: str) -> tuple[int, float, float, str]:
    """(exit code, peak RSS in MB, seconds, output) of ``python -c code args`` in a child process."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_AT_EXIT + code, *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
        check=False,
    )
    seconds = time.monotonic() - started
    output = (done.stdout + done.stderr).decode(errors="replace")
    peaks = [line.split()[1] for line in output.splitlines() if line.startswith("PEAK_KB ")]
    assert peaks, output
    return done.returncode, int(peaks[-1]) / 1024, seconds, output


_CLI = "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))\n"


@pytest.mark.parametrize("bomb", ["huge-line", "newlines", "plain-huge"])
@pytest.mark.parametrize("command", ["verify", "stats", "scan"])
def test_cli_commands_stay_bounded(bombs: dict[str, Path], bomb: str, command: str) -> None:
    code, rss_mb, seconds, output = _run_measured(_CLI, command, str(bombs[bomb]))
    print(f"{command} {bomb}: exit {code}, {rss_mb:.0f} MB, {seconds:.2f} s")
    assert rss_mb < RSS_LIMIT_MB and seconds < TIME_LIMIT_S, (rss_mb, seconds)
    assert "Traceback" not in output and "internal error" not in output, output
    # verify fails (1); stats and scan could not read the whole journal: never 0, "0 faults" or "clean" for it
    assert code == (1 if command == "verify" else 2), (code, output[-2000:])
    expected = "empty" if bomb == "newlines" else "MiB; lines over 16 MiB are refused"
    assert expected in " ".join(output.split()), output  # stats wraps its lines


_APP_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.widgets.bars import RunHeader

    async def main():
        started = time.monotonic()
        app = ReplayApp(Journal(sys.argv[1]))
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen_stack[0]
            header = screen.query_one(RunHeader)
            await pilot.pause(0.2)
            while screen.indexing and time.monotonic() < started + 120:
                await pilot.pause(0.05)
            indexed = time.monotonic() - started
            # the chain check runs niced in a child: on a loaded machine it waits for the CPU
            while header.chain[0] == "checking" and time.monotonic() < started + 120:
                await pilot.pause(0.05)
            print(f"indexed in {indexed:.1f} s; events {len(screen.journal)}; chain {header.chain[1]}", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("bomb", ["huge-line", "newlines"])
def test_opening_a_bomb_in_the_app_stays_bounded(bombs: dict[str, Path], bomb: str) -> None:
    code, rss_mb, seconds, output = _run_measured(_APP_CHILD, str(bombs[bomb]))
    print(f"app {bomb}: exit {code}, {rss_mb:.0f} MB, {seconds:.2f} s: {output.strip().splitlines()[0]}")
    assert code == 0 and "Traceback" not in output, output
    indexed = float(output.split("indexed in ")[1].split()[0])
    assert rss_mb < RSS_LIMIT_MB and indexed < TIME_LIMIT_S, (rss_mb, indexed)
    events = 2 if bomb == "huge-line" else 1  # the giant line has an index entry (it is refused when read)
    assert f"events {events}; chain ✗ malformed line at line 2" in output, output


# -- JSON Patch copy bombs ------------------------------------------------------------------
#: Each pair of copies doubles /a (a KB to start with): 18 of them took verify --state and export to 2.3 GB.
COPY_BOMB = [{"op": "copy", "from": "/a", "path": f"/a/{name}"} for _ in range(30) for name in "xy"]
BOMB_FAULT = "seq 2: patch does not apply (operation 1"  # ... 1x (copy from '/a' to '/a/x'): ... over 16.0 MiB


@pytest.fixture(scope="module")
def copy_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 5 KB journal that verifies: run.started, one transition whose patch is the bomb, run.ended."""
    from replay_tui.journal import JournalWriter, hash_value

    from ..journal_factory import run_started

    path = tmp_path_factory.mktemp("patch-bomb") / "bomb.jsonl"
    initial = {"a": {"seed": "s" * 1000}}
    with JournalWriter(path, run_id="run-bomb", fsync="never") as writer:
        started = writer.append("run.started", run_started(initial_state=initial))
        transition = {
            "cause_seq": 1,
            "before_hash": hash_value(initial),
            "after_hash": "sha256:" + "0" * 64,
            "reducer_version": "1",
            "patch": COPY_BOMB,
        }
        writer.append("state.transition", transition, step_id="s1")
        ended = {"status": "error", "output": None, "error": {"type": "E", "message": "boom"}}
        writer.append("run.ended", ended, parent_event_id=started.event_id)  # the export's chain: the bomb beside
    assert path.stat().st_size < 8192
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["verify", "--state"],
        ["verify", "--state", "--json"],
        ["export", "--format", "md", "-o", "-"],
        ["export", "--format", "html", "-o", "-"],
    ],
    ids=" ".join,
)
def test_a_copy_bomb_is_a_named_fault_in_bounded_memory(copy_bomb: Path, command: list[str]) -> None:
    code, rss_mb, seconds, output = _run_measured(_CLI, command[0], str(copy_bomb), *command[1:])
    print(f"{' '.join(command)}: exit {code}, {rss_mb:.0f} MB, {seconds:.2f} s")
    assert rss_mb < RSS_LIMIT_MB and seconds < TIME_LIMIT_S, (rss_mb, seconds)
    assert "Traceback" not in output and "internal error" not in output, output[-2000:]
    assert BOMB_FAULT in output and "over the 16.0 MiB a state may hold" in output, output[-2000:]
    assert code == (1 if command[0] == "verify" else 0), output[-2000:]


_APP_STATE_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp

    async def main():
        started = time.monotonic()
        app = ReplayApp(Journal(sys.argv[1]), start_seq=2)  # the cursor on the transition: its state panes
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen_stack[0]
            while time.monotonic() < started + 120:
                state = getattr(screen, "last_state", None)
                if state is not None and state.seq == 2:
                    break
                await pilot.pause(0.05)
            print(f"state at seq {state.seq}: {state.status}", flush=True)

    asyncio.run(main())
    """
)


def test_the_apps_state_panes_on_a_copy_bomb_stay_bounded(copy_bomb: Path) -> None:
    code, rss_mb, seconds, output = _run_measured(_APP_STATE_CHILD, str(copy_bomb))
    print(f"app state at the bomb: exit {code}, {rss_mb:.0f} MB, {seconds:.2f} s")
    assert code == 0 and "Traceback" not in output, output[-2000:]
    assert "state at seq 2: problem: " + BOMB_FAULT in output and "over the 16.0 MiB" in output, output[-2000:]
    assert rss_mb < RSS_LIMIT_MB, rss_mb


def test_the_replay_parents_state_book_refuses_a_forged_copy_bomb_in_bounded_memory() -> None:
    """The referee's check of a produced transition (replay/state_book.check_event), with the patch the agent
    forged: the parent reached 1.1 GB and ran 31 s past --timeout 3 before."""
    code, rss_mb, seconds, output = _run_measured(
        textwrap.dedent(
            """
            import json, sys, time
            from replay_tui.journal import hash_value
            from replay_tui.replay.state_book import check_event
            initial = {"a": {"seed": "s" * 1000}}
            book, _ = check_event(None, "run.started", {"initial_state": initial})
            started = time.process_time()
            transition = {"before_hash": hash_value(initial), "after_hash": "x", "patch": json.loads(sys.argv[1])}
            book, reason = check_event(book, "state.transition", transition)
            print(f"reason: {reason}; cpu {time.process_time() - started:.2f} s", flush=True)
            """
        ),
        orjson.dumps(COPY_BOMB).decode(),
    )
    print(f"state book: exit {code}, {rss_mb:.0f} MB, {seconds:.2f} s: {output.strip().splitlines()[0]}")
    assert code == 0 and "the agent's patch builds a state larger than a state may be (operation 1" in output, output
    assert rss_mb < RSS_LIMIT_MB and float(output.split("cpu ")[1].split()[0]) < 5, (rss_mb, output)
