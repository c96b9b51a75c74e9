"""Corpus replay: harness-recorded journals through the fork server, beside the bare interpreter.

    python tests/bench/bench_corpus.py [--journals N] [--jobs J] [--keep DIR] [--no-plain]

The journals are recorded first by the real harness, with the corpus's own recorder
(``python -m fixtures.corpus.record --count N --out DIR``: the refund-desk agent over
N different orders, 15 events each). ``--keep DIR`` keeps (and reuses) them. Each
journal is then replayed strictly through ``replay_corpus`` (what ``replay-tui replay DIR
--jobs J`` runs): once with the fork server (the default: one warm interpreter forks a
fresh sandboxed child per journal) and, unless ``--no-plain``, once with a new
interpreter per journal (``--no-fork-server``). Every replay must match.

The baseline is a bare interpreter start (``python -c pass``), timed on the same machine
just before and just after the corpus runs (the mean of both, so load drifts cancel).
The target (issue 18, moonshot 1): a journal costs at most 2 bare starts per core,
i.e. ``ratio = (seconds * jobs / journals) / bare_start_s <= 2``.

The last line is one JSON object: journals, jobs, seconds, per_journal_core_s,
bare_start_s, ratio (and the same for the plain path: plain_seconds, plain_ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fixtures.corpus.record import generated_runs, record_one  # noqa: E402
from replay_tui.replay.corpus import find_journals, replay_corpus  # noqa: E402
from replay_tui.replay.executors import LocalExecutor  # noqa: E402
from replay_tui.replay.protocol import ReplaySpec  # noqa: E402


def ensure_corpus(directory: Path, count: int) -> list[Path]:
    existing = find_journals(directory, "*.replay.jsonl") if directory.is_dir() else []
    if len(existing) < count:
        for run in generated_runs(count):
            if not (directory / f"{run.name}.replay.jsonl").exists():
                record_one(run, directory)
    return find_journals(directory, "*.replay.jsonl")[:count]


def bare_start_s(repeats: int = 20) -> float:
    """Mean wall time of ``python -c pass`` (the interpreter start every plain child pays)."""
    started = time.perf_counter()
    for _ in range(repeats):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - started) / repeats


def timed(journals: list[Path], jobs: int, fork_server: bool) -> float:
    result = replay_corpus(
        journals,
        executor=LocalExecutor(jobs, fork_server=fork_server),
        spec_for=lambda journal: ReplaySpec(journal=journal, sys_path=[str(ROOT)]),
    )
    failed = [entry for entry in result.entries if not entry.ok]
    if failed:
        raise SystemExit(
            f"bench_corpus: {len(failed)} journal(s) did not match, e.g. {failed[0].journal}: {failed[0].outcome.headline()}"
        )
    return result.elapsed_s


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--journals", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", type=Path, help="record the corpus here (and reuse it next time)")
    parser.add_argument("--no-plain", action="store_true", help="skip the new-interpreter-per-journal run")
    args = parser.parse_args()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as scratch:
        directory = args.keep or Path(scratch)
        journals = ensure_corpus(directory, args.journals)
        count = len(journals)
        print(f"corpus: {count} journals in {directory}, jobs={args.jobs}", file=sys.stderr)
        bare_before = bare_start_s()
        forked = timed(journals, args.jobs, fork_server=True)
        plain = None if args.no_plain else timed(journals, args.jobs, fork_server=False)
        bare = (bare_before + bare_start_s()) / 2
    per_journal = forked * args.jobs / count
    figures: dict[str, object] = {
        "journals": count,
        "jobs": args.jobs,
        "seconds": round(forked, 3),
        "per_journal_core_s": round(per_journal, 4),
        "bare_start_s": round(bare, 4),
        "ratio": round(per_journal / bare, 2),
        "target_ratio": 2,
        "moonshot_ratio": 1,
    }
    print(
        f"fork server: {forked:.2f} s, {per_journal * 1000:.1f} ms per journal per core; "
        f"bare start {bare * 1000:.1f} ms; ratio {per_journal / bare:.2f}",
        file=sys.stderr,
    )
    if plain is not None:
        plain_per_journal = plain * args.jobs / count
        figures.update(
            plain_seconds=round(plain, 3),
            plain_per_journal_core_s=round(plain_per_journal, 4),
            plain_ratio=round(plain_per_journal / bare, 2),
            speedup=round(plain / forked, 2),
        )
        print(f"new interpreter per journal: {plain:.2f} s, ratio {plain_per_journal / bare:.2f}", file=sys.stderr)
    figures["cpus"] = os.cpu_count()
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
