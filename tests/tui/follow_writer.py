"""A separate writer process for the follow-mode tests and benchmark: the real JournalWriter.

    python follow_writer.py PATH --events N --rate R [--go FILE] [--times FILE] [--rotate-bytes B] [--secret-every K]
        [--hold-at H --resume FILE]

Writes run.started at once (so the app can open the file), waits for ``--go`` to
exist, then appends ``N`` events at ``R`` per second (tool calls and results, with
a key that redaction missed every ``K`` events), and writes the monotonic time of
each append to ``--times`` as JSON ``{"seq": [...], "t": [...]}``. With ``--hold-at``,
it stops after ``H`` events until ``--resume`` exists (a test that acts between two
batches then does not race the writer's pace).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from replay_tui.journal import JournalWriter, call_key_of  # noqa: E402

FAKE_KEY = "sk-proj-" + "Zq7xR2mK9vL4pW8nT3bY6cH1dF5gJ0sA"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--go")
    parser.add_argument("--times")
    parser.add_argument("--rotate-bytes", type=int)
    parser.add_argument("--secret-every", type=int, default=0)
    parser.add_argument("--hold-at", type=int)
    parser.add_argument("--resume")
    args = parser.parse_args()
    writer = JournalWriter(args.path, run_id="run-follow", fsync="never", rotate_bytes=args.rotate_bytes)
    writer.append(
        "run.started",
        {
            "agent": "tests.follow:agent",
            "environment": {"runtime": "python"},
            "harness": {"version": "0"},
            "reducer_version": "1",
            "snapshot_every": 1000,
            "initial_state": {},
        },
    )
    if args.go:
        while not Path(args.go).exists():
            time.sleep(0.01)
    seqs: list[int] = []
    times: list[float] = []
    started = time.monotonic()
    for index in range(args.events):
        if index == args.hold_at and args.resume:
            while not Path(args.resume).exists():
                time.sleep(0.01)
            started = time.monotonic() - index / args.rate  # the pace goes on from here
        due = started + index / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        step = f"step-{index // 2:06d}"
        arguments = {"customer_id": index % 997}
        if args.secret_every and index % args.secret_every == 0:
            arguments["api_key"] = FAKE_KEY
        key = call_key_of("customer_query", arguments)
        if index % 2 == 0:
            event = writer.append(
                "tool.call",
                {"call_id": f"c{index}", "call_key": key, "tool": "customer_query", "arguments": arguments},
                step_id=step,
            )
        else:
            event = writer.append(
                "tool.result",
                {
                    "call_id": f"c{index - 1}",
                    "call_key": key,
                    "tool": "customer_query",
                    "result": {"ok": True, "n": index},
                    "duration_ms": 3,
                },
                step_id=step,
            )
        seqs.append(event.seq)
        times.append(time.monotonic())
    writer.close()
    if args.times:
        Path(args.times).write_text(json.dumps({"seq": seqs, "t": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
