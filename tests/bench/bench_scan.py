"""Throughput of `scan` (secret scan) and `stats` on a large realistic journal.

    python tests/bench/bench_scan.py [--events 1000000] [--keep PATH]

Writes the journal with the real JournalWriter (model/tool round trips, state
transitions, a planted secret every 100,000 events), then times open+index, the
secret scan and the stats pass separately. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from replay_tui.analysis.secrets import scan_journal
from replay_tui.analysis.stats import compute_stats
from replay_tui.journal import JournalWriter, call_key_of, hash_value, open_journal

PLANTED = "ghp_" + "Zx8f3kQ2mN7pL1vR9tY4wB6sHj5Kd0aQe2Rt"


def write_journal(path: Path, events: int) -> int:
    with JournalWriter(path, run_id="bench-scan", fsync="never") as writer:
        writer.append(
            "run.started",
            {
                "agent": "bench:agent",
                "environment": {"runtime": "cpython-3.11"},
                "harness": {"version": "bench", "plugins": [], "config_hash": None},
                "reducer_version": "1",
                "snapshot_every": 1000,
                "initial_state": {"tickets": 0},
            },
        )
        step = 0
        state = {"tickets": 0}
        while writer.last_seq < events - 1:
            step += 1
            step_id = f"step-{step:07d}"
            request = {
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": f"Summarise ticket T-{step} for customer C-{step % 977}"}],
                "temperature": 0,
            }
            request_hash = hash_value(request)
            writer.append("model.request", {"request_hash": request_hash, "request": request}, step_id=step_id)
            arguments = {"ticket_id": f"T-{step}", "fields": ["subject", "body", "status"]}
            if step % 20_000 == 0:
                arguments["auth"] = {"github_token": PLANTED}
            writer.append(
                "model.response",
                {
                    "request_hash": request_hash,
                    "response": {
                        "content": None,
                        "tool_calls": [{"id": f"call_{step}", "name": "ticket_get", "arguments": arguments}],
                        "finish_reason": "tool_calls",
                        "usage": {
                            "prompt_tokens": 400 + step % 50,
                            "completion_tokens": 30,
                            "total_tokens": 430 + step % 50,
                        },
                    },
                },
                step_id=step_id,
            )
            call_key = call_key_of("ticket_get", arguments)
            writer.append(
                "tool.call",
                {"call_id": f"call_{step}", "call_key": call_key, "tool": "ticket_get", "arguments": arguments},
                step_id=step_id,
            )
            writer.append(
                "tool.result",
                {
                    "call_id": f"call_{step}",
                    "call_key": call_key,
                    "tool": "ticket_get",
                    "duration_ms": 20 + step % 180,
                    "result": {
                        "subject": f"Printer on floor {step % 9} is offline",
                        "body": "The printer shows error E-42 since this morning. " * 3,
                        "status": "open",
                    },
                },
                step_id=step_id,
            )
            before = dict(state)
            state["tickets"] += 1
            writer.append(
                "state.transition",
                {
                    "cause_seq": writer.last_seq,
                    "before_hash": hash_value(before),
                    "after_hash": hash_value(state),
                    "reducer_version": "1",
                    "patch": [{"op": "replace", "path": "/tickets", "value": state["tickets"]}],
                },
                step_id=step_id,
            )
        writer.append("run.ended", {"status": "ok", "output": "done"})
        return writer.last_seq


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="reuse or keep the journal at this path")
    args = parser.parse_args()
    workdir = tempfile.TemporaryDirectory(prefix="bench-scan-")
    path = args.keep or Path(workdir.name) / "bench.jsonl"
    if not path.exists():
        started = time.perf_counter()
        write_journal(path, args.events)
        print(f"wrote {path} in {time.perf_counter() - started:.1f} s")
    size = os.path.getsize(path)

    started = time.perf_counter()
    journal = open_journal(path)
    index_s = time.perf_counter() - started
    events = len(journal)

    started, cpu = time.perf_counter(), time.process_time()
    report = scan_journal(journal)
    scan_s, scan_cpu_s = time.perf_counter() - started, time.process_time() - cpu

    started, cpu = time.perf_counter(), time.process_time()
    stats = compute_stats(journal)
    assert stats.events == events  # the pass saw every event
    stats_s, stats_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    journal.close()

    print(
        f"{events:,} events, {size / 1e6:.0f} MB; index {index_s:.1f} s; scan {scan_s:.1f} s ({events / scan_s:,.0f} events/s, "
        f"{size / scan_s / 1e6:.1f} MB/s; {scan_cpu_s:.1f} s CPU), {report.total_findings} finding(s); "
        f"stats {stats_s:.1f} s ({events / stats_s:,.0f} events/s; {stats_cpu_s:.1f} s CPU); load average {os.getloadavg()[0]:.1f}"
    )
    print(
        json.dumps(
            {
                "events": events,
                "bytes": size,
                "index_s": round(index_s, 2),
                "scan_s": round(scan_s, 2),
                "scan_cpu_s": round(scan_cpu_s, 2),  # CPU time: the fair figure when other work shares the cores
                "scan_events_per_cpu_s": round(events / scan_cpu_s),
                "scan_events_per_s": round(events / scan_s),
                "scan_mb_per_s": round(size / scan_s / 1e6, 2),
                "findings": report.total_findings,
                "flagged_events": len(report.flagged_seqs),
                "stats_s": round(stats_s, 2),
                "stats_cpu_s": round(stats_cpu_s, 2),
                "stats_events_per_s": round(events / stats_s),
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
