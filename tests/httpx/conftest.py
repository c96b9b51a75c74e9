"""Fixtures for the httpx transport and the OpenAI-compatible plugin: LLM servers on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .servers import LLMServer
from .stream_server import StreamServer

REPO = Path(__file__).resolve().parents[2]
OPENAI_KEY = "sk-test-CANARYopenai0123456789abcdefXYZ"
ANTHROPIC_KEY = "sk-ant-CANARYanthropic0123456789abcdefXYZ"


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    server = LLMServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], StreamServer]]:
    """``serve(steps)`` (or ``serve(script)``, a function of the request body): a scripted SSE server on loopback."""
    servers: list[StreamServer] = []

    def start(script: Any) -> StreamServer:
        servers.append(StreamServer(script if callable(script) else lambda request: script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
