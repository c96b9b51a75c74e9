"""Time to the first chunk of a streamed answer, recorded through the httpx transport against plain.

    python tests/bench/bench_stream.py [--runs N]

A loopback server in a process of its own streams a chat-completions answer of 20 text chunks, 50 ms apart
(HTTP/1.1 chunked, no Nagle delay). The same request goes through ``OpenAI(..., stream=True)`` and
``AsyncOpenAI(..., stream=True)``, plain (the SDK's own httpx2 client) and recorded (``http_client(h)`` of a
harness writing a journal), interleaved run by run, ``--runs`` of each (at least 7). For each run: the time
to the first chunk the SDK yields (the role chunk, no text), to the first chunk with text, and to the end
of the stream, in wall time and in CPU time of this process (the server's CPU is its own); medians.

Two shapes of chunk: ``words`` (each chunk ends at a word boundary, "Alpha "), and ``tokens`` (each starts
with its space, " alpha", as OpenAI's tokens do). The stream redactor hands a chunk's text over at once when
it ends at a boundary; a token at the end of a chunk may be the start of a secret and waits for the next
chunk (harness/STREAMING.md), so with ``tokens`` the first text arrives with the second chunk, one gap late,
and every later text one chunk later than plain: a cost of redacting as it passes, not of the transport.

Target: recorded within +2 ms of plain at the median, for the first chunk and (``words``) the first text.
``load_average`` is the 1-minute load at the start and the end; ``quotable`` is false when it is above the
CPU count less a half, and then no figure should be quoted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

CHUNKS = 20
GAP_S = 0.05
WORDS = ["Alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel ", "india ", "juliet "] * 2
TOKENS = ["Alpha"] + [" " + word.strip() for word in WORDS[1:]]
MESSAGES = [{"role": "user", "content": "Spell the alphabet."}]


def _serve(pipe: Any) -> None:
    """The server process: answers each request with the stream its model name asks for."""
    sys.path.insert(0, str(ROOT))
    from tests.httpx.stream_server import StreamServer, chat_events, played

    def script(request: dict[str, Any]) -> Any:
        texts = TOKENS if request.get("model") == "tokens" else WORDS
        return played(chat_events(texts[:CHUNKS]), gap=GAP_S)

    server = StreamServer(script)
    pipe.send(server.url)
    pipe.recv()  # until told to stop
    server.close()


class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def since(self) -> tuple[float, float]:
        return (time.perf_counter() - self.wall) * 1000, (time.process_time() - self.cpu) * 1000


def _marks(clock: Clock, marks: dict[str, tuple[float, float]], chunk: Any) -> None:
    marks.setdefault("first_chunk", clock.since())
    if chunk.choices and chunk.choices[0].delta.content:
        marks.setdefault("first_text", clock.since())


def _client(url: str, shape: str, recorded: bool, directory: Path, index: int, *, asynchronous: bool) -> Any:
    """``(client, harness)``: the SDK client, plain or through the transport of a new harness."""
    from openai import AsyncOpenAI, OpenAI

    from replay_tui.harness import httpx_transport

    module = httpx_transport.default_httpx_module()
    harness = None
    if recorded:
        harness = _harness(directory, f"{'async' if asynchronous else 'sync'}-{shape}-{index}")
        http = (httpx_transport.async_http_client if asynchronous else httpx_transport.http_client)(harness)
    else:
        http = (module.AsyncClient if asynchronous else module.Client)(
            verify=httpx_transport._shared_ssl_context(module)
        )
    sdk = AsyncOpenAI if asynchronous else OpenAI
    return sdk(api_key="sk-bench", base_url=url + "/v1", http_client=http, max_retries=0), harness


def run_sync(url: str, shape: str, recorded: bool, directory: Path, index: int) -> dict[str, tuple[float, float]]:
    client, harness = _client(url, shape, recorded, directory, index, asynchronous=False)
    marks: dict[str, tuple[float, float]] = {}
    clock = Clock()
    for chunk in client.chat.completions.create(model=shape, messages=MESSAGES, stream=True):
        _marks(clock, marks, chunk)
    marks["end"] = clock.since()
    client.close()
    if harness is not None:
        harness.end_run("ok")
    return marks


async def run_async(
    url: str, shape: str, recorded: bool, directory: Path, index: int
) -> dict[str, tuple[float, float]]:
    client, harness = _client(url, shape, recorded, directory, index, asynchronous=True)
    marks: dict[str, tuple[float, float]] = {}
    clock = Clock()
    async for chunk in await client.chat.completions.create(model=shape, messages=MESSAGES, stream=True):
        _marks(clock, marks, chunk)
    marks["end"] = clock.since()
    await client.close()
    if harness is not None:
        harness.end_run("ok")
    return marks


def _harness(directory: Path, name: str) -> Any:
    from replay_tui.harness import Harness, JsonlSink

    harness = Harness(sink=JsonlSink(directory / f"{name}.jsonl", run_id=name), run_id=name)
    harness.start_run("tests.bench.bench_stream:agent")
    return harness


def _medians(samples: list[dict[str, tuple[float, float]]]) -> dict[str, float]:
    out = {}
    for mark in ("first_chunk", "first_text", "end"):
        out[f"{mark}_ms"] = round(statistics.median(sample[mark][0] for sample in samples), 2)
        out[f"{mark}_cpu_ms"] = round(statistics.median(sample[mark][1] for sample in samples), 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each kind, interleaved (at least 7)")
    runs = max(parser.parse_args().runs, 7)
    honest.run_compiled()
    load = honest.Load()
    figures: dict[str, Any] = {"chunks": CHUNKS, "gap_ms": GAP_S * 1000, "runs": runs}
    loop = asyncio.new_event_loop()
    with honest.server_in_child(_serve) as url, contextlib.closing(loop):
        with tempfile.TemporaryDirectory(dir=ROOT) as scratch:
            directory = Path(scratch)
            for mode in ("sync", "async"):
                for shape in ("words", "tokens"):
                    samples: dict[bool, list[dict[str, tuple[float, float]]]] = {False: [], True: []}
                    for index in range(runs + 1):  # the first pair warms both up, and is dropped
                        for recorded in (False, True):
                            if mode == "sync":
                                marks = run_sync(url, shape, recorded, directory, index)
                            else:
                                marks = loop.run_until_complete(run_async(url, shape, recorded, directory, index))
                            if index:
                                samples[recorded].append(marks)
                    plain, recorded_ = _medians(samples[False]), _medians(samples[True])
                    delta = {key: round(recorded_[key] - plain[key], 2) for key in plain}
                    figures[f"{mode}_{shape}"] = {"plain": plain, "recorded": recorded_, "recorded_less_plain": delta}
        loop.run_until_complete(loop.shutdown_asyncgens())
    load.sample()
    figures.update(load.figures())
    words = [figures[f"{mode}_words"]["recorded_less_plain"] for mode in ("sync", "async")]
    figures["target_met"] = all(d["first_chunk_ms"] <= 2 and d["first_text_ms"] <= 2 for d in words)
    print(json.dumps(figures, indent=1))
    if not load.quotable:
        print(load.verdict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
