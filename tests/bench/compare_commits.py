"""Run one benchmark on a base commit and on the working tree, interleaved, and print both figures and the ratio.

    python tests/bench/compare_commits.py bench_verify [--base 7e7c8d5] [--rounds 3] [-- --events 200000]
    python tests/bench/compare_commits.py bench_follow --rounds 2 -- --seconds 10

The base is checked out in a temporary git worktree (removed afterwards). Each round runs the bench once in
each tree, the order alternating (base, head / head, base ...) so a drift in the machine's load falls on both
sides alike; each run is a fresh process with its tree first on PYTHONPATH, so it imports that tree's
replay_tui. By default the working tree's version of the bench script runs in both (copied into the base's
worktree): the same measurement on each side; ``--script own`` runs each tree's own version (when the
head's script needs newer code). A bench prints its figures as one JSON object on its last line; for every
number in it this prints the median of each side and ``ratio`` = head / base (above 1: the head's figure is
larger, which is better for a rate and worse for a time). The load average is taken before and
after. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
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


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def run_bench(tree: Path, bench: str, bench_args: list[str], timeout_s: float) -> dict[str, Any]:
    """One run of ``bench`` as ``tree`` has it; its last stdout line as JSON, plus which replay_tui it used."""
    script = tree / "tests" / "bench" / f"{bench}.py"
    if not script.is_file():
        raise SystemExit(f"{script}: no such benchmark in this tree")
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
        raise SystemExit(f"{bench} in {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(lines[-1])
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", help="a script in tests/bench, e.g. bench_verify")
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
    bench_args = argv[split + 1 :]  # after --: the bench's own arguments
    bench = args.bench.removesuffix(".py")
    base_commit = git("rev-parse", "--verify", f"{args.base}^{{commit}}")
    head_commit = git("rev-parse", "HEAD")
    changed = bool(git("status", "--porcelain", "--untracked-files=no"))
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory(prefix="replay-tui-base-") as folder:
        base_tree = Path(folder) / "tree"
        git("worktree", "add", "--detach", str(base_tree), base_commit)
        try:
            if args.script == "head":
                shutil.copyfile(ROOT / "tests" / "bench" / f"{bench}.py", base_tree / "tests" / "bench" / f"{bench}.py")
            for round_number in range(args.rounds):
                order = [("base", base_tree), ("head", ROOT)]
                if round_number % 2:
                    order.reverse()
                for side, tree in order:
                    figures = run_bench(tree, bench, bench_args, args.timeout)
                    runs[side].append(figures)
                    print(f"round {round_number + 1} {side}: {json.dumps(figures)}", file=sys.stderr, flush=True)
        finally:
            git("worktree", "remove", "--force", str(base_tree))
    result = {
        "bench": bench,
        "args": bench_args,
        "base": base_commit[:10],
        "head": head_commit[:10] + ("+working-tree" if changed else ""),
        "rounds": args.rounds,
        "script": args.script,
        "load_avg_before": [round(value, 2) for value in load_before],
        "load_avg_after": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
        "figures": compare(runs),
    }
    width = max(len(name) for name in result["figures"]) if result["figures"] else 10
    print(f"{'figure':<{width}}  {'base':>12}  {'head':>12}  ratio", file=sys.stderr)
    for name, row in result["figures"].items():
        print(f"{name:<{width}}  {row['base']:>12g}  {row['head']:>12g}  {row['ratio']}", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
