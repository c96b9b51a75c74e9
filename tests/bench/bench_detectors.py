"""Benchmark: the secret detectors on adversarial 1 MB strings, one family per detector pattern.

    python tests/bench/bench_detectors.py [--size BYTES] [--limit SECONDS]

Each string (tests/journal/detector_shapes.py) is scanned (``scan_string``, what ``scan``, export and the
app's secret marks run on every string of a journal) and redacted (``Redactor.redact`` of a tool result
holding it, what recording runs on every payload). The detectors must be linear: every string is done in
under ``--limit`` (1 s) of CPU time. Before they were, the URL-with-password and JWT patterns rescanned
from every candidate start (80 KB took 15 s; ``"AccountKey=" * 2900`` took 12 s to redact).

Prints one line per string (CPU and wall seconds, scan and redact) and, last, one JSON object with the
worst figures and the load average before and after; exits 1 if any string took longer than the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replay_tui.analysis.secrets import scan_string  # noqa: E402
from replay_tui.harness.redaction import Redactor  # noqa: E402
from tests.journal.detector_shapes import shapes  # noqa: E402


def timed(work: object) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``work()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    work()  # type: ignore[operator]
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--limit", type=float, default=1.0)
    args = parser.parse_args()
    load_before = os.getloadavg()
    redactor = Redactor()
    rows = []
    for detector, strings in shapes(args.size).items():
        key = "password" if detector == "key-name" else "note"
        for what, text in strings:
            scan_cpu, scan_wall = timed(lambda: scan_string(text, key))
            payload = {"call_id": "c", "call_key": "k", "tool": "t", "result": {key: text}}
            redact_cpu, redact_wall = timed(lambda: redactor.redact("tool.result", payload))
            rows.append((detector, what, scan_cpu, scan_wall, redact_cpu, redact_wall))
            print(
                f"{detector:<18} scan {scan_cpu:6.3f} s cpu {scan_wall:6.3f} s wall   "
                f"redact {redact_cpu:6.3f} s cpu {redact_wall:6.3f} s wall   {what}",
                flush=True,
            )
    worst_scan = max(rows, key=lambda row: row[2])
    worst_redact = max(rows, key=lambda row: row[4])
    over = [row for row in rows if max(row[2], row[4]) > args.limit]
    summary = {
        "strings": len(rows),
        "size": args.size,
        "limit_s": args.limit,
        "worst_scan_cpu_s": round(worst_scan[2], 3),
        "worst_scan": f"{worst_scan[0]}: {worst_scan[1]}",
        "worst_redact_cpu_s": round(worst_redact[4], 3),
        "worst_redact": f"{worst_redact[0]}: {worst_redact[1]}",
        "over_limit": [f"{row[0]}: {row[1]}" for row in over],
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
