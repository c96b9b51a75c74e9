"""Benchmark the app on a big journal, with toolong as the peer to beat.

    python tests/bench/bench_tui.py --events 1000000

Steps, each in a fresh Python process so imports, caches and RSS do not mix:

1. The journal is written once with the real JournalWriter (the incident steps
   repeated) and cached under /tmp/replay-tui-bench/bulk-N.jsonl.
2. replay-tui runs headless (``App.run_test``, 160x45). *First frame* is the time
   from constructing the app to the first timeline row holding an event being
   rendered (``Timeline.render_line`` is wrapped to note it). *Index* is the time
   until the index worker reports the whole file. Key latency is key to frame: the
   Key event is handed to the app as a terminal driver would (no Pilot idle waits),
   and the sample ends when the timeline has drawn the cursor on its new row; keys
   come 30 ms apart (a fast key repeat). Keys: j, G, g, page down and `:` goto (the
   goto sample is the enter that jumps). Then j again while a search scans the
   whole journal (``key_p95_during_search_ms``). *Peak RSS* is ``ru_maxrss`` of
   that process.
3. toolong (PyPI ``toolong``, which pins Textual 0.58, so it lives in its own venv
   at ~/.cache/replay-tui-bench/toolong, created with pip on first use) opens the
   same file headless at the same size; its first frame is measured the same way,
   by wrapping ``LogLines.render_line`` to note the first row with a line in it.

4. Keys during a replay: the counter agent's run of --replay-events events (default
   100,000, recorded through the real harness by bench_replay's generator) is opened,
   `r` starts the strict replay in the child, and j / page down are timed as above
   while the child replays (``key_p95_during_replay_ms``, target <= 50 ms; the run with
   the median p95 of --runs runs, measured after the app's own indexing and chain check).

5. End to end, as a user sees it: each app is started as a process on a pseudo-terminal
   (160x45, TERM=xterm-256color), and the time runs from process start to the moment the
   first timeline row (replay-tui: the run.started row; toolong: the text of the file's
   lines' shared start, as it opens at the tail) has been drawn on the terminal (escape sequences stripped from the output).
   Interpreter start, imports, reading the file and the first paint all count. Both apps start
   with their modules compiled, as after a pip install (ours through a bytecode cache under
   /tmp/replay-tui-bench, since a checkout run with PYTHONDONTWRITEBYTECODE=1 has none), after one
   untimed warm-up run of each, left open a second after its first row as a user would leave it: ours keeps
   its parsed stylesheets in the user's cache once its first frame is drawn (``tui/stylesheet_cache.py``), as
   any earlier start leaves them; a start with none parses them, about 10 ms more.
   ``first_frame_end_to_end_ratio_vs_toolong`` is ours over theirs (target <= 0.4). Beside them, interleaved,
   the floor any Textual app of ours starts on: ``BARE_TEXTUAL_APP``, Textual's app with one ``Static`` showing
   the needle, our Textual version and interpreter (``bare_textual_first_frame_ratio_vs_toolong``: what is left
   of the target for everything the app draws and loads beyond an empty Textual app). And
   ``import_s`` / ``textual_import_s`` time importing the app against importing Textual's
   app and widgets alone (target: at most 0.15 s more): medians of interleaved runs (--import-runs),
   with the minimum and the CPU time of each (getrusage: what a loaded machine moves least), and the
   app's first-frame path as the entry point takes it (the collector paused while it imports).
   The load average is printed beside each.

6. ``--instructions``: the same three starts counted in instructions instead of seconds, which the
   machine's load does not move (the wall figures above move by a tenth from one run to the next on a
   shared machine). Each app runs under ``valgrind --tool=callgrind`` on a pty, through ``EXIT_ON_NEEDLE``,
   which ends the process (``os._exit``) the moment the needle is in what the app's terminal driver
   wrote: process start to the first row, interpreter start included. Kernel time and waiting are not in
   it, so it is a companion to the end-to-end ratio, not the target itself. Ours and the bare app repeat
   within 0.1 %; toolong's moves by a tenth (its file is read by a thread of its own while the first frame
   is made), so the count compares our changes with each other and with the bare app, not with toolong.

First frames are the median of --runs runs of each, alternating. The last line
printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CACHE = Path("/tmp/replay-tui-bench")
TOOLONG_VENV = Path.home() / ".cache" / "replay-tui-bench" / "toolong"
WARM_UP_LINGER_S = 1.0  # a warm-up start is left open this long after its first row (see 5.)
SIZE = (160, 45)

# Runs inside the toolong venv: time to the first rendered log line.
TOOLONG_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from toolong.log_lines import LogLines
    from toolong.ui import UI

    path = sys.argv[1]
    first = {}
    original = LogLines.render_line

    def render_line(self, y):
        strip = original(self, y)
        if "t" not in first and self.scroll_offset.y + y < self.line_count and strip.cell_length and strip.text.strip():
            first["t"] = time.perf_counter()
        return strip

    LogLines.render_line = render_line

    async def main():
        start = time.perf_counter()
        app = UI([path])
        async with app.run_test(size=(%d, %d)) as pilot:
            while "t" not in first and time.perf_counter() - start < 60:
                await pilot.pause(0.005)
        print(json.dumps({"first_frame_s": first.get("t", float("nan")) - start}))

    asyncio.run(main())
    """
    % SIZE
)


def ensure_journal(events: int) -> Path:
    path = CACHE / f"bulk-{events}.jsonl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    print(f"writing {events:,} events to {path} (cached for later runs)…", flush=True)
    sys.path.insert(0, str(REPO / "tests" / "analysis"))
    from journal_factory import write_bulk

    write_bulk(partial, events)
    os.replace(partial, path)
    return path


def ensure_toolong() -> Path | None:
    python = TOOLONG_VENV / "bin" / "python"
    if python.exists() and subprocess.run([python, "-c", "import toolong"], capture_output=True).returncode == 0:
        return python
    print(f"installing toolong into {TOOLONG_VENV}…", flush=True)
    TOOLONG_VENV.parent.mkdir(parents=True, exist_ok=True)
    if subprocess.run([sys.executable, "-m", "venv", TOOLONG_VENV]).returncode != 0:
        return None
    if subprocess.run([python, "-m", "pip", "install", "-q", "toolong"]).returncode != 0:
        return None
    return python


def child_json(command: list[str | Path]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(lines[-1])


# -- end to end: process start to the first row on a pseudo-terminal ------------------
ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def terminal(environ: Mapping[str, str]) -> tuple[int, int, dict[str, str]]:
    """A pty of ``SIZE`` (master, slave) and ``environ`` as a terminal of that size sets it for its child."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    return master, slave, {**environ, "TERM": "xterm-256color", "COLUMNS": str(SIZE[0]), "LINES": str(SIZE[1])}


def first_row_on_terminal(
    argv: list[str | Path],
    needle: bytes,
    timeout: float = 120.0,
    environ: dict[str, str] | None = None,
    linger_s: float = 0.0,
) -> float:
    """Seconds from starting ``argv`` on a pty to ``needle`` appearing in what it drew (escapes removed);
    ``linger_s``: how long the app is left running after that (a warm-up: what it does after its first frame)."""
    master, slave, environment = terminal(os.environ if environ is None else environ)
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(part) for part in argv], stdin=slave, stdout=slave, stderr=slave, env=environment, start_new_session=True
    )
    os.close(slave)
    drawn, seen = b"", None
    try:
        while seen is None and time.perf_counter() - started < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:
                break
            drawn += chunk
            if needle in ANSI.sub(b"", drawn[-(1 << 20) :]):
                seen = time.perf_counter()
        _drain_for(master, linger_s if seen is not None else 0.0)
    finally:
        process.kill()
        process.wait()
        os.close(master)
    if seen is None:
        raise RuntimeError(f"{argv[0]}: {needle!r} never drawn; last output: {ANSI.sub(b'', drawn)[-800:]!r}")
    return seen - started


def _drain_for(master: int, seconds: float) -> None:
    """Read what the app draws for ``seconds`` (a full pty would stop it)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        if select.select([master], [], [], 0.05)[0]:
            try:
                os.read(master, 1 << 16)
            except OSError:
                return


def toolong_needle(path: Path) -> bytes:
    """The start of the file's first line, which every line shares (toolong opens at the tail, so its
    first row is a later line): ``{"event_hash":"sha256:`` for a canonical journal."""
    with open(path, "rb") as handle:
        return handle.readline()[:22]


#: Import time, three ways, each in a fresh interpreter: Textual's app and widgets alone; the app's module
#: imported bare (like for like with Textual's); and the app's first-frame path as the entry point takes it
#: (``launch.start_up_collection``: the collector paused while the app is imported, then frozen).
IMPORTS = {
    "textual": "import textual.app, textual.widgets",
    "app": "import replay_tui.tui.app",
    "first_frame_path": (
        "from replay_tui.tui.launch import start_up_collection\nwith start_up_collection():\n    import replay_tui.tui.app"
    ),
}


def import_cost(code: str, environ: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter running ``code``; CPU from getrusage of the reaped child,
    which a loaded machine moves far less than the wall clock."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=environ)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def import_figures(runs: int, environ: dict[str, str]) -> dict[str, float]:
    """Interleaved runs of each import (the order rotates, so none always follows another), min and median
    of wall and CPU, and each of ours over Textual's. Imports are short and a loaded machine moves them most."""
    for code in IMPORTS.values():  # warm-up: bytecode cache and page cache
        import_cost(code, environ)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in IMPORTS}
    names = list(IMPORTS)
    for turn in range(runs):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            samples[name].append(import_cost(IMPORTS[name], environ))
    figures: dict[str, float] = {}
    for name, found in samples.items():
        walls, cpus = [wall for wall, _ in found], [cpu for _, cpu in found]
        figures |= {
            f"{name}_import_wall_min_s": min(walls),
            f"{name}_import_wall_median_s": statistics.median(walls),
            f"{name}_import_cpu_min_s": min(cpus),
            f"{name}_import_cpu_median_s": statistics.median(cpus),
        }
    for name in ("app", "first_frame_path"):
        for figure in ("wall_min", "wall_median", "cpu_min", "cpu_median"):
            figures[f"{name}_over_textual_{figure}_s"] = (
                figures[f"{name}_import_{figure}_s"] - figures[f"textual_import_{figure}_s"]
            )
    for name in IMPORTS:
        print(
            f"import {name}: wall min {figures[f'{name}_import_wall_min_s']:.3f} median "
            f"{figures[f'{name}_import_wall_median_s']:.3f} s, CPU min {figures[f'{name}_import_cpu_min_s']:.3f} "
            f"median {figures[f'{name}_import_cpu_median_s']:.3f} s ({runs} interleaved runs)",
            flush=True,
        )
    return {key: round(value, 4) for key, value in figures.items()}


# -- the replay-tui child --------------------------------------------------------
async def measure_replay_tui(path: Path, keys: bool) -> dict:
    import asyncio
    import random
    import resource

    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.widgets.timeline import Timeline

    first: dict[str, float] = {}
    cursor_frames: dict[int, float] = {}  # cursor row -> when it was last rendered as the cursor
    original = Timeline.render_line

    def render_line(self: Timeline, y: int):  # type: ignore[no-untyped-def]
        strip = original(self, y)
        row = self.scroll_offset.y + y
        if row < self.count:
            now = time.perf_counter()
            first.setdefault("t", now)
            if row == self.cursor:
                cursor_frames[row] = now
        return strip

    Timeline.render_line = render_line  # type: ignore[method-assign]
    start = time.perf_counter()
    app = ReplayApp(Journal(path))
    result: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen_stack[0]
        while "t" not in first and time.perf_counter() - start < 60:
            await asyncio.sleep(0.001)
        result["first_frame_s"] = first.get("t", float("nan")) - start
        result["events_at_first_frame"] = screen.timeline.count
        if not keys:
            return result
        while screen.indexing and time.perf_counter() - start < 600:
            await pilot.pause(0.01)
        result["index_s"] = screen.index_seconds
        result["events"] = len(screen.journal)
        await pilot.pause(0.5)
        samples: dict[str, list[float]] = {"j": [], "G": [], "g": [], "pagedown": [], "goto": []}
        timeline = screen.timeline

        async def timed(name: str, key: str, target: int | None = None) -> None:
            """Key sent to the app -> the timeline has drawn the cursor at its new row."""
            before = timeline.cursor
            t0 = time.perf_counter()
            app._driver.send_message(key_event(key))
            while time.perf_counter() - t0 < 10:
                await asyncio.sleep(0.0005)
                cursor = timeline.cursor
                moved = cursor == target if target is not None else cursor != before
                if moved and cursor_frames.get(cursor, 0) > t0:
                    break
            samples[name].append((cursor_frames.get(timeline.cursor, t0) - t0) * 1000)
            await asyncio.sleep(0.03)  # a fast key repeat, not a flood

        for _ in range(200):
            await timed("j", "j")
        for _ in range(20):
            await timed("G", "G")
            await timed("g", "g")
        for _ in range(50):
            await timed("pagedown", "pagedown")
        rng = random.Random(7)
        for _ in range(20):
            seq = rng.randint(1, result["events"])
            await pilot.press("colon", *str(seq))
            await timed("goto", "enter", target=seq - 1)
            assert screen.journal.event(timeline.cursor).seq == seq, "goto landed on the wrong seq"
        everything = sorted(value for values in samples.values() for value in values)
        result["key_p50_ms"] = statistics.median(everything)
        result["key_p95_ms"] = everything[int(0.95 * (len(everything) - 1))]
        result["per_key_p95_ms"] = {name: round(sorted(v)[int(0.95 * (len(v) - 1))], 1) for name, v in samples.items()}

        # j while a search scans the whole journal (is:unused parses every line and,
        # with no replay results, matches none): the scan must step aside for keys.
        from replay_tui.analysis.search import parse_query

        await pilot.press("g")
        screen.finder.run_search(parse_query("is:unused"), 0, 1, "bench")
        await asyncio.sleep(0.2)
        samples["search"] = []
        for _ in range(60):
            await timed("search", "j")
        still_searching = any(w.group == "search" and w.is_running for w in app.workers)
        screen.workers.cancel_group(screen, "search")
        during = sorted(samples["search"])
        result["key_p95_during_search_ms"] = during[int(0.95 * (len(during) - 1))]
        result["search_ran_throughout"] = still_searching
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


async def measure_during_replay(path: Path) -> dict:
    """Key latency (j and page down) while `r` replays ``path`` in the child process."""
    import asyncio

    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.widgets.replay_panel import ReplayPanel
    from replay_tui.tui.widgets.timeline import Timeline

    os.chdir(REPO)  # the replay child imports the counter agent from the checkout
    cursor_frames: dict[int, float] = {}
    original = Timeline.render_line

    def render_line(self: Timeline, y: int):  # type: ignore[no-untyped-def]
        strip = original(self, y)
        if self.scroll_offset.y + y == self.cursor:
            cursor_frames[self.cursor] = time.perf_counter()
        return strip

    Timeline.render_line = render_line  # type: ignore[method-assign]
    app = ReplayApp(Journal(path))
    samples: list[float] = []
    result: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen_stack[0]
        # Index and chain check first (both are thread workers of the app): what is
        # measured is what the replay adds, not the app's own start-up work.
        while screen.indexing or any(worker.is_running for worker in app.workers):
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        panel, replays = screen.query_one(ReplayPanel), screen.replays
        timeline = screen.timeline
        keys = ["j"] * 4 + ["pagedown"]

        async def timed_key(key: str) -> float:
            before = timeline.cursor
            t0 = time.perf_counter()
            app._driver.send_message(key_event(key))
            while time.perf_counter() - t0 < 10:
                await asyncio.sleep(0.0005)
                if timeline.cursor != before and cursor_frames.get(timeline.cursor, 0) > t0:
                    break
            return (cursor_frames.get(timeline.cursor, t0) - t0) * 1000

        # The control: the same keys for as long, with no replay running.
        control: list[float] = []
        control_until = time.perf_counter() + 2.5
        while time.perf_counter() < control_until:
            control.append(await timed_key(keys[len(control) % len(keys)]))
            await asyncio.sleep(0.03)
        await pilot.press("g")
        started = time.perf_counter()
        await pilot.press("r")
        while replays.running and not (panel.line.unit == "events" and panel.line.total):
            await asyncio.sleep(0.005)  # the child is starting; measure while it replays
        replaying_from = time.perf_counter()
        while replays.running:
            latency = await timed_key(keys[len(samples) % len(keys)])
            if replays.running:  # only samples taken while the child was still replaying
                samples.append(latency)
            await asyncio.sleep(0.03)
        while replays.last is None:
            await asyncio.sleep(0.01)
        outcome = replays.last.outcome
        result["replay_status"] = outcome.status
        result["replay_events"] = outcome.consumed
        result["replay_wall_s"] = time.perf_counter() - started
        result["replaying_s"] = time.perf_counter() - replaying_from
    control.sort()
    result["key_p95_same_keys_no_replay_ms"] = control[int(0.95 * (len(control) - 1))] if control else float("nan")
    ordered = sorted(samples)
    result["samples"] = len(ordered)
    if os.environ.get("BENCH_TUI_SAMPLES"):
        result["all_samples_ms"] = [round(value) for value in samples]
    result["key_p50_during_replay_ms"] = statistics.median(ordered) if ordered else float("nan")
    result["key_p95_during_replay_ms"] = ordered[int(0.95 * (len(ordered) - 1))] if ordered else float("nan")
    return result


def replay_journal(events: int) -> Path:
    """The counter agent's run of ``events`` events, recorded through the real harness
    by bench_replay's generator (cached with the other bench journals)."""
    sys.path.insert(0, str(REPO / "tests" / "bench"))
    from bench_replay import generated_run

    CACHE.mkdir(parents=True, exist_ok=True)
    return generated_run(CACHE, events)


def key_event(key: str):  # type: ignore[no-untyped-def]
    """The Key event a terminal would send, as Pilot builds it (without its idle waits)."""
    from textual import events

    character = key if len(key) == 1 else None
    event = events.Key(key, character)
    return event


def child_main(path: Path, keys: bool, during_replay: bool = False) -> None:
    import asyncio

    sys.path.insert(0, str(REPO))
    if during_replay:
        print(json.dumps(asyncio.run(measure_during_replay(path))))
        return
    print(json.dumps(asyncio.run(measure_replay_tui(path, keys))))


#: The floor of the end-to-end first frame: an app of one Static, started as ours is, on our Textual.
BARE_TEXTUAL_APP = """
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("run.started (a bare Textual app)")

Bare().run()
"""


#: Runs a Textual app's entry point and ends the process the moment ``$NEEDLE`` (escapes stripped) is in
#: what its driver wrote: ``python EXIT_ON_NEEDLE module:function ARGS`` or ``python EXIT_ON_NEEDLE path.py``.
EXIT_ON_NEEDLE = """
import importlib, os, re, runpy, sys
from textual.drivers.linux_driver import LinuxDriver
needle, write, escapes = os.environ["NEEDLE"], LinuxDriver.write, re.compile(r"\\x1b\\[[0-9;?]*[A-Za-z]|\\x1b[()][A-Z0-9]|\\x1b[=>]")
def written(self, data):
    write(self, data)
    if needle in escapes.sub("", data):
        self.flush()
        os._exit(0)
LinuxDriver.write = written
target, sys.argv = sys.argv[1], sys.argv[1:]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    module, _, function = target.partition(":")
    sys.exit(getattr(importlib.import_module(module), function)())
"""


def instructions_to_first_row(
    argv: list[str | Path], needle: bytes, environ: dict[str, str], scratch: Path, timeout: float = 600.0
) -> int:
    """Instructions ``argv`` (run through ``EXIT_ON_NEEDLE``) executes until ``needle`` is drawn, on a pty."""
    out = scratch / "callgrind.out"
    master, slave, child_environ = terminal({**environ, "PYTHONHASHSEED": "0", "NEEDLE": needle.decode()})
    child = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=child_environ,
        close_fds=True,
    )
    os.close(slave)
    deadline = time.perf_counter() + timeout
    try:
        while child.poll() is None and time.perf_counter() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    break
        child.wait(timeout=max(1.0, deadline - time.perf_counter()))
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{argv}: {needle!r} not drawn within {timeout:.0f} s under callgrind") from None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    return honest.callgrind_total(out)


def instruction_figures(path: Path) -> dict:
    """Ours, the bare Textual app and toolong, each counted once (ours and the bare app's repeat within 0.1 %,
    toolong's moves with how far its reading thread got: see 6. above)."""
    toolong = ensure_toolong()
    environ = honest.compiled_environment()
    with tempfile.TemporaryDirectory(prefix="bench-tui-instructions-") as folder:
        scratch = Path(folder)
        wrapper, bare = scratch / "exit_on_needle.py", scratch / "bare_textual_app.py"
        wrapper.write_text(EXIT_ON_NEEDLE)
        bare.write_text(BARE_TEXTUAL_APP)
        sides: dict[str, tuple[list[str | Path], bytes]] = {
            "ours": ([sys.executable, wrapper, "replay_tui.cli:entry_point", path], b"run.started"),
            "bare_textual": ([sys.executable, wrapper, bare], b"run.started"),
        }
        if toolong is not None:
            sides["toolong"] = ([toolong, wrapper, "toolong.cli:run", path], toolong_needle(path))
        # warm-up, as for the wall figures (bytecode, page cache): the apps as a user starts them
        ours_argv: list[str | Path] = [
            sys.executable,
            "-c",
            "from replay_tui.cli import entry_point; entry_point()",
            path,
        ]
        first_row_on_terminal(ours_argv, b"run.started", environ=environ, linger_s=WARM_UP_LINGER_S)
        first_row_on_terminal([sys.executable, bare], b"run.started", environ=environ, linger_s=WARM_UP_LINGER_S)
        if toolong is not None:
            first_row_on_terminal([toolong.with_name("tl"), path], toolong_needle(path), linger_s=WARM_UP_LINGER_S)
        counts = {
            name: instructions_to_first_row(argv, needle, environ, scratch) for name, (argv, needle) in sides.items()
        }
    figures = {f"{name}_first_row_instructions": count for name, count in counts.items()}
    if "toolong" in counts:
        figures["first_row_instructions_ratio_vs_toolong"] = round(counts["ours"] / counts["toolong"], 3)
        figures["bare_textual_instructions_ratio_vs_toolong"] = round(counts["bare_textual"] / counts["toolong"], 3)
    print(
        "instructions, process start to first row: "
        + ", ".join(f"{name} {count / 1e6:,.1f} M" for name, count in counts.items())
        + (
            f" (ours over toolong's {figures['first_row_instructions_ratio_vs_toolong']})"
            if "toolong" in counts
            else ""
        ),
        flush=True,
    )
    return figures


def start_up_figures(path: Path, runs: int, toolong: Path | None = None, import_runs: int | None = None) -> dict:
    """End to end on a pty (ours, then toolong's, alternating) and import time beside Textual's: medians of ``runs``."""
    toolong = toolong or ensure_toolong()
    ours_e2e: list[float] = []
    theirs_e2e: list[float] = []
    ours_argv: list[str | Path] = [sys.executable, "-c", "from replay_tui.cli import entry_point; entry_point()", path]
    toolong_argv: list[str | Path] = [toolong.with_name("tl"), path] if toolong is not None else []
    compiled = honest.compiled_environment()
    bare_argv: list[str | Path] = [sys.executable, "-c", BARE_TEXTUAL_APP]
    bare_e2e: list[float] = []
    # Warm-up (not timed): fills the bytecode cache and the page cache for both apps.
    first_row_on_terminal(ours_argv, b"run.started", environ=compiled, linger_s=WARM_UP_LINGER_S)
    first_row_on_terminal(bare_argv, b"run.started", environ=compiled, linger_s=WARM_UP_LINGER_S)
    if toolong_argv:
        first_row_on_terminal(toolong_argv, toolong_needle(path), linger_s=WARM_UP_LINGER_S)
    for _ in range(runs):
        ours_e2e.append(first_row_on_terminal(ours_argv, b"run.started", environ=compiled))
        if toolong_argv:
            theirs_e2e.append(first_row_on_terminal(toolong_argv, toolong_needle(path)))
        bare_e2e.append(first_row_on_terminal(bare_argv, b"run.started", environ=compiled))
    print(
        f"end to end (process start to first row, pty): replay-tui {[round(x, 3) for x in ours_e2e]}, "
        f"toolong {[round(x, 3) for x in theirs_e2e]}, a bare Textual app {[round(x, 3) for x in bare_e2e]}; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    load_before_imports = os.getloadavg()[0]
    imports = import_figures(import_runs or 7 * runs, compiled)
    print(
        f"import over Textual's: the app {imports['app_over_textual_wall_median_s']:+.3f} s wall (median), "
        f"{imports['app_over_textual_cpu_median_s']:+.3f} s CPU; the first-frame path "
        f"{imports['first_frame_path_over_textual_wall_median_s']:+.3f} s wall, "
        f"{imports['first_frame_path_over_textual_cpu_median_s']:+.3f} s CPU (target +0.15 s; load average "
        f"{load_before_imports:.2f} before, {os.getloadavg()[0]:.2f} after)",
        flush=True,
    )
    ours, theirs = statistics.median(ours_e2e), statistics.median(theirs_e2e) if theirs_e2e else None
    bare = statistics.median(bare_e2e)
    return {
        "first_frame_end_to_end_s": round(ours, 4),
        "toolong_first_frame_end_to_end_s": round(theirs, 4) if theirs else None,
        "first_frame_end_to_end_ratio_vs_toolong": round(ours / theirs, 3) if theirs else None,
        "bare_textual_first_frame_end_to_end_s": round(bare, 4),
        "bare_textual_first_frame_ratio_vs_toolong": round(bare / theirs, 3) if theirs else None,
        "first_frame_end_to_end_over_bare_textual_s": round(ours - bare, 4),
        "load_average_1m_end_to_end": round(load_before_imports, 2),
        "import_s": imports["app_import_wall_median_s"],
        "textual_import_s": imports["textual_import_wall_median_s"],
        "import_over_textual_s": imports["app_over_textual_wall_median_s"],
        **imports,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def keys_during_replay(events: int, runs: int) -> list[dict]:
    """``runs`` runs of the keys timed while `r` replays a run of ``events`` events (each a fresh app)."""
    replayed = replay_journal(events)
    found = []
    for _ in range(runs):  # the machine's load moves a 2 s window: median
        run = child_json([sys.executable, __file__, "--journal", replayed, "--child", "during-replay"])
        print(
            f"keys during a {run['replay_events']:,}-event replay ({run['replay_status']}, {run['replaying_s']:.1f} s): "
            f"p50 {run['key_p50_during_replay_ms']:.1f} ms p95 {run['key_p95_during_replay_ms']:.1f} ms "
            f"({run['samples']} samples); the same keys with no replay: p95 {run['key_p95_same_keys_no_replay_ms']:.1f} ms",
            flush=True,
        )
        found.append(run)
    return found


def during_replay_figures(runs: list[dict]) -> dict:
    """The run with the median p95 (None figures without runs), and the load average."""
    during = sorted(runs, key=lambda run: run["key_p95_during_replay_ms"])[len(runs) // 2] if runs else {}
    return {
        "key_p95_during_replay_ms": round(during["key_p95_during_replay_ms"], 2) if during else None,
        "key_p50_during_replay_ms": round(during["key_p50_during_replay_ms"], 2) if during else None,
        "replay_events_during_keys": during.get("replay_events"),
        "key_samples_during_replay": during.get("samples"),
        "key_p95_same_keys_no_replay_ms": round(during["key_p95_same_keys_no_replay_ms"], 2) if during else None,
        "replay_load_average_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3, help="first-frame runs of each app (median)")
    parser.add_argument(
        "--replay-events", type=int, default=100_000, help="size of the run replayed while keys are timed"
    )
    parser.add_argument("--skip-replay", action="store_true", help="leave out the keys-during-a-replay runs")
    parser.add_argument("--replay-only", action="store_true", help="only the keys-during-a-replay runs")
    parser.add_argument(
        "--start-only",
        action="store_true",
        help="only start-up: end to end on a pty beside toolong, and import time beside Textual's",
    )
    parser.add_argument(
        "--import-runs", type=int, help="interleaved runs of each import (default 7 x --runs): min and median"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="only start-up, counted in instructions (valgrind): see 6."
    )
    parser.add_argument("--child", choices=["first-frame", "full", "during-replay"], help=argparse.SUPPRESS)
    parser.add_argument("--journal", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.journal, keys=args.child == "full", during_replay=args.child == "during-replay")
        return

    if args.replay_only:
        print(json.dumps(during_replay_figures(keys_during_replay(args.replay_events, args.runs))))
        return
    path = ensure_journal(args.events)
    size_mb = path.stat().st_size / 1e6
    print(f"journal: {path} ({size_mb:,.0f} MB)", flush=True)
    me = [sys.executable, __file__, "--journal", path]
    if args.instructions:
        print(json.dumps(instruction_figures(path)))
        return
    if args.start_only:
        print(json.dumps(start_up_figures(path, args.runs, import_runs=args.import_runs)))
        return
    full = child_json([*me, "--child", "full"])
    print(
        f"replay-tui: first frame {full['first_frame_s']:.3f} s ({full['events_at_first_frame']:,} events indexed then), "
        f"index {full['index_s']:.2f} s, keys p50 {full['key_p50_ms']:.1f} ms p95 {full['key_p95_ms']:.1f} ms "
        f"{full['per_key_p95_ms']}, peak RSS {full['peak_rss_mb']:.0f} MB; j during a full-journal search p95 "
        f"{full['key_p95_during_search_ms']:.1f} ms (search still running at the end: {full['search_ran_throughout']})",
        flush=True,
    )

    toolong = ensure_toolong()
    ours, theirs = [full["first_frame_s"]], []
    for _ in range(args.runs):
        if toolong is not None:
            with open(CACHE / "toolong_child.py", "w") as handle:
                handle.write(TOOLONG_CHILD)
            theirs.append(child_json([toolong, CACHE / "toolong_child.py", path])["first_frame_s"])
        if len(ours) < args.runs:
            ours.append(child_json([*me, "--child", "first-frame"])["first_frame_s"])
    start_up = start_up_figures(path, args.runs, toolong, args.import_runs)
    runs = keys_during_replay(args.replay_events, args.runs) if not args.skip_replay else []
    first_frame = statistics.median(ours)
    toolong_first = statistics.median(theirs) if theirs else None
    print(
        f"first frame runs: replay-tui {[round(x, 3) for x in ours]}, toolong {[round(x, 3) for x in theirs]}",
        flush=True,
    )
    figures = {
        "events": full["events"],
        "first_frame_s": round(first_frame, 4),
        "index_s": round(full["index_s"], 3),
        "key_p50_ms": round(full["key_p50_ms"], 2),
        "key_p95_ms": round(full["key_p95_ms"], 2),
        "peak_rss_mb": round(full["peak_rss_mb"], 1),
        "key_p95_during_search_ms": round(full["key_p95_during_search_ms"], 2),
        **during_replay_figures(runs),
        "toolong_first_frame_s": round(toolong_first, 4) if toolong_first is not None else None,
        "first_frame_ratio_vs_toolong": round(first_frame / toolong_first, 3) if toolong_first else None,
        **start_up,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
