"""Fixtures for the httpx transport and the OpenAI-compatible plugin: LLM servers on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from .servers import LLMServer

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
