"""Corpus index bench: 10,000 generated journals, then `index` and the canned questions.

Prints one JSON line: journals, events, index seconds, and per question the query seconds
(target: well under a second each on 10,000 journals).

    python tests/bench/bench_index.py [--journals 10000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from replay_tui.analysis.corpus_index import CANNED, build_index, run_query
from replay_tui.journal import JournalWriter

TOOLS = ("lookup_order", "refund", "search_kb", "send_email", "get_customer")
ERRORS = ("KeyError", "TimeoutError", "PermissionError")


def write_journal(path: Path, number: int, rng: random.Random) -> int:
    events = 0
    with JournalWriter(path, run_id=f"run-{number}", payloads_are_parsed_json=True) as writer:

        def append(kind: str, payload: dict, step: str | None = None) -> None:
            nonlocal events
            writer.append(kind, payload, step_id=step)
            events += 1

        append(
            "run.started",
            {
                "agent": "bench:agent",
                "environment": {"code_revision": f"rev-{number % 7}"},
                "harness": {"config_hash": "sha256:" + "1" * 64},
                "reducer_version": "1",
                "snapshot_every": 0,
                "initial_state": {},
            },
        )
        for step in range(rng.randint(2, 5)):
            step_id = f"step-{step:02d}"
            key = "sha256:" + f"{number:032x}{step:032x}"
            append("model.request", {"request_hash": key, "request": {"model": "m-1", "messages": []}}, step_id)
            append(
                "model.response",
                {
                    "request_hash": key,
                    "response": {
                        "content": "ok",
                        "tool_calls": [],
                        "finish_reason": "tool_calls",
                        "usage": {"prompt_tokens": rng.randint(10, 900), "completion_tokens": rng.randint(1, 200)},
                    },
                },
                step_id,
            )
            tool = rng.choice(TOOLS)
            append(
                "tool.call", {"call_id": f"c{step}", "call_key": key, "tool": tool, "arguments": {"n": step}}, step_id
            )
            result: dict = {"call_id": f"c{step}", "call_key": key, "tool": tool, "duration_ms": rng.randint(1, 3000)}
            if rng.random() < 0.05:
                result["error"] = {"type": rng.choice(ERRORS), "message": "bench"}
            else:
                result["result"] = {"ok": True}
            append("tool.result", result, step_id)
        append("run.ended", {"status": "ok", "output": "done", "error": None})
    return events


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--journals", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-index-") as scratch:
        root = Path(scratch) / "corpus"
        root.mkdir()
        events = sum(write_journal(root / f"j{number:05d}.jsonl", number, rng) for number in range(args.journals))
        journals = [(path.name, path) for path in sorted(root.glob("*.jsonl"))]
        database = Path(scratch) / "corpus.duckdb"
        started = time.perf_counter()
        summary = build_index(journals, database)
        index_s = time.perf_counter() - started
        queries = {}
        for name, (_, sql) in CANNED.items():
            started = time.perf_counter()
            run_query(database, sql)
            queries[name] = round(time.perf_counter() - started, 4)
        started = time.perf_counter()
        run_query(database, "SELECT agent, code_revision, count(*), sum(total_tokens) FROM runs GROUP BY ALL")
        queries["tokens_by_revision"] = round(time.perf_counter() - started, 4)
    print(
        json.dumps(
            {
                "journals": args.journals,
                "events": events,
                "rows": summary.rows,
                "index_s": round(index_s, 2),
                "index_journals_per_s": round(args.journals / index_s, 1),
                "query_s": queries,
                "slowest_query_s": max(queries.values()),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
