"""Benchmark: the redaction gate (journal/detectors.might_hold_secret) on what a recording hands it.

    python tests/bench/bench_redaction_gate.py [--answers N]

* A new chat completion (fresh completion and tool call ids, as a real API gives): CPU µs per answer, the
  gate having seen the answers before it (it skips the strings it found clean).
* Payloads of many fresh strings (file paths in a list of rows, ids under an id name, text with escaped
  quotes, JSON kept in strings), 2,000 to 20,000 of them: CPU ms per payload and ``linearity``, the cost
  per string at 20,000 over the cost per string at 2,000 (about 1 when the work grows with the payload;
  a gate that looked every fresh string up through the whole payload gave 5.3 here, and 20 s for 20,000
  file paths).

The last line is one JSON object, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Callable

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replay_tui.journal import detectors  # noqa: E402

ANSWER = {
    "object": "chat.completion",
    "created": 1764590000,
    "model": "gpt-4.1-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": None, "refusal": None, "annotations": [], "tool_calls": []},
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 120,
        "completion_tokens": 20,
        "total_tokens": 140,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    },
}


def fresh_answer() -> bytes:
    """A model.response payload as the httpx transport records it, with fresh ids."""
    body = json.loads(json.dumps(ANSWER))
    body["id"] = f"chatcmpl-{secrets.token_urlsafe(22)}"
    body["system_fingerprint"] = f"fp_{secrets.token_hex(5)}"
    call = {"id": f"call_{secrets.token_urlsafe(18)}", "type": "function"}
    call["function"] = {"name": "lookup_customer", "arguments": '{"email": "dana@example.com"}'}
    body["choices"][0]["message"]["tool_calls"] = [call]
    summary = {"content": None, "tool_calls": [{"id": call["id"], "name": "lookup_customer"}], "usage": body["usage"]}
    http = {"status": 200, "headers": {"content-type": "application/json"}, "body_json": body}
    return orjson.dumps({"request_hash": "sha256:" + secrets.token_hex(32), "response": {**summary, "http": http}})


SHAPES: dict[str, Callable[[int], Any]] = {
    "paths": lambda i: {"path": f"/srv/data/{secrets.token_hex(8)}/report_{i}.csv", "n": i},
    "ids": lambda i: {"id": f"row_{secrets.token_urlsafe(18)}", "n": i},
    "escaped_text": lambda i: {"note": f'he said "hi {i}" \\ and left {secrets.token_hex(6)}'},
    "json_in_strings": lambda i: {"doc": json.dumps({"k": f"v{i}", "p": f"/x/{secrets.token_hex(10)}"})},
}


def cpu_s(function: Callable[[], Any]) -> float:
    started = time.process_time()
    function()
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=3000, help="new answers gated (default 3000)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"bench": "redaction_gate", "load_average": [os.getloadavg()[0]]}
    answers = [fresh_answer() for _ in range(args.answers + 100)]
    for answer in answers[:100]:  # what a run's first calls find clean: keys, headers, the usage block
        detectors.might_hold_secret(answer)
    seconds = cpu_s(lambda: [detectors.might_hold_secret(answer) for answer in answers[100:]])
    figures["new_answer_bytes"] = len(answers[100])
    figures["new_answer_cpu_us"] = round(seconds / args.answers * 1e6, 1)
    for name, make in SHAPES.items():
        per_string = {}
        for count in (2000, 20000):
            payload = orjson.dumps([make(index) for index in range(count)])
            seconds = cpu_s(lambda: detectors.might_hold_secret(payload))
            figures[f"{name}_{count}_cpu_ms"] = round(seconds * 1000, 1)
            per_string[count] = seconds / count
        figures[f"{name}_linearity"] = round(per_string[20000] / per_string[2000], 2)
    figures["load_average"].append(os.getloadavg()[0])
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
