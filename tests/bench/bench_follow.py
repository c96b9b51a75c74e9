"""Benchmark follow mode: a separate writer process appends while the app follows headless.

    python tests/bench/bench_follow.py [--rate 1000] [--seconds 30]

The writer is ``tests/tui/follow_writer.py``: the real JournalWriter (fsync never,
one flushed canonical line per event) appending tool calls and results at
``--rate`` events per second for ``--seconds``, noting ``time.monotonic()`` after
each append (CLOCK_MONOTONIC is one clock for every process on Linux). The app runs
in this process with ``App.run_test`` (160x45) and ``follow=True``; the timeline's
``render_line`` is wrapped so that each event counts as *visible* at the first frame
drawn after the timeline took it in (the first row painted once its count covered
the event). Latency is visible minus appended, per event. ``seen`` is the number of
appended events the timeline holds at the end (the writer's run.started is not
counted). The view sticks to the end, so every frame is the newest rows.

The last line printed is one JSON object: appended, seen, latency_p50_ms,
latency_p95_ms, latency_max_ms, frames, seconds. Targets: seen == appended,
p95 <= 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
WRITER = ROOT / "tests" / "tui" / "follow_writer.py"

from replay_tui.journal import Journal  # noqa: E402
from replay_tui.tui.app import ReplayApp  # noqa: E402
from replay_tui.tui.widgets.timeline import Timeline  # noqa: E402


class VisibleClock:
    """Wraps Timeline.render_line: the first frame after the count grows stamps the new positions."""

    def __init__(self) -> None:
        self.stamped = 0
        self.visible_at: list[float] = []
        self.frames = 0
        original = Timeline.render_line

        def render_line(timeline: Timeline, y: int):  # type: ignore[no-untyped-def]
            if timeline.count > self.stamped:
                now = time.monotonic()
                self.visible_at.extend([now] * (timeline.count - self.stamped))
                self.stamped = timeline.count
                self.frames += 1
            return original(timeline, y)

        Timeline.render_line = render_line  # type: ignore[method-assign]


async def run(rate: float, seconds: float, directory: Path) -> dict[str, object]:
    path, go, times_file = directory / "follow.jsonl", directory / "go", directory / "times.json"
    events = int(rate * seconds)
    writer = subprocess.Popen(
        [
            sys.executable,
            str(WRITER),
            str(path),
            "--events",
            str(events),
            "--rate",
            str(rate),
            "--go",
            str(go),
            "--times",
            str(times_file),
        ]
    )
    while not (path.exists() and path.stat().st_size):
        await asyncio.sleep(0.01)
    clock = VisibleClock()
    app = ReplayApp(Journal(path), follow=True)
    started = time.monotonic()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen_stack[0]
        while screen.indexing or not [w for w in app.workers if w.group == "follow" and w.is_running]:
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        go.touch()
        while writer.poll() is None:
            await pilot.pause(0.1)
        deadline = time.monotonic() + 10
        while screen.timeline.count < events + 1 and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        seen = screen.timeline.count - 1
    writer.wait()
    recorded = json.loads(times_file.read_text())
    latencies = []
    for seq, appended_at in zip(recorded["seq"], recorded["t"]):
        position = seq - 1
        if position < len(clock.visible_at):
            latencies.append((clock.visible_at[position] - appended_at) * 1000)
    latencies.sort()
    return {
        "appended": len(recorded["seq"]),
        "seen": seen,
        "latency_p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "latency_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
        "latency_max_ms": round(latencies[-1], 1) if latencies else None,
        "frames": clock.frames,
        "rate": rate,
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="events per second (default 1000)")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the writer appends (default 30)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-tui-bench-follow-") as directory:
        figures = asyncio.run(run(args.rate, args.seconds, Path(directory)))
    print(
        f"appended {figures['appended']:,}, seen {figures['seen']:,}; append → visible p50 {figures['latency_p50_ms']} ms, p95 {figures['latency_p95_ms']} ms, max {figures['latency_max_ms']} ms over {figures['frames']} frames"
    )
    print(json.dumps(figures))
    return 0 if figures["seen"] == figures["appended"] else 1


if __name__ == "__main__":
    sys.exit(main())
