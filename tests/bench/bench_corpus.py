"""Corpus replay: 200 journals replayed with one job, then with two.

    python tests/bench/bench_corpus.py [--journals N] [--keep DIR]

The journals are recorded first by the real harness, with the corpus's own recorder
(``python -m fixtures.corpus.record --count N --out DIR``: the refund-desk agent over
N different orders, 15 events each). ``--keep DIR`` keeps (and reuses) them. Each
journal is then replayed strictly in its own isolated child process, through
``replay_corpus`` (what ``replay-tui replay DIR --jobs N`` runs), with jobs=1 and
jobs=2. Every replay must match.

The last line is one JSON object: journals, jobs1_s, jobs2_s, speedup (jobs1_s / jobs2_s).
On a 2-core machine the ceiling is 2x; child start-up (interpreter, isolation, imports)
dominates a 15-event replay, and it parallelises well.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fixtures.corpus.record import generated_runs, record_one  # noqa: E402
from replay_tui.replay.corpus import find_journals, replay_corpus  # noqa: E402
from replay_tui.replay.protocol import ReplaySpec  # noqa: E402


def ensure_corpus(directory: Path, count: int) -> list[Path]:
    existing = find_journals(directory, "*.replay.jsonl") if directory.is_dir() else []
    if len(existing) < count:
        for run in generated_runs(count):
            if not (directory / f"{run.name}.replay.jsonl").exists():
                record_one(run, directory)
    return find_journals(directory, "*.replay.jsonl")[:count]


def timed(journals: list[Path], jobs: int) -> float:
    result = replay_corpus(journals, jobs=jobs, spec_for=lambda journal: ReplaySpec(journal=journal, sys_path=[str(ROOT)]))
    failed = [entry for entry in result.entries if not entry.ok]
    if failed:
        raise SystemExit(f"bench_corpus: {len(failed)} journal(s) did not match, e.g. {failed[0].journal}: {failed[0].outcome.headline()}")
    return result.elapsed_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journals", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="record the corpus here (and reuse it next time)")
    args = parser.parse_args()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as scratch:
        directory = args.keep or Path(scratch)
        journals = ensure_corpus(directory, args.journals)
        print(f"corpus: {len(journals)} journals in {directory}", file=sys.stderr)
        jobs1 = timed(journals, 1)
        print(f"jobs=1: {jobs1:.2f} s", file=sys.stderr)
        jobs2 = timed(journals, 2)
        print(f"jobs=2: {jobs2:.2f} s", file=sys.stderr)
    print(json.dumps({"journals": len(journals), "jobs1_s": round(jobs1, 2), "jobs2_s": round(jobs2, 2),
                      "speedup": round(jobs1 / jobs2, 2), "cpus": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
