"""`replay-tui diff` against `replay-tui verify` on the same big journal: time and peak memory.

    python tests/bench/bench_diff.py --events 200000 [--runs 3]

The journal (the bulk incident story, written by the real JournalWriter) is cached under
/tmp/replay-tui-bench. Each command runs as its own process, started the way a user starts it, and
its peak RSS is that child's ``ru_maxrss`` (from wait4). Runs alternate between the commands so the
machine's other load falls on both; the figures are medians. Cases:

* ``verify J``                      the reference time;
* ``diff J J``                      a journal against itself (identical: nothing kept);
* ``diff J J'``                     against a copy with one tool argument changed near the middle.

Targets: ``diff`` peak RSS <= 300 MB and ``diff`` time <= 3x ``verify`` time. The last line printed
is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path("/tmp/replay-tui-bench")
ENTRY = "from replay_tui.cli import entry_point; entry_point()"


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


def edited_copy(path: Path) -> Path:
    """The journal with one tool.call argument changed in the middle (lines copied as they are)."""
    target = path.with_name(path.stem + ".edited.jsonl")
    if target.exists():
        return target
    size = path.stat().st_size
    edited = False
    with open(path, "rb") as source, open(target.with_suffix(".partial"), "wb") as out:
        for line in source:
            if not edited and source.tell() > size // 2 and b'"kind":"tool.call"' in line:
                event = json.loads(line)
                event["payload"]["arguments"]["customer_id"] = -1
                line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
                edited = True
            out.write(line)
    os.replace(target.with_suffix(".partial"), target)
    return target


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit code of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", ENTRY, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.stderr is not None:
        process.stderr.close()
    return seconds, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    path = ensure_journal(args.events)
    edited = edited_copy(path)
    cases = {
        "verify": ["verify", str(path)],
        "diff_same": ["diff", str(path), str(path)],
        "diff_edited": ["diff", str(path), str(edited)],
    }
    expected = {"verify": 0, "diff_same": 0, "diff_edited": 1}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, argv in cases.items():
            seconds, rss, code = timed(argv)
            if code != expected[name]:
                raise SystemExit(f"{name}: exit {code}, expected {expected[name]}")
            figures[name].append((seconds, rss))
            print(f"{name}: {seconds:.2f} s, peak RSS {rss:.0f} MB", flush=True)
    medians = {name: (statistics.median(s for s, _ in runs), max(r for _, r in runs)) for name, runs in figures.items()}
    verify_s = medians["verify"][0]
    result = {
        "events": args.events,
        "verify_s": round(verify_s, 3),
        "verify_peak_rss_mb": round(medians["verify"][1], 1),
        "diff_same_s": round(medians["diff_same"][0], 3),
        "diff_same_peak_rss_mb": round(medians["diff_same"][1], 1),
        "diff_same_time_ratio_vs_verify": round(medians["diff_same"][0] / verify_s, 3),
        "diff_edited_s": round(medians["diff_edited"][0], 3),
        "diff_edited_peak_rss_mb": round(medians["diff_edited"][1], 1),
        "diff_edited_time_ratio_vs_verify": round(medians["diff_edited"][0] / verify_s, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
