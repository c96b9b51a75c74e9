"""A real ASGI service at 20 concurrent sessions: request latency with and without recording, in one run.

    python tests/bench/bench_service.py [--rounds N] [--requests K] [--sessions S] [--model-delay S]

Two uvicorn servers on 127.0.0.1, each in its own process, serve the chat service of ``tests/service``:
``recorded`` is ``tests.service.chat_service:app`` (each request one session recorded by ``record_session``
into a journal of its own), ``plain`` is ``plain_app`` below, the same route and the same agent steps (ask the
model, run the tool it asks for, ask again, draw a ticket number) with the SDK's own client and nothing
recorded. Both talk to one threaded loopback model server in a third process, each answer after
``--model-delay`` (0.05 s, as the service tests).

A round sends ``--requests`` requests to one server from ``--sessions`` (20) concurrent clients, then as many
to the other (the order alternating from round to round); every request is a new session. Latency is from
sending the request to its whole answer, on the client's clock. Figures: p50 and p95 of each side over
every round, and ``recorded_over_plain_p95_pct`` (target, issue 25 item 8: within 5 % at p95); the servers'
CPU per request (each server process and the children it reaped, from /proc/PID/stat) beside it. The last line is one
JSON object; the line before it says whether the load let the figures be quoted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

ROOT = honest.ROOT
sys.path.insert(0, str(ROOT))

from fastapi import FastAPI  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402

from tests.service.chat_service import Ask, lookup_order  # noqa: E402

TARGET_PCT = 5.0

plain_app = FastAPI()


@plain_app.post("/chat")
async def plain_chat(ask: Ask) -> Any:
    """The chat service's route without ``record_session``: the same steps, nothing recorded."""
    from openai import AsyncOpenAI

    from replay_tui.harness.httpx_transport import _shared_ssl_context, default_httpx_module

    module = default_httpx_module()  # as the recording transport's inner one: the same module and SSL context
    http = module.AsyncClient(verify=_shared_ssl_context(module))
    tools = [
        {
            "type": "function",
            "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {"order": {}}}},
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask.message}]
    try:
        async with AsyncOpenAI(
            api_key="sk-service-key", base_url=os.environ["CHAT_MODEL_URL"], http_client=http
        ) as client:
            first = await client.chat.completions.create(model="m", messages=messages, tools=tools)
            message = first.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or []:
                result = await lookup_order("A-1")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
            final = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    except Exception as error:
        return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
    ticket = random.randint(1000, 9999)  # noqa: S311 (a ticket number, as the recorded service draws)
    return {"reply": f"{final.choices[0].message.content} (ticket {ticket})", "recorded": False}


def _serve_model(pipe: Any, delay: float) -> None:
    sys.path.insert(0, str(ROOT))
    import tests.service.conftest as service
    from tests.httpx.servers import LLMServer

    service.MODEL_DELAY_S = delay
    server = LLMServer(service.order_policy)
    pipe.send(server.url + "/v1")
    pipe.recv()
    server.close()


@contextlib.contextmanager
def uvicorn(app: str, environment: dict[str, str]) -> Iterator[tuple[str, int]]:
    """uvicorn serving ``app`` on a socket bound here (no port race); its URL and pid."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", app, "--fd", str(listener.fileno()), "--log-level", "warning"]
    command += ["--app-dir", str(ROOT / "tests" / "bench")] if app.startswith("bench_service:") else []
    process = subprocess.Popen(command, cwd=ROOT, env=environment, pass_fds=[listener.fileno()])
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def process_cpu_s(pid: int) -> float:
    """User and system CPU of a running process so far: its threads, and the children it reaped (git)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


async def one_round(base: str, requests: int, sessions: int, prefix: str) -> list[float]:
    """``requests`` requests from ``sessions`` concurrent clients (each request a new session): their latencies."""
    import httpx

    numbers = iter(range(requests))
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=httpx.Limits(max_connections=sessions)) as http:

        async def client() -> None:
            for number in numbers:
                started = time.perf_counter()
                answer = await http.post("/chat", json={"session_id": f"{prefix}-{number}", "message": "where?"})
                latencies.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise SystemExit(f"bench_service: {base} answered {answer.status_code}: {answer.text[:300]}")

        await asyncio.gather(*(client() for _ in range(sessions)))
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each side, alternating (default 6)")
    parser.add_argument("--requests", type=int, default=100, help="requests per round (default 100)")
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions (default 20)")
    parser.add_argument("--model-delay", type=float, default=0.05, help="seconds per model answer (default 0.05)")
    args = parser.parse_args()
    honest.run_compiled()
    load = honest.Load()
    figures: dict[str, Any] = {"bench": "service", "sessions": args.sessions, "requests_per_round": args.requests}
    with honest.server_in_child(_serve_model, args.model_delay) as model_url:
        with tempfile.TemporaryDirectory(prefix="bench-service-", dir=ROOT) as folder:
            environment = {
                **os.environ,
                "CHAT_JOURNALS": str(Path(folder) / "journals"),
                "CHAT_MODEL_URL": model_url,
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            }
            with (
                uvicorn("tests.service.chat_service:app", environment) as recorded,
                uvicorn("bench_service:plain_app", environment) as plain,
            ):
                servers = {"plain": plain, "recorded": recorded}
                asyncio.run(_wait_up([url for url, _ in servers.values()]))
                for side, (url, _) in servers.items():  # warm-up: imports, connections, caches
                    asyncio.run(one_round(url, args.sessions * 2, args.sessions, f"warm-{side}"))
                latencies: dict[str, list[float]] = {"plain": [], "recorded": []}
                cpu: dict[str, float] = {"plain": 0.0, "recorded": 0.0}
                counter = iter(range(10**6))

                def round_of(side: str) -> None:
                    url, pid = servers[side]
                    before = process_cpu_s(pid)
                    latencies[side] += asyncio.run(
                        one_round(url, args.requests, args.sessions, f"{side}-{next(counter)}")
                    )
                    cpu[side] += process_cpu_s(pid) - before

                honest.interleaved({side: (lambda s=side: round_of(s)) for side in servers}, args.rounds)
    total = args.rounds * args.requests
    for side, found in latencies.items():
        figures[side] = {
            "p50_ms": round(honest.percentile(found, 0.5) * 1000, 1),
            "p95_ms": round(honest.percentile(found, 0.95) * 1000, 1),
            "server_cpu_ms_per_request": round(cpu[side] * 1000 / total, 2),
        }
    for stat in ("p50", "p95"):
        plain_ms = figures["plain"][f"{stat}_ms"]
        figures[f"recorded_over_plain_{stat}_pct"] = round(
            100 * (figures["recorded"][f"{stat}_ms"] - plain_ms) / plain_ms, 1
        )
    figures["target_met"] = figures["recorded_over_plain_p95_pct"] <= TARGET_PCT
    print(
        f"{args.sessions} sessions, {total} requests a side: plain p50 {figures['plain']['p50_ms']} ms p95 "
        f"{figures['plain']['p95_ms']} ms; recorded p50 {figures['recorded']['p50_ms']} ms p95 "
        f"{figures['recorded']['p95_ms']} ms ({figures['recorded_over_plain_p95_pct']:+.1f} % at p95); server CPU "
        f"per request {figures['plain']['server_cpu_ms_per_request']} / {figures['recorded']['server_cpu_ms_per_request']} ms",
        flush=True,
    )
    honest.finish(figures, load)
    return 0


async def _wait_up(urls: list[str]) -> None:
    """Until each server answers (uvicorn imports the app after it starts)."""
    import httpx

    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(timeout=5) as http:
        for url in urls:
            while True:
                try:
                    await http.get(url + "/docs")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"bench_service: {url} did not start") from None
                    await asyncio.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
