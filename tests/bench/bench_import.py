"""OTLP import speed and memory: a generated 100,000-span OTLP/JSON file, imported in a child.

    python tests/bench/bench_import.py [--spans N] [--keep DIR]

The file is generated from the spans the real producer wrote (fixtures/imports/weather.otlp.jsonl:
an invoke_agent span, two chat spans with message content on the span, one execute_tool span),
copied with fresh trace and span ids and times, 1,000 spans per OTLP/JSON request line. The
import runs in its own child process (``replay-tui import``), so its peak RSS is measured alone.

Targets: >= 50,000 spans/s and peak RSS <= 300 MB. The machine is shared, so the rate is given
twice: by wall time and by the child's CPU time (what the import itself costs), with the load
average, and beside it the CPU time of a bare ``orjson`` parse of the same file in the same child
(the floor any importer pays; its ratio to the import is steadier than either figure on a loaded
machine). The last line is one JSON object: spans, file_mb, seconds, cpu_seconds, spans_per_s,
cpu_spans_per_s, parse_cpu_seconds, import_to_parse, peak_rss_mb, events, load_average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "fixtures" / "imports" / "weather.otlp.jsonl"
SPANS_PER_LINE = 1000


def generate(path: Path, spans: int) -> None:
    request = json.loads(SAMPLE.read_text().splitlines()[0])
    template = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    base = min(int(span["startTimeUnixNano"]) for span in template)
    per_run = len(template)
    runs = spans // per_run
    with open(path, "w", encoding="utf-8") as out:
        batch: list[dict] = []
        for run in range(runs):
            trace_id = f"{run + 1:032x}"
            ids = {span["spanId"]: f"{run * per_run + index + 1:016x}" for index, span in enumerate(template)}
            shift = run * 10_000_000  # 10 ms apart
            for span in template:
                copy = dict(
                    span,
                    traceId=trace_id,
                    spanId=ids[span["spanId"]],
                    startTimeUnixNano=str(int(span["startTimeUnixNano"]) - base + shift + 1_700_000_000_000_000_000),
                    endTimeUnixNano=str(int(span["endTimeUnixNano"]) - base + shift + 1_700_000_000_000_000_000),
                )
                if span.get("parentSpanId"):
                    copy["parentSpanId"] = ids.get(span["parentSpanId"], span["parentSpanId"])
                batch.append(copy)
                if len(batch) == SPANS_PER_LINE:
                    _write(out, request, batch)
                    batch = []
        if batch:
            _write(out, request, batch)


def _write(out, request: dict, spans: list[dict]) -> None:  # type: ignore[no-untyped-def]
    line = {
        "resourceSpans": [
            {
                "resource": request["resourceSpans"][0]["resource"],
                "scopeSpans": [{"scope": request["resourceSpans"][0]["scopeSpans"][0]["scope"], "spans": spans}],
            }
        ]
    }
    out.write(json.dumps(line, separators=(",", ":")) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the generated file in")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"generated-{args.spans}.otlp.jsonl"
    if not source.exists():
        generate(source, args.spans)
    out = work / "imported.jsonl"
    out.unlink(missing_ok=True)
    code = (
        "import resource, sys, time\n"
        "from replay_tui.importers import import_trace\n"
        "import orjson\n"
        "started, cpu = time.perf_counter(), time.process_time()\n"
        "[result] = import_trace(sys.argv[1], sys.argv[2])\n"
        "seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "parse = time.process_time()\n"
        "with open(sys.argv[1], 'rb') as lines:\n"
        "    for line in lines:\n"
        "        orjson.loads(line)\n"
        "print(seconds, cpu_seconds, result.events, result.detail['spans'], rss, time.process_time() - parse)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(source), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seconds, cpu_seconds, events, spans, rss_kb, parse_cpu = done.stdout.split()
    figures = {
        "spans": int(spans),
        "file_mb": round(source.stat().st_size / 1e6, 1),
        "seconds": round(float(seconds), 2),
        "cpu_seconds": round(float(cpu_seconds), 2),
        "spans_per_s": round(int(spans) / float(seconds)),
        "cpu_spans_per_s": round(int(spans) / float(cpu_seconds)),
        "parse_cpu_seconds": round(float(parse_cpu), 2),
        "import_to_parse": round(float(cpu_seconds) / float(parse_cpu), 1),
        "peak_rss_mb": round(int(rss_kb) / 1024, 1),
        "events": int(events),
        "load_average": round(os.getloadavg()[0], 1),
    }
    print(f"imported {figures['spans']} spans ({figures['file_mb']} MB) in {figures['seconds']} s", file=sys.stderr)
    print(json.dumps(figures))
    if not args.keep:
        source.unlink()
        out.unlink()
        work.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
