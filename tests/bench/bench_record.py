"""Recording overhead: the same agent loop with recording off and on, in one run.

    python tests/bench/bench_record.py [--steps N] [--repeat R]

Off: the loop calls the scripted model and the tool directly. On: the same loop
goes through the Harness with the JSONL transport (fsync=close), the default
redaction rules and a reducer, so every model call, tool call, result and state
change is an event. The last line is one JSON object: events,
record_us_per_event, baseline_us_per_event, overhead_us_per_event (target <= 50),
the same in CPU time (``*_cpu_*``: steady on a loaded machine), and
redaction_cpu_us_per_event: recording with the default rules minus recording with
redaction disabled, side by side in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fixtures.agents.inventory_backend import CATALOG, lookup_now  # noqa: E402
from fixtures.agents.inventory_policy import stocktake_policy  # noqa: E402
from replay_tui.harness import Harness, JsonlSink, RedactionRules, Redactor, ToolSpec  # noqa: E402
from replay_tui.journal import Event  # noqa: E402

SKUS = sorted(CATALOG)


def reduce(state: dict[str, Any], event: Event) -> dict[str, Any]:
    if event.kind != "tool.result":
        return state
    result = event.payload.get("result") or {}
    return {"checked": state["checked"] + 1, "last": result.get("sku")}


def agent_loop(model: Callable[[dict], dict], tool: Callable[[str, dict, str], Any], steps: int) -> int:
    checked = 0
    for index in range(steps):
        sku = SKUS[index % len(SKUS)]
        request = {
            "model": "stocktake-scripted",
            "messages": [
                {"role": "system", "content": "Count stock."},
                {"role": "user", "content": f"next sku: {sku}"},
            ],
        }
        response = model(request)
        for call in response["tool_calls"]:
            tool(call["name"], call["arguments"], call["id"])
            checked += 1
    return checked


def run_off(steps: int) -> tuple[float, float]:
    def model(request: dict) -> dict:
        return dict(stocktake_policy(request), finish_reason="tool_calls", usage={})

    started, cpu = time.perf_counter(), time.process_time()
    agent_loop(model, lambda name, arguments, call_id: lookup_now(**arguments), steps)
    return time.perf_counter() - started, time.process_time() - cpu


class Policy:
    """The scripted model plugin's job, without its plugin lifecycle."""

    extension, version = "model", "bench"

    def complete(self, request: dict) -> dict:
        return dict(stocktake_policy(request), finish_reason="tool_calls", usage={})


def run_on(steps: int, directory: Path, *, redact: bool = True) -> tuple[float, float, int]:
    sink = JsonlSink(directory / f"bench-{redact}.jsonl", run_id="bench", fsync="close")
    redactor = Redactor() if redact else Redactor(RedactionRules(enabled=False))
    harness = Harness(
        sink=sink,
        run_id="bench",
        model=Policy(),
        redactor=redactor,  # type: ignore[arg-type]
        tools={"inventory.lookup": ToolSpec("inventory.lookup", lookup_now)},
        snapshot_every=500,
    )
    harness.use_reducer(reduce, "bench-1", {"checked": 0, "last": None})

    def tool(name: str, arguments: dict, call_id: str) -> Any:
        return harness.tool(name, arguments, call_id=call_id)

    started, cpu = time.perf_counter(), time.process_time()
    harness.start_run(agent="tests.bench.bench_record:agent_loop")
    with harness.step("bench"):
        agent_loop(harness.model, tool, steps)
    harness.end_run("ok", None)
    return time.perf_counter() - started, time.process_time() - cpu, harness.last_seq


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5, help="best of R runs for each mode")
    args = parser.parse_args()
    off, on, bare = [], [], []
    off_cpu, on_cpu, bare_cpu = [], [], []
    events = 0
    for _ in range(args.repeat):
        seconds, cpu = run_off(args.steps)
        off.append(seconds)
        off_cpu.append(cpu)
        with tempfile.TemporaryDirectory() as directory:
            seconds, cpu, events = run_on(args.steps, Path(directory))
            on.append(seconds)
            on_cpu.append(cpu)
            seconds, cpu, _ = run_on(args.steps, Path(directory), redact=False)
            bare.append(seconds)
            bare_cpu.append(cpu)
    record_us = min(on) / events * 1e6
    baseline_us = min(off) / events * 1e6
    print(f"steps: {args.steps}, events: {events}, best of {args.repeat}")
    print(
        f"recording off: {min(off) * 1000:.1f} ms; on: {min(on) * 1000:.1f} ms; on without redaction: {min(bare) * 1000:.1f} ms"
    )
    print(
        json.dumps(
            {
                "events": events,
                "record_us_per_event": round(record_us, 2),
                "baseline_us_per_event": round(baseline_us, 2),
                "overhead_us_per_event": round(record_us - baseline_us, 2),
                "overhead_cpu_us_per_event": round((min(on_cpu) - min(off_cpu)) / events * 1e6, 2),
                "redaction_cpu_us_per_event": round((min(on_cpu) - min(bare_cpu)) / events * 1e6, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
