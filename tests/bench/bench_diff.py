"""`replay-tui diff` against `replay-tui verify` on the same big journal: time and peak memory.

    python tests/bench/bench_diff.py --events 200000 [--runs 3]

The journal (the bulk incident story, written by the real JournalWriter) is cached under
/tmp/replay-tui-bench. Each command runs as its own process, started the way a user starts it (modules
compiled first, ``honest.compile_tree``), and its peak RSS is that child's ``ru_maxrss`` and its CPU the
child's and its own children's (verify and diff both spread over the CPUs in worker processes), from
wait4 and getrusage. Runs alternate between the commands, the order rotating, so the machine's other
load falls on each; the figures are medians, wall and CPU. Cases:

* ``verify J``                      the reference time;
* ``diff J J``                      a journal against itself (identical: nothing kept);
* ``diff J J'``                     against a copy with one tool argument changed near the middle;
* ``diff J R``                      against the same story recorded again under another run id (every line
                                    differs in its ids and hashes, the payloads agree): two runs of one agent.

Targets (issue 30 item 4): ``diff`` time <= 2x ``verify`` time, memory still flat (peak RSS <= 300 MB).
The last line printed is one JSON object with the figures; the line before it says whether the load let
them be quoted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

REPO = honest.ROOT
CACHE = honest.CACHE
ENTRY = "from replay_tui.cli import entry_point; entry_point()"


def ensure_journal(events: int, run_id: str = "run-bulk-0001") -> Path:
    path = CACHE / (f"bulk-{events}.jsonl" if run_id == "run-bulk-0001" else f"bulk-{events}-{run_id}.jsonl")
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    print(f"writing {events:,} events to {path} (cached for later runs)…", flush=True)
    sys.path.insert(0, str(REPO / "tests" / "analysis"))
    from journal_factory import write_bulk

    write_bulk(partial, events, run_id=run_id)
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


def timed(argv: list[str]) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (the command's process and the workers it reaped), peak RSS in MB and exit
    code of one child process."""
    environment = honest.compiled_environment()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # wait4's usage is the child's own and its reaped children's (the getrusage difference says the same)
    cpu = max(usage.ru_utime + usage.ru_stime, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.stderr is not None:
        process.stderr.close()
    return seconds, cpu, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    honest.run_compiled()
    load = honest.Load()
    path = ensure_journal(args.events)
    edited = edited_copy(path)
    rerun = ensure_journal(args.events, "run-bulk-0002")
    cases = {
        "verify": ["verify", str(path)],
        "diff_same": ["diff", str(path), str(path)],
        "diff_edited": ["diff", str(path), str(edited)],
        "diff_rerun": ["diff", str(path), str(rerun)],
    }
    expected = {"verify": 0, "diff_same": 0, "diff_edited": 1, "diff_rerun": 0}

    def run(name: str) -> tuple[float, float, float]:
        seconds, cpu, rss, code = timed(cases[name])
        if code != expected[name]:
            raise SystemExit(f"{name}: exit {code}, expected {expected[name]}")
        print(f"{name}: {seconds:.2f} s, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB", flush=True)
        return seconds, cpu, rss

    for name in cases:  # warm-up: the page cache holds both files, as for a user's second command
        run(name)
    figures = honest.interleaved({name: (lambda n=name: run(n)) for name in cases}, args.runs)
    medians = {
        name: (
            statistics.median(s for s, _, _ in runs),
            statistics.median(c for _, c, _ in runs),
            max(r for *_, r in runs),
        )
        for name, runs in figures.items()
    }
    verify_s, verify_cpu = medians["verify"][0], medians["verify"][1]
    result: dict[str, object] = {
        "bench": "diff",
        "events": args.events,
        "verify_s": round(verify_s, 3),
        "verify_cpu_s": round(verify_cpu, 3),
        "verify_peak_rss_mb": round(medians["verify"][2], 1),
    }
    for name in ("diff_same", "diff_edited", "diff_rerun"):
        result |= {
            f"{name}_s": round(medians[name][0], 3),
            f"{name}_cpu_s": round(medians[name][1], 3),
            f"{name}_peak_rss_mb": round(medians[name][2], 1),
            f"{name}_time_ratio_vs_verify": round(medians[name][0] / verify_s, 3),
            f"{name}_cpu_ratio_vs_verify": round(medians[name][1] / verify_cpu, 3),
        }
    result["target_time_ratio"] = 2
    honest.finish(result, load)


if __name__ == "__main__":
    main()
