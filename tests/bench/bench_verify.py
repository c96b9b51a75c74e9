"""Benchmark: `verify` throughput against a plain orjson.loads pass, and memory.

    python tests/bench/bench_verify.py [--events N] [--path FILE]
    python tests/bench/bench_verify.py --bombs


Generates a journal of realistic ~600-byte events through the project's own
JournalWriter (cached under /tmp by event count), then, in a fresh process so
the figures are not polluted by generation, times a parse-only pass and a full
verify over the same file. The last line is one JSON object.

``--bombs`` instead builds three hostile inputs (a ~420 KB gzip of one 400 MiB line, one
of 400 MiB of newlines, a plain 200 MiB line) and prints, for verify, stats and scan on
each, the peak RSS (VmHWM of the child, and of its children) and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson

from replay_tui.journal import JournalWriter, call_key_of, hash_value, verify_journal


def _step_events(step: int) -> list[tuple[str, dict]]:
    region = ("east", "west", "north", "south")[step % 4]
    request = {
        "model": "scripted-policy-1",
        "messages": [
            {"role": "system", "content": "You answer questions about customers using the CRM tools."},
            {"role": "user", "content": f"How many active customers were in the {region} region last month?"},
        ],
        "temperature": 0.2,
        "tools": ["customer_query"],
    }
    request_hash = hash_value(request)
    arguments = {"region": region, "status": "active", "period": "2026-10", "limit": 100 + step % 50}
    call_key = call_key_of("customer_query", arguments)
    rows = [{"id": f"C-{step:07d}-{n}", "name": f"Customer {n}", "mrr": 120 + n} for n in range(3)]
    return [
        ("model.request", {"request_hash": request_hash, "request": request}),
        (
            "model.response",
            {
                "request_hash": request_hash,
                "response": {
                    "content": f"I will query the {region} region for active customers in October.",
                    "tool_calls": [{"id": f"call-{step}", "name": "customer_query", "arguments": arguments}],
                    "finish_reason": "tool_calls",
                    "usage": {
                        "prompt_tokens": 412 + step % 17,
                        "completion_tokens": 38,
                        "total_tokens": 450 + step % 17,
                    },
                },
            },
        ),
        (
            "tool.call",
            {"call_id": f"call-{step}", "call_key": call_key, "tool": "customer_query", "arguments": arguments},
        ),
        (
            "tool.result",
            {
                "call_id": f"call-{step}",
                "call_key": call_key,
                "tool": "customer_query",
                "result": {"rows": rows, "total": 3},
                "duration_ms": 41 + step % 9,
            },
        ),
        ("clock.read", {"source": "time.time", "value": 1795000000.125 + step}),
        (
            "state.transition",
            {
                "cause_seq": 1,
                "before_hash": hash_value({"step": step - 1}),
                "after_hash": hash_value({"step": step}),
                "reducer_version": "crm-reducer/1",
                "patch": [
                    {"op": "replace", "path": "/step", "value": step},
                    {
                        "op": "add",
                        "path": f"/answers/{region}",
                        "value": {"count": 3, "asked_at": f"2026-11-01T10:{step % 60:02d}:00Z"},
                    },
                ],
            },
        ),
    ]


def generate(path: Path, events: int) -> None:
    with JournalWriter(path, run_id="bench-run-0001", fsync="never") as writer:
        writer.append(
            "run.started",
            {
                "agent": "fixtures.agents.crm:agent",
                "environment": {"runtime": "cpython-3.11.7", "timezone": "UTC", "locale": "en_US", "feature_flags": {}},
                "harness": {"version": "0.1.0", "plugins": [], "config_hash": None},
                "reducer_version": "crm-reducer/1",
                "snapshot_every": 1000,
                "initial_state": {"step": 0, "answers": {}},
            },
        )
        step = 0
        while writer.last_seq < events - 1:
            step += 1
            for kind, payload in _step_events(step):
                if writer.last_seq >= events - 1:
                    break
                writer.append(kind, payload, step_id=f"step-{step:06d}")
        writer.append("run.ended", {"status": "ok", "output": "done"})


def _cpu_seconds() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def measure(path: Path) -> dict:
    # The baseline is the plainest fast Python pass: iterate the file, parse each line.
    cpu_before = _cpu_seconds()
    started = time.perf_counter()
    parsed = 0
    loads = orjson.loads
    with open(path, "rb") as lines:
        for line in lines:
            loads(line)
            parsed += 1
    parse_s = time.perf_counter() - started
    parse_cpu_s = _cpu_seconds() - cpu_before

    cpu_before = _cpu_seconds()
    started = time.perf_counter()
    report = verify_journal(path)
    verify_s = time.perf_counter() - started
    verify_cpu_s = _cpu_seconds() - cpu_before
    if not report.ok:
        raise SystemExit(f"benchmark journal does not verify: {report.to_text()}")
    return {
        "events": report.events,
        "bytes": path.stat().st_size,
        "verify_s": round(verify_s, 3),
        "parse_only_s": round(parse_s, 3),
        "verify_events_per_s": round(report.events / verify_s),
        "parse_only_events_per_s": round(parsed / parse_s),
        "ratio": round(parse_s / verify_s, 3),
        "workers": report.workers,
        # CPU seconds (all processes) tell the cost apart from the machine's load.
        "verify_cpu_s": round(verify_cpu_s, 3),
        "parse_only_cpu_s": round(parse_cpu_s, 3),
        # verify's worker processes stream too: the peak of any one process counts.
        "peak_rss_mb": round(
            max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024, 1
        ),
    }


_PEAK_AT_EXIT = """
import atexit, resource, sys
def _peak():
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nPEAK_KB {max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)}\\n")
atexit.register(_peak)
from replay_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def bombs(folder: Path) -> dict:
    """Peak RSS (MB) and seconds of verify, stats and scan on each bomb, each in its own process."""
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    head = folder / "head.jsonl"
    head.unlink(missing_ok=True)
    with JournalWriter(head, run_id="bomb") as writer:  # a valid run.started, so the checks reach the bomb
        writer.append(
            "run.started",
            {
                "agent": "a:b",
                "environment": {},
                "harness": {},
                "reducer_version": "1",
                "snapshot_every": 10,
                "initial_state": {},
            },
        )
    first = head.read_bytes()
    member = lambda data: gzip.compress(data, compresslevel=9)  # noqa: E731
    inputs = {
        "huge-line.jsonl.gz": member(first) + member(b'{"x":"') + member(b"a" * (1 << 20)) * 400 + member(b'"}\n'),
        "newlines.jsonl.gz": member(first) + member(b"\n" * (1 << 20)) * 400,
    }
    for name, data in inputs.items():
        (folder / name).write_bytes(data)
    with open(folder / "plain-huge.jsonl", "wb") as plain:
        plain.write(first + b'{"x":"' + b"a" * (200 << 20) + b'"}\n')
    figures: dict = {"compressed_bytes": {name: len(data) for name, data in inputs.items()}}
    for name in (*inputs, "plain-huge.jsonl"):
        for command in ("verify", "stats", "scan"):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", _PEAK_AT_EXIT, command, str(folder / name)], capture_output=True, text=True
            )
            peak = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK_KB ")]
            figures[f"{command} {name}"] = {
                "exit": done.returncode,
                "peak_rss_mb": round(int(peak[-1]) / 1024, 1) if peak else None,
                "seconds": round(time.perf_counter() - started, 2),
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--path", type=Path, help="journal to create or reuse (default: cached under /tmp)")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bombs", action="store_true", help="measure verify, stats and scan on gzip bombs instead")
    args = parser.parse_args()
    if args.bombs:
        print(json.dumps(bombs(Path("/tmp/replay-tui-bench/bombs"))))
        return
    path = args.path or Path(f"/tmp/replay-tui-bench/verify-{args.events}.jsonl")
    if args.measure_only:
        print(json.dumps(measure(path)))
        return
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        started = time.perf_counter()
        generate(partial, args.events)
        os.replace(partial, path)
        print(
            f"generated {args.events} events ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f}s: {path}",
            file=sys.stderr,
        )
    done = subprocess.run(
        [sys.executable, __file__, "--measure-only", "--events", str(args.events), "--path", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"average line: {result['bytes'] / result['events']:.0f} bytes", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
