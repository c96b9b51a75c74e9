"""Where a recorded model call's CPU goes: the httpx transport's recording against the contract floor, in one
process, with no network.

    python tests/bench/bench_hot_path.py [--calls N] [--rounds R] [--profile]

``bench_frameworks.py`` gives ``overhead_over_floor_cpu`` end to end, through the SDK and a loopback server in
another process: the overhead is about a tenth of the call, so on a shared machine its figure moves with the
neighbours. This bench takes the SDK and the network out: the same request (the CRM question, as the OpenAI
SDK sends it) goes to an inner transport that answers at once, like a real API (fresh ids each time, as
``bench_frameworks.like_a_real_api``), and each side is the transport's ``handle_request`` and reading the
answer:

* ``plain``: the inner transport alone;
* ``floor``: ``bench_frameworks.floor_transport`` over it (what any recorder keeping the journal contract does:
  both bodies parsed and written again with sorted keys, the request hashed, two chained, hashed lines written);
* ``recorded``: the harness transport over it (``http_client(h)``'s), a harness writing a journal;
* ``steps``: the recorded call's parts one at a time on the same inputs, to say where the CPU goes.

Batches of ``--calls`` calls of each side, interleaved (the order rotating), ``--rounds`` of them; CPU time of
this process (``process_time``) per call, the median over the batches. ``overhead_over_floor_cpu`` =
(recorded - plain) / (floor - plain), the figure issue 25 item 8 sets at most 1.5. ``redaction_cpu_us`` is the
recorded side less the same with redaction off (``recorded_unredacted``). ``--profile`` prints a cProfile of the
recorded side instead.

``--instructions``: the same sides counted in instructions, which the machine's load does not move: each side
runs in a child under ``valgrind --tool=callgrind`` (started uninstrumented; the instrumentation is turned on
for the ``--calls`` timed calls only, after the warm-up, and the count dumped with ``callgrind_control``).
Kernel time (the write(2) of each line) is not in it. ``*_instructions`` figures, and
``overhead_over_floor_instructions``.
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

sys.path.insert(0, str(honest.ROOT))

from bench_frameworks import floor_transport, like_a_real_api  # noqa: E402

from fixtures.agents import framework_crm as crm  # noqa: E402

ANSWER = {
    "id": "chatcmpl-loopback",
    "object": "chat.completion",
    "created": 1767225600,
    "model": crm.MODEL,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_customer", "arguments": '{"customer_id": "C-042"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 18, "total_tokens": 138},
}
REQUEST_HEADERS = [
    ("Host", "127.0.0.1:8000"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("Accept", "application/json"),
    ("Content-Type", "application/json"),
    ("User-Agent", "OpenAI/Python 2.0.0"),
    ("X-Stainless-Lang", "python"),
    ("X-Stainless-Package-Version", "2.0.0"),
    ("X-Stainless-OS", "Linux"),
    ("X-Stainless-Arch", "x64"),
    ("X-Stainless-Runtime", "CPython"),
    ("X-Stainless-Runtime-Version", "3.11.7"),
    ("Authorization", "Bearer sk-loopback-0000000000000000"),
    ("X-Stainless-Async", "false"),
    ("X-Stainless-Retry-Count", "0"),
    ("X-Stainless-Read-Timeout", "600"),
]
RESPONSE_HEADERS = [
    ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
    ("content-type", "application/json"),
    ("x-request-id", "req_0123456789"),
    ("openai-processing-ms", "312"),
]


def request_body() -> bytes:
    import orjson

    tools = [
        {"type": "function", "function": {"name": name, "description": f"{name} of the CRM", "parameters": {}}}
        for name in ("lookup_customer", "open_tickets", "refund")
    ]
    return orjson.dumps(
        {
            "messages": [
                {"role": "system", "content": crm.INSTRUCTIONS},
                {"role": "user", "content": crm.QUESTION},
            ],
            "model": crm.MODEL,
            "tools": tools,
        }
    )


def canned(module: Any) -> Any:
    """An inner transport answering at once, like a real API (fresh ids every time)."""
    import orjson

    class Canned(module.BaseTransport):  # type: ignore[misc]
        def handle_request(self, request: Any) -> Any:
            body = orjson.dumps(like_a_real_api(ANSWER))
            return module.Response(200, headers=RESPONSE_HEADERS, stream=module.ByteStream(body), request=request)

    return Canned()


def sides(module: Any, scratch: Path) -> tuple[dict[str, Callable[[], Any]], Any]:
    from replay_tui.harness import Harness, JsonlSink, RedactionRules, Redactor
    from replay_tui.harness.httpx_transport import make_transport

    harness = Harness(sink=JsonlSink(scratch / "hot.jsonl", run_id="bench"), run_id="bench")
    harness.start_run("bench")
    unredacted = Harness(
        sink=JsonlSink(scratch / "unredacted.jsonl", run_id="bench"),
        run_id="bench",
        redactor=Redactor(RedactionRules(enabled=False)),
    )
    unredacted.start_run("bench")
    body = request_body()
    url = "http://127.0.0.1:8000/v1/chat/completions"

    def request() -> Any:
        return module.Request("POST", url, headers=REQUEST_HEADERS, content=body)

    def through(transport: Any) -> Callable[[], Any]:
        def call() -> Any:
            response = transport.handle_request(request())
            response.read()
            response.close()
            return response

        return call

    inner = canned(module)
    floor = floor_transport(module, scratch / "floor.jsonl")
    floor.inner = inner
    cases = {
        "plain": through(inner),
        "floor": through(floor),
        "recorded": through(make_transport(harness, httpx_module=module, inner=inner)),
        "recorded_unredacted": through(make_transport(unredacted, httpx_module=module, inner=inner)),
    }
    return cases, harness


def batch_cpu(call: Callable[[], Any], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) / calls


def steps(module: Any, scratch: Path, calls: int, rounds: int) -> dict[str, float]:
    """The recorded call's parts one at a time (each on the inputs the transport hands it), CPU µs per call."""
    import orjson

    from replay_tui.harness import Harness, JsonlSink
    from replay_tui.harness.httpx_transport import _request_headers, _response_headers, recorded_request
    from replay_tui.journal import hash_value

    harness = Harness(sink=JsonlSink(scratch / "steps.jsonl", run_id="steps"), run_id="steps")
    harness.start_run("steps")
    body = request_body()
    url = "http://127.0.0.1:8000/v1/chat/completions"
    live = module.Response(200, headers=RESPONSE_HEADERS, content=orjson.dumps(like_a_real_api(ANSWER)))
    wire = module.Request("POST", url, headers=REQUEST_HEADERS, content=body)
    wire_headers = _request_headers(wire.headers)
    normalized = recorded_request("POST", url, wire_headers, body)

    def exchange() -> None:
        request_event, _ = harness.open_model_exchange(recorded_request("POST", url, wire_headers, body), parsed=True)
        from replay_tui.harness.httpx_transport import _live_payload

        payload = _live_payload(
            request_event.payload["request_hash"], 200, _response_headers(live), orjson.dumps(like_a_real_api(ANSWER))
        )
        harness.close_model_exchange(request_event, payload, recorded=False)

    def answer_only() -> None:
        orjson.dumps(like_a_real_api(ANSWER))

    parts: dict[str, Callable[[], Any]] = {
        "request_headers": lambda: _request_headers(wire.headers),
        "recorded_request": lambda: recorded_request("POST", url, wire_headers, body),
        "redact_request": lambda: harness.redactor.redact("model.request", {"request": normalized}),
        "hash_request": lambda: hash_value(normalized),
        "answer_made_by_the_bench": answer_only,
        "open_and_close_exchange": exchange,
    }
    found = honest.interleaved({name: (lambda f=f: batch_cpu(f, calls)) for name, f in parts.items()}, rounds)
    harness.end_run("ok")
    figures = {name: round(honest.median(values) * 1e6, 1) for name, values in found.items()}
    figures["open_and_close_exchange_less_answer"] = round(
        figures["open_and_close_exchange"] - figures["answer_made_by_the_bench"], 1
    )
    return figures


def counted_child(side: str, calls: int) -> int:
    """Under callgrind: warm up ``side`` uninstrumented, then (told on stdin, once the parent turned the
    instrumentation on) make ``calls`` calls, say so, and wait to be dumped and let go."""
    from replay_tui.harness.httpx_transport import default_httpx_module

    module = default_httpx_module()
    with tempfile.TemporaryDirectory(prefix="bench-hot-path-", dir=honest.ROOT) as folder:
        cases, _ = sides(module, Path(folder))
        call = cases[side]
        for _ in range(200):
            call()
        print("ready", flush=True)
        sys.stdin.readline()
        for _ in range(calls):
            call()
        print("done", flush=True)
        sys.stdin.readline()
    return 0


def instructions_per_call(side: str, calls: int, scratch: Path) -> float:
    """Instructions one call of ``side`` executes (callgrind, in a child)."""
    out = scratch / f"callgrind.{side}.out"
    child = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--counted-side",
            side,
            "--calls",
            str(calls),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the callgrind child of {side} did not start")
        subprocess.run(["callgrind_control", "--instr=on", str(child.pid)], check=True, capture_output=True)
        child.stdin.write("go\n")
        child.stdin.flush()
        if child.stdout.readline().strip() != "done":
            raise RuntimeError(f"the callgrind child of {side} stopped")
        subprocess.run(["callgrind_control", "--dump", str(child.pid)], check=True, capture_output=True)
        child.stdin.write("end\n")
        child.stdin.flush()
        child.wait(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    dumps = sorted(glob.glob(f"{out}.*"))
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump for {side}")
    return honest.callgrind_total(dumps[-1]) / calls


def instruction_figures(calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-hot-path-cg-", dir=honest.ROOT) as folder:
        counts = {side: instructions_per_call(side, calls, Path(folder)) for side in SIDES}
    recorder, floor = counts["recorded"] - counts["plain"], counts["floor"] - counts["plain"]
    figures: dict[str, Any] = {f"{side}_instructions": round(count) for side, count in counts.items()}
    figures |= {
        "floor_over_plain_instructions": round(floor),
        "recorded_over_plain_instructions": round(recorder),
        "redaction_instructions": round(counts["recorded"] - counts["recorded_unredacted"]),
        "overhead_over_floor_instructions": round(recorder / floor, 2),
    }
    print(
        f"per call, instructions: plain {counts['plain']:,.0f}, floor +{floor:,.0f}, recorded +{recorder:,.0f} "
        f"(over the floor: {recorder / floor:.2f}; redaction {figures['redaction_instructions']:,})",
        flush=True,
    )
    return figures


SIDES = ("plain", "floor", "recorded", "recorded_unredacted")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per batch (default 200)")
    parser.add_argument("--rounds", type=int, default=15, help="batches of each side (default 15)")
    parser.add_argument("--profile", action="store_true", help="a cProfile of the recorded side instead")
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    parser.add_argument("--counted-side", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted_side:
        return counted_child(args.counted_side, args.calls)
    honest.run_compiled()
    load = honest.Load()
    if args.instructions:
        figures = {"bench": "hot_path", "calls": args.calls, **instruction_figures(args.calls)}
        honest.finish(figures, load)
        return 0
    from replay_tui.harness.httpx_transport import default_httpx_module

    module = default_httpx_module()
    with tempfile.TemporaryDirectory(prefix="bench-hot-path-", dir=honest.ROOT) as folder:
        scratch = Path(folder)
        cases, harness = sides(module, scratch)
        for call in cases.values():  # warm-up: caches, the redactor's memo of clean values
            for _ in range(200):
                call()
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(lambda: [cases["recorded"]() for _ in range(args.calls * args.rounds)])
            stats = pstats.Stats(profile)
            stats.sort_stats("tottime").print_stats(40)
            stats.sort_stats("cumulative").print_stats("replay_tui", 40)
            stats.print_callers("split|iterencode|posix.write|FileIO")
            return 0
        found = honest.interleaved(
            {name: (lambda c=call: batch_cpu(c, args.calls)) for name, call in cases.items()}, args.rounds
        )
        harness.end_run("ok")
        per_call = {name: honest.median(values) * 1e6 for name, values in found.items()}
        parts = steps(module, scratch, args.calls, max(5, args.rounds // 3))
    recorder, floor = per_call["recorded"] - per_call["plain"], per_call["floor"] - per_call["plain"]
    figures: dict[str, Any] = {
        "bench": "hot_path",
        "calls_per_batch": args.calls,
        "rounds": args.rounds,
        "plain_cpu_us": round(per_call["plain"], 1),
        "floor_cpu_us": round(per_call["floor"], 1),
        "recorded_cpu_us": round(per_call["recorded"], 1),
        "floor_over_plain_cpu_us": round(floor, 1),
        "recorded_over_plain_cpu_us": round(recorder, 1),
        "redaction_cpu_us": round(per_call["recorded"] - per_call["recorded_unredacted"], 1),
        "recorded_unredacted_over_plain_cpu_us": round(per_call["recorded_unredacted"] - per_call["plain"], 1),
        "overhead_over_floor_cpu": round(recorder / floor, 2),
        "target_overhead_over_floor_cpu": 1.5,
        "steps_cpu_us": parts,
        "pid": os.getpid(),
    }
    print(
        f"per call, CPU: plain {per_call['plain']:.1f} µs, floor +{floor:.1f}, recorded +{recorder:.1f} "
        f"(over the floor: {recorder / floor:.2f}); steps {parts}",
        flush=True,
    )
    honest.finish(figures, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
