"""OTLP import speed and memory: a generated 100,000-span OTLP/JSON file, imported in a child.

    python tests/bench/bench_import.py [--spans N] [--keep DIR] [--workers N]

The file is generated from the spans the real producer wrote (fixtures/imports/weather.otlp.jsonl:
an invoke_agent span, two chat spans with message content on the span, one execute_tool span),
copied with fresh trace and span ids and times, 1,000 spans per OTLP/JSON request line. The
import runs in its own child process (``replay-tui import``), so its peak RSS is measured alone.

Targets: >= 50,000 spans/s and peak RSS <= 300 MB. The file is imported twice, side by side: by
one reader (``parallel.MAX_WORKERS = 1``) and with pass one shared by worker processes (the default for a
file this big). The machine is shared, so each rate is given twice: by wall time and by CPU time (the
import's own plus its workers': what the import costs), with the load average; beside them the CPU
time of a bare ``orjson`` parse of the same file (the floor any importer pays; its ratio to the
one-reader import is steadier than either figure on a loaded machine). ``pass_two_seconds`` is the
wall time after pass one (the serial part: this process sorts and links, the worker kept as the journal's writer
chains, hashes and writes at the same time, when a CPU is free: ``pass_two_piped`` 1; with one reader or no CPU
free, all of it here). Peak RSS is the importing process's; a worker's peak is given apart (each holds one
request line and its part's index). The last line is one JSON object: spans, file_mb, seconds, cpu_seconds, spans_per_s, cpu_spans_per_s,
workers, pass_two_seconds, pass_two_piped, one_reader_seconds, one_reader_cpu_seconds, one_reader_spans_per_s,
one_reader_cpu_spans_per_s, parse_cpu_seconds, import_to_parse, peak_rss_mb, worker_peak_rss_mb,
events, load_average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from replay_tui.importers.otlp import parallel

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


IMPORT = """
import resource, sys, time
from replay_tui.importers import import_trace
from replay_tui.importers.otlp import parallel, trace
import orjson
parallel.MAX_WORKERS = int(sys.argv[3])
read = trace.OtlpTrace.__init__
passed = []
def timed(self, *arguments, **options):  # pass one's end: pass two (sort, link, chain, write) is the rest
    read(self, *arguments, **options)
    passed.append(time.perf_counter())
trace.OtlpTrace.__init__ = timed
piped = []
class Piped(trace.PipedWriter):  # pass two written by the kept worker (only while a CPU is free)
    def __init__(self, *arguments):
        piped.append(1)
        super().__init__(*arguments)
trace.PipedWriter = Piped
started, cpu = time.perf_counter(), time.process_time()
[result] = import_trace(sys.argv[1], sys.argv[2])
seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
workers = resource.getrusage(resource.RUSAGE_CHILDREN)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
parse = time.process_time()
with open(sys.argv[1], 'rb') as lines:
    for line in lines:
        orjson.loads(line)
print(seconds, cpu_seconds, workers.ru_utime + workers.ru_stime, result.events, result.detail['spans'], rss,
      workers.ru_maxrss, time.process_time() - parse, started + seconds - passed[0], len(piped))
"""


def _import(source: Path, out: Path, workers: int) -> dict[str, float]:
    """One import in its own child (its peak RSS alone); ``workers`` caps pass one's worker processes."""
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, str(source), str(out), str(workers)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seconds, cpu, worker_cpu, events, spans, rss_kb, worker_rss_kb, parse_cpu, pass_two, piped = map(
        float, done.stdout.split()
    )
    return {
        "seconds": seconds,
        "cpu": cpu + worker_cpu,
        "events": events,
        "spans": spans,
        "rss_mb": rss_kb / 1024,
        "worker_rss_mb": worker_rss_kb / 1024,
        "parse_cpu": parse_cpu,
        "pass_two": pass_two,
        "piped": piped,
        "workers_used": 0 if worker_cpu == 0 else min(workers, parallel.usable_cpus()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="directory to keep (and reuse) the generated file in")
    parser.add_argument("--workers", type=int, default=4, help="most worker processes for pass one (default 4)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"generated-{args.spans}.otlp.jsonl"
    if not source.exists():
        generate(source, args.spans)
    out = work / "imported.jsonl"
    alone = _import(source, out, 1)  # side by side: one reader, then the workers
    shared = _import(source, out, args.workers)
    spans = int(shared["spans"])
    figures = {
        "spans": spans,
        "file_mb": round(source.stat().st_size / 1e6, 1),
        "seconds": round(shared["seconds"], 2),
        "cpu_seconds": round(shared["cpu"], 2),
        "spans_per_s": round(spans / shared["seconds"]),
        "cpu_spans_per_s": round(spans / shared["cpu"]),
        "pass_two_seconds": round(shared["pass_two"], 2),
        "pass_two_piped": int(shared["piped"]),
        "workers": int(shared["workers_used"]),
        "one_reader_seconds": round(alone["seconds"], 2),
        "one_reader_cpu_seconds": round(alone["cpu"], 2),
        "one_reader_spans_per_s": round(spans / alone["seconds"]),
        "one_reader_cpu_spans_per_s": round(spans / alone["cpu"]),
        "parse_cpu_seconds": round(alone["parse_cpu"], 2),
        "import_to_parse": round(alone["cpu"] / alone["parse_cpu"], 1),
        "peak_rss_mb": round(max(alone["rss_mb"], shared["rss_mb"]), 1),
        "worker_peak_rss_mb": round(shared["worker_rss_mb"], 1),
        "events": int(shared["events"]),
        "load_average": round(os.getloadavg()[0], 1),
    }
    print(
        f"imported {spans} spans ({figures['file_mb']} MB) in {figures['seconds']} s"
        f" ({figures['one_reader_seconds']} s with one reader); load {figures['load_average']}",
        file=sys.stderr,
    )
    print(json.dumps(figures))
    if not args.keep:
        source.unlink()
        out.unlink()
        work.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
