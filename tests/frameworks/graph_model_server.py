"""The loopback model server of the LangGraph pattern tests: ``tests/httpx/servers.py``'s OpenAI and
Anthropic server (streamed or not, answers from a policy), plus what these tests measure: every request
body as its bytes arrived (the byte-for-byte comparison with an unrecorded run), when each request was
being answered (concurrency), how many connections were made (nothing live in a replay), and an optional
delay before each answer."""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tests.httpx.servers import FakeLLM, Policy, _Handler, _Server


@dataclass
class Heard:
    """What the server took in, in arrival order."""

    bodies: list[tuple[str, bytes]] = field(default_factory=list)  # (path, raw body)
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (started, answered), monotonic
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _MeasuringHandler(_Handler):
    server: _MeasuringServer

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        started = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        heard = self.server.heard
        with heard.lock:
            heard.bodies.append((self.path, raw))
        delay = self.server.delay(raw)
        if delay:
            time.sleep(delay)
        self.rfile = io.BytesIO(raw)
        super().do_POST()
        with heard.lock:
            heard.intervals.append((started, time.monotonic()))


class _MeasuringServer(_Server):
    heard: Heard
    delay: Callable[[bytes], float]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.heard.lock:
            self.heard.connections += 1
        super().process_request(request, client_address)


class GraphModelServer:
    """Start on 127.0.0.1; ``openai_url`` for ChatOpenAI (``.../v1``), ``anthropic_url`` for ChatAnthropic."""

    def __init__(self, policy: Policy, delay: Callable[[bytes], float] | None = None) -> None:
        self.httpd = _MeasuringServer(("127.0.0.1", 0), _MeasuringHandler)
        self.httpd.state = FakeLLM(policy)
        self.httpd.heard = Heard()
        self.httpd.delay = delay or (lambda raw: 0.0)
        self.heard = self.httpd.heard
        port = self.httpd.server_address[1]
        self.port = port
        self.anthropic_url = f"http://127.0.0.1:{port}"
        self.openai_url = f"{self.anthropic_url}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def bodies(self) -> list[bytes]:
        with self.heard.lock:
            return [body for _, body in self.heard.bodies]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=2)

    def __enter__(self) -> GraphModelServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def overlap(intervals: list[tuple[float, float]]) -> float:
    """How long the latest start came before the earliest end (> 0: all were in flight at once)."""
    return min(end for _, end in intervals) - max(start for start, _ in intervals)


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the last user message of a harness-style request."""
    users = [m for m in request["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""
