"""Strict replay speed and child start-up, through the real child process.

    python tests/bench/bench_replay.py [--events N] [--repeat R] [--keep DIR]

1. Strict replay of the long fixture (fixtures/journals/stocktake-long.jsonl).
2. A generated run of at least N events (default 100,000), recorded through the real
   harness by the counter agent (tests/replay/agents/counter.py), then replayed
   strictly. ``--keep DIR`` keeps (and reuses) the generated journal.
3. Child start-up: spawn to the child's ``hello`` (isolation in force), median of runs.

Rates are of the replay loop, measured in the child: wall clock (``replay_events_per_s``,
affected by whatever else the machine runs) and CPU time (``replay_events_per_cpu_s``).
The last line is one JSON object: events, replay_events_per_s, child_startup_s, and
the details. Targets: >= 20,000 events/s and start-up < 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from replay_tui.harness import record_run  # noqa: E402
from replay_tui.replay.protocol import ReplaySpec  # noqa: E402
from replay_tui.replay.runner import MATCH, ReplayOutcome, ReplayRunner  # noqa: E402

LONG_FIXTURE = ROOT / "fixtures" / "journals" / "stocktake-long.jsonl"
COUNTER_CONFIG = ROOT / "tests" / "replay" / "agents" / "counter.toml"
COUNTER_AGENT = "tests.replay.agents.counter:agent"
EVENTS_PER_STEP = 5  # model.request, model.response, tool.call, tool.result, state.transition
TARGET_EVENTS_PER_S = 20_000
TARGET_STARTUP_S = 1.0


def replay(journal: Path) -> ReplayOutcome:
    outcome = ReplayRunner(ReplaySpec(journal=str(journal), sys_path=[str(ROOT)]), timeout_s=600, cwd=str(ROOT)).run()
    if outcome.status != MATCH:
        raise SystemExit(f"bench_replay: {journal} did not replay cleanly:\n{outcome.to_text()}")
    return outcome


def generated_run(directory: Path, events: int) -> Path:
    journal = directory / f"counter-{events}.jsonl"
    if not journal.exists():
        steps = -(-events // EVENTS_PER_STEP)
        started = time.perf_counter()
        record_run(COUNTER_CONFIG, COUNTER_AGENT, [str(steps)], journal=journal)
        print(f"recorded {journal} ({steps} steps) in {time.perf_counter() - started:.1f} s", flush=True)
    return journal


def best_of(journal: Path, repeat: int) -> tuple[ReplayOutcome, list[ReplayOutcome]]:
    runs = [replay(journal) for _ in range(repeat)]
    return max(runs, key=lambda outcome: outcome.events_per_s or 0), runs


def describe(name: str, outcome: ReplayOutcome) -> dict[str, object]:
    cpu_rate = outcome.consumed / outcome.replay_cpu_s if outcome.replay_cpu_s else None
    print(
        f"{name}: {outcome.consumed} events, replay loop {outcome.replay_s:.3f} s wall "
        f"({outcome.events_per_s:,.0f} events/s), {outcome.replay_cpu_s:.3f} s CPU "
        f"({cpu_rate:,.0f} events/CPU-s); whole child run {outcome.elapsed_s:.3f} s; "
        f"start-up {outcome.child_startup_s:.3f} s",
        flush=True,
    )
    return {
        "events": outcome.consumed,
        "events_per_s": outcome.events_per_s,
        "events_per_cpu_s": round(cpu_rate, 1) if cpu_rate else None,
        "elapsed_s": outcome.elapsed_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="size of the generated run (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="replays per journal; the best is reported (default 3)")
    parser.add_argument("--keep", type=Path, help="directory to keep and reuse the generated journal in")
    args = parser.parse_args()

    long_best, long_runs = best_of(LONG_FIXTURE, args.repeat)
    long_figures = describe("long fixture", long_best)

    with tempfile.TemporaryDirectory(prefix="bench-replay-") as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        journal = generated_run(directory, args.events)
        big_best, big_runs = best_of(journal, args.repeat)
    big_figures = describe("generated run", big_best)

    startups = [outcome.child_startup_s for outcome in long_runs + big_runs if outcome.child_startup_s is not None]
    startup = statistics.median(startups)
    print(f"child start-up (spawn to hello, isolation in force): median {startup:.3f} s, max {max(startups):.3f} s")
    result = {
        "events": big_best.consumed,
        "replay_events_per_s": big_best.events_per_s,
        "replay_events_per_cpu_s": big_figures["events_per_cpu_s"],
        "child_startup_s": round(startup, 4),
        "child_startup_max_s": round(max(startups), 4),
        "isolation": big_best.isolation.summary if big_best.isolation else None,
        "long_fixture": long_figures,
        "targets": {"replay_events_per_s": TARGET_EVENTS_PER_S, "child_startup_s": TARGET_STARTUP_S},
        "ok": (big_best.events_per_s or 0) >= TARGET_EVENTS_PER_S and startup < TARGET_STARTUP_S,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
