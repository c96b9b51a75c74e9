"""Run benchmarks on a base commit and on the working tree, interleaved, and print both figures and the ratio.

    python tests/bench/compare_commits.py bench_verify [--base 7e7c8d5] [--rounds 3] [-- --events 200000]
    python tests/bench/compare_commits.py bench_follow --rounds 2 -- --seconds 10
    python tests/bench/compare_commits.py --issue30 [--base REV] [--rounds 3]
    python tests/bench/compare_commits.py "bench_diff:--events 200000 --runs 3" bench_session --base REV

The base is checked out in a temporary git worktree (removed afterwards). Each round runs each bench once in
each tree, the order alternating (base, head / head, base ...) so a drift in the machine's load falls on both
sides alike; each run is a fresh process with its tree first on PYTHONPATH, so it imports that tree's
replay_tui. By default the working tree's version of each bench script runs in both (copied into the base's
worktree with the helper modules it shares, ``honest.py``): the same measurement on each side; ``--script
own`` runs each tree's own version (when the head's script needs newer code). A bench prints its figures as
one JSON object on its last line; for every number in it this prints the median of each side and ``ratio`` =
head / base (above 1: the head's figure is larger, which is better for a rate and worse for a time). A bench
the base cannot run (it needs code the base lacks) is reported as such, and the others still run.

Several benches: name each (``NAME`` or ``"NAME:ITS ARGS"``), or ``--issue30`` for the before/after table of
issue 30 item 6 and issue 25 item 8 (every bench the speed round touched, with the arguments the issues name).
The load average is taken before and after, and each figure is marked quotable or not (the 1-minute load
above the CPU count less a half is not). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE = "7e7c8d5"  # the commit before the code-health round (issue 17)
#: Helper modules bench scripts import from their own directory: copied beside a head script into the base.
HELPERS = ("honest.py",)
#: The before/after table of issue 30 item 6 (and the benches of issue 25 item 8), with the issues' arguments.
ISSUE30 = (
    "bench_verify:--events 200000",
    "bench_diff:--events 200000 --runs 3",
    "bench_tui:--events 200000 --start-only --runs 5",
    "bench_replay:--startup-only",
    "bench_corpus:--journals 100",
    "bench_session",
    "bench_frameworks:--runs 10 --calls 300",
    "bench_hot_path",
    "bench_concurrency",
    "bench_service",
)


class BenchFailed(RuntimeError):
    """One run of a bench failed (the base may lack what it needs)."""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def run_bench(tree: Path, bench: str, bench_args: list[str], timeout_s: float) -> dict[str, Any]:
    """One run of ``bench`` as ``tree`` has it; its last stdout line as JSON, plus which replay_tui it used."""
    script = tree / "tests" / "bench" / f"{bench}.py"
    if not script.is_file():
        raise BenchFailed(f"{script}: no such benchmark in this tree")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    which = subprocess.run(
        [sys.executable, "-c", "import replay_tui; print(replay_tui.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(which).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: the bench would import replay_tui from {which}, not from this tree")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(script), *bench_args], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout_s
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise BenchFailed(f"{bench} in {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    try:
        figures: dict[str, Any] = json.loads(lines[-1])
    except ValueError:
        raise BenchFailed(f"{bench} in {tree}: its last line is not the JSON of its figures: {lines[-1][:200]}")
    figures["_wall_s"] = round(time.perf_counter() - started, 2)
    return figures


def numbers(figures: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number in the figures, nested keys joined with dots."""
    found: dict[str, float] = {}
    for name, value in figures.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            found[prefix + name] = float(value)
        elif isinstance(value, dict):
            found.update(numbers(value, f"{prefix}{name}."))
    return found


def compare(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float | None]]:
    base = [numbers(run) for run in runs["base"]]
    head = [numbers(run) for run in runs["head"]]
    table: dict[str, dict[str, float | None]] = {}
    for name in base[0]:
        base_values = [figures[name] for figures in base if name in figures]
        head_values = [figures[name] for figures in head if name in figures]
        if not base_values or not head_values:
            continue
        base_median, head_median = statistics.median(base_values), statistics.median(head_values)
        ratio = round(head_median / base_median, 3) if base_median else None
        table[name] = {"base": round(base_median, 4), "head": round(head_median, 4), "ratio": ratio}
    return table


def parse_benches(names: list[str], issue30: bool, bench_args: list[str]) -> list[tuple[str, list[str]]]:
    """(bench, its arguments) for each ``NAME`` or ``NAME:ARGS`` (arguments after ``--`` go to a single bench)."""
    wanted = list(ISSUE30) if issue30 else names
    if not wanted:
        raise SystemExit("name a bench (e.g. bench_verify), or give --issue30")
    benches = []
    for entry in wanted:
        name, _, args = entry.partition(":")
        benches.append((name.removesuffix(".py"), shlex.split(args)))
    if bench_args:
        if len(benches) != 1:
            raise SystemExit("arguments after -- go to one bench; give several as NAME:ARGS")
        benches[0] = (benches[0][0], benches[0][1] + bench_args)
    return benches


def compare_one(
    bench: str, bench_args: list[str], base_tree: Path, rounds: int, timeout: float, script: str
) -> dict[str, Any]:
    """Both trees' figures for one bench, interleaved, and their medians side by side."""
    if script == "head":
        for name in (f"{bench}.py", *HELPERS):
            source = ROOT / "tests" / "bench" / name
            if source.is_file():
                shutil.copyfile(source, base_tree / "tests" / "bench" / name)
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    loads = [os.getloadavg()[0]]
    for round_number in range(rounds):
        order = [("base", base_tree), ("head", ROOT)]
        if round_number % 2:
            order.reverse()
        for side, tree in order:
            try:
                figures = run_bench(tree, bench, bench_args, timeout)
            except (BenchFailed, subprocess.TimeoutExpired) as failure:
                print(f"{bench} round {round_number + 1} {side}: FAILED: {failure}", file=sys.stderr, flush=True)
                return {"bench": bench, "args": bench_args, "failed": side, "error": str(failure)[-1500:]}
            runs[side].append(figures)
            loads.append(os.getloadavg()[0])
            print(f"{bench} round {round_number + 1} {side}: {json.dumps(figures)}", file=sys.stderr, flush=True)
    cpus = os.cpu_count() or 1
    return {
        "bench": bench,
        "args": bench_args,
        "load_avg_1m_max": round(max(loads), 2),
        "quotable": max(loads) <= cpus - 0.5,
        "figures": compare(runs),
    }


def print_table(result: dict[str, Any]) -> None:
    if "figures" not in result:
        print(
            f"\n{result['bench']}: the {result['failed']} side failed ({result['error'].splitlines()[0]})",
            file=sys.stderr,
        )
        return
    table = result["figures"]
    quotable = "quotable" if result["quotable"] else f"NOT QUOTABLE (load reached {result['load_avg_1m_max']})"
    print(f"\n{result['bench']} {' '.join(result['args'])}: {quotable}", file=sys.stderr)
    width = max((len(name) for name in table), default=10)
    print(f"{'figure':<{width}}  {'base':>12}  {'head':>12}  ratio", file=sys.stderr)
    for name, row in table.items():
        print(f"{name:<{width}}  {row['base']:>12g}  {row['head']:>12g}  {row['ratio']}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "benches", nargs="*", help="scripts in tests/bench, e.g. bench_verify, or 'bench_diff:--runs 3'"
    )
    parser.add_argument("--issue30", action="store_true", help="every bench of issue 30 item 6 and issue 25 item 8")
    parser.add_argument("--base", default=DEFAULT_BASE, help=f"the commit to compare with (default {DEFAULT_BASE})")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side (default 3)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take (default 1800)")
    parser.add_argument(
        "--script",
        choices=("head", "own"),
        default="head",
        help="head (default): the working tree's bench script measures both trees (copied into the base's "
        "worktree, so the same measurement runs on each); own: each tree runs its own version of the script",
    )
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    benches = parse_benches(args.benches, args.issue30, argv[split + 1 :])  # after --: the bench's own arguments
    base_commit = git("rev-parse", "--verify", f"{args.base}^{{commit}}")
    head_commit = git("rev-parse", "HEAD")
    changed = bool(git("status", "--porcelain", "--untracked-files=no"))
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="replay-tui-base-") as folder:
        base_tree = Path(folder) / "tree"
        git("worktree", "add", "--detach", str(base_tree), base_commit)
        try:
            for bench, bench_args in benches:
                results.append(compare_one(bench, bench_args, base_tree, args.rounds, args.timeout, args.script))
        finally:
            git("worktree", "remove", "--force", str(base_tree))
    for result in results:
        print_table(result)
    summary = {
        "base": base_commit[:10],
        "head": head_commit[:10] + ("+working-tree" if changed else ""),
        "rounds": args.rounds,
        "script": args.script,
        "load_avg_before": [round(value, 2) for value in load_before],
        "load_avg_after": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    if len(results) == 1:
        print(json.dumps({**summary, **results[0]}))
    else:
        print(json.dumps({**summary, "benches": results}))
    return 0 if all("figures" in result for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
