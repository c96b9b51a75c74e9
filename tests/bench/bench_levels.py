"""Journal bytes per model call at each recording level (journal/levels.py).

    python tests/bench/bench_levels.py [--turns N] [--chunks N]

One agent, recorded at ``info`` and at ``trace``: an ``OpenAI`` client on the harness's httpx transport
talks to a loopback chat-completions server (in this process, a thread) for ``--turns`` turns of a growing
conversation, each answer streamed in ``--chunks`` chunks, then the same without streaming. For each level
and shape it prints the bytes of the ``model.request`` and ``model.response`` lines per model call, and the
whole journal's bytes. Byte counts do not depend on the machine's load; ``load_average`` is printed anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=60)
    args = parser.parse_args()

    from openai import OpenAI

    from replay_tui.harness import build_harness
    from replay_tui.harness.config import config_from_mapping
    from replay_tui.harness.httpx_transport import http_client
    from tests.httpx.servers import LLMServer

    words = [f"word{index} " for index in range(args.chunks)]

    def policy(request: Mapping[str, Any]) -> dict[str, Any]:
        return {"content": "".join(words)}

    server = LLMServer(policy)
    figures: dict[str, Any] = {"turns": args.turns, "chunks": args.chunks, "load_average": os.getloadavg()[0]}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for stream in (True, False):
                for level in ("info", "trace"):
                    journal = Path(scratch) / f"{level}-{stream}.jsonl"
                    config = config_from_mapping({"harness": {"level": level}})
                    with build_harness(config, journal=journal, agent="bench") as recording:
                        h = recording.harness
                        h.start_run("bench")
                        h.receive_input("start")
                        client = OpenAI(api_key="sk-bench", base_url=server.url + "/v1", http_client=http_client(h))
                        messages: list[dict[str, Any]] = [{"role": "system", "content": "You answer briefly. " * 20}]
                        for turn in range(args.turns):
                            messages.append({"role": "user", "content": f"question {turn}: " + "tell me more " * 10})
                            if stream:
                                text = "".join(
                                    chunk.choices[0].delta.content or ""
                                    for chunk in client.chat.completions.create(
                                        model="m", messages=messages, stream=True
                                    )
                                    if chunk.choices
                                )
                            else:
                                text = (
                                    client.chat.completions.create(model="m", messages=messages)
                                    .choices[0]
                                    .message.content
                                )
                            messages.append({"role": "assistant", "content": text})
                        h.end_run("ok", None)
                    lines = [json.loads(line) for line in journal.read_bytes().splitlines()]
                    model = sum(
                        len(json.dumps(line, separators=(",", ":")))
                        for line in lines
                        if line["kind"] in ("model.request", "model.response")
                    )
                    figures[f"{'streamed' if stream else 'plain'}_{level}_bytes_per_model_call"] = round(
                        model / args.turns
                    )
                    figures[f"{'streamed' if stream else 'plain'}_{level}_journal_bytes"] = journal.stat().st_size
    finally:
        server.close()
    for shape in ("streamed", "plain"):
        info, trace = figures[f"{shape}_info_bytes_per_model_call"], figures[f"{shape}_trace_bytes_per_model_call"]
        figures[f"{shape}_info_over_trace"] = round(info / trace, 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
