"""Strict replay speed and child start-up with the full sandbox, side by side with the pre-sandbox replay.

    python tests/bench/bench_replay.py [--events N] [--repeat R] [--keep DIR] [--base COMMIT]

1. A generated run of at least N events (default 100,000), recorded through the real
   harness by the counter agent (tests/replay/agents/counter.py). ``--keep DIR`` keeps
   (and reuses) it.
2. The same journal replayed, alternately, by this tree (parent referee, sandboxed
   child) and by ``--base`` (both verify the hash chain first, this tree's default;
   default base: the commit before the sandbox, checked out with
   ``git worktree add`` into a temporary directory that is removed afterwards; the base
   runs in a subprocess with that tree first on PYTHONPATH). Best of R each.
3. Child start-up of this tree: spawn to the first event the agent produced, with every
   sandbox layer in force (``require_isolation``), median, min and max over the runs (the long
   fixture), and the child's CPU from exec to that event (``first_event_cpu_s``: what the
   start-up costs, whatever the load). Interleaved variants: bubblewrap (when installed) and the
   own namespaces, each with the child started without site (``child_command``: what replays
   do) and the ordinary way (site and every .pth file: what they did). ``--startup-only`` stops
   here.

Both trees run with their modules compiled, as after a pip install: a bytecode cache
(``PYTHONPYCACHEPREFIX``, under the temporary directory) filled by one untimed warm-up per
tree, since a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile every module in
every child. The sandboxed child reads that cache read-only, as it would a user's.

Figures: the replay loop's rate in the child (``events_per_s``), and the end-to-end
rate seen by the caller (events / wall time of ``ReplayRunner.run``, which now includes
the parent's chain verification and its comparison); and, since wall clock on a shared
machine mostly measures the load, the child's loop per CPU-second, and the parent's CPU
per event (getrusage: it now verifies the chain and referees every event), and the CPU of the
whole replay (parent and child together) per event, the throughput a loaded machine sees. The
load average is printed before and after: on 2 shared cores, wall clock mostly measures it.
The last line is one JSON object.
Targets: start-up < 0.25 s; throughput >= 0.8 x the base, side by side (end to end, and in CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from replay_tui.harness import record_run  # noqa: E402
from replay_tui.replay.parent import child_command  # noqa: E402
from replay_tui.replay.parent.runner import MATCH, ReplayRunner  # noqa: E402
from replay_tui.replay.protocol import ReplaySpec  # noqa: E402
from replay_tui.replay.sandbox import bwrap_path  # noqa: E402

LONG_FIXTURE = ROOT / "fixtures" / "journals" / "stocktake-long.jsonl"
COUNTER_CONFIG = ROOT / "tests" / "replay" / "agents" / "counter.toml"
COUNTER_AGENT = "tests.replay.agents.counter:agent"
EVENTS_PER_STEP = 5  # model.request, model.response, tool.call, tool.result, state.transition
BASE_COMMIT = "9c70392"  # the last commit before the sandbox and the parent's referee
TARGET_STARTUP_S = 0.25
TARGET_RATIO = 0.8

#: Run in a subprocess with a tree first on sys.path: one replay, one JSON line.
ONE_REPLAY = """
import json, resource, sys, time
from replay_tui.replay.protocol import ReplaySpec
try:
    from replay_tui.replay.parent.runner import ReplayRunner
except ImportError:  # a tree from before replay/ was grouped by process
    from replay_tui.replay.parent.runner import ReplayRunner
journal, root = sys.argv[1], sys.argv[2]
def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime
started, parent_cpu, child_cpu = time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
# The chain is verified in both (the default now; the base's was off): like is compared with like.
spec = ReplaySpec(journal=journal, sys_path=[root], verify_hash_chain=True)
outcome = ReplayRunner(spec, timeout_s=900, cwd=root).run()
wall = time.perf_counter() - started
# The child's CPU: counted in RUSAGE_CHILDREN when it is our descendant we reaped; bwrap's pid namespace loses
# it, so the child's own figure (the sandbox's) is used when larger.
children = max(cpu(resource.RUSAGE_CHILDREN) - child_cpu, getattr(outcome, "child_cpu_s", None) or 0.0)
total_cpu = cpu(resource.RUSAGE_SELF) - parent_cpu + children
print(json.dumps({"status": outcome.status, "consumed": outcome.consumed, "events_per_s": outcome.events_per_s,
                  "events_per_loop_cpu_s": outcome.consumed / outcome.replay_cpu_s if outcome.replay_cpu_s else None,
                  "parent_us_per_event": 1e6 * (cpu(resource.RUSAGE_SELF) - parent_cpu) / max(outcome.consumed, 1),
                  "total_us_per_event": 1e6 * total_cpu / max(outcome.consumed, 1),
                  "wall_s": wall, "startup_s": outcome.child_startup_s,
                  "first_event_s": getattr(outcome, "first_event_s", None),
                  "isolation": outcome.isolation.summary if outcome.isolation else None}))
"""


#: What a replay child imports, by this tree's and older trees' names (each tree compiles those it has).
CHILD_MODULES = (
    "replay_tui.replay.child.main, replay_tui.replay.child.engine, replay_tui.replay.child.entry_point, "
    "replay_tui.replay.child.main, replay_tui.replay.child.engine, replay_tui.replay.child.entry_point, replay_tui.replay.referee, "
    "replay_tui.harness.replay_support, replay_tui.journal, tests.replay.agents.counter, fixtures.agents.stocktake"
)


def compiled_environment(cache: Path) -> dict[str, str]:
    """The environment with a bytecode cache, as an installed package has one (see the module docstring)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(cache)
    return environment


def warm_up(tree: Path, journal: Path, environment: dict[str, str]) -> None:
    """Fill the bytecode cache for ``tree``: its child's imports, then one untimed replay (the base's child,
    unsandboxed, writes what it imports; ours reads the cache read-only)."""
    env = dict(environment, PYTHONPATH=str(tree))
    modules = ", ".join(
        name
        for name in CHILD_MODULES.split(", ")
        if (tree / name.replace(".", "/")).exists() or (tree / (name.replace(".", "/") + ".py")).exists()
    )
    subprocess.run([sys.executable, "-c", f"import {modules}"], cwd=tree, env=env, check=True)
    run_tree(tree, journal, environment)


def run_tree(tree: Path, journal: Path, environment: dict[str, str]) -> dict[str, object]:
    env = dict(
        environment, PYTHONPATH=os.pathsep.join([str(tree), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    )
    done = subprocess.run(
        [sys.executable, "-c", ONE_REPLAY, str(journal), str(tree)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_replay: replay in {tree} failed:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if figures["status"] != MATCH:
        raise SystemExit(f"bench_replay: {journal} did not replay cleanly in {tree}: {figures}")
    figures["end_to_end_events_per_s"] = round(figures["consumed"] / figures["wall_s"], 1)
    return figures


def generated_run(directory: Path, events: int) -> Path:
    journal = directory / f"counter-{events}.jsonl"
    if not journal.exists():
        steps = -(-events // EVENTS_PER_STEP)
        started = time.perf_counter()
        record_run(COUNTER_CONFIG, COUNTER_AGENT, [str(steps)], journal=journal)
        print(f"recorded {journal} ({steps} steps) in {time.perf_counter() - started:.1f} s", flush=True)
    return journal


def startup(journal: Path, environment: dict[str, str], isolation: str = "auto") -> tuple[float, float]:
    """Spawn to first event (wall, and the child's CPU to it), this tree, in this process."""
    outcome = ReplayRunner(
        ReplaySpec(journal=str(journal), sys_path=[str(ROOT)], isolation=isolation, require_isolation=True),
        timeout_s=120,
        cwd=str(ROOT),
        env=environment,
    ).run()
    if outcome.status != MATCH or outcome.first_event_s is None or outcome.first_event_cpu_s is None:
        raise SystemExit(f"bench_replay: {journal} did not replay cleanly:\n{outcome.to_text()}")
    return outcome.first_event_s, outcome.first_event_cpu_s


@contextlib.contextmanager
def site_processed() -> Iterator[None]:
    """The child started the ordinary way (its interpreter runs site and every .pth file), for comparison."""
    saved = child_command.site_bootstrap
    child_command.site_bootstrap = lambda: None  # type: ignore[assignment]
    try:
        yield
    finally:
        child_command.site_bootstrap = saved  # type: ignore[assignment]


def startups(journal: Path, count: int, environment: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    """Spawn to first event, interleaved: bubblewrap (when installed) and the own namespaces, each with the child
    started without site (what replays do) and the ordinary way (what they did), so one load is seen by all."""
    variants = [("namespaces", False), ("namespaces", True)]
    if bwrap_path() is not None:
        variants = [("bwrap", False), ("bwrap", True), *variants]
    found: dict[str, list[tuple[float, float]]] = {}
    for turn in range(count):
        for isolation, with_site in variants[turn % len(variants) :] + variants[: turn % len(variants)]:
            name = f"{isolation}{' (site)' if with_site else ''}"
            with site_processed() if with_site else contextlib.nullcontext():
                found.setdefault(name, []).append(startup(journal, environment, isolation))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="size of the generated run (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="replays per tree; the best is reported (default 3)")
    parser.add_argument("--keep", type=Path, help="directory to keep and reuse the generated journal in")
    parser.add_argument("--base", default=BASE_COMMIT, help=f"the commit to compare with (default {BASE_COMMIT})")
    parser.add_argument(
        "--startups", type=int, default=9, help="replays of the long fixture timed to the first event, per variant"
    )
    parser.add_argument("--startup-only", action="store_true", help="only the start-up figures (no throughput)")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    print(f"load average before: {load_before:.1f} on {os.cpu_count()} cores", flush=True)
    runs: dict[str, list[dict[str, object]]] = {"base": [], "sandbox": []}
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as scratch:
        os.chmod(scratch, 0o755)  # the sandboxed child (nobody) reads the bytecode cache below it
        environment = compiled_environment(Path(scratch) / "pycache")
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        journal = None if args.startup_only else generated_run(directory, args.events)
        warm_up(ROOT, LONG_FIXTURE, environment)
        first_event = startups(LONG_FIXTURE, args.startups, environment)
        load_after_startups = os.getloadavg()[0]
        if journal is not None:
            base = Path(scratch) / "base"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base], check=True
            )
            try:
                warm_up(base, LONG_FIXTURE, environment)
                for _ in range(args.repeat):  # alternate, so both see the same machine load
                    runs["base"].append(run_tree(base, journal, environment))
                    runs["sandbox"].append(run_tree(ROOT, journal, environment))
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    result = startup_figures(first_event, load_before, load_after_startups)
    if runs["sandbox"]:
        result |= throughput_figures(runs, args.base)
        result["ok"] = result["ok"] and min(result["end_to_end_ratio"], result["total_cpu_ratio"]) >= TARGET_RATIO
    result["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
    result["cores"] = os.cpu_count()
    result["targets"] = {"first_event_s": TARGET_STARTUP_S, "ratio": TARGET_RATIO}
    print(json.dumps(result))
    return 0


def startup_figures(
    first_event: dict[str, list[tuple[float, float]]], load_before: float, load_after: float
) -> dict[str, object]:
    """Spawn to first event per variant (median, min and max wall; median and min CPU of the child from exec to it);
    the headline is the default one (bubblewrap when installed, the child without site)."""
    table: dict[str, dict[str, float]] = {}
    for name, found in first_event.items():
        walls, cpus = [wall for wall, _ in found], [cpu_s for _, cpu_s in found]
        table[name] = {
            "wall_median_s": round(statistics.median(walls), 4),
            "wall_min_s": round(min(walls), 4),
            "wall_max_s": round(max(walls), 4),
            "cpu_median_s": round(statistics.median(cpus), 4),
            "cpu_min_s": round(min(cpus), 4),
        }
        print(
            f"spawn to first event, full sandbox, {name}: median {table[name]['wall_median_s']:.3f} s "
            f"(min {table[name]['wall_min_s']:.3f}, max {table[name]['wall_max_s']:.3f}); the child's CPU from exec "
            f"to it: median {table[name]['cpu_median_s']:.3f} s, min {table[name]['cpu_min_s']:.3f} s "
            f"({len(found)} runs)",
            flush=True,
        )
    print(f"load average: {load_before:.1f} before, {load_after:.1f} after the start-ups")
    headline = table["bwrap" if "bwrap" in table else "namespaces"]
    return {
        "first_event_s": headline["wall_median_s"],
        "first_event_max_s": headline["wall_max_s"],
        "first_event_cpu_s": headline["cpu_median_s"],
        "first_event_by_variant": table,
        "load_average_during_startups": {"before": load_before, "after": load_after},
        "ok": headline["wall_median_s"] < TARGET_STARTUP_S,
    }


def throughput_figures(runs: dict[str, list[dict[str, object]]], base_commit: str) -> dict[str, object]:
    """This tree against the base, side by side: replay loop and end to end, in wall clock and in CPU."""
    best = {name: max(found, key=lambda figures: figures["events_per_s"] or 0) for name, found in runs.items()}
    cpu = {
        name: {
            "events_per_loop_cpu_s": max(figures["events_per_loop_cpu_s"] for figures in found),
            "parent_us_per_event": min(figures["parent_us_per_event"] for figures in found),
            "total_us_per_event": min(figures["total_us_per_event"] for figures in found),
        }
        for name, found in runs.items()
    }
    loop_cpu_ratio = cpu["sandbox"]["events_per_loop_cpu_s"] / cpu["base"]["events_per_loop_cpu_s"]
    total_cpu_ratio = cpu["base"]["total_us_per_event"] / cpu["sandbox"]["total_us_per_event"]
    best_e2e = {
        name: max(found, key=lambda figures: figures["end_to_end_events_per_s"]) for name, found in runs.items()
    }
    loop_ratio = (best["sandbox"]["events_per_s"] or 0) / (best["base"]["events_per_s"] or 1)
    e2e_ratio = best_e2e["sandbox"]["end_to_end_events_per_s"] / best_e2e["base"]["end_to_end_events_per_s"]
    load = os.getloadavg()[0]
    for name in ("base", "sandbox"):
        print(
            f"{name}: replay loop {best[name]['events_per_s']:,.0f} events/s, "
            f"end to end {best_e2e[name]['end_to_end_events_per_s']:,.0f} events/s ({best[name]['consumed']} events)",
            flush=True,
        )
    print(f"sandbox / base: loop {loop_ratio:.2f}, end to end {e2e_ratio:.2f} (wall clock, load {load:.1f})")
    for name in ("base", "sandbox"):
        print(
            f"{name}: {cpu[name]['events_per_loop_cpu_s']:,.0f} events per CPU-second of the child's loop; "
            f"the parent spends {cpu[name]['parent_us_per_event']:.1f} CPU-us per event (verify, referee, protocol)"
        )
    print(f"sandbox / base in CPU time of the child's loop: {loop_cpu_ratio:.2f}")
    for name in ("base", "sandbox"):
        print(f"{name}: {cpu[name]['total_us_per_event']:.1f} CPU-us per event, parent and child together")
    print(f"sandbox / base in throughput per CPU-second of the whole replay: {total_cpu_ratio:.2f}")
    hello = {name: statistics.median(figures["startup_s"] for figures in found) for name, found in runs.items()}
    print(
        f"spawn to hello as the caller sees it: base {hello['base']:.3f} s, sandbox {hello['sandbox']:.3f} s "
        "(the sandbox's parent reads it only after verifying the chain, which the child's start-up overlaps)"
    )
    return {
        "events": best["sandbox"]["consumed"],
        "base_commit": base_commit,
        "base_events_per_s": best["base"]["events_per_s"],
        "sandbox_events_per_s": best["sandbox"]["events_per_s"],
        "loop_ratio": round(loop_ratio, 3),
        "base_end_to_end_events_per_s": best_e2e["base"]["end_to_end_events_per_s"],
        "sandbox_end_to_end_events_per_s": best_e2e["sandbox"]["end_to_end_events_per_s"],
        "end_to_end_ratio": round(e2e_ratio, 3),
        "cpu": {name: {key: round(value, 1) for key, value in figures.items()} for name, figures in cpu.items()},
        "loop_cpu_ratio": round(loop_cpu_ratio, 3),
        "total_cpu_ratio": round(total_cpu_ratio, 3),
        "base_hello_s": round(hello["base"], 4),
        "sandbox_hello_s": round(hello["sandbox"], 4),
        "isolation": best["sandbox"]["isolation"],
    }


if __name__ == "__main__":
    sys.exit(main())
